"""Stage 1's grid reader (results/heldout.py): the criterion by hand and the plan's rule of choice."""
import json
import os

import pytest

from results import answers, heldout


def metrics(counts, n=4, m=1):
    return {"m": m, "answers_per_problem": n, "problems": len(counts), "solved_target_per_problem": counts}


def test_pass_target_by_hand():
    """Three problems with 0, 2 and 4 of 4 answers equal to the target."""
    got = metrics([0, 2, 4])
    assert heldout.pass_target(got, range(3), 1) == pytest.approx((0 + 0.5 + 1) / 3)
    assert heldout.pass_target(got, range(3), 2) == pytest.approx((0 + (1 - 1 / 6) + 1) / 3)   # 1 - C(2,2)/C(4,2)
    assert heldout.pass_target(got, [1], 2) == pytest.approx(5 / 6)
    with pytest.raises(ValueError, match="m = 1"):
        heldout.pass_target(metrics([0, 2, 4], m=3), range(3), 1)


def test_the_rule_of_choice():
    assert heldout.choose({(3e-5, 1e-3): 0.50, (1e-5, 1e-3): 0.495, (3e-6, 1e-2): 0.40}) == (1e-5, 1e-3)
    assert heldout.choose({(3e-5, 1e-3): 0.50, (1e-5, 1e-3): 0.489}) == (3e-5, 1e-3)
    assert heldout.choose({(1e-5, 1e-3): 0.50, (1e-5, 1e-2): 0.495, (3e-5, 1e-2): 0.6}) == (3e-5, 1e-2)
    assert heldout.choose({(1e-5, 1e-3): 0.50, (1e-5, 1e-2): 0.495}) == (1e-5, 1e-2)


def test_grid_table_and_choice_from_run_files(tmp_path, capsys):
    """Six fake grid runs, 128 problems of 48 answers: the run whose validation problems solve most is chosen."""
    setup = heldout.read_config(heldout.GRID)
    for i, arm in enumerate(setup.arms):
        lr, kl = (float(arm.flags[arm.flags.index(f) + 1]) for f in ("--lr", "--kl_coef"))
        counts = [0] * 64 + [i * 4] * 64          # report problems unsolved; validation solved i*4 of 48 times
        m = {**metrics(counts, n=48), "pooled_pass_target@k": {"48": sum(c > 0 for c in counts) / 128}}
        d = tmp_path / "runs" / f"{arm.slug}-s100"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({"args": {"lr": lr, "kl_coef": kl}, "metrics": m,
                                                    "base_metrics": None}))
    assert heldout.main(["--grid", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    last = setup.arms[-1]
    lr, kl = last.flags[last.flags.index("--lr") + 1], last.flags[last.flags.index("--kl_coef") + 1]
    assert f"Chosen by the plan's rule: lr {float(lr):g}, KL coefficient {float(kl):g}." in out
    assert out.count("| GRPO lr") == 6
    os.remove(tmp_path / "runs" / f"{last.slug}-s100" / "summary.json")
    assert heldout.main(["--grid", "--out", str(tmp_path)]) == 0
    assert "5 of 6 grid runs have finished: no choice yet." in capsys.readouterr().out
    assert heldout.main(["--grid", "--out", str(tmp_path / "missing")]) == 2


def test_read_marks_what_each_answer_is(tmp_path):
    """--read on a hand-made cache: the target is marked =, a lookup of the shown tests s and p, junk nothing."""
    from tasks import get_task
    task = get_task("code")
    problems = task.problems("test", answers.SAMPLE_PROBLEMS, seed=0)
    lookups = []
    for p in problems:
        source = str(p.outputs[-1])
        for x, y in reversed(list(zip(p.inputs[:-1], p.outputs[:-1]))):
            source = f"{y} if x=={x} else {source}"
        lookups.append(source)
    cache = {"grpo-s0": {"m": 1, "answers": [[p.target, lookup, "x.real"] for p, lookup in zip(problems, lookups)]}}
    (tmp_path / "answers.json").write_text(json.dumps(cache))
    lines = answers.read_lines(str(tmp_path), task)
    assert lines[0] == "## grpo-s0 (m = 1)" and len([line for line in lines if line.startswith("- ")]) == 4
    for p, lookup, line in zip(problems, lookups, [line for line in lines if line.startswith("  `")]):
        pieces = "" if p.family == "step3" else "p"   # a three-level target's constant pieces are not counted
        assert line == f"  `{p.target}` (=), `{lookup}` (s{pieces}), `x.real`", line
    assert heldout.main(["--read", str(tmp_path)]) == 0


def test_collect_copies_finished_runs_only(tmp_path):
    """--collect: a finished run's summary, evaluations and gzipped log, its block (the digest of its warm start's
    log), the warm start's log; an unfinished run and a run already collected are left alone."""
    import gzip
    import hashlib
    out, into = tmp_path / "out", tmp_path / "into"
    for name, done in (("grpo-s0", True), ("vpo-s0", False)):
        d = out / "runs" / name
        d.mkdir(parents=True)
        (d / "log.jsonl").write_text('{"step": 1, "hack_pieces": 0.5}\n')
        (d / "eval.jsonl").write_text('{"step": 1}\n')
        if done:
            (d / "summary.json").write_text('{"metrics": {}}')
    base = out / "runs" / "base" / "code-x"
    base.mkdir(parents=True)
    (base / "log.jsonl").write_text('{"step": 1, "loss": 2.0}\n')
    assert heldout.main(["--collect", str(out), "--into", str(into)]) == 2   # no finished warm start
    (base / "ckpt.pt").write_text("weights")
    assert heldout.main(["--collect", str(out), "--into", str(into)]) == 0
    block = hashlib.sha256(b'{"step": 1, "loss": 2.0}\n').hexdigest()[:8]
    assert sorted(os.listdir(into)) == ["base", "blocks.json", "grpo-s0"]
    assert json.loads((into / "blocks.json").read_text()) == {"grpo-s0": block}
    assert sorted(os.listdir(into / "grpo-s0")) == ["eval.jsonl", "log.jsonl.gz", "summary.json"]
    assert gzip.open(into / "grpo-s0" / "log.jsonl.gz", "rt").read() == '{"step": 1, "hack_pieces": 0.5}\n'
    assert gzip.open(into / "base" / f"code-x-{block}" / "log.jsonl.gz", "rt").read() == '{"step": 1, "loss": 2.0}\n'
    (into / "grpo-s0" / "eval.jsonl").write_text("kept")
    assert heldout.collect(str(out), str(into)) == [] and (into / "grpo-s0" / "eval.jsonl").read_text() == "kept"
    assert heldout.main(["--collect", str(tmp_path / "nowhere"), "--into", str(into)]) == 2


def test_collect_copies_a_searchs_files_once(tmp_path):
    """--collect on a search: the hard set and each run's validation, search and sampling files, where
    results/searched.py reads a block's; a file already collected is kept, a checkpoint is never copied."""
    out, into = tmp_path / "out", tmp_path / "into"
    base = out / "runs" / "base" / "code-x"
    base.mkdir(parents=True)
    (base / "log.jsonl").write_text("{}\n")
    (base / "ckpt.pt").write_text("weights")
    (out / "hard.json").write_text('{"problems": [3]}')
    from results.searched import KINDS
    names = ["validation-grpo-s0.json"] + [f"{kind}-grpo_stopped-s0.json" for kind in KINDS] + ["evolve-base-s1.json"]
    for name in names + ["validation-grpo-s0.json.tmp"]:
        (out / "runs" / name).write_text(name)
    (out / "runs" / "grpo-s0").mkdir()
    (out / "runs" / "grpo-s0" / "ckpt-step50.pt").write_text("weights")
    assert sorted(heldout.collect(str(out), str(into))) == sorted(names + ["hard.json"])
    assert sorted(os.listdir(into)) == sorted(names + ["hard.json", "base", "blocks.json"])
    assert (into / "evolve-base-s1.json").read_text() == "evolve-base-s1.json"
    (into / "hard.json").write_text("kept")
    assert heldout.collect(str(out), str(into)) == [] and (into / "hard.json").read_text() == "kept"


def test_holm_by_hand():
    from results.runstats import holm_adjusted
    assert holm_adjusted([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm_adjusted([0.5, 0.01]) == pytest.approx([0.5, 0.02])


def fake_run(seed, slug, m, at500, at250, hacks, base=None):
    """A finished run as tables.read_run gives it: pooled pass_target@k = at500 (at250) at every k."""
    target = lambda v: {"pooled_pass_target@k": {str(k): v for k in heldout.KS}}
    metrics = {**target(at500), "m": m, "problems": 64, "hack_rate": {"fits_shown": hacks[0], "pieces": hacks[1]}}
    return {"seed": seed, "slug": slug, "dir": f"/nowhere/{slug}-s{seed}", "evals": [{"step": 250, **target(at250)}],
            "summary": {"args": {"steps": 500, "batch_size": 8, "group_size": 8}, "metrics": metrics, "base_metrics": base}}


def test_report_by_hand():
    """Three arms of three runs: the deciding pair's difference and exact p, Holm over the secondary ones, the sign
    test against the warm start, the hack rates by 100 steps."""
    from results.jobs import Arm
    from results.runstats import holm_adjusted, label_p
    arms = [Arm("GRPO", "grpo", ()), Arm("VPO", "vpo", ()), Arm("Multi-RLVR with the max", "multi_rlvr_max", ())]
    setup = type("Setup", (), {"arms": arms})()
    base1 = {"m": 1, "pooled_pass_target@k": {str(k): 0.8 for k in heldout.KS}}
    runs = {"GRPO": [fake_run(s, "grpo", 1, v, 0.7, (0.1, 0.2), base1 if s == 0 else None)
                     for s, v in enumerate((0.5, 0.6, 0.55))],
            "VPO": [fake_run(s, "vpo", 3, v, 0.7, (0.0, 0.4)) for s, v in enumerate((0.7, 0.75, 0.65))],
            "Multi-RLVR with the max": [fake_run(s, "multi_rlvr_max", 3, v, 0.7, (0.0, 0.1))
                                        for s, v in enumerate((0.6, 0.7, 0.8))]}
    logs = {f"grpo-s{s}": [{"step": t, "hack_fits_shown": 0.5, "hack_pieces": None if t > 200 else 0.25,
                            "completion_tokens": 2.0 + s} for t in range(1, 501)] for s in range(3)}
    lines = heldout.report_lines(setup, runs, {}, logs)
    deciding = next(line for line in lines if line.startswith("| VPO − GRPO | k=48 |"))
    p = label_p([0.7, 0.75, 0.65], [0.5, 0.6, 0.55])
    assert "+0.150 [" in deciding and f"| {p:.3g} |" in deciding and deciding.endswith("| deciding |")
    sign = next(line for line in lines if line.startswith("| GRPO − warm start |"))
    assert "-0.250, 3 of 3 runs below" in sign and "| 0.125 (one-sided) |" in sign   # 1/8: all 3 below
    ps = [float(next(line for line in lines if line.startswith(f"| {pair} | k={k} |")).split(" | ")[4].split()[0])
          for pair, k in (("VPO − GRPO", 1), ("VPO − Multi-RLVR with the max", 48), ("GRPO − warm start", 48))]
    for (pair, k), adjusted in zip((("VPO − GRPO", 1), ("VPO − Multi-RLVR with the max", 48),
                                    ("GRPO − warm start", 48)), holm_adjusted(ps)):
        assert next(line for line in lines if line.startswith(f"| {pair} | k={k} |")).endswith(
            f"| secondary, Holm {adjusted:.3g} |")
    assert "| GRPO | 250 | 3 | " + " | ".join(["0.700 ± 0.000"] * 6) + " |" in lines
    assert "| GRPO | warm start | - | " + " | ".join(["0.800"] * 6) + " |" in lines
    hack = next(line for line in lines if line.startswith("| GRPO | 0.500"))
    assert hack == "| GRPO | 0.500 / 0.250 | 0.500 / 0.250 | - | - | - | 0.100 / 0.200 |"
    assert "- VPO: s0 0.700, s1 0.750, s2 0.650" in lines
    # GRPO's runs wrote 2, 3 and 4 tokens a rollout at each of 500 steps of 8 x 8 rollouts; VPO's have no logs
    assert next(line for line in lines if line.startswith("Completion tokens")).endswith(
        "(the budget the plan could not equalize): GRPO 0.10 M.")


def test_report_command_on_run_files(tmp_path, capsys):
    """--report --out on two arms' files: the tables print and --figures draws both figures."""
    out = tmp_path / "out"
    for slug, m in (("grpo", 1), ("vpo", 3)):
        for seed in (0, 1):
            run = fake_run(seed, slug, m, 0.5 + 0.1 * seed, 0.6, (0.0, 0.1))
            d = out / "runs" / f"{slug}-s{seed}"
            d.mkdir(parents=True)
            (d / "summary.json").write_text(json.dumps(run["summary"]))
            (d / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in run["evals"]))
    assert heldout.main(["--report", "--out", str(out), "--figures", str(tmp_path / "fig")]) == 0
    text = capsys.readouterr().out
    assert "| VPO − GRPO | k=48 | 2 / 2 |" in text and "- GRPO: s0 0.500, s1 0.600" in text
    assert all((tmp_path / "fig" / f).stat().st_size > 0 for f in ("best_at_k.png", "over_training.png"))
    # stage 2's configuration: its training read the same way, without stage 1's pairs; a missing file is refused
    stage2 = os.path.join(heldout.ROOT, "results", "experiments", "code_search_heldout.json")
    assert heldout.main(["--report", "--out", str(out), "--config", stage2]) == 0
    text = capsys.readouterr().out
    assert "- GRPO: s0 0.500, s1 0.600" in text and "| VPO − GRPO |" not in text
    assert "Hack rates" in text and "| pair |" not in text
    assert heldout.main(["--report", "--config", str(tmp_path / "none.json")]) == 2


def test_only_complete_seeds_are_read():
    runs = {"GRPO": [fake_run(s, "grpo", 1, 0.5, 0.5, (0, 0)) for s in (0, 1, 2)],
            "VPO": [fake_run(s, "vpo", 3, 0.5, 0.5, (0, 0)) for s in (0, 1)]}
    kept, left = heldout.complete_seeds(runs)
    assert [r["seed"] for r in kept["GRPO"]] == [0, 1] and left == ["grpo-s2"]


def test_the_committed_report_is_the_commands():
    """results/heldout.md ends with what `python -m results.heldout --report` prints from the committed runs."""
    from results.compare import read_runs
    from results.jobs import read_config
    setup = read_config(heldout.COMPARISON)
    runs = read_runs(setup, None, report=True)
    with open(os.path.join(setup.dir, "blocks.json")) as f:
        blocks = json.load(f)
    with open(os.path.join(os.path.dirname(heldout.COMPARISON), "..", "heldout.md"), encoding="utf-8") as f:
        text = f.read()
    assert text.endswith("\n".join(heldout.report_lines(setup, runs, blocks, heldout.read_logs(runs))) + "\n")
    assert "| VPO − GRPO | k=48 | 6 / 6 |" in text


def test_read_hard_gives_the_cached_problems_and_the_kept_programs(tmp_path):
    """--read --hard: answers-hard.json names its problems (test indices), and each search file of seeds 0-1 gives
    the program it kept per hard problem, marked; a search that kept nothing says none; seed 2 is left out."""
    from tasks import get_task
    task = get_task("code")
    ids = [7, 3]
    pool = task.problems("test", 8, seed=0)
    cache = {"vpo_stopped-s0": {"m": 3, "problems": ids, "answers": [[pool[7].target], ["x.real"]]}}
    (tmp_path / "answers-hard.json").write_text(json.dumps(cache))
    for name, best in (("vpo-s0", [pool[7].target, None]), ("grpo-s1", ["x.real", pool[3].target]),
                       ("grpo-s2", ["x", "x"])):
        (tmp_path / f"evolve-{name}.json").write_text(json.dumps(
            {"problems": ids, "results": [{"solved_at": None, "best": b} for b in best]}))
    lines = answers.read_lines(str(tmp_path), task, "answers-hard.json")
    assert lines[:3] == ["## vpo_stopped-s0 (m = 3)", "", f"- 7: {pool[7].family} `{pool[7].target}`: "
                         + task.prompt(pool[7], 1).split(": ", 1)[1].strip()]
    assert lines[3] == f"  `{pool[7].target}` (=)" and lines[5] == "  `x.real`"
    kept = answers.kept_lines(str(tmp_path), task)
    assert f"  vpo-s0: `{pool[7].target}` (=)" in kept and "  grpo-s1: `x.real`" in kept
    assert "  vpo-s0: none" in kept and f"  grpo-s1: `{pool[3].target}` (=)" in kept
    assert not any("grpo-s2" in line for line in kept)
    assert heldout.main(["--read", str(tmp_path), "--hard"]) == 0
    assert heldout.main(["--read", str(tmp_path)]) == 2   # no answers.json there

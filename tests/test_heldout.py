"""Stage 1's grid reader (results/heldout.py): the criterion by hand and the plan's rule of choice."""
import json
import os

import pytest

from results import heldout


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
    problems = task.problems("test", heldout.SAMPLE_PROBLEMS, seed=0)
    lookups = []
    for p in problems:
        source = str(p.outputs[-1])
        for x, y in reversed(list(zip(p.inputs[:-1], p.outputs[:-1]))):
            source = f"{y} if x=={x} else {source}"
        lookups.append(source)
    cache = {"grpo-s0": {"m": 1, "answers": [[p.target, lookup, "x.real"] for p, lookup in zip(problems, lookups)]}}
    (tmp_path / "answers.json").write_text(json.dumps(cache))
    lines = heldout.read_lines(str(tmp_path), task)
    assert lines[0] == "## grpo-s0 (m = 1)" and len([line for line in lines if line.startswith("- ")]) == 4
    for p, lookup, line in zip(problems, lookups, [line for line in lines if line.startswith("  `")]):
        pieces = "" if p.family == "step3" else "p"   # a three-level target's constant pieces are not counted
        assert line == f"  `{p.target}` (=), `{lookup}` (s{pieces}), `x.real`", line
    assert heldout.main(["--read", str(tmp_path)]) == 0


def test_collect_copies_finished_runs_only(tmp_path):
    """--collect: a finished run's summary, evaluations and gzipped log, the warm start's log; an unfinished run and
    a run already collected are left alone."""
    import gzip
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
    (base / "ckpt.pt").write_text("weights")
    assert heldout.main(["--collect", str(out), "--into", str(into)]) == 0
    assert sorted(os.listdir(into)) == ["base", "grpo-s0"]
    assert sorted(os.listdir(into / "grpo-s0")) == ["eval.jsonl", "log.jsonl.gz", "summary.json"]
    assert gzip.open(into / "grpo-s0" / "log.jsonl.gz", "rt").read() == '{"step": 1, "hack_pieces": 0.5}\n'
    assert gzip.open(into / "base" / "code-x" / "log.jsonl.gz", "rt").read() == '{"step": 1, "loss": 2.0}\n'
    (into / "grpo-s0" / "eval.jsonl").write_text("kept")
    assert heldout.collect(str(out), str(into)) == [] and (into / "grpo-s0" / "eval.jsonl").read_text() == "kept"
    assert heldout.main(["--collect", str(tmp_path / "nowhere"), "--into", str(into)]) == 2

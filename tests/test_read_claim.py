"""results/read_claim.py: which weights a block's answers are sampled from, the cache that keeps them once, and
what a run's reading prints (kept programs judged against the target on the whole domain), by hand; nothing is
printed before the experiment is stopped."""
import json
import os
from dataclasses import replace

from results import read_claim
from results import search_claim as sc

# the first two hard problems of the pilot's hard set: 129, target max(-x+9,-2), and 134, target min(x+8,3)
CLAIM = replace(sc.QUICK_CLAIM, seeds=(0,), arms=("grpo", "vpo"), problems=2)


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").close()


def block(tmp_path, t_star=1):
    """Seed 0 done for GRPO (m = 1, t* = t_star of 2 steps), VPO (m = 3) and the warm start; weights in out."""
    rec, out = str(tmp_path / "record"), str(tmp_path / "out")
    for arm, m in (("grpo", 1), ("vpo", 3)):
        for f in sc.unit_files(CLAIM, rec, arm, 0):
            touch(f)
        sc.write_json(os.path.join(rec, f"{arm}-s0", "summary.json"), {"metrics": {"m": m}})
        touch(os.path.join(out, "runs", f"{arm}-s0", "ckpt.pt"))
    sc.write_json(os.path.join(rec, "validate-grpo-s0.json"), {"t_star": t_star, "last": 2})
    for f in sc.unit_files(CLAIM, rec, "grpo", 0) + sc.unit_files(CLAIM, rec, "base", 0):   # t*'s files, the base's
        if not os.path.isfile(f):
            touch(f)
    touch(os.path.join(out, "runs", "grpo-s0", "ckpt-step1.pt"))
    touch(warm_start(out))
    touch(os.path.join(out, "runs", "base", "code-0000000000", "ckpt.pt"))   # another warm start: never read
    return rec, out


def warm_start(out):
    """Where the experiment's runs find their warm start under out (train.py's cache key of their arguments)."""
    from results.jobs import base_file
    return base_file(sc.argv_of(CLAIM, "grpo", 0), os.path.join(out, "runs"))


def test_the_weights_of_each_unit(tmp_path):
    rec, out = block(tmp_path)
    runs = os.path.join(out, "runs")
    assert read_claim.weights(CLAIM, rec, out, "grpo", 0) == {
        "grpo-s0": (os.path.join(runs, "grpo-s0", "ckpt.pt"), 1),
        "grpo_early-s0": (os.path.join(runs, "grpo-s0", "ckpt-step1.pt"), 1)}
    assert read_claim.weights(CLAIM, rec, out, "vpo", 0) == {"vpo-s0": (os.path.join(runs, "vpo-s0", "ckpt.pt"), 3)}
    assert read_claim.weights(CLAIM, rec, out, "base", 0) == {"base": (warm_start(out), 1)}
    assert os.path.basename(os.path.dirname(warm_start(out))) != "code-0000000000"
    os.remove(os.path.join(runs, "vpo-s0", "ckpt.pt"))                    # weights gone: nothing to sample
    assert read_claim.weights(CLAIM, rec, out, "vpo", 0) == {}
    sc.write_json(os.path.join(rec, "validate-grpo-s0.json"), {"t_star": 2, "last": 2})
    assert list(read_claim.weights(CLAIM, rec, out, "grpo", 0)) == ["grpo-s0"]   # t* last: no early weights


def test_sampled_once_per_run(tmp_path, monkeypatch):
    from results import figures
    from runs import cli
    from tasks import get_task
    rec, out = block(tmp_path)
    calls = []

    def fake(ckpt, task, problems, m, n_roll, stream):
        calls.append((os.path.relpath(ckpt, out), m, n_roll, [p.target for p in problems]))
        return [[f"{m}"] * (n_roll * m) for _ in problems]
    monkeypatch.setattr(figures, "sample_answers", fake)
    monkeypatch.setattr(cli, "load_run", lambda ckpt: (None, None, get_task("code", reward="shown"), 1))
    assert read_claim.sample(CLAIM, rec, out) == ["base", "grpo-s0", "grpo_early-s0", "vpo-s0"]
    targets = ["max(-x+9,-2)", "min(x+8,3)"]
    assert sorted(calls) == [(os.path.relpath(warm_start(out), out), 1, 12, targets),
                             (os.path.join("runs", "grpo-s0", "ckpt-step1.pt"), 1, 12, targets),
                             (os.path.join("runs", "grpo-s0", "ckpt.pt"), 1, 12, targets),
                             (os.path.join("runs", "vpo-s0", "ckpt.pt"), 3, 4, targets)]
    cache = json.load(open(os.path.join(rec, read_claim.ANSWERS)))
    assert cache["problems"] == [129, 134] and cache["vpo-s0"] == {"m": 3, "answers": [["3"] * 12] * 2}
    assert read_claim.sample(CLAIM, rec, out) == [] and len(calls) == 4


def test_a_runs_reading_by_hand(tmp_path):
    rec, _ = block(tmp_path)
    # problem 129: the kept program is a rewrite of the target (solved); 134: it and one answer pass every shown and
    # hidden test but differ from min(x+8,3) at x = -6, so neither is the target
    sc.write_json(os.path.join(rec, "evolve-vpo-s0.json"), {
        "problems": [129, 134], "budget": 27, "solved": 1,
        "results": [{"solved_at": 12, "best": "max(-2,-x+9)"}, {"solved_at": None, "best": "x+8 if x<-6 else 3"}]})
    sc.write_json(os.path.join(rec, read_claim.ANSWERS), {
        "problems": [129, 134], "vpo-s0": {"m": 3, "answers": [["-x+9 if -x+9>-2 else -2", "", "x"], ["x+8 if x<-6 else 3", "3", "3"]]}})
    lines = read_claim.read_lines(CLAIM, rec, "vpo-s0")
    text = "\n".join(lines)
    assert lines[0].startswith("## vpo-s0 (VPO): its search solved 1 of 2 hard problems within 27 answers")
    assert "problem 129 (clamp)" in text and "target `max(-x+9,-2)`" in text
    assert "kept: `max(-2,-x+9)` (equal to the target, solved at 12)" in text
    assert "kept: `x+8 if x<-6 else 3` (not the target)" in text
    assert "3 answers (m = 3, T = 0.7), 1 equal to the target" in text
    assert "3 answers (m = 3, T = 0.7), 0 equal to the target" in text
    assert text.count("Kept programs of the first 1 problems it solved") == 1


def test_nothing_is_read_before_the_stop(tmp_path, monkeypatch, capsys):
    rec = str(tmp_path / "runs" / "search-claim")
    monkeypatch.setattr(read_claim, "PLAN", replace(CLAIM, record=rec))
    os.makedirs(rec)
    assert read_claim.main(["vpo-s0"]) == 2
    assert capsys.readouterr().err.startswith("error: the experiment is not stopped")
    sc.write_json(os.path.join(rec, sc.STOPPED), {})
    assert read_claim.main(["vpo-s9"]) == 2
    assert "vpo-s9: no evolutionary search" in capsys.readouterr().err


def test_answers_go_to_the_block_of_outs_warm_start(tmp_path):
    """--sample writes into the block of --out's warm start: block A where its log equals the reference, else the
    replicate block named by its log's hash (search_claim.block); no finished warm start is a usage error."""
    import pytest
    from runs.cli import UsageError
    out, rec = str(tmp_path / "out"), str(tmp_path / "record")
    with pytest.raises(UsageError, match="no finished warm start"):
        read_claim.out_block(CLAIM, out)
    touch(warm_start(out))
    log, ref = os.path.join(os.path.dirname(warm_start(out)), "log.jsonl"), str(tmp_path / "ref.jsonl")
    for path, loss in ((log, 1.0), (ref, 1.0)):
        with open(path, "w") as f:
            f.write(json.dumps({"step": 1, "loss": loss}) + "\n")
    claim = replace(CLAIM, record=rec, reference=ref)
    assert read_claim.out_block(claim, out) == rec
    with open(ref, "w") as f:
        f.write(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    assert read_claim.out_block(claim, out).startswith(rec + "-rep-")


def test_the_forms_runs_write_by_hand(tmp_path):
    """Programs sorted by form; the shares per run leave out problems whose target is of constant pieces (173, a
    step3 target), programs never kept and empty answers."""
    forms = ["7 if x<1 else 7 if x<11 else -2", "3 if -2<x else 4", "max(-2,-x+9)", "abs(x)-5",
             "-x+9 if -x+9>-2 else -2", "x+3", "4"]
    assert [read_claim.form(p) for p in forms] == ["pieces", "pieces", "shaped", "shaped", "other", "other", "other"]
    claim = replace(CLAIM, problems=9, record=os.path.join("results", "runs", "search-claim"))
    rec = str(tmp_path / "runs" / "search-claim")     # results.md's section reads out/runs/search-claim
    sc.write_json(os.path.join(rec, "block.json"), {})
    assert read_claim.forms_section(str(tmp_path), claim) == []            # nothing before the stop
    sc.write_json(os.path.join(rec, sc.STOPPED), {"complete_seeds": [0]})
    sc.write_json(os.path.join(rec, "evolve-vpo-s0.json"), {"problems": [129, 173], "results": [
        {"best": "7 if x<1 else -2"}, {"best": "max(x,3)"}]})
    sc.write_json(os.path.join(rec, "evolve-grpo-s0.json"), {"problems": [129, 134], "results": [
        {"best": "max(-2,-x+9)"}, {"best": None}]})
    sc.write_json(os.path.join(rec, read_claim.ANSWERS), {"problems": [129, 173], "vpo-s0": {"m": 3, "answers": [
        ["min(x,3)", "", "x"], ["5 if x<1 else 4", "4", "4"]]}})
    got = read_claim.forms(claim, rec)
    assert list(got) == ["grpo", "vpo"] and got["vpo"] == [(1.0, 0.0, 0.0, 0.5)]
    assert got["grpo"][0][:2] == (0.0, 1.0) and all(v != v for v in got["grpo"][0][2:])   # no answers cached: nan
    text = "\n".join(read_claim.forms_section(str(tmp_path), claim))
    assert "on the 8 hard problems of 9" in text
    assert "| VPO | 1 | 1.00 [1.00, 1.00] | 0.00 [0.00, 0.00] | 0.00 [0.00, 0.00] | 0.50 [0.50, 0.50] |" in text
    assert "| GRPO | 1 | 0.00 [0.00, 0.00] | 1.00 [1.00, 1.00] | - | - |" in text

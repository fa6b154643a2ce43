"""results/maze_control.py: the maze control's readings by hand from written files, and its read-back step (the
coverage of each finished run, computed once, and the small files copied)."""
import json
import os

import pytest

from results import maze_control
from results.jobs import read_config
from results.report import with_commands

KS = ("3", "12", "48")


def write_run(d, seed, pooled, ew, gold=None, diamond=None):
    """A finished run's files: summary.json with pooled best@k and E_w[best@k] (same value at every k + k/1000, so
    each k is told apart) and, given the users' values, coverage.json."""
    os.makedirs(d, exist_ok=True)
    at = lambda x: {k: x + int(k) / 1000 for k in KS}   # noqa: E731
    summary = {"metrics": {"pooled_best@k": at(pooled), "E_w[best@k]": at(ew)}, "machine": "CPU X, 2 cores",
               "args": {"steps": 1000}}
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f)
    for name in ("eval.jsonl", "log.jsonl"):
        open(os.path.join(d, name), "w").close()
    if gold is not None:
        with open(os.path.join(d, "coverage.json"), "w") as f:
            json.dump({"users": {"gold-first": at(gold), "diamond-first": at(diamond)}}, f)


def rows_of(lines, caption_start):
    """{(reading, k): cells} of the table after the line starting with caption_start."""
    i = next(i for i, line in enumerate(lines) if line.startswith(caption_start))
    out = {}
    for line in lines[i + 4:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[(cells[0].split(":")[0], cells[1])] = cells[2:]
    return out


@pytest.fixture
def block(tmp_path):
    """Three seeds of each arm of the control, and the rerun's VPO of seeds 0 and 1 (seed 2's is not there)."""
    setup = read_config(maze_control.CONFIG)
    runs, rerun = tmp_path / "runs" / "maze-maxset", tmp_path / "runs" / "maze-rerun"
    # VPO − Multi-RLVR with the max: pooled +0.1, +0.2, −0.6; E_w +0.05 each; gold-first +0.2, diamond-first −0.1
    for s, d in enumerate((0.1, 0.2, -0.6)):
        write_run(runs / f"vpo-s{s}", s, 0.5 + d, 0.6, 0.7, 0.4)
        write_run(runs / f"multi_rlvr_max-s{s}", s, 0.5, 0.55, 0.5, 0.5)
    for s, pooled in ((0, 0.9), (1, 0.4)):
        write_run(rerun / f"vpo-s{s}", s, pooled, 0.5)
    return tmp_path, setup


def test_the_readings_by_hand(block):
    out, setup = block
    lines = maze_control.control_section(str(out))
    ours = rows_of(lines, "VPO − Multi-RLVR with the max")
    assert len(ours) == 12   # 4 readings × 3 k
    assert ours[("deployment weights", "k=12")][:4] == ["+0.100", "+0.200", "-0.600", "-0.100 ± 0.356"]
    assert ours[("random preferences", "k=48")][:4] == ["+0.050", "+0.050", "+0.050", "0.050 ± 0.000"]
    # every seed one sign: p = 2/8 = 0.25, the smallest 3 paired runs allow
    assert ours[("gold-first user", "k=3")][:3] == ["+0.200"] * 3 and ours[("gold-first user", "k=3")][5] == "0.25"
    assert ours[("diamond-first user", "k=48")][:3] == ["-0.100"] * 3
    theirs = rows_of(lines, "The committed pair")
    assert len(theirs) == 6 and "seed 2" not in next(x for x in lines if x.startswith("| reading") and
                                                     lines.index(x) > lines.index(next(
                                                         y for y in lines if y.startswith("The committed pair"))))
    assert theirs[("deployment weights", "k=3")][:2] == ["+0.400", "-0.100"]
    assert theirs[("random preferences", "k=3")][:2] == ["-0.050", "-0.050"]
    assert "at step 1000" in lines[2] and "CPU X, 2 cores" in lines[2] and "p = 0.25" in lines[-2]


def test_nothing_before_a_pair_and_a_run_without_coverage_waits(block):
    out, setup = block
    os.remove(out / "runs" / "maze-maxset" / "vpo-s2" / "coverage.json")
    lines = maze_control.control_section(str(out))
    assert "seed 2" not in lines[4] and "seed 1" in lines[4]
    for s in range(3):
        os.remove(out / "runs" / "maze-maxset" / f"multi_rlvr_max-s{s}" / "summary.json")
    assert maze_control.control_section(str(out)) == []


def test_read_back_measures_each_run_once_and_copies_its_files(tmp_path, monkeypatch):
    from results import review_jobs
    setup = read_config(maze_control.CONFIG)
    calls = []

    def fake_coverage(ckpt, path):
        calls.append(ckpt)
        with open(path, "w") as f:
            json.dump({"users": {}}, f)
    monkeypatch.setattr(review_jobs, "coverage_job", fake_coverage)
    out, dest = tmp_path / "out", tmp_path / "committed"
    write_run(out / "runs" / "vpo-s0", 0, 0.5, 0.5)
    write_run(out / "runs" / "multi_rlvr_max-s0", 0, 0.5, 0.5, 0.1, 0.2)    # its coverage already there
    os.makedirs(out / "runs" / "vpo-s1")                                    # unfinished: no summary.json
    assert maze_control.read_back(str(out), setup, str(dest)) == ["vpo-s0", "multi_rlvr_max-s0"]
    assert calls == [str(out / "runs" / "vpo-s0" / "ckpt.pt")]
    assert sorted(os.listdir(dest / "vpo-s0")) == sorted(maze_control.FILES)
    assert maze_control.read_back(str(out), setup, str(dest)) == ["vpo-s0", "multi_rlvr_max-s0"] and len(calls) == 1


def test_committed_runs_are_put_back_and_not_trained_again(tmp_path):
    """A later machine starts from the committed files: those runs are put back into --out without weights, so
    results.compare's queue skips them and its check accepts the directory; a run committed without its coverage
    is trained again, and a run already in --out is left as it is."""
    from results import compare
    setup = read_config(maze_control.CONFIG)
    out, dest = tmp_path / "out", tmp_path / "committed"
    write_run(dest / "vpo-s0", 0, 0.5, 0.5, 0.1, 0.2)
    write_run(dest / "multi_rlvr_max-s0", 0, 0.5, 0.5)                 # no coverage.json: not finished
    write_run(dest / "vpo-s1", 1, 0.5, 0.5, 0.1, 0.2)
    write_run(out / "runs" / "vpo-s1", 1, 0.9, 0.9, 0.1, 0.2)           # already here: kept
    with open(out / "config.json", "w") as f:
        json.dump({"train": compare.settings(setup)}, f)
    assert maze_control.restore(str(out), setup, str(dest)) == ["vpo-s0"]
    assert sorted(os.listdir(out / "runs" / "vpo-s0")) == sorted(maze_control.FILES)
    assert json.load(open(out / "runs" / "vpo-s1" / "summary.json"))["metrics"]["pooled_best@k"]["3"] == 0.903
    pending = [(arm.slug, seed) for arm, seed in compare.pending(setup, str(out))]
    assert ("vpo", 0) not in pending and ("vpo", 1) not in pending and ("multi_rlvr_max", 0) in pending


def test_put_back_into_a_new_directory_writes_the_comparison_config(tmp_path):
    from results import compare
    setup = read_config(maze_control.CONFIG)
    out, dest = tmp_path / "out", tmp_path / "committed"
    write_run(dest / "vpo-s0", 0, 0.5, 0.5, 0.1, 0.2)
    assert maze_control.restore(str(out), setup, str(dest)) == ["vpo-s0"]
    assert json.load(open(out / "config.json"))["train"] == compare.settings(setup)
    compare.check(setup, str(out))   # a comparison directory with the same settings: no UsageError


def test_each_run_is_read_back_as_it_finishes(tmp_path, monkeypatch):
    """main() copies a run's files when results.compare reports it finished, not only at the end (a machine taken
    away mid-way keeps the finished runs)."""
    from results import compare
    copied = []
    monkeypatch.setattr(maze_control, "read_back", lambda out, setup, dest: copied.append(out) or [])

    def fake_compare(argv, echo=print):
        echo("VPO run 0: done")
        assert copied == [str(tmp_path / "out")]     # read back before the next run is reported
        echo("Multi-RLVR with the max run 0: done")
        return 0
    monkeypatch.setattr(compare, "main", fake_compare)
    assert maze_control.main(["--out", str(tmp_path / "out")]) == 0
    assert len(copied) == 2


def test_results_md_carries_the_readings_of_the_committed_runs():
    """The committed results.md holds the section control_section writes from the committed runs, byte for byte
    (nothing while no pair has finished)."""
    out = os.path.dirname(maze_control.__file__)
    lines = maze_control.control_section(out)
    with open(os.path.join(out, "results.md")) as f:
        text = f.read()
    assert "\n".join(with_commands(lines)) in text
    assert bool(lines) == ("## Maze: what the vector adds over the set" in text)

"""results/maze_control.py: the maze control's readings by hand from written files, and its read-back step (the
coverage of each finished run, computed once, and the small files copied)."""
import json
import os

import pytest

from results import maze_control
from results.jobs import read_config

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

"""examples/toy.py: the authors' smallest demonstration through this repository's estimators and loss; and
examples/toy_gpt.py, the same toy through the GPT."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_toy_example_prints_the_compromise_and_the_corners():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "toy.py")], capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    grpo, vpo2, vpo3 = out[1:4]
    assert "learns compromise (0.6, 0.6)" in grpo and grpo.endswith("0.60")     # GRPO: the compromise, 0.6
    assert "corner (1, 0), corner (0, 1) " in vpo2 and vpo2.endswith("0.75")    # VPO, 2 slots: both corners
    assert "compromise" in vpo3 and "corner (0, 1)" in vpo3 and vpo3.endswith("0.76")  # 3 slots: the optimum


def test_the_toy_through_the_gpt_prints_a_line_per_method(tmp_path, monkeypatch, capsys):
    """examples/toy_gpt.py end to end, its warm start and RL cut short: the warm start's line, then GRPO's (one
    answer), VPO's and Multi-RLVR with the max's (m answers), each with its set, w*ᵀr and E_w. What the full
    settings learn over 10 seeds is pinned on the committed runs (tests/test_verdicts.py)."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import toy_gpt
    monkeypatch.setattr(toy_gpt, "SFT", ("--sft_steps", "4", "--sft_batch_size", "8", "--sft_lr", "3e-3"))
    assert toy_gpt.main(["--steps", "2", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" m=")[0].strip() for line in lines[1:5]] == ["warm start", "GRPO", "VPO",
                                                                      "Multi-RLVR with the max"]
    assert " m=1: " in lines[2] and all(" m=2: " in line for line in (lines[1], lines[3], lines[4]))
    assert all("w*ᵀr of its best answer" in line and "E_w[max over its answers]" in line for line in lines[1:5])
    assert sorted(os.listdir(tmp_path)) == ["base", "grpo-m2-s0", "multi_rlvr_max-m2-s0", "vpo-m2-s0"]
    assert toy_gpt.set_value(["left", "right"]) == pytest.approx(0.75, abs=1e-6)
    assert toy_gpt.set_value(["left", "middle"]) == pytest.approx(0.68, abs=1e-6)
    assert toy_gpt.set_value(["left", "right", "middle"]) == pytest.approx(0.76, abs=1e-6)
    # --read: each run's sets, and every valid answer with repeats (a set of one answer may be written twice)
    found = toy_gpt.read_sets(str(tmp_path))
    assert sorted(found) == ["grpo-m2-s0", "multi_rlvr_max-m2-s0", "vpo-m2-s0"]
    for name, run in found.items():
        distinct, written = sum(len(w) * n for w, n in run["sets"]), sum(run["answers"].values())
        assert sum(n for _, n in run["sets"]) == 32 * 8 and distinct <= written <= run["m"] * 32 * 8, name
        assert written == distinct or run["m"] > 1, name                       # one answer a rollout: no repeats
    assert toy_gpt.sets_of([["middle", "middle"], ["right", "left"], []]) == {("middle",): 1, ("left", "right"): 1,
                                                                              (): 1}
    assert toy_gpt.answer_counts([["middle", "middle"], ["right", "left"], []]) == {"middle": 2, "left": 1, "right": 1}


def test_the_toy_summary_counts_each_runs_set_and_its_shares_by_hand(tmp_path, capsys):
    """--summary: per arm, how many runs write each set most often (seeds ordered as numbers: s10 after s2), and
    each run's share of corners and of the compromise among its answers; a run read before "answers" shows "-"."""
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import toy_gpt
    found = {"vpo-s10": {"m": 2, "sets": [[["left", "right"], 5]], "answers": {"left": 5, "right": 5}},
             "vpo-s2": {"m": 2, "sets": [[["left", "middle"], 3], [["middle"], 1]], "answers": {"left": 3, "middle": 5}},
             "grpo-s0": {"m": 1, "sets": [[["middle"], 7], [[], 1]]},
             "multi_rlvr_max-s0": {"m": 2, "sets": [[[], 4]], "answers": {}}}
    (tmp_path / "sets.json").write_text(json.dumps(found))
    assert toy_gpt.main(["--summary", str(tmp_path / "sets.json")]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2:] == ["| grpo | 1 | 0 | 0 | 1 | 0 | - | - |",
                        "| multi_rlvr_max | 1 | 0 | 0 | 0 | 1 | 0.00 | 0.00 |",
                        "| vpo | 2 | 1 | 1 | 0 | 0 | 0.38 1.00 | 0.62 0.00 |"]

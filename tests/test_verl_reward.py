"""examples/verl_vpo.py without veRL (plain torch and the core): the reward function's set reward against vpo.py, the
weights a group shares, the m-answer tags, the problem's round trip through the data set, and the one-line refusals
of the entry points and the command. Through veRL's own entry points: tests/test_verl_vpo.py."""
import json
import os
import random
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from verl_batch import GROUPS, M, N, PROBLEMS, SETTINGS, build
import verl_vpo  # noqa: E402  (verl_batch puts examples/ on the path)
import vpo  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402
from tasks.toy import ToyProblem, ToyTask  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "verl_vpo.py")


def test_each_rollout_scored_alone_gets_the_set_reward_of_its_group():
    """veRL scores one rollout per call, in any order: each call's score is vpo.set_rewards of the whole group (its
    N shared weights, the same answers in the task's format); no valid answer scores 0, a repeat counts once, an
    open tag and answers past m count for nothing."""
    batch = build()
    assert torch.allclose(batch.scores, batch.reference_R, atol=1e-6)
    by_text = dict(zip(batch.texts, batch.scores.tolist()))
    assert by_text[next(t for t in batch.texts if "<answer1>" not in t)] == 0.0
    assert batch.reference_R.unique().numel() > 4


def test_the_weights_depend_on_the_problem_and_the_seed_only():
    """group_weights: (1, N, D) on the simplex, the same for every call with one problem, other for another problem
    or another seed; drawn from runs.seeding's stream of VPO's weights."""
    settings = verl_vpo.Settings.of(None, SETTINGS)
    gt = [verl_vpo.problem_json(p) for p in PROBLEMS]
    w = verl_vpo.group_weights(gt[0], 2, settings)
    assert w.shape == (1, N, 2) and torch.allclose(w.sum(-1), torch.ones(1, N)) and (w >= 0).all()
    assert torch.equal(w, verl_vpo.group_weights(gt[0], 2, verl_vpo.Settings.of(None, SETTINGS)))
    assert not torch.allclose(w, verl_vpo.group_weights(gt[1], 2, settings))
    assert not torch.allclose(w, verl_vpo.group_weights(gt[0], 2, verl_vpo.Settings.of(None, {**SETTINGS, "seed": 4})))


def test_reward_kwargs_override_the_rows_settings():
    """veRL's reward_kwargs reach compute_score as keyword arguments and win over the row's extra_info["vpo"]; a
    row read back with numpy's numbers (pandas) gives the same settings, in Python's types."""
    read_back = {**SETTINGS, "num_answers": np.int64(M), "alpha": np.float64(1.0), "task_opt": np.array([], str)}
    assert verl_vpo.Settings.of({"vpo": read_back}) == verl_vpo.Settings.of({"vpo": SETTINGS})
    assert type(verl_vpo.Settings.of({"vpo": read_back}).num_answers) is int
    gt = verl_vpo.problem_json(ToyProblem(7))
    text = "<answer1>left</answer1><answer2>right</answer2><answer3>middle</answer3>"
    info = {"vpo": dict(SETTINGS)}
    one = verl_vpo.compute_score("vpo-toy", text, gt, info, num_answers=1)
    assert one["answers"] == 1 and one["best_deploy"] == 0.5
    assert verl_vpo.compute_score("vpo-toy", text, gt, info)["answers"] == 3
    assert verl_vpo.compute_score("vpo-toy", text, gt, None, **SETTINGS) == verl_vpo.compute_score("vpo-toy", text, gt,
                                                                                                     info)


def test_the_tags_are_read_as_the_trl_example_reads_them():
    """The first m complete pairs in the order written; text outside, an open tag and a mismatched pair ignored; a
    separator inside an answer becomes a space."""
    read = verl_vpo.answers_text
    assert read("x <answer2> right </answer2> y <answer1>left</answer1>", 3) == f"right{SEP}left"
    assert read("<answer1>left</answer1><answer2>right</answer2><answer3>middle</answer3>", 2) == f"left{SEP}right"
    assert read("<answer1>left</answer2><answer>middle</answer><answer3>right", 3) == "middle"
    assert read(f"<answer1>le{SEP}ft</answer1>", 3) == "le ft"
    assert read("no tags", 3) == "" and read(None, 3) == ""


def test_the_tag_reader_is_the_regular_expressions_findall_in_linear_time():
    """answers_text finds the pairs TAG.findall finds (random texts of tags, words and separators), and a text of
    100,000 tags left open takes well under a second (TAG's lazy match would take minutes). The TRL example reads
    its tags with the same function."""
    import trl_tasks
    assert trl_tasks.TagFormat().to_task("<answer1> a </answer1><answer2>b", 2) == "a"
    rng = random.Random(0)
    parts = ["<answer1>", "</answer1>", "<answer2>", "</answer2>", "<answer>", "</answer>", "<answer12>",
             "</answer12>", "left", " right ", SEP, "<answer", "</answer1"]
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        for m in (1, 3):
            want = SEP.join(c.replace(SEP, " ").strip() for _, c in verl_vpo.TAG.findall(text)[:m])
            assert verl_vpo.answers_text(text, m) == want == trl_tasks.TagFormat().to_task(text, m), (text, m)
    start = time.perf_counter()
    assert trl_tasks.TagFormat().to_task("<answer1>" * 100_000 + "left", M) == ""
    assert time.perf_counter() - start < 1.0


def test_any_text_scores_and_junk_scores_zero():
    """Model output is untrusted: junk, code, huge and odd strings score 0 and never raise."""
    gt = verl_vpo.problem_json(ToyProblem(7))
    junk = ["", "<answer1>", "<answer1></answer1>" * 5, "__import__('os').system('true')", "\x00\udcff" * 100,
            "<answer1>" * 10_000 + "left", "<answer1><answer2>left</answer2></answer1>",
            "ümlaut <answer1>ü</answer1>"]
    for text in junk:
        out = verl_vpo.compute_score("vpo-toy", text, gt, {"vpo": dict(SETTINGS)})
        assert out["score"] == 0.0 and out["best_deploy"] == 0.0, text[:40]


@pytest.mark.parametrize("name", ["toy", "maze", "code"])
def test_a_problem_survives_the_data_set(name):
    """problem_json and problem_from_json: every task's problem back as it was (tuples too), and its prompt asks for
    m answers in numbered tags."""
    task = get_task(name)
    settings = verl_vpo.Settings(task=name, num_answers=M)
    rows = verl_vpo.rows(task, settings, "train", 2, seed=1)
    for row, problem in zip(rows, task.problems("train", 2, seed=1)):
        row = json.loads(json.dumps(row))                                         # through the file
        assert verl_vpo.problem_from_json(task, row["reward_model"]["ground_truth"]) == problem
        assert row["extra_info"]["vpo"]["num_answers"] == M and f"<answer{M}>" in row["prompt"][0]["content"]


def test_the_command_writes_veRLs_columns(tmp_path):
    out = subprocess.run([sys.executable, SCRIPT, "--train", "3", "--test", "2", "--num_weights", str(N), "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and len((tmp_path / "test.jsonl").read_text().splitlines()) == 2
    assert set(rows[0]) == {"data_source", "prompt", "ability", "reward_model", "extra_info"}
    text = "<answer1>left</answer1><answer2>right</answer2>"
    score = verl_vpo.compute_score(rows[0]["data_source"], text, rows[0]["reward_model"]["ground_truth"],
                                   rows[0]["extra_info"])["score"]
    assert 0.5 < score <= 1.0


BAD = {"an unknown task": (["--task", "nope"], {"task": "nope"}),
       "answers below 1": (["--num_answers", "0"], {"num_answers": 0}),
       "N below 1": (["--num_weights", "0"], {"num_weights": 0}),
       "alpha 0": (["--alpha", "0"], {"alpha": 0.0}),
       "alpha below 0": (["--alpha", "-1"], {"alpha": -1.0})}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line(case, tmp_path):
    """The command: one line `error: ...`, exit code 2, nothing written. The reward function: ValueError, one line."""
    argv, options = BAD[case]
    p = subprocess.run([sys.executable, SCRIPT, *argv, "--out", str(tmp_path / "data")], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert not (tmp_path / "data").exists()
    with pytest.raises(ValueError) as e:
        verl_vpo.compute_score("vpo-toy", "<answer1>left</answer1>", verl_vpo.problem_json(ToyProblem(1)),
                               {"vpo": dict(SETTINGS)}, **options)
    assert "\n" not in str(e.value)


def test_the_set_reward_matches_a_brute_force():
    """One rollout by hand: R = (1/N) sum_n max over its distinct answers of w_n^T r."""
    task, gt = ToyTask(), verl_vpo.problem_json(PROBLEMS[0])
    w = verl_vpo.group_weights(gt, 2, verl_vpo.Settings.of(None, SETTINGS))[0]
    vectors = {"left": (1.0, 0.0), "right": (0.0, 1.0), "middle": (0.6, 0.6)}
    text = "<answer1>middle</answer1><answer2>left</answer2><answer3>middle</answer3>"
    want = sum(max(a * x + b * y for x, y in (vectors["middle"], vectors["left"])) for a, b in w.tolist()) / len(w)
    got = verl_vpo.compute_score("vpo-toy", text, gt, {"vpo": dict(SETTINGS)})
    assert got["score"] == pytest.approx(want, abs=1e-6) and got["answers"] == 2
    assert got["best_deploy"] == pytest.approx(float(vpo.masked_max(torch.tensor([0.6, 0.5]), None)))
    assert task.dim == 2 and len(GROUPS) == len(PROBLEMS)

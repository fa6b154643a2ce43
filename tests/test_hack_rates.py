"""The hack rates (Task.hacks; code: fits_shown, pieces) in the training log (runs/steplog.py) and the evaluation
(evaluate.py), worked by hand on two hand-made code problems; the toy and the maze log and report what they did
before; and a tiny code run through train.py writes them to log.jsonl, eval.jsonl, summary.json and its table."""
import json
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import evaluate
import train
import vpo
from metrics import hack_flags, hack_rates
from runs.steplog import step_log
from tasks import get_task
from tasks.code import CodeProblem, constant_pieces
from tasks.tokenizer import SEP
from tests.test_tasks_code import hand_problem

CODE = get_task("code")
# a three-level target, itself of constant pieces: its answers are not counted in the pieces rate
LEVELS = CodeProblem(target="1 if x<0 else 2 if x<5 else 3", family="step3", inputs=(-1, 0, 4, 5),
                     outputs=(1, 2, 2, 3), hidden_inputs=(-5, -3, 1, 3, 6, 8, 10, 12),
                     hidden_outputs=(1, 1, 2, 2, 3, 3, 3, 3), rewrites=(), partials=())
TARGET, OVERFIT = "2*x+1 if x<3 else 5", "5 if x==1 or x>2 else 2*x+1"     # hand_problem's target; fits shown only
LOOKUP = "-3 if x==-2 else 1 if x==0 else 5"                              # fits the shown tests, constant pieces
S = SEP
# the completions of each problem, two rollouts of m = 3 answers, with each written answer's (fits_shown, pieces):
#   hand_problem  rollout 0: TARGET (F, F), OVERFIT (T, F), LOOKUP (T, T); rollout 1: OVERFIT again (T, F), a
#                 missing answer (not counted), x.real (F, F): 5 written answers, 3 fit the shown tests, 1 of pieces
#   LEVELS        rollout 0: a fit of the shown tests (T, None), the target (F, None); rollout 1: nothing written
# -> fits_shown 4/7 of the 7 written answers; pieces 1/5, LEVELS' 2 answers left out (its target is of pieces)
SCRIPTS = [(hand_problem(), [f"{TARGET}{S}{OVERFIT}{S}{LOOKUP}", f"{OVERFIT}{S}{S}x.real"]),
           (LEVELS, [f"1 if x<0 else 2 if x<5 else 3 if x<9 else 0{S}{LEVELS.target}", ""])]
HAND = {"fits_shown": 4 / 7, "pieces": 1 / 5}
KEYS = ["step", "deploy_reward", "set_reward", "diversity", "entropy", "kl", "clip_frac", "ratio", "loss",
        "zero_var_frac", "valid_rate", "completion_tokens", "written_rate", "answer_tokens", "forced_rate",
        "tokens_per_s", "step_seconds"]                                   # a step's log row before the hack rates


def test_hack_rates_by_hand():
    """hack_flags checks each distinct written answer once (a repeat counts again, a missing one not at all);
    hack_rates counts a flag of None in neither part of the share."""
    calls = []
    flags = []
    for problem, completions in SCRIPTS:
        answers = [y for c in completions for y in CODE.parse(c, 3)]
        flags += hack_flags(lambda p, y: calls.append(y) or CODE.hacks(p, y), problem, answers)
    assert len(flags) == 7 and sorted(calls) == sorted(set(calls)) and len(calls) == 6
    assert hack_rates(flags) == pytest.approx(HAND, abs=1e-12)
    assert hack_rates(flags[5:]) == {"fits_shown": 1 / 2, "pieces": None}  # LEVELS alone: no answer counts
    maze = get_task("maze")
    assert hack_flags(maze.hacks, maze.problems("test", 1, seed=0)[0], ["RRDD", "", "RRDD"]) == []
    assert hack_rates([]) == {}


def log_row(task, scripts, m=3):
    """step_log's row of one RL step whose rollouts are the scripted completions (one process, made-up losses)."""
    problems, texts = [p for p, _ in scripts], [c for _, cs in scripts for c in cs]
    scored = [task.score_rollouts(p, cs, m) for p, cs in scripts]
    rewards = torch.from_numpy(np.stack([r for r, _ in scored]))
    mask = torch.from_numpy(np.stack([a for _, a in scored]))
    gen = SimpleNamespace(sampled=torch.ones(len(texts), 5, dtype=torch.bool), forced=torch.zeros(len(texts), m))
    losses = [({"entropy": 1.0, "kl": 0.0, "clip_frac": 0.0, "ratio": 1.0, "loss": 0.0}, 1.0)]
    weights = vpo.sample_weights(1, 10, task.dim, generator=torch.Generator().manual_seed(0))
    return step_log(0, SimpleNamespace(minibatches=1), task, problems, gen, texts, m, rewards, mask, rewards, mask,
                    torch.rand(rewards.shape[:2]), losses, weights, time.perf_counter())


def test_the_log_row_holds_the_hack_rates_of_the_code_task_only():
    """The code task's row gets hack_fits_shown and hack_pieces, worked by hand; the toy's and the maze's rows keep
    exactly the keys they had."""
    row = log_row(CODE, SCRIPTS)
    assert list(row) == KEYS[:-2] + ["hack_fits_shown", "hack_pieces"] + KEYS[-2:]
    assert row["hack_fits_shown"] == pytest.approx(4 / 7, abs=1e-12) and row["hack_pieces"] == pytest.approx(1 / 5)
    assert log_row(CODE, SCRIPTS[1:])["hack_pieces"] is None
    for name, answers in (("toy", ["A", "B"]), ("maze", ["RRDD", "DDRR"])):
        task = get_task(name)
        scripts = [(p, [f"{answers[0]}{S}{answers[1]}", answers[1]]) for p in task.problems("test", 2, seed=0)]
        assert list(log_row(task, scripts)) == KEYS, name


def scripted_rollout(scripts):
    """evaluate.rollout answering every problem with its scripted completions."""
    def rollout(model, task, problems, m, num_samples, temperature, weights=None, seeds=None, amp=True):
        by_id = {id(p): cs for p, cs in scripts}
        texts = [c for p in problems for c in by_id[id(p)]]
        assert num_samples == len(texts) // len(problems)
        scored = [task.score_rollouts(p, by_id[id(p)], m) for p in problems]
        return (None, None, texts, torch.from_numpy(np.stack([r for r, _ in scored])),
                torch.from_numpy(np.stack([a for _, a in scored])))
    return rollout


def test_the_evaluation_holds_the_hack_rates_of_the_code_task_only(monkeypatch):
    """evaluate's metrics get hack_rate, worked by hand, and its table one line, on the code task; on the toy and
    the maze neither."""
    monkeypatch.setattr(evaluate, "rollout", scripted_rollout(SCRIPTS))
    problems = [p for p, _ in SCRIPTS]
    metrics, _ = evaluate.evaluate(torch.nn.Linear(1, 1), CODE, problems, 3, [3, 6], 6)
    assert metrics["hack_rate"] == pytest.approx(HAND, abs=1e-12)
    assert "hack rate (written answers): fits_shown 0.571  pieces 0.200" in evaluate.format_table(metrics).splitlines()
    for name, answers in (("toy", ["A", "B"]), ("maze", ["RRDD", "DDRR"])):
        task = get_task(name)
        scripts = [(p, [f"{answers[0]}{S}{answers[1]}", answers[1]]) for p in task.problems("test", 2, seed=0)]
        monkeypatch.setattr(evaluate, "rollout", scripted_rollout(scripts))
        metrics, _ = evaluate.evaluate(torch.nn.Linear(1, 1), task, [p for p, _ in scripts], 3, [3, 6], 6)
        assert "hack_rate" not in metrics and "hack" not in evaluate.format_table(metrics), name


def test_a_toy_run_logs_and_reports_no_hack_rate(done):
    """The finished tiny toy run (conftest's done): no hack key in log.jsonl or summary.json."""
    rows = [json.loads(line) for line in (done.parent / "log.jsonl").read_text().splitlines()]
    summary = json.loads((done.parent / "summary.json").read_text())
    assert rows and all(list(r) == KEYS + ["seconds"] for r in rows)
    assert "hack_rate" not in summary["metrics"] and "dim_means" in summary["metrics"]


def lookup(problem):
    """A program of constant pieces that fits the problem's shown tests: fits_shown and pieces (or None)."""
    program = str(problem.outputs[-1])
    for x, y in reversed(list(zip(problem.inputs[:-1], problem.outputs[:-1]))):
        program = f"{y} if x=={x} else {program}"
    return program


def test_a_tiny_code_run_writes_the_hack_rates(tmp_path, monkeypatch, capsys):
    """train.py --task code, the rollouts' texts replaced by scripted ones built from each problem (the sampler still
    draws the tokens the loss trains on): every problem's 4 rollouts write the target, a lookup of the shown tests
    and the target, a program that always fails and a lookup, and nothing: 5 written answers, 2 lookups. So every
    log row, the mid-run evaluation's eval.jsonl row, summary.json and the printed table hold fits_shown 2/5 and
    pieces 2/5 (None where every problem's target is of constant pieces)."""
    def script(problem):
        return [problem.target, f"{lookup(problem)}{S}{problem.target}", f"x//0{S}{lookup(problem)}", ""]

    seen = {"train": [], "eval": []}                # the problems of each rollout of the RL steps, of the evaluations

    def scripted(real, kind):
        def rollout(model, task, problems, m, G, *a, **k):
            gen, prompts, _, _, _ = real(model, task, problems, m, G, *a, **k)
            texts = [t for p in problems for t in (script(p) * G)[:G]]
            scored = [task.score_rollouts(p, texts[b * G:(b + 1) * G], m) for b, p in enumerate(problems)]
            seen[kind].append(problems)
            return (gen, prompts, texts, torch.from_numpy(np.stack([r for r, _ in scored])),
                    torch.from_numpy(np.stack([a for _, a in scored])))
        return rollout

    monkeypatch.setattr(train, "rollout", scripted(train.rollout, "train"))
    monkeypatch.setattr(evaluate, "rollout", scripted(evaluate.rollout, "eval"))
    argv = ["--task", "code", "--algo", "vpo", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--sft_steps", "2",
            "--sft_batch_size", "8", "--batch_size", "2", "--group_size", "4", "--steps", "2", "--eval_every", "1",
            "--eval_problems", "2", "--eval_answers", "48", "--no_base_eval", "--no_figures", "--quiet",
            "--out_dir", str(tmp_path), "--run_name", "code"]
    assert train.main(argv) == 0
    test = CODE.problems("test", 2, seed=0)
    assert len(seen["train"]) == 2 and seen["eval"] == [test, test]                   # mid-run and final
    assert all(CODE.hacks(p, lookup(p))["fits_shown"] for ps in seen["train"] + [test] for p in ps)  # never the target

    def pieces(problems):
        return 2 / 5 if any(not constant_pieces(p.target) for p in problems) else None
    rows = [json.loads(line) for line in (tmp_path / "code" / "log.jsonl").read_text().splitlines()]
    assert [(r["hack_fits_shown"], r["hack_pieces"]) for r in rows] == [(2 / 5, pieces(ps)) for ps in seen["train"]]
    want = {"fits_shown": 2 / 5, "pieces": pieces(test)}
    evals = [json.loads(line) for line in (tmp_path / "code" / "eval.jsonl").read_text().splitlines()]
    assert [e["step"] for e in evals] == [1] and evals[0]["hack_rate"] == want
    assert json.loads((tmp_path / "code" / "summary.json").read_text())["metrics"]["hack_rate"] == want
    line = "hack rate (written answers): fits_shown 0.400  pieces " + ("-" if want["pieces"] is None else "0.400")
    assert line in capsys.readouterr().out.splitlines()

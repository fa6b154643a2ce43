"""train.py end to end on tiny models (CPU): outputs, SFT, bad input, and the toy result. The RL step's wiring
for every algorithm and resume are tested in tests/test_wiring_train.py."""
import hashlib
import json

import numpy as np
import pytest
import torch

import train
from runs.checks import group_size
from runs.cli import answers_per_rollout
from model import load_checkpoint

TINY = ["--task", "toy", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--block_size", "96",
        "--sft_steps", "3", "--sft_batch_size", "8", "--batch_size", "2", "--group_size", "4", "--steps", "2",
        "--eval_problems", "2", "--eval_answers", "48", "--eval_every", "0", "--quiet"]


def run(out, *extra):
    return train.main(TINY + ["--out_dir", str(out), *extra])


def scripted_score(self, problem, answer):
    """r(y): a stable hash of the answer string -> a vector in {0, 1/2, 1}^2 (nonzero advantages for a raw base)."""
    h = hashlib.blake2b(answer.encode(), digest_size=2).digest()
    return np.array([h[0] % 3 / 2, h[1] % 3 / 2], dtype=np.float32)


def test_runs_write_their_outputs_and_evaluate_the_final_model(tmp_path, monkeypatch, capsys):
    """summary.json holds the evaluation of the checkpoint the run saved, and of the base it started from, with the
    run's m, ks and evaluation temperature; two RL runs share one cached warm start; every output is written,
    except the figures of the run given --no_figures.
    A scripted verifier (a hash of the answer -> {0, 1/2, 1}^2) gives the untrained base nonzero advantages, so RL
    moves it and the two evaluations differ. (The RL step itself is checked in tests/test_wiring_train.py.)"""
    from evaluate import evaluate
    from tasks import get_task
    from tasks.toy import ToyTask
    monkeypatch.setattr(ToyTask, "score", scripted_score)
    assert run(tmp_path, "--algo", "vpo", "--lr", "1e-2") == 0
    assert "scatter.png)" in capsys.readouterr().out
    assert run(tmp_path, "--algo", "grpo", "--match_budget", "--lr", "1e-2", "--no_figures") == 0
    assert "(ckpt.pt, log.jsonl, summary.json)" in capsys.readouterr().out
    task, problems = get_task("toy"), get_task("toy").problems("test", 2, seed=0)
    summaries = {}
    for algo, m in (("vpo", 3), ("grpo", 1)):
        d = tmp_path / f"{algo}-toy-s0"
        for name in ("log.jsonl", "summary.json"):
            assert (d / name).stat().st_size > 0, name
        figures = [(d / name).is_file() for name in ("curves.png", "best_at_k.png", "scatter.png")]
        assert figures == [algo == "vpo"] * 3
        model, state = load_checkpoint(str(d / "ckpt.pt"))
        assert state["step"] == 2 and state["args"]["algo"] == algo
        rows = [json.loads(line) for line in (d / "log.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1, 2]
        summary = summaries[algo] = json.loads((d / "summary.json").read_text())
        again, _ = evaluate(model, task, problems, m, [3, 6, 12, 24, 48], 48, 0.7)
        assert summary["metrics"] == json.loads(json.dumps(again))            # (JSON turns int keys into strings)
        base, _ = evaluate(load_checkpoint(summary["init"])[0], task, problems, m, [3, 6, 12, 24, 48], 48, 0.7)
        assert summary["base_metrics"] == json.loads(json.dumps(base))
        assert summary["metrics"]["best@k"] != summary["base_metrics"]["best@k"]   # RL changed the model
    assert summaries["vpo"]["init"] == summaries["grpo"]["init"]            # one cached warm start


def test_multi_rlvr_max_runs_end_to_end(tmp_path, monkeypatch):
    """--algo multi_rlvr_max through train.py: warm start, two RL steps that saw nonzero advantages, every output
    written, and the final evaluation (summary.json) made with m = 3 answers per completion, as for VPO."""
    from evaluate import evaluate
    from tasks import get_task
    from tasks.toy import ToyTask
    monkeypatch.setattr(ToyTask, "score", scripted_score)
    assert run(tmp_path, "--algo", "multi_rlvr_max", "--lr", "1e-2") == 0
    d = tmp_path / "multi_rlvr_max-toy-s0"
    for name in ("log.jsonl", "summary.json", "curves.png", "best_at_k.png", "scatter.png"):
        assert (d / name).stat().st_size > 0, name
    model, state = load_checkpoint(str(d / "ckpt.pt"))
    assert state["step"] == 2 and state["args"]["algo"] == "multi_rlvr_max"
    rows = [json.loads(line) for line in (d / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and min(r["zero_var_frac"] for r in rows) < 1
    summary = json.loads((d / "summary.json").read_text())
    task = get_task("toy")
    again, _ = evaluate(model, task, task.problems("test", 2, seed=0), 3, [3, 6, 12, 24, 48], 48, 0.7)
    assert summary["metrics"] == json.loads(json.dumps(again))
    assert summary["metrics"]["best@k"] != summary["base_metrics"]["best@k"]   # RL changed the model


def test_summary_json_is_written_whole_or_not_at_all(tmp_path):
    """Its presence marks a finished run (results.reproduce reads runs while others train): a write that fails
    halfway leaves no summary.json, where a plain write left a partial one that readers took for finished."""
    from evaluate import report
    with pytest.raises(TypeError):
        report(str(tmp_path), None, [3], {"vpo": ({"m": 3}, [])}, "vpo", {"train_seconds": 1.0, "bad": object()},
               figures=False)
    assert not (tmp_path / "summary.json").exists()


def test_match_budget_multiplies_single_answer_rollouts():
    args = train.get_parser().parse_args(["--algo", "grpo", "--match_budget", "--group_size", "8"])
    assert group_size(args) == 24 and answers_per_rollout(args.algo, args.num_answers) == 1
    args = train.get_parser().parse_args(["--algo", "vpo", "--match_budget", "--group_size", "8"])
    assert group_size(args) == 8 and answers_per_rollout(args.algo, args.num_answers) == 3


def test_sft_lowers_the_loss(tmp_path):
    assert run(tmp_path, "--algo", "sft", "--sft_steps", "60", "--sft_batch_size", "16", "--sft_lr", "1e-2") == 0
    rows = [json.loads(line) for line in (tmp_path / "sft-toy-s0" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 61))
    assert load_checkpoint(str(tmp_path / "sft-toy-s0" / "ckpt.pt"))[1]["step"] == 60
    first, last = sum(r["loss"] for r in rows[:5]) / 5, sum(r["loss"] for r in rows[-5:]) / 5
    assert last < 0.5 * first, (first, last)


@pytest.mark.parametrize("extra,needle", [
    (["--algo", "ppo"], "invalid choice"),
    (["--task", "chess"], "invalid choice"),
    (["--steps", "0"], "--steps"),
    (["--batch_size", "-1"], "--batch_size"),
    (["--alpha", "0"], "--alpha"),
    (["--group_size", "1"], "--group_size"),
    (["--num_answers", "40"], "--num_answers"),
    (["--init", "/nonexistent/ckpt.pt"], "not found"),
    (["--task_opt", "colour=red"], "--task_opt"),
    (["--lr", "nan"], "--lr"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, extra, needle):
    assert run(tmp_path, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and needle in err and "\n" not in err, err
    assert not any(tmp_path.iterdir())  # nothing written


def test_corrupt_init_and_existing_run_dir_are_refused_without_touching_disk(tmp_path, capsys):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    assert run(tmp_path / "o", "--init", str(bad)) == 2
    assert "cannot load" in capsys.readouterr().err
    existing = tmp_path / "o" / "vpo-toy-s0"
    existing.mkdir(parents=True)
    (existing / "keep.txt").write_text("precious")
    assert run(tmp_path / "o") == 2
    assert "exists" in capsys.readouterr().err
    assert (existing / "keep.txt").read_text() == "precious"
    assert run(tmp_path / "o", "--resume") == 2  # no checkpoint to resume from
    assert (existing / "keep.txt").read_text() == "precious"


def test_toy_through_the_gpt_vpo_learns_the_corners_grpo_the_compromise(tmp_path):
    """The authors' smallest demonstration through the real pipeline: VPO's answer sets reach E_w[best@3] >= 0.70
    (optimum 0.76), while GRPO's deployment reward settles near the 0.6 compromise."""
    cfg = ["--n_layer", "2", "--n_embd", "64", "--sft_steps", "400", "--sft_batch_size", "32", "--sft_lr", "3e-3",
           "--steps", "80", "--batch_size", "4", "--group_size", "8", "--lr", "1e-3", "--eval_problems", "8",
           "--no_base_eval", "--no_figures"]
    assert run(tmp_path, "--algo", "vpo", *cfg) == 0
    assert run(tmp_path, "--algo", "grpo", *cfg) == 0
    vpo_m = json.loads((tmp_path / "vpo-toy-s0" / "summary.json").read_text())["metrics"]
    grpo_m = json.loads((tmp_path / "grpo-toy-s0" / "summary.json").read_text())["metrics"]
    assert vpo_m["E_w[best@k]"]["3"] >= 0.70, vpo_m
    assert abs(grpo_m["deploy_reward"] - 0.6) < 0.05, grpo_m
    assert grpo_m["E_w[best@k]"]["3"] < 0.66  # one compromise answer: E_w max = 0.6


def test_training_logprobs_equal_the_samplers():
    """pack + token_logprobs (one causal forward over prompt + completion, as the loss sees it) gives the same
    per-token log-probs as the KV-cache sampler drew with, on the masked-in tokens, at any temperature."""
    from model import GPT, GPTConfig
    from tests.reference import pack, token_logprobs
    from sample import generate
    from tasks import tokenizer as tok
    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=64, n_layer=2, n_head=2, n_embd=32)).eval()
    prompts = [[tok.BOS_ID, 5, 6, 7], [tok.BOS_ID, 9], [tok.BOS_ID] + list(range(40, 52))]
    for temperature in (1.0, 0.7):
        gen = generate(model, prompts, 12, num_samples=3, temperature=temperature, stop_token=tok.END_ID,
                       generator=torch.Generator().manual_seed(1))
        idx, pos = pack([p for p in prompts for _ in range(3)], gen.tokens, tok.PAD_ID)
        with torch.no_grad():
            logp = token_logprobs(model, idx, pos, gen.tokens, temperature)
        torch.testing.assert_close(logp[gen.mask], gen.logprobs[gen.mask], atol=1e-4, rtol=1e-4)


def test_eval_at_start_makes_the_warm_start_step_0_of_an_early_stop(tmp_path):
    """--eval_at_start evaluates the starting weights as step 0 (eval.jsonl) and, with --keep_eval_ckpts, keeps them
    as ckpt-step0.pt, which the validation of an early stop (results/searched.py:validation_job) reads as a
    candidate: the warm start's own weights, evaluated with the run's m."""
    from results.searched import validation_job
    assert run(tmp_path, "--algo", "vpo", "--eval_every", "1", "--eval_at_start", "--keep_eval_ckpts",
               "--no_figures") == 0
    d = tmp_path / "vpo-toy-s0"
    evals = [json.loads(line) for line in (d / "eval.jsonl").read_text().splitlines()]
    assert [r["step"] for r in evals] == [0, 1]
    start, _ = load_checkpoint(str(d / "ckpt-step0.pt"))
    base, _ = load_checkpoint(json.loads((d / "summary.json").read_text())["init"])
    assert all(torch.equal(a, b) for a, b in zip(start.state_dict().values(), base.state_dict().values()))
    assert validation_job(str(d), [2, 4], [3], str(d / "validation.json")) == 0
    assert set(json.loads((d / "validation.json").read_text())["criterion"]) == {"0", "1", "2"}
    # without the flag, as before: no step 0
    assert run(tmp_path, "--algo", "grpo", "--eval_every", "1", "--keep_eval_ckpts", "--no_figures") == 0
    assert [json.loads(line)["step"] for line in (tmp_path / "grpo-toy-s0" / "eval.jsonl").open()] == [1]


def test_evaluating_more_often_does_not_change_training(tmp_path):
    """A finer validation grid sees the same run: evaluating every step or every other step leaves the weights of
    each step and the evaluation at a shared step unchanged (the evaluation draws from its own generator), as the
    early-stop plan's grid check (amendment 1) assumes of its step-25 evaluation."""
    for every, out in ((1, tmp_path / "fine"), (2, tmp_path / "coarse")):
        assert run(out, "--algo", "vpo", "--steps", "4", "--eval_every", str(every), "--no_figures",
                   "--run_name", "r") == 0
    fine, coarse = ([json.loads(line) for line in (tmp_path / d / "r" / "eval.jsonl").open()] for d in ("fine", "coarse"))
    assert [r["step"] for r in fine] == [1, 2, 3] and [r["step"] for r in coarse] == [2]   # the last: summary.json
    assert fine[1] == coarse[0]
    a, b = (load_checkpoint(str(tmp_path / d / "r" / "ckpt.pt"))[0].state_dict() for d in ("fine", "coarse"))
    assert all(torch.equal(a[k], b[k]) for k in a)

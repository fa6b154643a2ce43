"""
One of our Llama checkpoints (a warm start or a run of `train.py --init`) as a Hugging Face folder, which
transformers' AutoModelForCausalLM and AutoTokenizer load, and so TRL (`examples/trl_vpo.py --model_name_or_path DIR`):

    python -m runs.export --ckpt out/smollm2/base/toy-a3000ee83e/ckpt.pt --out out/smollm2/warm-start-hf

The folder holds four files, each written by our own code:

    config.json            LlamaForCausalLM (Qwen2ForCausalLM for a model with q/k/v biases) from the checkpoint's
                           LlamaConfig, fp32
    model.safetensors      the weights in fp32 under Hugging Face's names; no lm_head.weight when the head is tied
    tokenizer.json         the pretrained source's byte-level BPE: its vocabulary, merges and split pattern, the added
                           tokens as special
    tokenizer_config.json  a chat template that writes exactly our prompt (ChatML, no system turn of its own, the
                           generation prompt "<|im_start|>assistant\\n"); eos and pad: the token that ends our
                           completions

The tokenizer's source is the pretrained model the checkpoint's args name (runs.cli.source_of: smollm2, a GGUF file
or a folder), or --init.
pretrained.load_pretrained(DIR) reads the folder back as the same model and tokenizer (tests/test_export.py).
transformers 5 builds a Qwen2 model's tokenizer its own way from the same vocabulary and merges (Qwen2's split and
NFC, whatever tokenizer.json says): the same ids for a Qwen2 source, except on text that is not NFC where ours
does not normalize (a GGUF's).
A mistake (a missing or foreign checkpoint, a GPT, a source that cannot give its tokenizer, a non-empty DIR) is one
`error:` line and exit code 2. The folder is written beside DIR and then renamed, so nothing on disk is lost.
"""
import json
import os
import shutil
import struct
import sys
import tempfile
import time

import torch

from chat_tokenizer import GPT2_SPLIT
from pretrained import PretrainedError, read_gguf_header, read_json, smollm2_path
from runs.cli import Parser, UsageError, load_model, pretrained_tokenizer, source_of

# ChatML turns in order, none added: ChatTokenizer.chat's text, with the generation prompt where asked for
CHAT_TEMPLATE = ("{%- for message in messages %}"
                 "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
                 "{%- endfor %}"
                 "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")


def write_safetensors(path, tensors):
    """{name: tensor} -> one .safetensors file in fp32, the layout pretrained.read_safetensors reads: the header's
    length (8 bytes, little-endian), the JSON header {name: {dtype, shape, data_offsets}} padded with spaces to a
    multiple of 8, then each tensor's little-endian bytes in turn."""
    arrays = {name: t.detach().to("cpu", torch.float32).contiguous().numpy() for name, t in tensors.items()}
    header, offset = {"__metadata__": {"format": "pt"}}, 0       # as safetensors' own torch writer marks it
    for name, a in arrays.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for a in arrays.values():
            f.write(a.astype("<f4", copy=False).data)


def config_json(c, tok):
    """config.json of a LlamaForCausalLM, or of a Qwen2ForCausalLM where the model has q/k/v biases, from our
    LlamaConfig c; the special tokens' ids from our tokenizer tok."""
    qwen2 = c.qkv_bias
    own = dict(use_sliding_window=False, sliding_window=None, max_window_layers=c.n_layer) if qwen2 else \
        dict(attention_bias=False, mlp_bias=False)
    return dict(architectures=["Qwen2ForCausalLM" if qwen2 else "LlamaForCausalLM"],
                model_type="qwen2" if qwen2 else "llama", vocab_size=c.vocab_size, hidden_size=c.n_embd,
                intermediate_size=c.intermediate_size, num_hidden_layers=c.n_layer, num_attention_heads=c.n_head,
                num_key_value_heads=c.n_kv_head, head_dim=c.n_embd // c.n_head, hidden_act="silu",
                max_position_embeddings=c.block_size, rms_norm_eps=c.rms_norm_eps, rope_theta=c.rope_theta,
                tie_word_embeddings=c.tie_embeddings, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id,
                pad_token_id=tok.eos_id, torch_dtype="float32", use_cache=True, **own)


def source_vocabulary(spec):
    """The pretrained source's own vocabulary {token: id}, merges [[a, b], ...] and added tokens {token: id}: a
    GGUF's tokenizer.ggml.* metadata (its control and user-defined tokens are the added ones) or a folder's
    tokenizer.json."""
    path = smollm2_path() if spec == "smollm2" else spec
    if path.endswith(".gguf"):
        meta = read_gguf_header(path)[1]
        tokens = meta["tokenizer.ggml.tokens"]
        types = meta.get("tokenizer.ggml.token_type", [1] * len(tokens))
        merges = meta.get("tokenizer.ggml.merges", [])
        added = {t: i for i, (t, k) in enumerate(zip(tokens, types)) if k in (3, 4)}
        return {t: i for i, t in enumerate(tokens)}, [m.split(" ") for m in merges], added
    tj = read_json(os.path.join(path, "tokenizer.json"))
    merges = [m.split(" ") if isinstance(m, str) else list(m) for m in tj["model"].get("merges", [])]
    return tj["model"]["vocab"], merges, {t["content"]: t["id"] for t in tj.get("added_tokens", [])}


def tokenizer_json(vocab, merges, added, pattern, nfc):
    """tokenizer.json of a byte-level BPE with no unknown token (a byte the vocabulary lacks is dropped, as our
    tokenizer drops it): GPT-2's split (ByteLevel's own regex) or the source's pattern before a ByteLevel step, NFC
    where the source normalizes, and no BOS or EOS added to an encoding."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": pattern == GPT2_SPLIT}
    split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for t, i in sorted(added.items(), key=lambda ti: ti[1])]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
            "normalizer": {"type": "NFC"} if nfc else None,
            "pre_tokenizer": byte_level if pattern == GPT2_SPLIT else {"type": "Sequence",
                                                                      "pretokenizers": [split, byte_level]},
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                                "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": merges}}


def tokenizer_config(tok, block_size):
    """tokenizer_config.json: the chat template, the special tokens by name (eos and pad: our completions' end)."""
    name = {i: t for t, i in tok.special_ids.items()}
    return {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": name.get(tok.bos_id),
            "eos_token": name[tok.eos_id], "pad_token": name[tok.eos_id], "unk_token": None,
            "model_max_length": block_size, "clean_up_tokenization_spaces": False, "chat_template": CHAT_TEMPLATE}


def tokenizer_files(spec, vocab_rows, block_size):
    """The tokenizer of the pretrained source spec as Hugging Face's files, for a model of vocab_rows embedding rows
    and a context of block_size. -> (our ChatTokenizer, {"tokenizer.json": ..., "tokenizer_config.json": ...}).
    UsageError where the source cannot give it, or it is no ChatML tokenizer of this model."""
    tok = pretrained_tokenizer(spec)
    if tok.eos_id not in tok.special_ids.values() or not {"<|im_start|>", "<|im_end|>"} <= tok.special_ids.keys():
        raise UsageError(f"--init {spec}: the tokenizer lacks ChatML's <|im_start|> and <|im_end|>, or a special EOS")
    if tok.vocab_size > vocab_rows:
        raise UsageError(f"--init {spec}: its tokenizer has {tok.vocab_size} ids, more than the model's "
                         f"{vocab_rows} embedding rows (not this model's tokenizer?)")
    try:
        vocab, merges, added = source_vocabulary(spec)
    except PretrainedError as e:
        raise UsageError(f"--init {spec}: {e}") from None
    return tok, {"tokenizer.json": tokenizer_json(vocab, merges, added, tok.pattern, tok.nfc),
                 "tokenizer_config.json": tokenizer_config(tok, block_size)}


def write_json(folder, files):
    """{name: JSON object} -> one file each in folder, UTF-8 (tokenizer.json on one line: it is large)."""
    for name, obj in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=None if name == "tokenizer.json" else 2)


def export(ckpt, out, init=None):
    """Write the checkpoint ckpt as a Hugging Face folder out (module docstring); init: the tokenizer's source where
    the checkpoint's args do not name it. -> our model. UsageError (one line) for a mistake: found before anything
    is written, or, for a failed write, with its temporary folder removed."""
    if os.path.exists(out) and not (os.path.isdir(out) and not os.listdir(out)):
        raise UsageError(f"--out {out}: exists and is not an empty directory (choose another)")
    model, state = load_model(ckpt)
    if state.get("arch", "gpt") != "llama":
        raise UsageError(f"{ckpt}: a GPT checkpoint; only a Llama-family model (train.py --init smollm2, FILE.gguf "
                         f"or DIR) exports")
    spec = init or source_of(state.get("args") or {})
    if spec is None:
        raise UsageError(f"{ckpt}: its args name no pretrained model; give the tokenizer's source with --init "
                         f"smollm2, FILE.gguf or DIR")
    c = model.config
    tok, files = tokenizer_files(spec, c.vocab_size, c.block_size)
    tmp = None
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f"{os.path.basename(os.path.normpath(out))}.tmp",   # new, so ours to delete
                               dir=os.path.dirname(os.path.abspath(out)))
        sd = model.state_dict()
        write_safetensors(os.path.join(tmp, "model.safetensors"),
                          {(k if k == "lm_head.weight" else f"model.{k}"): v for k, v in sd.items()})
        write_json(tmp, {"config.json": config_json(c, tok), **files})
        os.replace(tmp, out)                                     # onto an empty directory too
    except OSError as e:
        raise UsageError(f"--out {out}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return model


def main(argv=None):
    ap = Parser(prog="python -m runs.export", description="Write one of our Llama checkpoints as a Hugging Face "
                "folder (config.json, model.safetensors, tokenizer.json, tokenizer_config.json) for transformers "
                "and TRL.")
    ap.add_argument("--ckpt", required=True, help="a checkpoint of a pretrained model: a warm start or a train.py run")
    ap.add_argument("--out", required=True, help="the folder to write; it must not exist, or be empty")
    ap.add_argument("--init", default=None, help="the tokenizer's source (smollm2, FILE.gguf or DIR); default: the "
                                                 "checkpoint's own --init")
    try:
        args = ap.parse_args(argv)
        t0 = time.perf_counter()
        model = export(args.ckpt, args.out, args.init)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    c = model.config
    print(f"exported {args.ckpt} ({c.n_layer} layers of {c.n_embd}, {sum(p.numel() for p in model.parameters()):,} "
          f"parameters, fp32) to {args.out} in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
A pretrained model's byte-level BPE tokenizer, run by tiktoken: ChatTokenizer, built from a GGUF file's metadata
(from_gguf) or a Hugging Face folder's tokenizer.json (from_tokenizer_json); pretrained.py reads those files.

A token's id is its tiktoken rank; the added tokens are special tokens. encode takes untrusted text (special names
stay text), encode_special our own, and encode_chat writes one ChatML user turn with the text untrusted. A
vocabulary tiktoken cannot run as the model's BPE (two tokens with the same bytes, merges out of id order, another
pre-tokenizer) raises PretrainedError, one line naming the file.

Bytes with no token. SmolLM2's vocabulary lacks 21 single bytes: 0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1,
0xF1, 0xF2 and 0xF5-0xFF (0xC0, 0xC1 and 0xF5-0xFF occur in no UTF-8 text). We do what transformers' tokenizer does
(a BPE with no unknown token): drop them from each pre-tokenized piece and merge what is left, so "(\\x04)" encodes
as "()". The model never sees them, and decode cannot bring them back.
"""
import os
import re
import unicodedata

import numpy as np
import regex  # tiktoken's own dependency: \p{L} in a split pattern, for the rare text holding a byte with no token
import tiktoken


class PretrainedError(ValueError):
    """A package or file that cannot give a pretrained model or its tokenizer (pretrained.py raises it too); the
    message is one line naming it."""


GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""   # SmolLM2's too
QWEN2_SPLIT = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
GGUF_SPLITS = {"gpt-2": GPT2_SPLIT, "smollm": GPT2_SPLIT, "qwen2": QWEN2_SPLIT}     # tokenizer.ggml.pre -> pattern


def bytes_to_unicode():
    """GPT-2's byte -> character table: printable bytes stand for themselves, the other 68 become chr(256 + k)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + k) for k, b in enumerate(others)}}


UNICODE_TO_BYTE = {c: b for b, c in bytes_to_unicode().items()}


def token_bytes(token):
    """A vocabulary string's bytes: GPT-2's byte characters mapped back; a string outside them is its UTF-8."""
    return bytes(UNICODE_TO_BYTE[c] for c in token) if all(c in UNICODE_TO_BYTE for c in token) else token.encode()


def bpe_ranks(tokens, merges, path):
    """{bytes: id} of a vocabulary's ordinary (string, id) pairs, checked: no two spell the same bytes, and each merge
    "a b" joins two tokens into one whose id grows along the list (else tiktoken's rank order is not the BPE's)."""
    ranks = {token_bytes(t): i for t, i in tokens}
    if len(ranks) != len(tokens):
        raise PretrainedError(f"{path}: two tokens of the vocabulary spell the same bytes")
    ids = [ranks.get(token_bytes(a) + token_bytes(b), -1) for a, b in (m.split(" ") if isinstance(m, str) else m
                                                                         for m in merges)]
    if any(i <= j for i, j in zip(ids, [-1] + ids)):
        raise PretrainedError(f"{path}: the merges are not in the order of the token ids; tiktoken cannot run them")
    return ranks


class ChatTokenizer:
    """A byte-level BPE run by tiktoken. ranks: {bytes: id} of the ordinary tokens; special: {name: id} of the added
    tokens. encode adds no BOS. The ids the tokenizer knows, vocab_size, may be fewer than the model's embedding rows;
    decode writes U+FFFD for an id it does not know."""

    def __init__(self, ranks, special, pattern, bos_id, eos_id, pad_id, nfc=False, name="pretrained"):
        self.ranks, self.special_ids, self.pattern, self.nfc = ranks, dict(special), pattern, nfc
        self.bos_id, self.eos_id, self.pad_id = bos_id, eos_id, eos_id if pad_id is None else pad_id
        self.missing = bytes(b for b in range(256) if bytes([b]) not in ranks)        # bytes with no token
        self.enc = tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)
        self.vocab_size = self.enc.n_vocab                                           # the largest id + 1
        self.known = set(ranks.values()) | set(special.values())
        self.special_re = re.compile("|".join(map(re.escape, sorted(special, key=len, reverse=True))) or "(?!)")

    @classmethod
    def from_gguf(cls, meta, path):
        """From a GGUF's tokenizer.ggml.* metadata; its control (3) and user-defined (4) tokens become special."""
        kind, pre, tokens = (meta.get(f"tokenizer.ggml.{k}", d) for k, d in [("model", None), ("pre", "gpt-2"),
                                                                              ("tokens", None)])
        if kind != "gpt2" or pre not in GGUF_SPLITS or not isinstance(tokens, list):
            raise PretrainedError(f"{path}: tokenizer {kind!r} with pre-tokenizer {pre!r} is not supported "
                                  f"(gpt2 with {', '.join(GGUF_SPLITS)})")
        types = meta.get("tokenizer.ggml.token_type", [1] * len(tokens))
        special = {t: i for i, (t, k) in enumerate(zip(tokens, types)) if k in (3, 4)}
        ordinary = [(t, i) for i, (t, k) in enumerate(zip(tokens, types)) if k not in (3, 4)]
        ranks = bpe_ranks(ordinary, meta.get("tokenizer.ggml.merges", []), path)
        ids = [meta.get(f"tokenizer.ggml.{k}_token_id") for k in ("bos", "eos", "padding")]
        return cls(ranks, special, GGUF_SPLITS[pre], *ids, name=os.path.basename(path))

    @classmethod
    def from_tokenizer_json(cls, tj, names, config, path):
        """From tokenizer.json (model.vocab, model.merges, added_tokens, the pre-tokenizer's split pattern), with
        BOS, EOS and pad named in tokenizer_config.json (names) or numbered in config.json (config)."""
        model, pre, norm = tj.get("model") or {}, tj.get("pre_tokenizer") or {}, tj.get("normalizer")
        if model.get("type") != "BPE" or not isinstance(model.get("vocab"), dict) or model.get("byte_fallback") \
                or (norm and norm.get("type") != "NFC"):
            raise PretrainedError(f"{path}: not a byte-level BPE with no normalizer or NFC")
        steps = pre.get("pretokenizers", [pre])
        kinds = [s.get("type") for s in steps]
        if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
            pattern = GPT2_SPLIT
        elif kinds == ["Split", "ByteLevel"] and steps[0].get("behavior") == "Isolated" \
                and not steps[1].get("use_regex", True):
            pattern = (steps[0].get("pattern") or {}).get("Regex")
        else:
            pattern = None
        if not pattern or any(s.get("add_prefix_space") or s.get("invert") for s in steps):
            raise PretrainedError(f"{path}: pre-tokenizer {kinds} is not supported")
        special = {t["content"]: t["id"] for t in tj.get("added_tokens", [])}
        ordinary = [(t, i) for t, i in model["vocab"].items() if i not in special.values()]
        ranks = bpe_ranks(ordinary, model.get("merges", []), path)

        def token_id(role):                # "<|im_end|>" or {"content": "<|im_end|>"} by name, else by number
            name, number = names.get(f"{role}_token"), config.get(f"{role}_token_id")
            name = name.get("content") if isinstance(name, dict) else name
            return special.get(name, number[0] if isinstance(number, list) else number)
        return cls(ranks, special, pattern, token_id("bos"), token_id("eos"), token_id("pad"), nfc=bool(norm),
                   name=os.path.basename(os.path.dirname(os.path.abspath(path))))

    def encode(self, text):
        """Untrusted text -> ids; special names stay text."""
        text = unicodedata.normalize("NFC", text) if self.nfc else text
        data = text.encode("utf-8", "replace")
        if len(data.translate(None, self.missing)) == len(data):
            return self.enc.encode_ordinary(text)
        return [i for piece in regex.findall(self.pattern, text)                      # a byte with no token: drop
                for i in self.merge(piece.encode("utf-8", "replace").translate(None, self.missing))]   # it, merge

    def merge(self, piece):
        """BPE on one piece of bytes as tiktoken runs it: join the adjacent pair whose join has the lowest rank."""
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            rank, i = min((self.ranks.get(a + b, np.inf), i) for i, (a, b) in enumerate(zip(parts, parts[1:])))
            if rank == np.inf:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return [self.ranks[p] for p in parts]

    def encode_special(self, text):
        """Trusted text (ours) -> ids; special names become their ids."""
        ids, at = [], 0
        for m in self.special_re.finditer(text):
            ids += self.encode(text[at:m.start()]) + [self.special_ids[m.group()]]
            at = m.end()
        return ids + self.encode(text[at:])

    def decode(self, ids):
        """ids -> text; bad UTF-8 and ids the tokenizer does not know become U+FFFD."""
        return b"".join(self.enc.decode_single_token_bytes(int(i)) if int(i) in self.known else b"\xef\xbf\xbd"
                        for i in ids).decode("utf-8", errors="replace")

    def chatml_ids(self):
        """The ids of <|im_start|> and <|im_end|>, which our prompts are written in; PretrainedError without them."""
        if not {"<|im_start|>", "<|im_end|>"} <= self.special_ids.keys():
            raise PretrainedError(f"{self.enc.name}: this tokenizer has no ChatML tokens (<|im_start|>, <|im_end|>)")
        return self.special_ids["<|im_start|>"], self.special_ids["<|im_end|>"]

    def chat(self, user, system=None):
        """The ChatML prompt of one user turn, where the assistant's turn begins. With system=None we write no system
        turn, where SmolLM2's own template writes SMOLLM2_SYSTEM (pass it as system= to match the template)."""
        self.chatml_ids()
        turns = ([("system", system)] if system is not None else []) + [("user", user)]
        return "".join(f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in turns) + "<|im_start|>assistant\n"

    def encode_chat(self, user, system=None):
        """The ids of chat(user, system) with the texts untrusted: only the template's own markers are special."""
        start, end = self.chatml_ids()
        turns = ([("system", system)] if system is not None else []) + [("user", user)]
        return [i for role, text in turns for i in [start, *self.encode(f"{role}\n{text}"), end, *self.encode("\n")]] \
            + [start, *self.encode("assistant\n")]

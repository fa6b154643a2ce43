"""
A byte-level tokenizer built on tiktoken that needs no download.

tiktoken's named encodings (gpt2, cl100k_base) fetch their merge tables on first use. Our tasks are short
ASCII texts, so we build our own `tiktoken.Encoding` with no merges at all: the 256 single bytes are the
tokens 0..255, and four special tokens follow them:

    <|bos|>  256  begins every sequence
    <|end|>  257  ends the answer set (the stop token of every completion)
    <|sep|>  258  separates the m answers of one completion
    <|pad|>  259  fills rows of a batch; never trained on, never sampled from a trained model

Plain text never turns into special tokens (encode uses tiktoken's encode_ordinary), so a prompt or an
answer that happens to contain the characters "<|sep|>" stays ordinary bytes. Only trusted text that we
write ourselves (demonstrations) is encoded with encode_special. The model, of course, can emit the
special ids; decode turns them back into their names. Task.parse then splits on the name, so a model that spells
"<|sep|>" in bytes splits its answer there too. That gains it nothing: parse keeps at most m answers, and the bytes
count in the answer's room.
"""
import tiktoken

BOS, END, SEP, PAD = "<|bos|>", "<|end|>", "<|sep|>", "<|pad|>"
SPECIAL_TOKENS = {BOS: 256, END: 257, SEP: 258, PAD: 259}
BOS_ID, END_ID, SEP_ID, PAD_ID = (SPECIAL_TOKENS[s] for s in (BOS, END, SEP, PAD))

# one piece per run of non-space characters; with no merges the split only affects speed, not the ids
_PATTERN = r"""\S+|\s+"""

_encoding = tiktoken.Encoding(
    name="vpo-bytes",
    pat_str=_PATTERN,
    mergeable_ranks={bytes([b]): b for b in range(256)},
    special_tokens=SPECIAL_TOKENS,
)
vocab_size = _encoding.n_vocab  # 260


def encode(text: str) -> list[int]:
    """Text -> ids, one id per UTF-8 byte. Special-token names in the text stay plain bytes."""
    return _encoding.encode_ordinary(text)


def encode_special(text: str) -> list[int]:
    """Trusted text (our own demonstrations) -> ids, with <|...|> names turned into special ids."""
    return _encoding.encode(text, allowed_special="all")


def decode(ids) -> str:
    """ids -> text; special ids become their names, invalid UTF-8 becomes U+FFFD (model output is untrusted)."""
    return _encoding.decode([int(i) for i in ids], errors="replace")

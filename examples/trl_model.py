"""
The tiny GPT-2 that examples/trl_vpo.py trains without --model: random weights, built in place and offline, over a
vocabulary of its own (docs/trl.md, "What the example builds").

On the toy the vocabulary is the prompt's words, the answers `left`, `right`, `middle`, the separator <|sep|> and
<|end|> as EOS, so that a random policy already writes candidate answers; generation may emit only the answer
words, <|sep|> and <|end|> (banned_ids). On another task it is the printable ASCII characters, one token each, and
<|sep|>.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # the other examples, beside this file
import torch  # noqa: E402

from tasks.tokenizer import BOS, END, PAD, SEP  # noqa: E402
from tasks.toy import WORDS  # noqa: E402

UNK = "<|unk|>"
PROMPT_WORDS = ("toy", "name", "of", ":", "/") + tuple("0123456789")  # the rest of ToyTask.prompt's words
CHARS = tuple(chr(c) for c in range(32, 127)) + ("\n",)                # the in-place model's vocabulary elsewhere


def word_tokenizer():
    """A word-level tokenizer over the toy's words, built offline. The separator is an added but not special
    token, so that TRL's decoding (skip_special_tokens=True) keeps it; a completion decodes to e.g.
    'left <|sep|> right'. Every prompt starts with <|bos|>."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {t: i for i, t in enumerate((PAD, BOS, END, UNK, SEP) + WORDS + PROMPT_WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                  pre_tokenizers.Digits(individual_digits=True)])
    tk = wrap_tokenizer(core, vocab)
    ids = tk("toy 417: name 2 of left/right/middle\n")["input_ids"]
    assert UNK not in tk.convert_ids_to_tokens(ids) and len(ids) == 14, "the toy prompt must tokenize to words"
    return tk


def char_tokenizer():
    """One token per printable ASCII character and newline (any other character is <|unk|>), and the separator
    as on the toy: the in-place model's tokenizer for a task other than the toy."""
    from tokenizers import Tokenizer, decoders, models
    vocab = {t: i for i, t in enumerate((PAD, BOS, END, UNK, SEP) + CHARS)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))   # no merges: one token a character
    core.decoder = decoders.Fuse()
    return wrap_tokenizer(core, vocab)


def wrap_tokenizer(core, vocab):
    """The special tokens, <|sep|> as an added token that is not special, <|bos|> before every text, in a
    transformers tokenizer that pads on the left."""
    from tokenizers import AddedToken, processors
    from transformers import PreTrainedTokenizerFast
    core.add_special_tokens([AddedToken(t, special=True) for t in (PAD, BOS, END, UNK)])
    core.add_tokens([AddedToken(SEP, special=False, normalized=False)])
    core.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS, eos_token=END, unk_token=UNK,
                                   padding_side="left")


def banned_ids(tk):
    """Every token a toy completion may not use: all but the answer words, <|sep|> and <|end|>."""
    allowed = {tk.convert_tokens_to_ids(t) for t in WORDS + (SEP, END)}
    return [i for i in range(len(tk)) if i not in allowed]


def save_tiny_gpt2(path, tk, context, n_layer, n_embd, seed):
    """A GPT-2 of n_layer blocks, n_embd wide, 2 heads, with random weights (seeded), over tk's vocabulary, saved
    with tk to path, where GRPOTrainer loads it like any saved model (and, with beta > 0, its frozen reference).
    -> path"""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)  # the random weights of GPT-2
    ids = {t: tk.convert_tokens_to_ids(t) for t in (PAD, BOS, END)}
    model = GPT2LMHeadModel(GPT2Config(
        n_layer=n_layer, n_head=2, n_embd=n_embd, n_positions=context, vocab_size=len(tk),
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=ids[BOS], eos_token_id=ids[END],
        pad_token_id=ids[PAD]))
    model.save_pretrained(path)
    tk.save_pretrained(path)
    return path

"""The prose budget of the project's docs: about 25 words a sentence on average, none past 50, in README.md,
docs/*.md and results/README.md. Code blocks, tables, headings, images and indented code are not prose."""
import glob
import re

import pytest

FILES = ["README.md", "results/README.md"] + sorted(glob.glob("docs/*.md"))
MEAN, LONGEST = 25, 50


def sentence_lengths(text):
    """Words per sentence of a markdown text. A list item or a blank line ends a sentence; inline code counts as
    one word; a link counts as its text."""
    text = re.sub(r"```.*?```", "\n\n", text, flags=re.S)
    paragraphs, current = [], []
    for line in text.splitlines():
        stripped = line.strip()
        skip = not stripped or stripped.startswith(("|", "#", "![", "<")) or line.startswith("    ")
        if skip or re.match(r"([-*+]|\d+\.)\s", stripped):
            paragraphs.append(" ".join(current))
            current = []
        if not skip:
            current.append(re.sub(r"^([-*+]|\d+\.)\s+", "", stripped))
    paragraphs.append(" ".join(current))
    lengths = []
    for p in paragraphs:
        p = re.sub(r"`[^`]*`", "X", p)
        p = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", p)
        p = re.sub(r"\b(e\.g|i\.e|et al|vs|cf)\.", r"\1", p)
        lengths += [len(s.split()) for s in re.split(r"(?<=[.!?:;])\s+(?=[A-Z(\"'*0-9`])", p) if len(s.split()) >= 3]
    return lengths


def test_sentence_lengths_by_hand():
    text = ("One two three four. Five six seven: Eight nine ten eleven.\n\n- a list item of five words\n"
            "- `code` [a link](x) is here\n\n```\nnot prose at all here\n```\n| a | table |\n")
    assert sentence_lengths(text) == [4, 3, 4, 6, 5]


@pytest.mark.parametrize("path", FILES)
def test_the_prose_budget(path):
    lengths = sentence_lengths(open(path, encoding="utf-8").read())
    assert lengths, path
    longest = max(lengths)
    assert sum(lengths) / len(lengths) <= MEAN and longest <= LONGEST, \
        f"{path}: mean {sum(lengths) / len(lengths):.1f} words a sentence, longest {longest}"

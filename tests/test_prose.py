"""The prose budget of the project's docs: about 25 words a sentence on average, none past 50, in README.md,
docs/*.md, results/README.md and the prose a report puts above what its command writes (results/search_heldout.md
above its section "Search"). Code blocks, tables, headings, images and indented code are not prose."""
import glob
import re

import pytest

FILES = ["README.md", "results/README.md", "results/search_heldout.md"] + sorted(glob.glob("docs/*.md"))
MEAN, LONGEST = 25, 50
WRITTEN = {"results/search_heldout.md": "\n## Search\n"}   # where the command's output begins


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
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lengths = sentence_lengths(text.split(WRITTEN[path])[0] if path in WRITTEN else text)
    assert lengths, path
    longest = max(lengths)
    assert sum(lengths) / len(lengths) <= MEAN and longest <= LONGEST, \
        f"{path}: mean {sum(lengths) / len(lengths):.1f} words a sentence, longest {longest}"

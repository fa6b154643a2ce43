"""
Are two runs the same, bit for bit? Compares two run directories written by train.py: the final weights, every
log.jsonl row (timing columns aside), eval.jsonl, and the summary's metrics, base metrics and answer pools.

    python bench/compare_runs.py out_before/vpo-maze-s0 out_after/vpo-maze-s0

Used to check that a change of structure changed no behaviour (the same command in two checkouts). Exit code 0
if everything is equal, 1 if not.
"""
import json
import os
import sys

import torch

TIMING = {"seconds", "step_seconds", "tokens_per_s"}


def rows(path):
    with open(path) as f:
        return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in f if line.strip()]


def compare(a, b):
    """-> {what: equal?} for the two run directories."""
    wa = torch.load(os.path.join(a, "ckpt.pt"), weights_only=True)["model"]
    wb = torch.load(os.path.join(b, "ckpt.pt"), weights_only=True)["model"]
    out = {"weights": wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa),
           "log.jsonl": rows(os.path.join(a, "log.jsonl")) == rows(os.path.join(b, "log.jsonl"))}
    if os.path.isfile(os.path.join(a, "eval.jsonl")) or os.path.isfile(os.path.join(b, "eval.jsonl")):
        out["eval.jsonl"] = rows(os.path.join(a, "eval.jsonl")) == rows(os.path.join(b, "eval.jsonl"))
    with open(os.path.join(a, "summary.json")) as fa, open(os.path.join(b, "summary.json")) as fb:
        sa, sb = json.load(fa), json.load(fb)
    for key in ("metrics", "base_metrics", "pools"):
        out[f"summary {key}"] = sa.get(key) == sb.get(key)
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or not all(os.path.isfile(os.path.join(d, "ckpt.pt")) for d in argv):
        print("error: usage: python bench/compare_runs.py RUN_DIR_A RUN_DIR_B (each with ckpt.pt)", file=sys.stderr)
        return 2
    result = compare(*argv)
    for what, same in result.items():
        print(f"{what}: {'equal' if same else 'DIFFERENT'}")
    return 0 if all(result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""
The tables of results.compare: reading a finished run back (read_run: summary.json and eval.jsonl), mean ± std over
runs, paired differences per step and k with the run-level columns (results/runstats.py), and each metric along
training.
"""
import json
import os

import numpy as np

from results.runstats import differences_comparison, signed, smallest_p


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_run(directory, seed, slug):
    """A finished run as every table reads it: dict(seed, slug, dir, summary, evals). Its per-step log.jsonl is not
    read: the committed experiments keep theirs only in the archive (results/README.md)."""
    return {"seed": seed, "slug": slug, "dir": directory, "summary": read_json(os.path.join(directory, "summary.json")),
            "evals": read_jsonl(os.path.join(directory, "eval.jsonl"))}


def read_jsonl(path):
    """The rows of a JSON-lines file; none where it is missing."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def value(metrics, key, k):
    """metrics[key][k] (json keys are strings), or None where the metric has no such k (whole-rollout k < m)."""
    table = metrics.get(key) or {}
    return table.get(str(k), table.get(k))


def base_metrics(runs):
    """{m: the base's evaluation with m answers a rollout}, from the runs that evaluated the base (the plan's first
    GRPO and VPO runs; in results.compare, each arm's first run)."""
    return {r["summary"]["base_metrics"]["m"]: r["summary"]["base_metrics"] for rs in runs.values() for r in rs
            if r["summary"].get("base_metrics")}


def eval_steps(rs):
    return sorted({e["step"] for r in rs for e in r["evals"]} | {r["summary"]["args"]["steps"] for r in rs})


def at_step(r, step):
    """Metrics of run r at an evaluation step (the final evaluation at its last step)."""
    if step == r["summary"]["args"]["steps"]:
        return r["summary"]["metrics"]
    return next((e for e in r["evals"] if e["step"] == step), None)


def pm(values, digits=3):
    """'mean ± std' over seeds, or the one value."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values, ddof=0):.{digits}f}"


STD_NOTE = "± is the population standard deviation (ddof 0) over the seeds."
PAIRED_STD_NOTE = "± is the population standard deviation (ddof 0) of the per-seed differences."


def table(header, rows, note=STD_NOTE):
    """A markdown table; where a cell holds a mean ± std, the note saying which std follows it (after a blank
    line: a line right under a table would be read as one more row)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
    if note and any(" ± " in cell for r in rows for cell in r):
        lines += ["", note]
    return lines


def paired(runs, a, b, key, ks=None, step=None):
    """Per seed d_s(k) = key@k(a, s) − key@k(b, s) at an evaluation step (default: the end) for the seeds both
    finished, at each of ks (default: every k of the metric). -> (seeds, {k: [d_s]})."""
    def metrics(r):
        return r["summary"]["metrics"] if step is None else at_step(r, step)
    ra = {r["seed"]: metrics(r) for r in runs.get(a, []) if metrics(r)}
    rb = {r["seed"]: metrics(r) for r in runs.get(b, []) if metrics(r)}
    seeds = sorted(set(ra) & set(rb))
    ks = ks or sorted({int(k) for s in seeds for k in ra[s].get(key) or {}})
    return seeds, {k: [value(ra[s], key, k) - value(rb[s], key, k) for s in seeds
                       if value(ra[s], key, k) is not None and value(rb[s], key, k) is not None] for k in ks}


def run_note(n, detectable=False, source="[runstats.py](runstats.py)"):
    """What the run-level columns are, and what n paired runs can show (detectable: and that column)."""
    floor = smallest_p(n)
    return (f"Run level ({source}): the training run is the unit. The interval is Student's t over "
            f"the per-seed differences; p is the exact sign-flip test over the {n} paired runs, whose smallest "
            f"possible value is {floor:.3g}" + (", so no difference can reach α = 0.05 with this many runs (\"too few "
            "runs for a test\")." if floor > 0.05 else ".") + (" \"detectable\" is the smallest true difference this "
            "many runs would find with 80% power at α = 0.05, given the spread of the differences." if detectable
                                                               else ""))


def run_level(ds, a, b):
    """[mean, 95% interval, exact p, reading, detectable] of a − b over paired runs (results/runstats.py); dashes
    below two runs."""
    if len(ds) < 2:
        return [signed(ds[0]) if ds else "-"] + ["-"] * 4
    c = differences_comparison(ds, a, b)
    return [signed(c.mean), f"[{signed(c.low)}, {signed(c.high)}]", f"{c.p:.3g}", c.reading,
            "-" if c.detectable is None else f"{c.detectable:.3f}"]


def paired_rows(runs, a, b, key, ks=None):
    """(seeds, rows): a − b per evaluation step and k, each run of a paired with the run of b of the same seed: the
    step, k, each seed's difference, then the run-level columns (run_level)."""
    rows, seen = [], []
    for step in sorted({s for label in (a, b) for s in eval_steps(runs.get(label, []))}):
        seeds, diffs = paired(runs, a, b, key, ks, step)
        seen = seen or seeds
        rows += [[str(step), f"k={k}"] + [f"{d:+.3f}" for d in ds] + [""] * (len(seen) - len(ds)) + run_level(ds, a, b)
                 for k, ds in diffs.items() if ds]
    return seen, rows


RUN_HEADER = ["mean", "95% interval over runs", "p (exact)", "reading", "detectable"]


def paired_lines(runs, a, b, key, caption):
    """A caption, then the paired differences a − b per evaluation step and k (paired_rows); nothing before a pair
    has finished."""
    seeds, rows = paired_rows(runs, a, b, key)
    if not rows:
        return []
    return [caption, ""] + table(["step", "k"] + [f"seed {s}" for s in seeds] + RUN_HEADER, rows, PAIRED_STD_NOTE) \
        + [""]


def metric_lines(runs, bases, captions):
    """For each metric of captions ({metric: caption}) the runs hold: the caption, then key@k per arm and evaluation
    step at every k of the metric (step 0 = the base sampled with the arm's m), mean ± std over seeds."""
    lines = []
    for key, caption in captions.items():
        ks = sorted({int(k) for rs in runs.values() for r in rs for k in r["summary"]["metrics"].get(key, {})})
        rows = []
        for label, rs in runs.items() if ks else ():
            base = bases.get(rs[0]["summary"]["metrics"]["m"])
            rows += [[label, "0 (base)", "-"] + [pm([value(base, key, k)]) for k in ks]] if base else []
            for step in eval_steps(rs):
                got = [m for m in (at_step(r, step) for r in rs) if m]
                rows.append([label, str(step), str(len(got))] + [pm([value(m, key, k) for m in got]) for k in ks])
        lines += [caption, ""] + table(["method", "step", "seeds"] + [f"k={k}" for k in ks], rows) + [""] if ks else []
    return lines

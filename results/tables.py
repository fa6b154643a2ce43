"""
The tables of results.compare: reading a finished run back (read_run: summary.json and eval.jsonl), mean ± std over
runs, paired differences per step and k with the run-level columns (results/runstats.py), each metric along
training, a plan's decision (decision_lines: families of pairs under Holm's rule) and what each arm writes
(written_lines, from results.coverage's files).
"""
import json
import os

import numpy as np

from results.jobs import METRICS
from results.runstats import (detectable_difference, differences_comparison, holm_adjusted, sign_flip_p, signed,
                              smallest_p)


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


def stopped_early(rs):
    """Whether these runs are an arm stopped early (results.compare.read_runs): each run is read at its own t*."""
    return any("stopped_at" in r for r in rs)


def pair_steps(runs, a, b):
    """[(step, shown)]: where a pair is compared. Every evaluation step both arms have; where either arm is stopped
    early, once, each run at its end (step None: its t*, or the other arm's last step), shown as "t*" or
    "t* / 500", so that arms trained for different numbers of steps still pair."""
    ra, rb = runs.get(a, []), runs.get(b, [])
    if stopped_early(ra) or stopped_early(rb):
        return [(None, " / ".join(dict.fromkeys("t*" if stopped_early(rs) else str(max(eval_steps(rs)))
                                                for rs in (ra, rb))))]
    return [(s, str(s)) for s in sorted(set(eval_steps(ra)) & set(eval_steps(rb)))]


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
    finished, at each of ks (default: every k of the metric); a seed where either run lacks key@k is left out of that
    k. -> (seeds, {k: {seed: d_s}})."""
    def metrics(r):
        return r["summary"]["metrics"] if step is None else at_step(r, step)
    ra = {r["seed"]: metrics(r) for r in runs.get(a, []) if metrics(r)}
    rb = {r["seed"]: metrics(r) for r in runs.get(b, []) if metrics(r)}
    seeds = sorted(set(ra) & set(rb))
    ks = ks or sorted({int(k) for s in seeds for k in ra[s].get(key) or {}})
    return seeds, {k: {s: value(ra[s], key, k) - value(rb[s], key, k) for s in seeds
                       if value(ra[s], key, k) is not None and value(rb[s], key, k) is not None} for k in ks}


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
    step, k, each seed's difference (blank where that seed has none), then the run-level columns (run_level)."""
    found = [(shown, paired(runs, a, b, key, ks, step)[1]) for step, shown in pair_steps(runs, a, b)]
    seeds = sorted({s for _, diffs in found for d in diffs.values() for s in d})
    return seeds, [[shown, f"k={k}"] + [f"{d[s]:+.3f}" if s in d else "" for s in seeds]
                   + run_level(list(d.values()), a, b) for shown, diffs in found for k, d in diffs.items() if d]


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
                rows.append([label, "t*" if stopped_early(rs) else str(step), str(len(got))]   # each run at its own t*
                            + [pm([value(m, key, k) for m in got]) for k in ks])
        lines += [caption, ""] + table(["method", "step", "seeds"] + [f"k={k}" for k in ks], rows) + [""] if ks else []
    return lines


def verdict_lines(runs, pairs, key="pooled_best@k"):
    """The headline: A − B for each pair, in key@k at their last common step and largest k."""
    rows = []
    for b, first in pairs:
        steps = pair_steps(runs, b, first)
        if steps:
            step, shown = steps[-1]
            _, diffs = paired(runs, b, first, key, step=step)
            k, ds = max((k, list(d.values())) for k, d in diffs.items() if d)
            rows.append([f"{b} − {first}", shown, f"k={k}", str(len(ds)), *run_level(ds, b, first),
                         f"{smallest_p(len(ds)):.3g}"])
    if not rows:
        return ["No two methods have finished runs yet: nothing to compare.", ""]
    return [f"{METRICS[key][0].upper()}{METRICS[key][1:]} at the last step and the largest k, each method against "
            f"{pairs[0][1]}" + (" and the configuration's pairs" if len({b for _, b in pairs}) > 1 else "")
            + ", runs paired by seed:", ""] + \
        table(["difference", "step", "k", "runs"] + RUN_HEADER + ["smallest p possible"], rows) + [""]


def holm_reading(c, rejected, matters=None):
    """A pair's verdict after Holm's rule (rejected: whether Holm's rule rejects it), read against `matters`, the
    plan's smallest difference that matters, from the 95% interval (results/PLAN_EARLY_STOP.md, "How the result is
    read"), never from the mean alone. Separated: the interval's end nearer zero at `matters` or beyond, "A ahead by at
    least what matters"; its far end below it, "A ahead, by less than what matters"; `matters` inside it, "A ahead;
    whether by what matters is not resolved". Not separated: the interval within ±matters (its ends included), "not
    separated; no difference that matters"; else "not separated; the runs cannot tell". A pair separated alone but
    not after Holm's rule reads "not separated (Holm)"; too few runs for a test, as c.reading says."""
    if c.reading.startswith("too"):
        return c.reading
    if not rejected:
        reading = "not separated" if c.reading.startswith("not") else "not separated (Holm)"
        if not matters:
            return reading
        within = -matters <= c.low and c.high <= matters   # an end at ±matters does not reach beyond it
        return reading + ("; no difference that matters" if within else "; the runs cannot tell")
    if not matters:
        return c.reading
    near, far = (c.low, c.high) if c.mean > 0 else (-c.high, -c.low)   # the interval as a lead of the arm ahead
    if near >= matters:
        return c.reading + " by at least what matters"
    if far < matters:
        return c.reading + ", by less than what matters"
    return c.reading + "; whether by what matters is not resolved"


def pair_values(runs, pair, key, k):
    """(A label, B label, metric, {seed: A − B}) of a pair [A, B] or [A, B, metric] at the run's last step, k."""
    a, b, metric = (*pair, key)[:3]
    va, vb = ({r["seed"]: value(r["summary"]["metrics"], metric, k) for r in runs.get(x, [])} for x in (a, b))
    return a, b, metric, {s: va[s] - vb[s] for s in sorted(set(va) & set(vb))   # each difference with its own seed
                          if va[s] is not None and vb[s] is not None}


def family_rows(runs, pairs, key, k, family, matters):
    """The decision's rows of one family of pairs, Holm's rule within it; pairs without two finished seeds are left
    out, and a pair that repeats another's test (its metric is the headline's) counts once. A row: pair, family,
    metric@k, runs, mean, interval, exact p, Holm's p, reading, the range of p with each run left out in turn, the
    difference 80% power finds at Holm's first level (alpha over the family's size)."""
    tested = [(a, b, m, d) for a, b, m, d in (pair_values(runs, p, key, k) for p in pairs) if len(d) >= 2]
    tested = [t for i, t in enumerate(tested) if t[:3] not in [u[:3] for u in tested[:i]]]   # one test once
    cs = [differences_comparison(list(d.values()), a, b) for a, b, _, d in tested]
    rows = []
    for (a, b, m, d), c, holm_p in zip(tested, cs, holm_adjusted([c.p for c in cs])):
        ds = list(d.values())
        left = [sign_flip_p(ds[:i] + ds[i + 1:]) for i in range(len(ds))] if len(ds) > 2 else []
        found = detectable_difference(float(np.std(ds, ddof=1)), len(ds), alpha=0.05 / len(cs))
        rows.append([f"{a} − {b}", family, f"{m.replace('@k', f'@{k}')}", str(len(ds)), signed(c.mean),
                     f"[{signed(c.low)}, {signed(c.high)}]", f"{c.p:.3g}", f"{holm_p:.3g}",
                     holm_reading(c, holm_p <= 0.05, matters), f"{min(left):.3g}-{max(left):.3g}" if left else "-",
                     "-" if found is None else f"{found:.3f}"])
    return rows


def decision_lines(runs, decide, key):
    """The plan's decision (a configuration's "decide": k, matters, pairs, secondary, growth): each family of pairs
    under Holm's rule at the runs' last step (family_rows); per deciding pair each seed's difference at k minus at
    the growth k (the gap's growth with k, no test); each arm's diversity and its steps t*."""
    k, matters = decide["k"], decide.get("matters")
    rows = family_rows(runs, decide["pairs"], key, k, "deciding", matters) + \
        family_rows(runs, decide.get("secondary", []), key, k, "secondary", matters)
    if not rows:
        return []
    lines = ["## The decision", "",
             "The plan's pairs at each run's last step (an arm stopped early: at its t*), runs paired by seed. Holm's "
             "rule holds within each family; \"leaving one run out\" is the range of the exact p with each seed left "
             "out in turn; \"found with 80% power\" is the difference these runs would find at Holm's first level, "
             "from their own spread. The 95% interval is each pair's own, not adjusted by Holm's rule."
             + (f" The smallest difference that matters is {matters:g}; the reading sets it against the interval."
                if matters else ""),
             ""]
    lines += table(["pair", "family", "metric", "runs", "mean", "95% interval", "p (exact)", "p (Holm)", "reading",
                    "leaving one run out", "found with 80% power"], rows, note=None) + [""]
    low = decide.get("growth")
    if low:
        growth = []
        for pair in decide["pairs"]:
            a, b, m, high = pair_values(runs, pair, key, k)
            base = pair_values(runs, pair, key, low)[3]
            ds = {s: high[s] - base[s] for s in high if s in base}
            growth += [[f"{a} − {b}", " ".join(f"{d:+.3f}" for d in ds.values()),
                        signed(float(np.mean(list(ds.values()))))]] if ds else []
        lines += [f"The gap's growth with k (a description): each seed's difference at k = {k} minus at k = {low}, in "
                  "seed order, then the mean.", ""] + table(["pair", "per seed", "mean"], growth, note=None) + [""]
    described = [[label, str(len(rs)), pm([r["summary"]["metrics"].get("diversity") for r in rs]),
                  " ".join(f"s{r['seed']}:{r['stopped_at']}" for r in rs if "stopped_at" in r) or "-"]
                 for label, rs in runs.items()]
    return lines + ["Each arm at its last step (an arm stopped early: at t*): reward-space diversity, mean ± std "
                    "over runs, and each seed's step t* (sN:T: seed N stopped at step T).", ""] + \
        table(["arm", "runs", "diversity", "t*"], described) + [""]


COVERAGE = {False: "coverage-final.json", True: "coverage-stopped.json"}   # results.coverage's files in a run dir


def written_lines(runs, problems=4, seed=None):
    """What each arm writes, from the coverage files kept in its run directories (results.coverage --routes K: the
    final weights' and, for an arm stopped early, t*'s): the share of answers of each kind, mean over runs, then the
    first rollout's answers and reward vectors on the first `problems` report problems, in one seed's run."""
    paths = {label: [(r, os.path.join(r["dir"], COVERAGE["stopped_at" in r])) for r in rs]
             for label, rs in runs.items()}
    got = {label: [(r, read_json(path)) for r, path in ps if os.path.isfile(path)] for label, ps in paths.items()}
    got = {label: cs for label, cs in got.items() if cs}
    if not got:
        return []
    kinds = list(next(iter(got.values()))[0][1]["answers"])
    lines = ["## What each arm writes", "", "The share of written answers of each kind (results/coverage.py), mean "
             "over runs, and the share of completions whose answers fall in two classes or more (a class: whether the "
             "answer reaches the exit, and whether it takes gold and diamonds, so a route that misses the exit is a "
             "class of its own; mean ± population std over runs; - for one answer a completion):", ""]
    lines += table(["arm", "runs", *kinds, "completions in two classes or more"],
                   [[label, str(len(cs)), *(f"{np.mean([c['answers'][x] for _, c in cs]):.2f}" for x in kinds),
                     pm([c.get("completions_two_classes") for _, c in cs], 2)] for label, cs in got.items()],
                   note=None) + [""]
    rows = []
    for label, cs in got.items():
        r, c = next(((r, c) for r, c in cs if r["seed"] == seed), cs[0])
        for route in c.get("routes", []):
            if route["rollout"] == 0 and route["problem"] < problems:
                rows.append([label, str(r["seed"]), str(route["problem"]), "<br>".join(
                    f"`{text}` {[round(x, 2) for x in vector]}" for text, vector in route["answers"])])
    return lines + ([f"The first rollout on report problems 0-{problems - 1}: each answer and its reward vector.", ""]
                    + table(["arm", "seed", "problem", "answers"], rows, note=None) + [""] if rows else [])

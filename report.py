"""
results.md and the figures of the reproduction, read back from the finished runs of reproduce.py:
summary.json (the final evaluation; the base's where that run evaluated it), eval.jsonl (evaluations during
training), log.jsonl (one line per RL step), evolve-*.json (the evolutionary search), and the kept weights of
the main maze runs (the route figure samples them once and caches the answers in routes_maze.json).

Numbers are means ± standard deviation (numpy's, ddof 0) over RL seeds; a single seed is shown alone.
"""
import json
import os

import numpy as np

KS = (1, 3, 6, 12, 24, 48)   # pooled best@k: from k = 1 (the whole-rollout definition from k = m = 3)


# ------------------------------------------------------------------------------------------------ reading
def _read(path):
    with open(path) as f:
        return json.load(f)


def _jsonl(path):
    from plots import read_jsonl
    return read_jsonl(path) if os.path.isfile(path) else []


def finished_runs(cfg, out, group):
    """{label: [run, ...] over the group's seeds that finished}; run = dict(seed, slug, dir, summary, evals, log)."""
    from reproduce import GROUPS, jobs_of, run_dir
    runs = {label: [] for label, _, _ in GROUPS[group]}
    for j in jobs_of(cfg):
        directory = run_dir(out, j)
        if j["group"] == group and os.path.isfile(os.path.join(directory, "summary.json")):
            runs[j["label"]].append({"seed": j["seed"], "slug": j["slug"], "dir": directory,
                                     "summary": _read(os.path.join(directory, "summary.json")),
                                     "evals": _jsonl(os.path.join(directory, "eval.jsonl")),
                                     "log": _jsonl(os.path.join(directory, "log.jsonl"))})
    return {label: r for label, r in runs.items() if r}


def value(metrics, key, k):
    """metrics[key][k] (json keys are strings), or None where the metric has no such k (whole-rollout k < m)."""
    table = metrics.get(key) or {}
    return table.get(str(k), table.get(k))


def base_metrics(runs, slug):
    """The base evaluation stored by the run `slug` (its seed-0 run evaluates the base), or None."""
    for rs in runs.values():
        for r in rs:
            if r["slug"] == slug and r["summary"].get("base_metrics"):
                return r["summary"]["base_metrics"]
    return None


# ------------------------------------------------------------------------------------------------ tables
def pm(values, digits=3):
    """'mean ± std' over seeds, or the one value."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def table(header, rows):
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def k_table(runs, key, ks, bases=()):
    """One row per arm: key@k for each k, mean ± std over seeds; then the base rows (label, metrics)."""
    rows = [[label, str(len(rs))] + [pm([value(r["summary"]["metrics"], key, k) for r in rs]) for k in ks]
            for label, rs in runs.items()]
    rows += [[label, "-"] + [pm([value(m, key, k)]) for k in ks] for label, m in bases if m]
    return table(["method", "seeds"] + [f"k={k}" for k in ks], rows)


def paired(runs, a, b, key, ks):
    """Per seed d_s(k) = key@k(a, s) − key@k(b, s) for the seeds both finished. -> (seeds, {k: [d_s]})."""
    ra = {r["seed"]: r["summary"]["metrics"] for r in runs.get(a, [])}
    rb = {r["seed"]: r["summary"]["metrics"] for r in runs.get(b, [])}
    seeds = sorted(set(ra) & set(rb))
    return seeds, {k: [value(ra[s], key, k) - value(rb[s], key, k) for s in seeds
                       if value(ra[s], key, k) is not None and value(rb[s], key, k) is not None] for k in ks}


def verdict(ds, a, b):
    """The plan's rule: every seed's difference of one sign decides; anything else is unresolved."""
    if not ds:
        return "-"
    if all(d > 0 for d in ds):
        return f"{a} ahead on every seed"
    if all(d < 0 for d in ds):
        return f"{b} ahead on every seed"
    return "unresolved"


def paired_table(runs, a, b, key, ks, name):
    seeds, diffs = paired(runs, a, b, key, ks)
    if not seeds:
        return []
    rows = [[f"k={k}"] + [f"{d:+.3f}" for d in diffs[k]] + [pm(diffs[k]), verdict(diffs[k], a, b)]
            for k in ks if diffs[k]]
    return [f"Paired difference {a} − {b}, {name}, per RL seed:", ""] + \
        table(["k"] + [f"seed {s}" for s in seeds] + ["mean ± std", "reading (plan's rule)"], rows) + [""]


def other_table(runs, task, bases=(), k=48):
    """The rest of the final evaluation: pass, E_w, diversity, Pareto, validity, per-dimension means, time."""
    dims = None
    rows = []
    for label, metrics_list, seconds in [(lb, [r["summary"]["metrics"] for r in rs],
                                          [r["summary"]["train_seconds"] for r in rs]) for lb, rs in runs.items()] + \
            [(lb, [m], None) for lb, m in bases if m]:
        dims = dims or list(metrics_list[0]["dim_means"])
        row = [label, pm([value(m, "pass@k", k) for m in metrics_list]),
               pm([value(m, "E_w[best@k]", k) for m in metrics_list])]
        row += [pm([m[key] for m in metrics_list], 2 if key == "pareto_distinct" else 3)
                for key in ("diversity", "pareto_frac", "pareto_distinct", "valid_rate", "distinct_rate")]
        row += [pm([m["dim_means"][d] for m in metrics_list]) for d in dims]
        row.append("-" if seconds is None else f"{np.mean(seconds):.0f}")
        rows.append(row)
    if task == "code":
        names = ["pass@48", "E_w[best@48]"]
    else:
        names = ["pass@48 (reach E)", "E_w[best@48]"]
    return table(["method"] + names + ["diversity", "Pareto frac.", "Pareto distinct", "valid", "distinct"]
                 + [f"mean {d}" for d in dims or []] + ["train s"], rows)


def eval_steps(rs):
    return sorted({e["step"] for r in rs for e in r["evals"]} | {r["summary"]["args"]["steps"] for r in rs})


def at_step(r, step):
    """Metrics of run r at an evaluation step (the final evaluation at its last step)."""
    if step == r["summary"]["args"]["steps"]:
        return r["summary"]["metrics"]
    return next((e for e in r["evals"] if e["step"] == step), None)


def training_table(runs, key, k, bases):
    """key@k at step 0 (the base, sampled with the arm's m) and at every evaluation step, mean ± std."""
    steps = sorted({s for rs in runs.values() for s in eval_steps(rs)})
    rows = []
    for label, rs in runs.items():
        m = rs[0]["summary"]["metrics"]["m"]
        base = bases.get(m)
        rows.append([label, pm([value(base, key, k)]) if base else "-"] +
                    [pm([value(at_step(r, s) or {}, key, k) for r in rs]) for s in steps])
    return table(["method", "step 0 (base)"] + [f"step {s}" for s in steps], rows)


def evolve_results(cfg, out):
    """{slug: [result json per seed]} of the finished evolutionary searches."""
    from reproduce import EVOLVE_ARMS, evolve_path
    found = {}
    for slug in EVOLVE_ARMS:
        paths = [evolve_path(out, slug, s) for s in cfg["code"]["seeds"]]
        rs = [_read(p) for p in paths if os.path.isfile(p)]
        if rs:
            found[slug] = rs
    return found


def evolve_budgets(budget):
    return [budget // 8, budget // 4, budget // 2, budget]


def evolve_table(results):
    if not results:
        return []
    first = next(iter(results.values()))[0]
    lines = [f"Evolutionary search from the code checkpoints on the {len(first['problems'])} held-out problems that "
             f"no code checkpoint (any arm, any seed) solved in its 48-answer evaluation pool. Problems solved "
             f"within each budget, mean ± std over seeds (each seed's count in brackets):", ""]
    for unit, entry in first["units"].items():
        budgets = evolve_budgets(entry["budget"])
        rows = []
        for slug, rs in results.items():
            counts = [[sum(s is not None and s <= b for s in r["units"][unit]["solved_at"]) for r in rs]
                      for b in budgets]
            rows.append([f"{slug.upper()} (m={rs[0]['m']})", str(len(rs))] +
                        [f"{pm(c, 2)} {c}" for c in counts] +
                        [f"{np.mean([r['units'][unit]['seconds'] for r in rs]):.0f}"])
        lines += table(["start checkpoint", "seeds"] + [f"≤{b} {unit}" for b in budgets] + ["s per search"], rows)
        lines.append("")
    return lines


def compute_seconds(out):
    """Seconds inside the runs (warm starts, RL, evaluations, searches), read back from their files."""
    total = 0.0
    for root, _, files in os.walk(os.path.join(out, "runs")):
        if "summary.json" in files:
            s = _read(os.path.join(root, "summary.json"))
            total += s["train_seconds"] + s["eval_seconds"]
        elif "log.jsonl" in files and os.path.basename(os.path.dirname(root)) == "base":
            total += _jsonl(os.path.join(root, "log.jsonl"))[-1]["seconds"]
        for name in files:
            if name.startswith("evolve-") and name.endswith(".json"):
                total += sum(u["seconds"] for u in _read(os.path.join(root, name))["units"].values())
    return total


def wall_seconds(out):
    """Wall-clock time of the reproduce.py invocations that ran jobs (runs/timeline.jsonl)."""
    return sum(row["end"] - row["start"] for row in _jsonl(os.path.join(out, "runs", "timeline.jsonl")))


# ------------------------------------------------------------------------------------------------ report
def write_report(cfg, out, title, figures=True):
    """Rewrite out/results.md (and, with figures, the PNGs) from whatever has finished. -> the markdown lines."""
    main, abl, code = (finished_runs(cfg, out, g) for g in ("main", "ablation", "code"))
    lines = [f"# Reproduction: `{title}`", "",
             "Configuration, metrics and the deciding comparison: [PLAN.md](PLAN.md) (committed before these runs). "
             "Every number: mean ± std over RL seeds (one shared warm start per task). k counts answers.", ""]
    if main:
        steps = cfg["main"]["steps"]
        bases = {1: base_metrics(main, "grpo"), 3: base_metrics(main, "vpo")}
        base_rows = [("base (routes warm start), m=1", bases[1]), ("base (routes warm start), m=3", bases[3])]
        lines += [f"## Maze (paper design, `routes` warm start): {steps} RL steps, "
                  f"{steps * 64:,} rollouts per arm", "",
                  f"Pooled best@k (the authors' definition: every answer of a maze in one pool), "
                  f"{first_metrics(main)['problems']} held-out mazes:", ""]
        lines += k_table(main, "pooled_best@k", KS, base_rows) + [""]
        lines += ["Best@k over whole rollouts (k/m rollouts of m answers; equal to the pooled one when m = 1):", ""]
        lines += k_table(main, "best@k", KS[1:], base_rows) + [""]
        lines += paired_table(main, "VPO", "GRPO", "pooled_best@k", KS, "pooled best@k")
        lines += paired_table(main, "VPO", "GRPO", "best@k", KS[1:], "whole-rollout best@k")
        lines += paired_table(main, "VPO", "Multi-RLVR", "pooled_best@k", KS, "pooled best@k")
        lines += ["Pooled best@3 and best@48 during training (held-out mazes):", ""]
        lines += training_table(main, "pooled_best@k", 3, bases) + [""] + \
            training_table(main, "pooled_best@k", 48, bases) + [""]
        lines += ["The rest of the final evaluation (48 answers per maze):", ""]
        lines += other_table(main, "maze", base_rows) + [""]
    if abl:
        bases = [("base (routes), m=1", base_metrics(main, "grpo") if main else None),
                 ("base (diverse), m=1", base_metrics(abl, "grpo_diverse")),
                 ("base (diverse), m=3", base_metrics(abl, "vpo_diverse")),
                 ("base of goal-conditioned GRPO, prompted with w*", base_metrics(abl, "goal_cond"))]
        lines += ["## Maze ablations (one seed each, same length and evaluation)", "", "Pooled best@k:", ""]
        lines += k_table(abl, "pooled_best@k", KS, bases) + [""]
        lines += other_table(abl, "maze", bases) + [""]
    if code:
        steps = cfg["code"]["steps"]
        bases = [("base, m=1", base_metrics(code, "grpo")), ("base, m=3", base_metrics(code, "vpo"))]
        lines += [f"## Code task: {steps} RL steps, {steps * 64:,} rollouts per arm", "", "Pooled best@k:", ""]
        lines += k_table(code, "pooled_best@k", KS, bases) + [""]
        lines += ["pass@k (every shown test passes):", ""] + k_table(code, "pass@k", KS[1:], bases) + [""]
        lines += ["pass@k on the hidden tests too:", ""] + k_table(code, "pass_hidden@k", KS[1:], bases) + [""]
        lines += paired_table(code, "VPO", "GRPO", "pooled_best@k", KS, "pooled best@k")
        lines += paired_table(code, "VPO", "GRPO", "pass@k", KS[1:], "pass@k")
        lines += other_table(code, "code", bases) + [""]
    lines += evolve_table(evolve_results(cfg, out))
    lines += [f"Compute inside the runs (warm starts, RL, evaluations, searches; read from their files): "
              f"{compute_seconds(out):.0f} s; wall-clock time of reproduce.py: {wall_seconds(out):.0f} s "
              f"(runs two at a time, one torch thread each)."]
    if figures:
        from report_figures import write_figures
        lines += ["", "Figures: " + ", ".join(f"[{name}]({name})" for name in write_figures(cfg, out, main, abl, code))]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def first_metrics(runs):
    return next(iter(runs.values()))[0]["summary"]["metrics"]

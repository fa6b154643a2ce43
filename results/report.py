"""
results.md and the figures of the reproduction, read back from the finished runs of reproduce.py:
summary.json (the final evaluation; the base's where that run evaluated it), eval.jsonl (evaluations during
training), log.jsonl (one line per RL step), and the kept weights of the main runs (the route figure samples
them once and caches the answers in routes_maze.json, so a clone without the weights still draws it).

Numbers are means ± the population standard deviation (ddof 0) over RL seeds, and every table with a ± says so
under it; a single seed is shown alone.
"""
import json
import os
import re

import numpy as np

from results.plan import KS, read_jsonl_or_empty, read_json, at_step, base_metrics, eval_steps, finished_runs, value
from tasks import get_task



# ------------------------------------------------------------------------------------------------ tables
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


def paired(runs, a, b, key, ks, step=None):
    """Per seed d_s(k) = key@k(a, s) − key@k(b, s) at an evaluation step (default: the end) for the seeds both
    finished. -> (seeds, {k: [d_s]})."""
    def metrics(r):
        return r["summary"]["metrics"] if step is None else at_step(r, step)
    ra = {r["seed"]: metrics(r) for r in runs.get(a, []) if metrics(r)}
    rb = {r["seed"]: metrics(r) for r in runs.get(b, []) if metrics(r)}
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
    """Paired differences a − b per evaluation step and k, per seed, with mean ± std and the plan's reading."""
    rows, seeds_seen = [], None
    for step in sorted({s for label in (a, b) for s in eval_steps(runs.get(label, []))}):
        seeds, diffs = paired(runs, a, b, key, ks, step)
        if not seeds:
            continue
        seeds_seen = seeds_seen or seeds
        rows += [[str(step), f"k={k}"] + [f"{d:+.3f}" for d in diffs[k]] + [""] * (len(seeds_seen) - len(diffs[k]))
                 + [pm(diffs[k]), verdict(diffs[k], a, b)] for k in ks if diffs[k]]
    if not rows:
        return []
    return [f"Paired difference {a} − {b}, {name}, per RL seed and evaluation step:", ""] + \
        table(["step", "k"] + [f"seed {s}" for s in seeds_seen] + ["mean ± std", "reading (plan's rule)"], rows,
              PAIRED_STD_NOTE) + [""]


def step_table(runs, key, ks, bases):
    """key@k per arm and evaluation step (step 0 = the base sampled with the arm's m), mean ± std over seeds."""
    rows = []
    for label, rs in runs.items():
        base = bases.get(rs[0]["summary"]["metrics"]["m"])
        if base:
            rows.append([label, "0 (base)", "-"] + [pm([value(base, key, k)]) for k in ks])
        for step in eval_steps(rs):
            ms = [at_step(r, step) for r in rs if at_step(r, step)]
            rows.append([label, str(step), str(len(ms))] + [pm([value(m, key, k) for m in ms]) for k in ks])
    return table(["method", "step", "seeds"] + [f"k={k}" for k in ks], rows)


def scalar_step_table(runs, keys, bases):
    """Scalar metrics per arm and evaluation step, mean ± std over seeds. keys: (metric, k or None, header)."""
    def get(metrics, key, k):
        return metrics.get(key) if k is None else value(metrics, key, k)
    rows = []
    for label, rs in runs.items():
        base = bases.get(rs[0]["summary"]["metrics"]["m"])
        if base:
            rows.append([label, "0 (base)", "-"] + [pm([get(base, key, k)]) for key, k, _ in keys])
        for step in eval_steps(rs):
            ms = [at_step(r, step) for r in rs if at_step(r, step)]
            rows.append([label, str(step), str(len(ms))] + [pm([get(m, key, k) for m in ms]) for key, k, _ in keys])
    return table(["method", "step", "seeds"] + [name for _, _, name in keys], rows)


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


def compute_seconds(out):
    """Seconds inside the runs (warm start, RL, evaluations), read back from their files."""
    total = 0.0
    for root, _, files in os.walk(os.path.join(out, "runs")):
        if "summary.json" in files:
            s = read_json(os.path.join(root, "summary.json"))
            total += s["train_seconds"] + s["eval_seconds"]
        elif "log.jsonl" in files and os.path.basename(os.path.dirname(root)) == "base":
            total += read_jsonl_or_empty(os.path.join(root, "log.jsonl"))[-1]["seconds"]
    return total


def wall_seconds(out):
    """Wall-clock time of the reproduce.py invocations that ran jobs (out/runs/timeline.jsonl)."""
    return sum(row["end"] - row["start"] for row in read_jsonl_or_empty(os.path.join(out, "runs", "timeline.jsonl")))


# ------------------------------------------------------------------------------------------------ report
def write_report(cfg, out, title, figures=True):
    """Rewrite out/results.md (and, with figures, the PNGs) from whatever has finished. -> the markdown lines."""
    main, baselines = finished_runs(cfg, out, "main"), finished_runs(cfg, out, "baselines")
    if figures and "code" in cfg:  # sample what the code runs write (cached), for the forms table
        from results.figures import code_answers
        code_answers(cfg, out, finished_runs(cfg, out, "code"))
    runs = {**main, **baselines}
    rooms = {name: get_task(name).answer_tokens for name in ("maze", "code")}
    lines = [f"# Reproduction v3: `{title}`", "",
             "Configuration, metrics and the deciding comparison: [PLAN.md](PLAN.md) (the maze) and "
             "[PLAN_CODE.md](PLAN_CODE.md) (code and its search), committed before these runs. Every number: mean "
             "± population std (ddof 0) over RL seeds (one shared warm start); the seeds column counts them. k "
             f"counts answers; every answer had its own room of {rooms['maze']} tokens on the maze and "
             f"{rooms['code']} on code.", ""]
    if runs:
        steps = cfg["main"]["steps"]
        bases = {1: base_metrics(runs, "grpo"), 3: base_metrics(runs, "vpo")}
        lines += [f"## Maze (paper design, `routes` warm start): {steps} RL steps, {steps * 64:,} rollouts per arm",
                  "", f"Pooled best@k (the authors' definition: every answer of a maze in one pool) at each "
                  f"evaluation step, {first_metrics(runs)['problems']} held-out mazes:", ""]
        lines += step_table(runs, "pooled_best@k", KS, bases) + [""]
        lines += paired_table(runs, "VPO", "GRPO", "pooled_best@k", KS[1:], "pooled best@k")
        lines += ["Best@k over whole rollouts (k/m rollouts of m answers; equal to the pooled one when m = 1):", ""]
        lines += step_table(runs, "best@k", KS[1:], bases) + [""]
        lines += paired_table(runs, "VPO", "GRPO", "best@k", KS[1:], "whole-rollout best@k")
        lines += ["Diversity and the answers at each evaluation step (48 answers per maze):", ""]
        lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("valid_rate", None, "valid"),
                                          ("distinct_rate", None, "distinct"), ("pass@k", 48, "pass@48 (reach E)"),
                                          ("E_w[best@k]", 48, "E_w[best@48]"), ("pareto_frac", None, "Pareto frac.")],
                                   bases) + [""]
        for other in ("Max@k", "Multi-RLVR"):
            lines += paired_table(runs, "VPO", other, "pooled_best@k", (3, 12, 48), "pooled best@k")
        lines += ["The final evaluation in full:", ""]
        lines += other_table(runs, "maze", [("base, m=1", bases[1]), ("base, m=3", bases[3])]) + [""]
    lines += code_section(cfg, out)
    lines += [f"Compute inside the runs (warm start, RL, evaluations; read from their files): "
              f"{compute_seconds(out):.0f} s; wall-clock time of reproduce.py: {wall_seconds(out):.0f} s "
              f"(runs two at a time, one torch thread each; over every invocation that ran jobs).", ""]
    if figures:
        from results.figures import write_figures
        lines += ["Figures: " + ", ".join(f"[{name}]({name})" for name in write_figures(cfg, out, runs))]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def code_section(cfg, out):
    """The code comparison: pass@k, pass_hidden@k and best@k per evaluation step, the paired differences, and the
    search table (results/search_jobs.py)."""
    runs = finished_runs(cfg, out, "code") if "code" in cfg else {}
    if not runs:
        return []
    g = cfg["code"]
    bases = {1: base_metrics(runs, "grpo"), 3: base_metrics(runs, "vpo")}
    ks = KS[1:]
    lines = [f"## Code (calibrated task): {g['steps']} RL steps, {g['steps'] * 64:,} rollouts per arm", "",
             f"pass@k (every shown test passes) over whole rollouts (k/m rollouts of m answers) at each evaluation "
             f"step, {first_metrics(runs)['problems']} held-out problems, 48 answers each:", ""]
    lines += step_table(runs, "pass@k", ks, bases) + [""]
    lines += paired_table(runs, "VPO", "GRPO", "pass@k", ks, "pass@k")
    lines += ["Pooled pass@k (every answer of a problem in one pool; k = 1 is the fraction of answers that solve):",
              ""]
    lines += step_table(runs, "pooled_pass@k", KS, bases) + [""]
    lines += ["pass_hidden@k (the shown and the 8 hidden tests pass) over whole rollouts:", ""]
    lines += step_table(runs, "pass_hidden@k", ks, bases) + [""]
    lines += ["Code best@k (the fraction of shown tests passed by the best of k answers) over whole rollouts:", ""]
    lines += step_table(runs, "best@k", ks, bases) + [""]
    lines += paired_table(runs, "VPO", "GRPO", "best@k", ks, "code best@k")
    lines += paired_table(runs, "VPO", "Multi-RLVR", "pass@k", (3, 12, 48), "pass@k")
    lines += ["Diversity and the answers at each evaluation step:", ""]
    lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("valid_rate", None, "valid"),
                                      ("distinct_rate", None, "distinct"), ("deploy_reward", None, "tests passed"),
                                      ("pareto_frac", None, "Pareto frac.")], bases) + [""]
    path = os.path.join(out, "answers_code.json")
    if os.path.isfile(path):
        lines += forms_table(read_json(path))
    return lines + search_section(cfg, out)


THREE_LEVELS = re.compile(r"-?\d+ if x<-?\d+ else -?\d+ if x<-?\d+ else -?\d+")


def answer_form(source):
    """The syntactic form of a program: the shape of each family's target, or "other"."""
    if THREE_LEVELS.fullmatch(source):
        return "three levels"
    for needle, form in (("abs(", "abs"), ("%", "remainder"), ("min(max(", "clip"), ("max(", "min/max"),
                         ("min(", "min/max"), (" if ", "other conditional")):
        if needle in source:
            return form
    return "other"


FORMS = ("three levels", "abs", "remainder", "clip", "min/max", "other conditional", "other")


def forms_table(cache):
    """Share of the written answers in each form, per checkpoint (seeds pooled per arm), on the problems whose
    target is not itself three levels: a three-level answer there is a partial program fitted to the tests."""
    if "targets" not in cache:
        return []
    other = [i for i, (_, family) in enumerate(cache["targets"]) if family != "step3"]
    arms = {}
    for name, entry in cache.items():
        if name == "targets":
            continue
        arm = name if name.startswith("base") else name.rsplit("-s", 1)[0]
        arms.setdefault(arm, []).extend(a for i in other for a in entry["answers"][i] if a)
    rows = [[arm, str(len(answers))] + [f"{sum(answer_form(a) == f for a in answers) / len(answers):.2f}"
                                        for f in FORMS] for arm, answers in arms.items() if answers]
    return ([f"What the models write (`answers_code.json`: 12 answers per problem at T = 0.7, final weights, seeds "
             f"pooled): the form of the written answers on the {len(other)} of the first {len(cache['targets'])} "
             f"held-out problems whose target is not three constant levels:", ""]
            + table(["checkpoint", "answers"] + list(FORMS), rows) + [""])


def search_section(cfg, out):
    """Problems solved within each budget by the evolutionary search and by sampling, per seed, and the paper's
    count: problems some seed of one method solves and no seed of the other ever does."""
    from results.search_jobs import HOW, label, read_searches, solved_within
    from search import solved_by_budget, solved_only_by
    found, hard = read_searches(cfg, out)
    if not hard or not any(found.values()):
        return []
    s = cfg["search"]
    lines = ["### Evolutionary search on the hardest held-out problems", "",
             f"The {len(hard['problems'])} problems (of the first {hard['screened']} test problems) that none of the searched checkpoints "
             f"solved in its {s['answers']}-answer evaluation pool (T = 0.7). Budget: {s['budget']} {s['unit']} per problem "
             f"(T = {s['temperature']}); problems solved within each budget, per seed (s0 / s1 / ...), and their "
             f"mean. Sampling: fresh samples from the plain prompt with the same budget. The last two columns (added "
             f"after the runs, not in the plan): distinct non-empty answers written on a problem the run did not "
             f"solve, over its whole budget (mean over such problems); and, per seed, the fraction of shown tests "
             f"that the best program the search kept passes, averaged over the problems (1 where solved).", ""]
    budgets = s["budgets"]
    task = get_task("code")
    problems = task.problems("test", hard["screened"], seed=0)

    def best_tests(problem, res):  # the fraction of shown tests the search's best program passes (0: none kept)
        return float(task.score(problem, res["best"]).mean()) if res.get("best") is not None else 0.0
    rows = []
    for kind in ("evolve", "sample"):
        for slug, runs in found[kind].items():
            counts = [solved_by_budget(r["results"], budgets) for r in runs]
            distinct = [res["population"] for r in runs for res in r["results"] if res["solved_at"] is None]
            best = [np.mean([best_tests(problems[p], res) for p, res in zip(r["problems"], r["results"])])
                    for r in runs] if kind == "evolve" else []
            rows.append([label(kind, slug), str(len(runs))] + [" / ".join(str(c[b]) for c in counts) + f" ({np.mean([c[b] for c in counts]):.1f})"
                                            for b in budgets] + [f"{np.mean(distinct):.0f}" if distinct else "-",
                                                                 " / ".join(f"{b:.3f}" for b in best) or "-"])
    lines += table(["method", "seeds"] + [f"{b} {s['unit']}" for b in budgets] +
                   ["distinct answers per unsolved problem", "best program's tests passed"], rows) + [""]
    rows = []
    for kind in ("evolve", "sample"):
        runs = found[kind]
        if not all(slug in runs for slug in ("grpo", "vpo")):
            continue
        for b in budgets:
            solved = {slug: [solved_within(r, b) for r in runs[slug]] for slug in ("grpo", "vpo")}
            only_v, only_g, both = solved_only_by(solved["vpo"], solved["grpo"])
            rows.append([HOW[kind], str(b), str(len(only_v)), str(len(only_g)), str(len(both))])
    if rows:  # once both methods have finished files
        lines += ["Problems solved by some seed of one method and by no seed of the other (the paper's claim: VPO "
                  "checkpoints solve problems GRPO checkpoints never do):", ""]
        lines += table(["how", f"budget ({s['unit']})", "VPO only", "GRPO only", "both"], rows) + [""]
    return lines + solved_problems_table(found, task, problems)


def solved_problems_table(found, task, problems):
    """Every problem some job solved within the full budget: its target, which seeds solved it (and after how
    many answers), and whether the searches' solving programs also pass the hidden tests (sampling jobs keep no
    programs)."""
    from results.search_jobs import label, solved_within
    columns = [(kind, slug) for kind in ("evolve", "sample") for slug in found[kind]]
    solved = sorted(set().union(*(solved_within(r) for kind, slug in columns for r in found[kind][slug])))
    if not solved:
        return []
    rows = []
    for p in solved:
        cells, hidden = [], []
        for kind, slug in columns:
            hits = []
            for r in found[kind][slug]:
                res = r["results"][r["problems"].index(p)]
                if res["solved_at"] is not None:
                    hits.append(f"s{r['rl_seed']} ({res['solved_at']})")
                    if res.get("best") is not None:
                        hidden.append(task.solved_hidden(problems[p], res["best"]))
            cells.append(", ".join(hits) or "-")
        rows.append([str(p), problems[p].family, f"`{problems[p].target}`"] + cells +
                    [f"{sum(hidden)} / {len(hidden)}" if hidden else "-"])
    header = ["problem", "family", "target"] + [label(kind, slug) for kind, slug in columns]
    return ["Which problems, solved by which seed (answers spent when the first solving program appeared), and how "
            "many of the searches' solving programs also pass the problem's hidden tests:", ""] + \
        table(header + ["search programs passing hidden tests"], rows) + [""]


def first_metrics(runs):
    return next(iter(runs.values()))[0]["summary"]["metrics"]

"""
Search as one of results.compare's evaluations: problems solved per training run on a hard set.

Each run's weights search a hard set of held-out problems, and plainly sample them, with the same budget of answers
per problem. A problem counts as solved when a program equals the target (the task's equals_target), not when the
reward is maxed. The hard set is chosen by a rule stated and fixed before any search. The training run is the unit:
problems solved per run, compared over runs (runstats.py:blocked_comparison: the method labels permuted within each
block of runs that share one warm start), with Holm's rule within each family of pairs.

A configuration's "search" (docs/compare.md) says what is searched and what decides:
    budgets            answers per problem that the tables show; the last one decides
    hard, problems     a committed hard set (its "unsolved" test indices) and how many of them; without "hard",
    screen             results.compare screens the first `screen` held-out problems with the warm start before any
                       search (48 answers at T = 0.7 at each m of the arms, seed 0): a problem is hard when none of
                       them equals the target, and OUT/hard.json keeps the rule and the first `problems` of them
    rule               the rule in words
    temperature        of the search and the sampling (default 1.0); search_seed: run s searches with search_seed + s
    arms               weights searched besides the trained arms': a label and a slug each. The command searches the
                       warm start (slug "base", one answer per call); others, such as GRPO stopped early, are read
                       from committed blocks only
    blocks             for --report, the directories of committed results, one block per warm start (a comparison
                       run here has one block, OUT/runs)
    pairs, secondary   [A slug, B slug]: the deciding pairs and the secondary ones; Holm's rule runs within each
Each run's results are two files beside its run directory, evolve-SLUG-sSEED.json (search) and sample-SLUG-sSEED.json
(plain sampling), with the problems and, per problem, solved_at: the answers spent when a program first equalled the
target (None: never).
"""
import json
import os
import time

import numpy as np

from results.jobs import ROOT, base_file, run_name
from results.runstats import blocked_comparison, describe, paired_comparison

KINDS = {"evolve": "search", "sample": "sampling"}
SCREEN_ANSWERS, BASE = 48, "base"   # the screen's answers per problem and m; the warm start's slug
def arms_of(setup):
    """{slug: label} of every searched arm: the trained arms, then the search's own."""
    return {**{a.slug: a.label for a in setup.arms}, **{a["slug"]: a["label"] for a in setup.search.get("arms", [])}}


def solved(result, budget):
    """The problems one search or sampling file solved (a program equal to the target) within `budget` answers."""
    return {p for p, r in zip(result["problems"], result["results"])
            if r["solved_at"] is not None and r["solved_at"] <= budget}


def read_searches(setup, blocks):
    """({kind: {slug: {seed: the file}}}, {seed: its block}) of the seeds whose files every arm has in one block.
    blocks: the blocks' directories."""
    found, where = {kind: {slug: {} for slug in arms_of(setup)} for kind in KINDS}, {}
    for block in blocks:
        directory = block
        for seed in setup.seeds:
            paths = {(kind, slug): os.path.join(directory, f"{kind}-{slug}-s{seed}.json")
                     for kind in KINDS for slug in arms_of(setup)}
            if seed not in where and all(os.path.isfile(p) for p in paths.values()):
                where[seed] = block
                for (kind, slug), path in paths.items():
                    with open(path) as f:
                        found[kind][slug][seed] = json.load(f)
    return found, where


def per_run(found, kind, slug, budget):
    """{seed: problems solved within budget} of one arm."""
    return {seed: len(solved(r, budget)) for seed, r in found[kind][slug].items()}


def by_block(values, where):
    """{block: values} of a dict seed -> value, the blocks in the order they first appear."""
    return {b: [values[s] for s in values if where.get(s) == b] for b in dict.fromkeys(where[s] for s in values
                                                                                       if s in where)}


def compare_pair(found, where, kind, a, b, budget, names):
    """A − B in problems solved per run, the labels permuted within blocks (runstats.blocked_comparison)."""
    return blocked_comparison(by_block(per_run(found, kind, a, budget), where),
                              by_block(per_run(found, kind, b, budget), where), names[a], names[b])


def family(found, where, pairs, budget, names, kind="evolve"):
    """[(comparison, rejected by Holm's rule within the family)] of some pairs."""
    from search import holm
    cs = [compare_pair(found, where, kind, a, b, budget, names) for a, b in pairs]
    return list(zip(cs, holm([c.p for c in cs])))


def reading(c, rejected):
    return c.reading if rejected or c.reading.startswith(("not", "too")) else "not separated (Holm)"


def verdict_rows(setup, found, where):
    """The deciding pairs at the deciding budget: [pair, budget, runs, difference [interval], p, reading]."""
    names, budget = arms_of(setup), setup.search["budgets"][-1]
    return [[f"{c.a} − {c.b}", f"{budget} answers", f"{c.n_a} and {c.n_b}", describe(c, 1).split(", p = ")[0],
             f"{c.p:.3g}", reading(c, r)] for c, r in family(found, where, setup.search["pairs"], budget, names)]


def distinct_targets(task, problems):
    """How many different target functions the hard set's problems (test indices, seed 0) hold: problems whose
    targets the task's equals_target counts as equal share one. None where the task cannot say."""
    pool = task.problems("test", max(problems) + 1, seed=0)
    kept = []
    for p in (pool[i] for i in problems):
        if getattr(p, "target", None) is None or task.equals_target(p, p.target) is None:
            return None
        if not any(task.equals_target(q, p.target) for q in kept):
            kept.append(p)
    return len(kept)


def search_lines(setup, found, where, task=None):
    """compare.md's search section: the hard set, problems solved per run at each budget, the pairs (search, then
    sampling as a description), each pair within each block (a description), and search − sampling per arm. task:
    the comparison's task, to count the hard set's distinct targets."""
    from results.tables import table
    s, names = setup.search, arms_of(setup)
    budgets, top = s["budgets"], s["budgets"][-1]
    if len(where) < 2:
        return ["## Search", "", f"{len(where)} runs have search results: nothing to compare yet.", ""]
    blocks = len(set(where.values()))
    problems = next(iter(found["evolve"][next(iter(names))].values()))["problems"]
    targets = distinct_targets(task, problems) if task else None
    lines = ["## Search", "", f"Hard set: {s.get('rule', 'as the configuration names it')}. It holds {len(problems)} "
             "problems" + (f" with {targets} different target functions" if targets else "") + ". A problem is "
             f"solved when a program equals the target. {len(where)} runs per arm in {blocks} "
             f"block{'s' * (blocks > 1)} (one warm start each); the test permutes the method labels within blocks.", "",
             f"Problems solved per run: each run at {top} answers in seed order, then the mean over runs at each "
             "budget.", ""]
    lines += table(["arm", "how", f"per run at {top}", *map(str, budgets)],
                   [[names[a], how, " ".join(map(str, per_run(found, kind, a, top).values())),
                     *(f"{np.mean(list(per_run(found, kind, a, b).values())):.1f}" for b in budgets)]
                    for kind, how in KINDS.items() for a in names], note=None) + [""]
    rows = []
    for title, pairs in (("deciding", s["pairs"]), ("secondary", s.get("secondary", []))):
        for kind, how in KINDS.items():
            for c, rejected in family(found, where, pairs, top, names, kind) if pairs else []:
                rows.append([f"{c.a} − {c.b}", title, how, describe(c, 1),
                             ("rejects" if rejected else "does not reject") if kind == "evolve" else "-",
                             reading(c, rejected) if kind == "evolve" else "a description"])
    lines += [f"Each pair at {top} answers, problems per run (Holm's rule within each family, search only):", ""]
    lines += table(["pair", "family", "how", "difference [95% interval], exact p", "Holm", "reading"], rows,
                   note=None) + [""]
    if blocks > 1:
        rows = [[f"{names[a]} − {names[b]}", how, block, describe(compare_pair(found, {x: w for x, w in where.items()
                                                                                 if w == block}, kind, a, b, top,
                                                                                names), 1)]
                for a, b in s["pairs"] + s.get("secondary", []) for kind, how in KINDS.items()
                for block in dict.fromkeys(where.values())]
        lines += [f"Each pair within each block at {top} answers (a description):", ""]
        lines += table(["pair", "how", "block", "difference [95% interval], exact p"], rows, note=None) + [""]
    lines += [f"Search − sampling per arm at {top} answers, paired by run:", ""]
    lines += table(["arm", "difference [95% interval], exact p"],
                   [[names[a], describe(paired_comparison(per_run(found, "evolve", a, top),
                                                          per_run(found, "sample", a, top)), 1)] for a in names],
                   note=None) + [""]
    return lines


# ------------------------------------------------------------------------------------------ running the search
def hard_path(setup, out):
    """The hard set's file: the configuration's committed "hard", else OUT/hard.json (written once by the screen,
    before any search)."""
    return os.path.join(ROOT, setup.search["hard"]) if setup.search.get("hard") else os.path.join(out, "hard.json")


def write_json(path, value):
    from runs.dirs import machine
    with open(path + ".tmp", "w") as f:
        json.dump({**value, "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f)
    os.replace(path + ".tmp", path)


def screen_job(ckpt, ms, n, path):
    """The rule that fixes the hard set before any search: the warm start's 48 answers (T = 0.7, evaluate.py's
    streams, seed 0) at each m of ms on the first n held-out problems; a problem is hard when none of them equals
    the target. Writes path with the rule and the hard problems' test indices in order ("unsolved"). -> 0."""
    from evaluate import evaluate
    from runs.cli import load_run
    model, _, task, _ = load_run(ckpt)
    problems, hit = task.problems("test", n, seed=0), np.zeros(n, dtype=bool)
    for m in ms:
        metrics, _ = evaluate(model, task, problems, m, [SCREEN_ANSWERS], SCREEN_ANSWERS, 0.7, seed=0)
        hit |= np.asarray(metrics["solved_target_per_problem"]) > 0
    write_json(path, {"rule": f"no answer of the warm start's screens ({SCREEN_ANSWERS} answers at T = 0.7 at each m "
                              f"of {list(ms)}, seed 0) equals the target", "screened": n, "m": list(ms),
                      "unsolved": [i for i in range(n) if not hit[i]]})
    return 0


def search_job(kind, ckpt, m, hard, problems, budget, temperature, seed, rl_seed, path):
    """Evolutionary search (kind "evolve") or plain sampling ("sample") from the weights at ckpt (m: answers per
    call, None: the run's) on the first `problems` of the hard set's file, `budget` answers per problem. -> 0."""
    import search
    from runs.cli import eval_weights, load_run
    model, run, task, m0 = load_run(ckpt)
    with open(hard) as f:
        ids = json.load(f)["unsolved"][:problems]
    pool = task.problems("test", max(ids) + 1, seed=0) if ids else []
    t0 = time.perf_counter()
    results = (search.evolve if kind == "evolve" else search.sample_until_solved)(
        model, task, [pool[i] for i in ids], m or m0, budget, "answers", temperature=temperature, seed=seed,
        weights=eval_weights(run, task))
    write_json(path, {"kind": kind, "ckpt": ckpt, "m": m or m0, "budget": budget, "unit": "answers",
                      "temperature": temperature, "seed": seed, "rl_seed": rl_seed, "problems": ids,
                      "results": results, "solved": sum(r["solved_at"] is not None for r in results),
                      "seconds": round(time.perf_counter() - t0, 1)})
    return 0


def answers_per_call(setup, arm):
    """The m of an arm's runs, as train.py's flags give it."""
    import train
    from runs.cli import answers_per_rollout
    a = train.get_parser().parse_args([*setup.argv(arm, setup.seeds_of(arm)[0]), "--out_dir", "x"])
    return answers_per_rollout(a.algo, a.num_answers)


def search_queue(setup, out):
    """The jobs of results/jobs.py:run_queue that search from every finished run and from the warm start, each
    waiting for the files it needs; the screen first where the hard set is not fixed yet. Files already there are
    kept (a comparison resumes)."""
    s, runs = setup.search, os.path.join(out, "runs")
    first = setup.arms[0]
    base, hard = base_file(setup.argv(first, setup.seeds_of(first)[0]), runs), hard_path(setup, out)
    queue = []
    if not os.path.isfile(hard):
        ms = sorted({1} | {answers_per_call(setup, a) for a in setup.arms})
        queue.append({"fn": screen_job, "args": (base, ms, s["screen"], hard), "needs": [base], "name": "the screen"})
    for seed in setup.seeds:
        for slug in arms_of(setup):
            arm = next((a for a in setup.arms if a.slug == slug), None)
            if arm is not None and seed not in setup.seeds_of(arm):
                continue
            ckpt = base if arm is None else os.path.join(runs, run_name(arm, seed), "ckpt.pt")
            done = arm is None or os.path.isfile(os.path.join(runs, run_name(arm, seed), "summary.json"))
            for kind in KINDS:
                path = os.path.join(runs, f"{kind}-{slug}-s{seed}.json")
                if done and not os.path.isfile(path):
                    queue.append({"fn": search_job, "needs": [hard, ckpt], "name": os.path.basename(path)[:-5],
                                  "args": (kind, ckpt, 1 if arm is None else None, hard, s.get("problems"),
                                           s["budgets"][-1], s.get("temperature", 1.0),
                                           s.get("search_seed", 2000) + seed, seed, path)})
    return queue

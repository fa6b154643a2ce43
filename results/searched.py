"""
Search as one of results.compare's evaluations: problems solved per training run on a hard set.

Each run's weights search a hard set of held-out problems, and plainly sample them, with the same budget of answers
per problem. A problem counts as solved when a program equals the target (the task's equals_target), not when the
reward is maxed. The hard set is chosen by a rule stated and fixed before any search. The training run is the unit:
problems solved per run, compared over runs (runstats.py:blocked_comparison: the method labels permuted within each
block of runs that share one warm start), with Holm's rule within each family of pairs.

A configuration's "search" (docs/compare.md) says where the results are and what decides:
    budgets            answers per problem that the tables show; the last one decides
    hard, rule         the committed hard set (its "unsolved" test indices) and the rule that chose it, in words
    blocks             the directories of the results, one block per warm start; a run's files there are
                       evolve-SLUG-sSEED.json (search) and sample-SLUG-sSEED.json (plain sampling), each with its
                       problems and, per problem, solved_at: the answers spent when a program first equalled the target
    arms               weights searched besides the trained arms': a label and a slug each (GRPO stopped early, the
                       warm start)
    pairs, secondary   [A slug, B slug]: the deciding pairs and the secondary ones; Holm's rule runs within each
"""
import json
import os

import numpy as np

from results.runstats import blocked_comparison, describe, paired_comparison

KINDS = {"evolve": "search", "sample": "sampling"}
def arms_of(setup):
    """{slug: label} of every searched arm: the trained arms, then the search's own."""
    return {**{a.slug: a.label for a in setup.arms}, **{a["slug"]: a["label"] for a in setup.search.get("arms", [])}}


def solved(result, budget):
    """The problems one search or sampling file solved (a program equal to the target) within `budget` answers."""
    return {p for p, r in zip(result["problems"], result["results"])
            if r["solved_at"] is not None and r["solved_at"] <= budget}


def read_searches(setup, root):
    """({kind: {slug: {seed: the file}}}, {seed: its block}) of the seeds whose files every arm has in one block.
    root: where the blocks' directories are relative to."""
    found, where = {kind: {slug: {} for slug in arms_of(setup)} for kind in KINDS}, {}
    for block in setup.search["blocks"]:
        directory = os.path.join(root, block)
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

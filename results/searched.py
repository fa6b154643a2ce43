"""
Search as one of results.compare's evaluations: problems solved per training run on a hard set.

Each run's weights search a hard set of held-out problems (search.py's evolve), and plainly sample them, with the
same budget of answers per problem. A problem counts as solved when a program equals the target (the task's
equals_target). The hard set is fixed before any search: committed, or chosen by the warm start's screen
(screen_job, on the `candidates`). With "stopped", every trained arm's runs are also searched from their weights at
t*, the best step on validation problems (validation_job, best_step). The training run is the unit: problems solved
per run, compared over runs with the labels permuted within blocks of runs that share one warm start
(runstats.py:blocked_comparison), Holm's rule within each family of pairs. A configuration's "search" keys are in
docs/compare.md. Beside the run directories: evolve-SLUG-sSEED.json (search), sample-SLUG-sSEED.json (sampling),
with per problem solved_at (the answers spent when a program first equalled the target; None: never), and
validation-SLUG-sSEED.json; each records the commit and the machine.
"""
import json
import os
import re
import time

import numpy as np

from results.jobs import ROOT, STOPPED, base_file, git, run_name
from results.runstats import (blocked_comparison, describe, detectable_difference, holm_adjusted, leave_one_out,
                              paired_comparison, within_sd)
from results.tables import holm_reading, table

KINDS = {"evolve": "search", "sample": "sampling"}
SCREEN_ANSWERS, BASE = 48, "base"   # the screen's answers per problem and m (default); the warm start's slug
VALIDATION_ANSWERS, VALIDATION_T = 48, 0.7


def arms_of(setup):
    """{slug: label} of every searched arm: the trained arms, those stopped early (with a "stopped"), then the
    search's own."""
    stopped = {a.slug + STOPPED: f"{a.label} stopped early" for a in setup.arms} if "stopped" in setup.search else {}
    return {**{a.slug: a.label for a in setup.arms}, **stopped,
            **{a["slug"]: a["label"] for a in setup.search.get("arms", [])}}


def solved(result, budget):
    """The problems one search or sampling file solved (a program equal to the target) within `budget` answers."""
    return {p for p, r in zip(result["problems"], result["results"])
            if r["solved_at"] is not None and r["solved_at"] <= budget}


def read_searches(setup, blocks):
    """({kind: {slug: {seed: the file}}}, {seed: its block}) of the seeds whose files every arm has in one block.
    blocks: the blocks' directories."""
    found, where = {kind: {slug: {} for slug in arms_of(setup)} for kind in KINDS}, {}
    for block in blocks:
        for seed in setup.seeds:
            paths = {(kind, slug): os.path.join(block, f"{kind}-{slug}-s{seed}.json")
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


def robustness(found, where, a, b, budget, alpha):
    """What a pair's runs can tell, at a test level alpha: (the range of p over each run left out in turn, as
    "low-high"; the difference they would find with 80% power, from their spread within blocks)."""
    va, vb = per_run(found, "evolve", a, budget), per_run(found, "evolve", b, budget)
    ps = [c.p for _, _, c in leave_one_out(va, vb, lambda x, y: blocked_comparison(by_block(x, where),
                                                                                       by_block(y, where)))]
    found_at = detectable_difference(within_sd(by_block(va, where), by_block(vb, where)), len(va), len(vb), alpha,
                                     blocks=len(set(where[s] for s in va)))
    return (f"{min(ps):.3g}-{max(ps):.3g}" if ps else "-"), ("-" if found_at is None else f"{found_at:.1f}")


def family(found, where, pairs, budget, names, kind="evolve"):
    """[(comparison, rejected by Holm's rule within the family)] of some pairs."""
    from search import holm
    cs = [compare_pair(found, where, kind, a, b, budget, names) for a, b in pairs]
    return list(zip(cs, holm([c.p for c in cs])))


def verdict_rows(setup, found, where):
    """The deciding pairs at the deciding budget: [pair, budget, runs, difference [interval], p, reading]."""
    names, budget = arms_of(setup), setup.search["budgets"][-1]
    return [[f"{c.a} − {c.b}", f"{budget} answers", f"{c.n_a} and {c.n_b}", describe(c, 1).split(", p = ")[0],
             f"{c.p:.3g}", holm_reading(c, r, setup.search.get("matters"))]
            for c, r in family(found, where, setup.search["pairs"], budget, names)]


def only_one_lines(setup, found, budget):
    """Problems only one arm solves, under search within budget answers: per pair, the problems some run of A solves
    and no run of B does, and the reverse (search.solved_only_by, the paper's count); then, per problem some run
    solves, how many runs of each arm solve it. A description: problems are not replicates."""
    from search import solved_only_by
    names, s = arms_of(setup), setup.search
    runs = {a: [solved(r, budget) for r in found["evolve"][a].values()] for a in names}
    rows = []
    for a, b in s["pairs"] + s.get("secondary", []):
        only_a, only_b, both = solved_only_by(runs[a], runs[b])
        rows.append([f"{names[a]} − {names[b]}", " ".join(map(str, only_a)) or "none",
                     " ".join(map(str, only_b)) or "none", str(len(both))])
    lines = [f"Problems only one arm solves under search at {budget} answers (test indices; a description): some run "
             "of A solves them and no run of B does, and the reverse:", ""]
    lines += table(["pair", "only A", "only B", "both"], rows, note=None) + [""]
    problems = sorted(set().union(*(p for ps in runs.values() for p in ps)))
    counts = [len(runs[a]) for a in names]
    of = f"of {counts[0]} runs each" if len(set(counts)) == 1 else "of " + ", ".join(map(str, counts)) + " runs"
    lines += [f"Runs that solve each problem some run solves, under search at {budget} answers ({of}):", ""]
    lines += table(["problem", *names.values()], [[str(p), *(str(sum(p in ps for ps in runs[a])) for a in names)]
                                                   for p in problems], note=None) + [""]
    return lines


def distinct_targets(task, problems):
    """How many different functions (Task.identity) the hard set's problems (test indices, seed 0) hold."""
    pool = task.problems("test", max(problems) + 1, seed=0)
    return len({task.identity(pool[i]) for i in problems})


def search_lines(setup, found, where, task=None, rule=None):
    """compare.md's search section: the hard set, the steps of the arms stopped early, problems solved per run at
    each budget, the pairs (search, then sampling as a description), each pair within each block (a description),
    and search − sampling per arm. task: the comparison's task, to count the hard set's distinct targets; rule: the
    hard set's (default the configuration's)."""
    s, names = setup.search, arms_of(setup)
    budgets, top = s["budgets"], s["budgets"][-1]
    if len(where) < 2:
        return ["## Search", "", f"{len(where)} runs have search results: nothing to compare yet.", ""]
    blocks = len(set(where.values()))
    problems = next(iter(found["evolve"][next(iter(names))].values()))["problems"]
    targets = distinct_targets(task, problems) if task and task.checks_target else None
    rule = s.get("rule", rule or "as the configuration names it")
    lines = ["## Search", "", f"Hard set: {rule}. It holds {len(problems)} problems"
             + (f" with {targets} different target functions" if targets else "") + ". A problem is "
             f"solved when a program equals the target. {len(where)} runs per arm in {blocks} "
             f"block{'s' * (blocks > 1)} (one warm start each); the test permutes the method labels within blocks.", "",
             *[line for a in names if a.endswith(STOPPED) for line in (
                 f"{names[a]}: t*, the step of the best criterion on the validation problems, per run in seed order: "
                 + " ".join(str(r.get("stopped_at")) for r in found["evolve"][a].values()) + ".", "")],
             f"Problems solved per run: each run at {top} answers in seed order, then the mean over runs at each "
             "budget.", ""]
    lines += table(["arm", "how", f"per run at {top}", *map(str, budgets)],
                   [[names[a], how, " ".join(map(str, per_run(found, kind, a, top).values())),
                     *(f"{np.mean(list(per_run(found, kind, a, b).values())):.1f}" for b in budgets)]
                    for kind, how in KINDS.items() for a in names], note=None) + [""]
    rows = []
    for title, pairs in (("deciding", s["pairs"]), ("secondary", s.get("secondary", []))):
        for kind, how in KINDS.items():
            tested = family(found, where, pairs, top, names, kind) if pairs else []
            adjusted = holm_adjusted([c.p for c, _ in tested])
            for (a, b), (c, rejected), holm_p in zip(pairs, tested, adjusted):
                search = kind == "evolve"
                rows.append([f"{c.a} − {c.b}", title, how, describe(c, 1),
                             f"{holm_p:.3g}, {'rejects' if rejected else 'does not reject'}" if search else "-",
                             holm_reading(c, rejected, s.get("matters")) if search else "a description",
                             *(robustness(found, where, a, b, top, 0.05 / len(pairs)) if search else ("-", "-"))])
    lines += [f"Each pair at {top} answers, problems per run (Holm's rule within each family, search only: the "
              "adjusted p, and whether it rejects at 0.05; the 95% interval is each pair's own, not adjusted). "
              + (f"The smallest difference that matters is {s['matters']:g} problems per run; the reading sets it "
                 "against the interval. " if s.get("matters") else "") + "The "
              "last two columns: the exact p with each run left out in turn, and the difference the runs would find "
              "with 80% power at Holm's first level (0.05 over the family's pairs), from their spread within blocks:",
              ""]
    lines += table(["pair", "family", "how", "difference [95% interval], exact p", "Holm", "reading",
                    "leaving one run out", "found with 80% power"], rows, note=None) + [""]
    lines += only_one_lines(setup, found, top)
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
        json.dump({**value, "commit": git("rev-parse", "HEAD") or "unknown", "machine": machine(),
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f)
    os.replace(path + ".tmp", path)


def candidates(identities, n, distinct=False, exclude=None):
    """The test indices among the first n that the screen tries, in order: none whose function (identities[i]:
    Task.identity of test problem i) is that of an excluded problem (exclude: [first, end) of test indices), and
    with distinct only the first problem of each function."""
    seen, kept = set(identities[slice(*exclude)]) if exclude else set(), []
    for i in range(n):
        if identities[i] not in seen:
            kept.append(i)
            seen |= {identities[i]} if distinct else set()
    return kept


def screen_job(ckpt, ms, n, path, answers=SCREEN_ANSWERS, distinct=False, exclude=None):
    """The rule that fixes the hard set before any search: the warm start samples `answers` answers per problem
    (T = 0.7, in chunks, seed 0; search.py's sample_until_solved) at each m of ms on the candidates among the
    first n held-out problems (`candidates`); a problem is hard when none of them equals the target. Writes path
    with the rule and the hard problems' test indices in order ("unsolved"). -> 0."""
    import search
    from runs.cli import eval_weights, load_run
    model, run, task, _ = load_run(ckpt)
    pool = task.problems("test", max(n, exclude[1] if exclude else 0), seed=0)
    ids = candidates([task.identity(p) for p in pool], n, distinct, exclude)
    hit = np.zeros(len(ids), dtype=bool)
    for m in ms:
        results = search.sample_until_solved(model, task, [pool[i] for i in ids], m, answers, "answers", 0.7, seed=0,
                                             weights=eval_weights(run, task))
        hit |= [r["solved_at"] is not None for r in results]
    rule = (f"no answer of the warm start's screens ({answers} answers at T = 0.7 at each m of {list(ms)}, seed 0) "
            "equals the target" + ", one problem per function" * distinct
            + (f", no function of test problems {exclude[0]}-{exclude[1] - 1}" if exclude else ""))
    write_json(path, {"rule": rule, "screened": n, "m": list(ms), "answers": answers, "candidates": len(ids),
                      "unsolved": [i for i, h in zip(ids, hit) if not h]})
    return 0


def best_step(criterion):
    """The step of the highest criterion ({step: value}, steps as ints or strings); ties: the earliest step."""
    return max(sorted(map(int, criterion)), key=lambda step: criterion.get(step, criterion.get(str(step))))


def stop_step(validation):
    """Early stopping on the maze's validation.json ({"pooled_best@k": {step: {k: value}}}): the step of highest
    pooled best@k at the largest k; ties go to the earlier step (best_step)."""
    if "step" in validation:   # written by validation_job, with its rule
        return int(validation["step"])
    rows = validation["pooled_best@k"]
    k = str(max(int(k) for row in rows.values() for k in row))
    return best_step({step: row[k] for step, row in rows.items()})


def validation_job(run, problems, ks, path):
    """Early stopping by one rule for every arm: each kept evaluation checkpoint of the run directory (train.py
    --keep_eval_ckpts: ckpt-stepN.pt; the final one ckpt.pt) is evaluated on the validation problems (test indices
    [first, end) of problems, seed 0; VALIDATION_ANSWERS answers at T = 0.7, evaluate.py's seeded streams); the
    criterion is the mean over ks of pooled pass_target@k (pooled best@k under w* on a task that cannot check the
    target, the maze),
    t* its best step (best_step). Writes path with every step's values, t* ("step") and its weights ("ckpt",
    relative to path's directory). -> 0."""
    from evaluate import evaluate
    from runs.cli import eval_weights, load_run
    with open(os.path.join(run, "summary.json")) as f:
        names = {json.load(f)["args"]["steps"]: "ckpt.pt"}
    names.update({int(m[1]): m[0] for m in map(re.compile(r"ckpt-step(\d+)\.pt").fullmatch, os.listdir(run)) if m})
    rows = {}
    for step in sorted(names):
        model, args, task, m = load_run(os.path.join(run, names[step]))
        key = "pooled_pass_target@k" if task.checks_target else "pooled_best@k"
        metrics, _ = evaluate(model, task, task.problems("test", problems[1], seed=0)[problems[0]:], m,
                              [k for k in ks if k % m == 0] or [m],
                              VALIDATION_ANSWERS, VALIDATION_T, seed=0, weights=eval_weights(args, task))
        rows[step] = {k: metrics[key][k] for k in ks}
    criterion = {step: float(np.mean(list(row.values()))) for step, row in rows.items()}
    t = best_step(criterion)
    write_json(path, {"rule": f"the step of the highest mean over k = {ks} of {key} on test problems "
                              f"{problems[0]}-{problems[1] - 1} ({VALIDATION_ANSWERS} answers at T = 0.7, seed 0); "
                              "ties: the earliest", "problems": problems, key: rows, "criterion": criterion,
                      "step": t, "ckpt": os.path.relpath(os.path.join(run, names[t]), os.path.dirname(path))})
    return 0


def search_job(kind, ckpt, m, hard, problems, budget, temperature, seed, rl_seed, path):
    """Evolutionary search (kind "evolve") or plain sampling ("sample") from the weights at ckpt (m: answers per
    call, None: the run's) on the first `problems` of the hard set's file, `budget` answers per problem; ckpt may be a
    validation file (validation_job): the weights at its t*. -> 0."""
    import search
    from runs.cli import eval_weights, load_run
    stop = None
    if ckpt.endswith(".json"):
        with open(ckpt) as f:
            stop = json.load(f)
        ckpt = os.path.join(os.path.dirname(ckpt), stop["ckpt"])
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
                      "seconds": round(time.perf_counter() - t0, 1), **({"stopped_at": stop["step"]} if stop else {})})
    return 0


def run_args(setup, arm):
    """The train.py arguments of an arm's runs."""
    import train
    return train.get_parser().parse_args([*setup.argv(arm, setup.seeds_of(arm)[0]), "--out_dir", "x"])


def answers_per_call(setup, arm):
    """The m of an arm's runs, as train.py's flags give it."""
    from runs.cli import answers_per_rollout
    a = run_args(setup, arm)
    return answers_per_rollout(a.algo, a.num_answers)


def search_queue(setup, out):
    """The jobs of results/jobs.py:run_queue that search from every run (with a "stopped": and from its weights at
    t*, after its validation) and from the warm start, each with its RL seed ("seed") and waiting for the files it
    needs: the hard set, and a run's summary.json (its training has finished) or its validation file; the screen
    first (seed None) where the hard set is not fixed yet. Files already there are kept (a comparison resumes)."""
    s, runs = setup.search, os.path.join(out, "runs")
    first = setup.arms[0]
    base, hard = base_file(setup.argv(first, setup.seeds_of(first)[0]), runs), hard_path(setup, out)
    queue = []
    if not os.path.isfile(hard):
        ms = sorted({1} | {answers_per_call(setup, a) for a in setup.arms})
        queue.append({"fn": screen_job, "needs": [base], "name": "the screen", "args": (
            base, ms, s["screen"], hard, s.get("screen_answers", SCREEN_ANSWERS), s.get("distinct", False),
            s.get("exclude"))})
    for seed in setup.seeds:
        for slug in arms_of(setup):
            arm = next((a for a in setup.arms if slug in (a.slug, a.slug + STOPPED)), None)
            if arm is not None and seed not in setup.seeds_of(arm):
                continue
            run = arm and os.path.join(runs, run_name(arm, seed))
            ckpt = base if arm is None else os.path.join(run, "ckpt.pt") if slug == arm.slug else \
                os.path.join(runs, f"validation-{run_name(arm, seed)}.json")
            trained = [] if arm is None else [os.path.join(run, "summary.json")]   # ckpt.pt is there mid-training
            if ckpt.endswith(".json") and not os.path.isfile(ckpt):
                queue.append({"fn": validation_job, "needs": trained, "name": os.path.basename(ckpt)[:-5],
                              "seed": seed, "args": (run, s["stopped"]["validation"], s["stopped"]["k"], ckpt)})
            for kind in KINDS:
                path = os.path.join(runs, f"{kind}-{slug}-s{seed}.json")
                if not os.path.isfile(path):
                    queue.append({"fn": search_job, "needs": [hard, ckpt] + trained, "seed": seed,
                                  "name": os.path.basename(path)[:-5],
                                  "args": (kind, ckpt, 1 if arm is None else None, hard, s.get("problems"),
                                           s["budgets"][-1], s.get("temperature", 1.0),
                                           s.get("search_seed", 2000) + seed, seed, path)})
    return queue

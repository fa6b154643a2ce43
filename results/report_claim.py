"""
The report of the search experiment (results/PLAN_SEARCH.md; results/search_claim.py runs it), read from a block's
committed files. No table is written before the experiment is stopped, never from a look at partial results.

    python -m results.report_claim                    # block A: progress, and the check of its runs against v2's
    python -m results.report_claim --stop             # stop on time (stopped.json); no unit runs after it
    python -m results.report_claim --figure FILE.png  # once stopped: the report and its strip figure

After the stop it gives problems solved per run, the plan's deciding and secondary pairs (label test over runs,
Holm), every pair at every budget as a description, search against sampling, early stopping, and the problems only
one arm solves.
"""
import argparse
import json
import os
import sys

from results.search_claim import PLAN, QUICK_CLAIM, ROOT, STOPPED, read_json, stamp, unit_done, units, write_json
from runs.cli import Parser, UsageError

NAMES = {"grpo": "GRPO", "grpo_early": "early-stopped GRPO", "vpo": "VPO", "multi_rlvr_max": "Multi-RLVR with the max",
         "base": "warm start"}
DECIDING = (("vpo", "grpo"), ("vpo", "grpo_early"))                            # Holm over the two
SECONDARY = (("vpo", "multi_rlvr_max"), ("vpo", "base"), ("grpo", "base"))   # Holm over the three


def complete_seeds(claim, rec):
    """The seeds whose units of every arm, the warm start's search included, are done."""
    return [s for s in claim.seeds if all(unit_done(claim, rec, a, s) for a in (*claim.arms, "base"))]


def read_block(claim, rec, seeds):
    """{kind: {arm: {seed: the search file}}} for the complete seeds; the early-stopped arm reads the final weights'
    files where t* is the last step. And {seed: the validation file}."""
    found, validation = {"evolve": {}, "sample": {}}, {}
    for seed in seeds:
        v = read_json(os.path.join(rec, f"validate-{claim.early}-s{seed}.json"))
        validation[seed] = v
        for kind in found:
            for arm in (*claim.arms, "base", f"{claim.early}_early"):
                name = claim.early if arm.endswith("_early") and v["t_star"] == v["last"] else arm
                found[kind].setdefault(arm, {})[seed] = read_json(os.path.join(rec, f"{kind}-{name}-s{seed}.json"))
    return found, validation


def solved(run, budget):
    """The hard problems a search or sampling file solved (a program equal to the target) within budget answers."""
    return {p for p, r in zip(run["problems"], run["results"])
            if r["solved_at"] is not None and r["solved_at"] <= budget}


def per_run(found, kind, arm, budget):
    return {seed: len(solved(run, budget)) for seed, run in found[kind][arm].items()}


V2_RUNS = "results/runs/code-v2"   # v2's committed runs of seeds 0-2, which block A's runs of those seeds should equal
V2_KEYS = ("deploy_reward", "entropy", "kl", "loss", "completion_tokens")


def v2_departures(claim, rec, root=ROOT):
    """{run name: the first RL step whose logged statistics differ from v2's committed run of that name, or None}
    for the block's finished runs that v2 also ran. Not a result: a check that training followed v2's."""
    out = {}
    for arm, seed in units(claim):
        mine = os.path.join(rec, f"{arm}-s{seed}", "log.jsonl")
        theirs = os.path.join(root, V2_RUNS, f"{arm}-s{seed}", "log.jsonl")
        if os.path.isfile(mine) and os.path.isfile(theirs):
            with open(mine) as f, open(theirs) as g:
                a, b = [json.loads(x) for x in f if x.strip()], [json.loads(x) for x in g if x.strip()]
            differ = (x["step"] for x, y in zip(a, b) if any(x.get(k) != y.get(k) for k in V2_KEYS))
            out[f"{arm}-s{seed}"] = next(differ, None if len(a) == len(b) else min(len(a), len(b)) + 1)
    return out


def report(claim, rec):
    """The experiment's section of results.md, as markdown lines: only once the experiment is stopped (stopped.json
    in its block); before that, how many units are done and nothing else."""
    import numpy as np

    from results.runstats import describe, detectable_difference, label_comparison, paired_comparison
    from results.tables import table
    from search import holm
    done = sum(unit_done(claim, rec, *u) for u in units(claim))
    same = v2_departures(claim, rec)
    check = ["Runs of v2's seeds against v2's committed runs, first RL step that differs: " +
             ", ".join(f"{name} {'none' if step is None else step}" for name, step in same.items()) + ".",
             ""] * bool(same)
    if not os.path.isfile(os.path.join(rec, STOPPED)):
        return check + [f"The experiment is running: {done} of {len(units(claim))} units are done. No table is "
                        "written before it stops (PLAN_SEARCH.md)."]
    seeds = complete_seeds(claim, rec)
    if len(seeds) < 2:
        return [f"The experiment stopped with {len(seeds)} complete seeds: no comparison over runs is possible."]
    found, validation = read_block(claim, rec, seeds)
    arms = [a for a in NAMES if a in found["evolve"]]
    top = claim.budgets[-1]
    lines = check + [f"Complete seeds: {len(seeds)} ({', '.join(map(str, seeds))}); the plan asks for at least "
             f"{claim.min_seeds}." + ("" if len(seeds) >= claim.min_seeds else " **Too few: no verdict.**"), ""]
    # problems solved per run, every arm and budget, search and sampling
    lines += [f"**Problems of the {claim.problems} solved per run** (a program equal to the target): each run at "
              f"{top} answers, in seed order, then the mean over runs at each budget.", ""]
    rows = [[NAMES[arm], "search" if kind == "evolve" else "sampling",
             " ".join(str(v) for v in per_run(found, kind, arm, top).values())] +
            [f"{np.mean(list(per_run(found, kind, arm, b).values())):.1f}" for b in claim.budgets]
            for kind in ("evolve", "sample") for arm in arms]
    lines += table(["arm", "how", f"per run at {top}", *map(str, claim.budgets)], rows, note=None) + [""]
    vpo, grpo = (list(per_run(found, "evolve", a, top).values()) for a in ("vpo", "grpo"))
    sd = float(np.sqrt((np.var(vpo, ddof=1) + np.var(grpo, ddof=1)) / 2))
    found_80 = detectable_difference(sd, len(seeds), len(seeds))
    lines += [f"The spread between runs, VPO's and GRPO's pooled, is sd = {sd:.1f} problems at {top} answers (the plan "
              f"assumed 6.4). With {len(seeds)} runs per arm the test finds "
              + (f"a difference of {found_80:.1f} problems with 80% power." if found_80 else
                 "no difference at 80% power.")
              + " The warm start's row is read one way only: the hard set was chosen against it (PLAN_SEARCH.md).", ""]
    # the pairs: label test over runs, Welch interval, Holm
    for title, pairs in (("The deciding pairs", DECIDING), ("The secondary pairs", SECONDARY)):
        cs = [label_comparison(list(per_run(found, "evolve", a, top).values()),
                               list(per_run(found, "evolve", b, top).values()), NAMES[a], NAMES[b]) for a, b in pairs]
        rejected = holm([c.p for c in cs])
        lines += [f"**{title}**, search at {top} answers, problems per run (label test over runs, Holm over "
                  f"{len(pairs)}):", ""]
        lines += table(["pair", "difference [95% interval], exact p", "Holm", "reading"],
                       [[f"{c.a} − {c.b}", describe(c, 1), "rejects" if r else "does not reject",
                         c.reading if r or c.reading.startswith(("not", "too")) else "not separated (Holm)"]
                        for c, r in zip(cs, rejected)], note=None) + [""]
    # descriptive: every pair at every budget, search and sampling; search − sampling per arm
    rows = []
    for kind in ("evolve", "sample"):
        for a, b in DECIDING + SECONDARY:
            rows.append([f"{NAMES[a]} − {NAMES[b]}", "search" if kind == "evolve" else "sampling"] +
                        [describe(label_comparison(list(per_run(found, kind, a, bud).values()),
                                                   list(per_run(found, kind, b, bud).values())), 1)
                         for bud in claim.budgets])
    lines += ["**Every pair at every budget** (a description, not a test):", ""]
    lines += table(["pair", "how", *map(str, claim.budgets)], rows, note=None) + [""]
    rows = [[NAMES[a], describe(paired_comparison(per_run(found, "evolve", a, top), per_run(found, "sample", a, top)),
                                1)] for a in arms]
    lines += [f"**Search − sampling** per arm at {top} answers, paired by run:", ""]
    lines += table(["arm", "difference [95% interval], exact p"], rows, note=None) + [""]
    # early stopping
    t_stars = [validation[s]["t_star"] for s in seeds]
    early = paired_comparison(per_run(found, "evolve", f"{claim.early}_early", top),
                              per_run(found, "evolve", claim.early, top))
    lines += [f"**Early stopping.** t* per run: {', '.join(map(str, t_stars))}. Early-stopped GRPO − GRPO at {top} "
              f"answers, paired by run: {describe(early, 1)}.", ""]
    # solved by some run of one arm and by no run of the other
    union = {a: set().union(*(solved(r, top) for r in found["evolve"][a].values())) for a in arms}
    lines += ["**Solved by some run of one arm and by no run of the other** (search, a description):", ""]
    lines += table(["pair", "only the first", "only the second", "both"],
                   [[f"{NAMES[a]} − {NAMES[b]}", str(len(union[a] - union[b])), str(len(union[b] - union[a])),
                     str(len(union[a] & union[b]))] for a, b in DECIDING + SECONDARY], note=None)
    return lines


def strip(claim, rec, path):
    """The figure of problems solved per run against the budget (results/figures.py's strip_figure)."""
    from results.figures import strip_figure
    seeds = complete_seeds(claim, rec)
    found, _ = read_block(claim, rec, seeds)
    counts = {how: {NAMES[a]: {b: list(per_run(found, kind, a, b).values()) for b in claim.budgets}
                    for a in NAMES if a in found[kind]}
              for kind, how in (("evolve", "search"), ("sample", "sampling"))}
    strip_figure(counts, claim.budgets, path, f"hard code problems solved per training run ({len(seeds)} runs per arm)")


def main(argv=None):
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--block", default=None, help=f"the block's directory (default block A, {PLAN.record})")
    p.add_argument("--quick", action="store_true", help="the quick experiment's block (--block: its --out/record)")
    p.add_argument("--stop", action="store_true", help="mark the experiment stopped: the report may be written")
    p.add_argument("--figure", default=None, help="once stopped, draw the strip figure to this file")
    try:
        args = p.parse_args(argv)
        claim = QUICK_CLAIM if args.quick else PLAN
        rec = os.path.join(ROOT, args.block or claim.record)
        if not os.path.isfile(os.path.join(rec, "block.json")):
            raise UsageError(f"--block {rec}: no block.json there (results/search_claim.py writes it)")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.stop and not os.path.isfile(os.path.join(rec, STOPPED)):
        write_json(os.path.join(rec, STOPPED), {"complete_seeds": complete_seeds(claim, rec), **stamp()})
    print("\n".join(report(claim, rec)))
    if args.figure and os.path.isfile(os.path.join(rec, STOPPED)):
        strip(claim, rec, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())

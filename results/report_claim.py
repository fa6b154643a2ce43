"""
The report of the search experiment (results/PLAN_SEARCH.md; results/search_claim.py runs it), read from the
committed files of every block: block A and the replicate blocks beside it, whose runs amendment 1 lets in. No
table is written before the experiment is stopped, never from a look at partial results.

    python -m results.report_claim                    # progress, and the check of block A's runs against v2's
    python -m results.report_claim --stop             # stop on time: stopped.json in every block records its
                                                      # complete seeds, the analysis's; no unit runs after
    python -m results.report_claim --figure FILE.png  # once stopped: the report and its strip figure
    python -m results.report_claim --check_machine    # minutes: would this machine's runs be block A?

--check_machine trains the first 20 steps of the warm start in a scratch directory and compares their losses with
the committed reference log. Block A needs all 1,500 to be equal (the runner checks them all); a difference in the
first 20 says within minutes that this machine's units would go to a replicate block (a block of their own warm
start, whose seeds enter the test since amendment 1). AMD EPYC machines do not all agree: see results/README.md.

After the stop it gives problems solved per run, the plan's deciding and secondary pairs (label test over runs
within blocks, Holm) and the verdict beside the paper's claim, what leaving each run out does, every pair at every
budget as a description, search against sampling, early stopping with GRPO's validation curve, the problems only one
arm solves, the pools on the hard set, the training evaluations, and each arm's machines and seconds.
results/report.py puts it in results.md (claim_section). results/read_claim.py prints what the runs wrote.
"""
import argparse
import collections
import json
import os
import sys
import time

import numpy as np

from results.plan import read_run, value
from results.search_claim import (PLAN, QUICK_CLAIM, ROOT, STOPPED, blocks, complete_seeds, read_json, stamp,
                                  stopped, unit_done, units, write_json)
from results.tables import first_metrics, step_lines, table
from runs.cli import Parser, UsageError

NAMES = {"grpo": "GRPO", "grpo_early": "early-stopped GRPO", "vpo": "VPO", "multi_rlvr_max": "Multi-RLVR with the max",
         "base": "warm start"}
DECIDING = (("vpo", "grpo"), ("vpo", "grpo_early"))                            # Holm over the two
SECONDARY = (("vpo", "multi_rlvr_max"), ("vpo", "base"), ("grpo", "base"))   # Holm over the three


def analysed_seeds(claim, rec):
    """A block's seeds in the analysis: those its stop recorded, so that a unit finishing after the stop never
    enters; before the stop (or in a stop file without them), its complete seeds."""
    path = os.path.join(rec, STOPPED)
    recorded = read_json(path).get("complete_seeds") if os.path.isfile(path) else None
    return complete_seeds(claim, rec) if recorded is None else recorded


def block_of(claim, record):
    """{seed: its block's directory} for every block's analysed seeds, in seed order (block A's directory: record;
    amendment 1 trains each seed number in one block only)."""
    found = {}
    for rec in blocks(record):
        for seed in analysed_seeds(claim, rec):
            if seed in found:
                raise UsageError(f"seed {seed} is complete in two blocks, {found[seed]} and {rec}")
            found[seed] = rec
    return dict(sorted(found.items()))


def by_block(runs, where):
    """{block: values} of a dict seed -> value (where: seed -> block), in the order the blocks first appear."""
    return {rec: [runs[s] for s in runs if where[s] == rec] for rec in dict.fromkeys(map(where.get, runs))}


def over_runs(a, b, where, name_a="A", name_b="B"):
    """A − B over runs (dicts seed -> value; where: seed -> block), the labels permuted within blocks
    (runstats.blocked_comparison; with one block, label_comparison)."""
    from results.runstats import blocked_comparison
    return blocked_comparison(by_block(a, where), by_block(b, where), name_a, name_b)


def read_block(claim, where):
    """{kind: {arm: {seed: the search file, or the pool (kind "pool"; the warm start has none here)}}} for the
    complete seeds (where: seed -> its block); the early-stopped arm reads the final weights' files where t* is the
    last step. And {seed: the validation file}."""
    found, validation = {"evolve": {}, "sample": {}, "pool": {}}, {}
    for seed, rec in where.items():
        v = read_json(os.path.join(rec, f"validate-{claim.early}-s{seed}.json"))
        validation[seed] = v
        for kind in found:
            for arm in (*claim.arms, f"{claim.early}_early", *(("base",) if kind != "pool" else ())):
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


def report(claim, record):
    """The experiment's section of results.md, as markdown lines, from every block (block A's directory: record):
    only once the experiment is stopped (stopped.json in a block); before that, how many units are done and nothing
    else."""
    from results.runstats import describe, detectable_difference, paired_comparison, within_sd
    from search import holm
    recs = blocks(record)
    done = sum(unit_done(claim, rec, *u) for rec in recs for u in units(claim))
    same = v2_departures(claim, record)
    check = ["Runs of v2's seeds against v2's committed runs, first RL step that differs: " +
             ", ".join(f"{name} {'none' if step is None else step}" for name, step in same.items()) + ".",
             ""] * bool(same)
    if not stopped(record):
        scheduled = len(units(claim, range(claim.scheduled)))
        return check + [f"The experiment is running: {done} units are done in {len(recs)} block"
                        f"{'s' * (len(recs) > 1)}, of the {scheduled} that its {claim.scheduled} scheduled seeds need. "
                        "No table is written before it stops (PLAN_SEARCH.md)."]
    where = block_of(claim, record)
    seeds = list(where)
    if len(seeds) < 2:
        return [f"The experiment stopped with {len(seeds)} complete seeds: no comparison over runs is possible."]
    found, validation = read_block(claim, where)
    arms = [a for a in NAMES if a in found["evolve"]]
    top = claim.budgets[-1]
    per_block = "; ".join(("block A" if rec == record else f"block {os.path.basename(rec)}") + ": " +
                          ", ".join(str(s) for s in seeds if where[s] == rec) for rec in dict.fromkeys(where.values()))
    lines = check + [f"Complete seeds: {len(seeds)} ({per_block}); the plan asks for at least {claim.min_seeds}."
                     + ("" if len(seeds) >= claim.min_seeds else " **Too few: no verdict.**"), ""]
    # problems solved per run, every arm and budget, search and sampling
    lines += [f"**Problems of the {claim.problems} solved per run** (a program equal to the target): each run at "
              f"{top} answers, in seed order, then the mean over runs at each budget.", ""]
    rows = [[NAMES[arm], "search" if kind == "evolve" else "sampling",
             " ".join(str(v) for v in per_run(found, kind, arm, top).values())] +
            [f"{np.mean(list(per_run(found, kind, arm, b).values())):.1f}" for b in claim.budgets]
            for kind in ("evolve", "sample") for arm in arms]
    lines += table(["arm", "how", f"per run at {top}", *map(str, claim.budgets)], rows, note=None) + [""]
    sd = within_sd(*(by_block(per_run(found, "evolve", a, top), where) for a in ("vpo", "grpo")))
    n_blocks = len(set(where.values()))
    first, second = (detectable_difference(sd, len(seeds), len(seeds), alpha, blocks=n_blocks)
                     for alpha in (0.025, 0.05))
    lines += [f"The spread between runs within blocks, VPO's and GRPO's pooled, is sd = {sd:.1f} problems at {top} "
              f"answers (the plan assumed 6.4). With {len(seeds)} runs per arm in {n_blocks} "
              f"block{'s' * (n_blocks > 1)} the test finds "
              + (f"a difference of {first:.1f} problems with 80% power at Holm's first step (α = 0.025), "
                 f"{second:.1f} at its second (α = 0.05)." if first and second else
                 "no difference at 80% power at Holm's first step.")
              + " The warm start's row is read one way only: the hard set was chosen against it (PLAN_SEARCH.md).", ""]
    # the pairs: label test over runs within blocks, Welch interval, Holm
    for title, pairs in (("The deciding pairs", DECIDING), ("The secondary pairs", SECONDARY)):
        cs = [over_runs(per_run(found, "evolve", a, top), per_run(found, "evolve", b, top), where, NAMES[a], NAMES[b])
              for a, b in pairs]
        rejected = holm([c.p for c in cs])
        readings = [c.reading if r or c.reading.startswith(("not", "too")) else "not separated (Holm)"
                    for c, r in zip(cs, rejected)]
        lines += [f"**{title}**, search at {top} answers, problems per run (label test over runs within blocks, "
                  f"Holm over {len(pairs)}):", ""]
        lines += table(["pair", "difference [95% interval], exact p", "Holm", "reading"],
                       [[f"{c.a} − {c.b}", describe(c, 1), "rejects" if r else "does not reject", reading]
                        for c, r, reading in zip(cs, rejected, readings)], note=None) + [""]
        if pairs == DECIDING:
            lines += [verdict_line(claim, seeds, [f"{c.a} − {c.b}: {r}" for c, r in zip(cs, readings)]), ""]
            lines += left_out_lines(found, pairs, top, where)
    # descriptive: every pair at every budget, search and sampling; search − sampling per arm
    rows = []
    for kind in ("evolve", "sample"):
        for a, b in DECIDING + SECONDARY:
            rows.append([f"{NAMES[a]} − {NAMES[b]}", "search" if kind == "evolve" else "sampling"] +
                        [describe(over_runs(per_run(found, kind, a, bud), per_run(found, kind, b, bud), where), 1)
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
    lines += validation_lines(claim, validation, seeds)
    # solved by some run of one arm and by no run of the other
    union = {a: set().union(*(solved(r, top) for r in found["evolve"][a].values())) for a in arms}
    lines += ["**Solved by some run of one arm and by no run of the other** (search, a description):", ""]
    lines += table(["pair", "only the first", "only the second", "both"],
                   [[f"{NAMES[a]} − {NAMES[b]}", str(len(union[a] - union[b])), str(len(union[b] - union[a])),
                     str(len(union[a] & union[b]))] for a, b in DECIDING + SECONDARY], note=None) + [""]
    runs = {NAMES[a]: [read_run(os.path.join(where[s], f"{a}-s{s}"), s, a) for s in seeds] for a in claim.arms}
    return lines + pool_lines(claim, found, seeds) + training_lines(claim, runs) + record_lines(claim, found, runs)


def left_out_lines(found, pairs, budget, where):
    """What leaving each run out in turn does to a pair's test over runs (runstats.leave_one_out): the difference in
    problems per run and the exact p, without the Holm correction; a description of how much one run carries."""
    from results.runstats import leave_one_out
    rows = []
    for a, b in pairs:
        runs = [per_run(found, "evolve", arm, budget) for arm in (a, b)]
        for side, seed, c in leave_one_out(*runs, lambda x, y: over_runs(x, y, where)):
            rows.append([f"{NAMES[a]} − {NAMES[b]}", f"{NAMES[a if side == 'a' else b]} s{seed}",
                         f"{c.mean:+.1f}", f"{c.p:.3g}"])
    return ["**Leaving one run out** of the deciding pairs, search at the full budget (exact p, before Holm):", ""] + \
        table(["pair", "run left out", "difference", "p"], rows, note=None) + [""]


PAPER = ("The paper's claim: with OpenEvolve on the 32 hardest held-out problems, VPO checkpoints solve problems GRPO "
         "checkpoints never do ([docs/paper.md](../docs/paper.md)).")


def verdict_line(claim, seeds, readings):
    """The verdict as measured (the deciding pairs' readings after Holm), beside the paper's claim; no verdict with
    fewer complete seeds than the plan's least."""
    if len(seeds) < claim.min_seeds:
        return f"**No verdict**: {len(seeds)} complete seeds, fewer than the plan's {claim.min_seeds}. {PAPER}"
    return f"**The verdict**, as measured: {'; '.join(readings)}. {PAPER}"


def validation_lines(claim, validation, seeds):
    """GRPO's validation curve: per run, pooled pass_target@48 on the validation problems at each kept step; the
    run's t* marked."""
    steps = sorted({r["step"] for s in seeds for r in validation[s]["rows"]})

    def cell(seed, step):
        row = next((r for r in validation[seed]["rows"] if r["step"] == step), None)
        return "-" if row is None else (f"{value(row, 'pooled_pass_target@k', claim.answers):.3f}"
                                        + " (t*)" * (step == validation[seed]["t_star"]))
    first, end = claim.validation
    return [f"**GRPO's validation curve**: pooled pass_target@{claim.answers} on the {end - first} validation "
            f"problems (test indices {first}-{end - 1}) at each kept step, per run; (t*) marks the run's t*.", ""] + \
        table(["step", *(f"seed {s}" for s in seeds)], [[str(t), *(cell(s, t) for s in seeds)] for t in steps],
              note=None) + [""]


PILOT_POOLS = {1: "results/pilot/search/rescreen-base-m1-seed1.json",   # the warm start's pools, fresh streams
               3: "results/pilot/search/rescreen-base-m3-seed1.json"}


def with_target(pool, ids=None):
    """How many problems of a pool (of ids only, where given) have an answer equal to the target."""
    return sum(n > 0 for p, n in zip(pool["problems"], pool["solved_target_per_problem"]) if ids is None or p in ids)


def fresh_base_pools(claim, root=ROOT):
    """{m: the hard problems whose 48 answers from the warm start include the target}, from the pilot's pools with
    fresh streams (seed 1), which the plan takes as the warm start's."""
    ids = set(read_json(os.path.join(root, claim.hard))["unsolved"][:claim.problems])
    return {m: with_target(read_json(os.path.join(root, path)), ids) for m, path in PILOT_POOLS.items()}


def pool_lines(claim, found, seeds):
    """The pools on the hard set: per run of each arm, the problems whose answers include the target."""
    counts = {a: [with_target(found["pool"][a][s]) for s in seeds] for a in NAMES if a in found["pool"]}
    base = fresh_base_pools(claim)
    return [f"**The pools on the hard set**: problems of the {claim.problems} whose {claim.answers} answers (T = 0.7, "
            "evaluate.py's streams, seed 0) include the target, each run in seed order, then the mean.", ""] + \
        table(["arm", "per run", "mean"], [[NAMES[a], " ".join(map(str, c)), f"{np.mean(c):.1f}"]
                                           for a, c in counts.items()], note=None) + \
        ["", f"The warm start's pool with fresh streams (the pilot's, seed 1) includes the target on {base[1]} "
         f"(m = 1) and {base[3]} (m = 3); with the screen's streams on none, by the hard set's choice.", ""]


def training_lines(claim, runs):
    """Per arm and evaluated step, the training evaluations' pooled pass_target@k, mean ± std over runs."""
    return step_lines(f"**Training evaluations** at each evaluated step, on the {first_metrics(runs)['problems']} "
                      f"training evaluation problems ({claim.answers} answers at T = 0.7): pooled pass_target@k; k = 1 "
                      "is the fraction of answers equal to the target.", runs, "pooled_pass_target@k",
                      (1, claim.answers), {})


def record_lines(claim, found, runs):
    """Per arm: the machines its searches ran on (runs each), its training seconds per run and its search and
    sampling seconds per problem, the quantities of the plan's Budget."""
    rows = []
    for a in (a for a in NAMES if a in found["evolve"]):
        machines = collections.Counter(r["machine"] for r in found["evolve"][a].values())
        train = [r["summary"]["train_seconds"] for r in runs.get(NAMES[a], [])]
        search = [(r["seconds"] + found["sample"][a][s]["seconds"]) / claim.problems
                  for s, r in found["evolve"][a].items()]
        rows.append([NAMES[a], "; ".join(f"{m} ({n})" for m, n in machines.items()),
                     f"{np.mean(train):.0f}" if train else "-", f"{np.mean(search):.1f}"])
    return ["**Machines and seconds** (a record, not a result), means over runs; the plan's Budget estimated them:",
            ""] + table(["arm", "machine (runs)", "training s per run (its evaluations included)",
                         "search + sampling s per problem"], rows, note=None) + [""]


SECTION = "## Code: evolutionary search from each training run's weights (PLAN_SEARCH.md)"


def claim_section(out, claim=PLAN):
    """results.md's section (results/report.py), where out holds the experiment's block: before the stop a paragraph
    that says it is running and counts nothing, so nothing in it goes stale; after the stop the report."""
    record = os.path.join(out, os.path.relpath(claim.record, "results"))
    if not os.path.isfile(os.path.join(record, "block.json")):
        return []
    lines = [SECTION, "", "Does evolutionary search from VPO's trained weights solve more of the warm start's "
             "unsolved held-out code problems than search from GRPO's, per training run? The plan, committed before "
             f"any run: [PLAN_SEARCH.md](PLAN_SEARCH.md). Its files are under {claim.record}/.", ""]
    if not stopped(record):
        return lines + ["The experiment is running. Its plan allows no table before it stops, so this section has "
                        "none yet. `python -m results.report_claim` says how many of its units are done.", ""]
    return lines + [f"![hard code problems solved per training run against the budget]({FIGURE})", ""] + \
        report(claim, record) + [""]


FIGURE = "search_claim.png"


def claim_figures(out, claim=PLAN):
    """The experiment's strip figure, out/search_claim.png, once it is stopped (results/report.py draws it with the
    reproduction's figures). -> the file names written."""
    record = os.path.join(out, os.path.relpath(claim.record, "results"))
    if not os.path.isfile(os.path.join(record, "block.json")) or not stopped(record):
        return []
    strip(claim, record, os.path.join(out, FIGURE))
    return [FIGURE]


def strip(claim, record, path):
    """The figure of problems solved per run against the budget (results/figures.py's strip_figure)."""
    from results.figures import strip_figure
    where = block_of(claim, record)
    seeds = list(where)
    found, _ = read_block(claim, where)
    counts = {how: {NAMES[a]: {b: list(per_run(found, kind, a, b).values()) for b in claim.budgets}
                    for a in NAMES if a in found[kind]}
              for kind, how in (("evolve", "search"), ("sample", "sampling"))}
    strip_figure(counts, claim.budgets, path, f"hard code problems solved per training run ({len(seeds)} runs per arm)")


def first_losses(claim, steps=20, poll=1.0):
    """The losses of the warm start's first `steps` steps, trained in a scratch directory as the runner trains it
    (train.py in a subprocess, one thread)."""
    import subprocess
    import tempfile
    from results.jobs import base_file, one_thread_env
    from results.search_claim import argv_of, warm_argv
    with tempfile.TemporaryDirectory() as scratch:
        log = os.path.join(os.path.dirname(base_file(argv_of(claim, claim.arms[0], 0), scratch)), "log.jsonl")
        with one_thread_env(), open(os.devnull, "w") as quiet:
            proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), *warm_argv(claim), "--out_dir",
                                     scratch], cwd=ROOT, stdout=quiet, stderr=subprocess.STDOUT)
        def written():   # the losses of whole lines: the last one may be half written
            rows = []
            if os.path.isfile(log):
                with open(log) as f:
                    for line in f:
                        try:
                            rows.append(json.loads(line)["loss"])
                        except ValueError:
                            break
            return rows
        try:
            while proc.poll() is None and len(written()) < steps:
                time.sleep(poll)
        finally:
            proc.kill()
            proc.wait()
        return written()[:steps]


def check_machine(claim, mine):
    """-> (steps compared, the first step whose loss differs from claim.reference's, or None)."""
    if not mine:
        raise UsageError("--check_machine: train.py wrote no warm-start step (run it alone to see why)")
    from results.search_claim import losses
    ref = losses(os.path.join(ROOT, claim.reference))[:len(mine)]
    return len(mine), next((i + 1 for i, (a, b) in enumerate(zip(mine, ref)) if a != b), None)


def main(argv=None):
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--block", default=None, help=f"block A's directory, the others beside it (default {PLAN.record})")
    p.add_argument("--quick", action="store_true", help="the quick experiment's block (--block: its --out/record)")
    p.add_argument("--stop", action="store_true", help="mark the experiment stopped: the report may be written")
    p.add_argument("--figure", default=None, help="once stopped, draw the strip figure to this file")
    p.add_argument("--check_machine", action="store_true", help="train 20 warm-start steps and compare them with "
                                                                "the reference log: would this machine's runs be block A?")
    try:
        args = p.parse_args(argv)
        claim = QUICK_CLAIM if args.quick else PLAN
        if args.check_machine:
            n, step = check_machine(PLAN, first_losses(PLAN))
            print(f"{stamp()['machine']}: the warm start's first {n} losses "
                  + ("equal the reference log's: units here go to block A if all 1,500 do (the runner checks)"
                     if step is None else f"depart from the reference log's at step {step}: units here would go "
                     "to the replicate block of this machine's warm start (PLAN_SEARCH.md, amendment 1)"))
            return 0
        rec = os.path.join(ROOT, args.block or claim.record)
        if not os.path.isfile(os.path.join(rec, "block.json")):
            raise UsageError(f"--block {rec}: no block.json there (results/search_claim.py writes it)")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.stop and not stopped(rec):   # every block's stop, with its complete seeds
        for b in blocks(rec):
            write_json(os.path.join(b, STOPPED), {"complete_seeds": complete_seeds(claim, b), **stamp()})
    print("\n".join(report(claim, rec)))
    if args.figure and stopped(rec):
        strip(claim, rec, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
What the search experiment's models write (results/PLAN_SEARCH.md: "the kept programs and the answers of a few
runs per arm, read by hand"): the programs each evolutionary search kept, and answers sampled from each run's
weights, printed beside the hard problems' shown tests and targets.

    python -m results.read_claim --sample        # cache answers of every run whose weights are in --out; prints none
    python -m results.read_claim vpo-s0 grpo-s0  # once the experiment is stopped: print what those runs wrote
    python -m results.read_claim --forms         # once stopped: the forms every analysed run writes, per arm

--sample draws, once per run, 12 answers (12 rollouts of one program, or 4 of three) on each of the first hard
problems at T = 0.7 with fixed seeds (results/figures.py's sample_answers), from the final weights, GRPO's
early-stopped weights (early-stopped GRPO: grpo_early-sR) and the warm start (base-sR: one program a call). They
are cached in answers.json of the block of --out's warm start, since weights are never committed and a later
machine has none. Run it before a machine goes, as often as units finish; it prints counts only, so nothing is read
before the stop. A run is read from whichever block holds it (each seed is trained in one block).

--forms counts what the runs write by its form (`form`): programs of constant pieces (x only in comparisons, as in
`7 if x<1 else 7 if x<11 else -2`), programs that call abs, min or max (the forms of the clamp and distance
targets), and the rest. It counts the program each search kept per hard problem (solved or not) and the cached
answers, on the problems whose target is not itself of constant pieces (family step3).
"""
import argparse
import os
import re
import sys

import numpy as np

from results.jobs import base_file
from results.report_claim import NAMES, analysed_seeds
from results.search_claim import (PLAN, ROOT, argv_of, block, blocks, hard_problems, read_json, stopped, unit_done,
                                   units, write_json)
from runs.cli import Parser, UsageError

ANSWERS = "answers.json"   # in a block
PROBLEMS = 4               # the first hard problems answers are sampled on
STREAM = 8                 # the sampling seeds' stream (step_seed(0, STREAM, problem))


def weights(claim, rec, out, arm, seed):
    """{name: (checkpoint, m)} of a finished unit whose weights are in out/runs: the run's final weights (GRPO's also
    at t*, where t* is not the last step), or the warm start ("base") at m = claim.base_m."""
    runs = os.path.join(out, "runs")
    if arm == "base":   # the cached warm start every run of the experiment starts from (search_claim.py)
        ckpt = base_file(argv_of(claim, claim.arms[0], seed), runs)
        return {"base": (ckpt, claim.base_m)} if os.path.isfile(ckpt) else {}   # one warm start: the same answers
    name, m = f"{arm}-s{seed}", read_json(os.path.join(rec, f"{arm}-s{seed}", "summary.json"))["metrics"]["m"]
    got = {name: (os.path.join(runs, name, "ckpt.pt"), m)}
    if arm == claim.early:
        v = read_json(os.path.join(rec, f"validate-{name}.json"))
        if v["t_star"] != v["last"]:
            got[f"{arm}_early-s{seed}"] = (os.path.join(runs, name, f"ckpt-step{v['t_star']}.pt"), m)
    return {n: cm for n, cm in got.items() if os.path.isfile(cm[0])}


def out_block(claim, out):
    """The block of the warm start in out (search_claim.block: block A where its log equals the reference)."""
    base = base_file(argv_of(claim, claim.arms[0], 0), os.path.join(out, "runs"))
    log = os.path.join(os.path.dirname(base), "log.jsonl")
    if not os.path.isfile(base) or not os.path.isfile(log):
        raise UsageError(f"--out {out}: no finished warm start there ({base})")
    return block(claim, log)[0]


def sample(claim, rec, out, n=PROBLEMS):
    """Add to rec/answers.json the answers of every finished unit's weights in out not yet there. -> names added."""
    from results.figures import sample_answers
    from runs.cli import load_run
    path = os.path.join(rec, ANSWERS)
    cache = read_json(path) if os.path.isfile(path) else {}
    todo = {name: cm for arm, seed in units(claim) if unit_done(claim, rec, arm, seed)
            for name, cm in weights(claim, rec, out, arm, seed).items() if name not in cache}
    if todo:
        task = load_run(next(iter(todo.values()))[0])[2]
        ids, problems = hard_problems(claim, task)
        for name, (ckpt, m) in todo.items():
            cache[name] = {"m": m, "answers": sample_answers(ckpt, task, problems[:n], m, 12 // m, STREAM)}
        cache["problems"] = ids[:n]
        write_json(path, cache)
    return sorted(todo)


def read_lines(claim, rec, name, n=PROBLEMS):
    """What run `name` (ARM-sR) wrote: per problem of the cache, its shown tests and target, the program its
    evolutionary search kept (solved or not) and the sampled answers; then the kept programs of the problems its
    search solved."""
    from tasks import get_task
    task = get_task("code", reward="shown")
    ids, problems = hard_problems(claim, task)
    by_id = dict(zip(ids, problems))
    evolve = read_json(os.path.join(rec, f"evolve-{name}.json"))
    kept = dict(zip(evolve["problems"], evolve["results"]))
    cache = read_json(os.path.join(rec, ANSWERS)) if os.path.isfile(os.path.join(rec, ANSWERS)) else {}
    arm = name.rsplit("-s", 1)[0]
    sampled = cache.get("base" if arm == "base" else name)
    lines = [f"## {name} ({NAMES.get(arm, arm)}): its search solved {evolve['solved']} of {len(evolve['problems'])} "
             f"hard problems within {evolve['budget']} answers", ""]

    def program(p):
        r, prob = kept.get(p), by_id[p]
        if r is None or r.get("best") is None:
            return "no program kept"
        return f"`{r['best']}` ({'equal to the target' if task.equals_target(prob, r['best']) else 'not the target'}" \
               f"{', solved at ' + str(r['solved_at']) if r['solved_at'] is not None else ''})"
    for p in cache.get("problems", [])[:n]:
        prob = by_id[p]
        lines += [f"- problem {p} ({prob.family}): {task.prompt(prob, 1).split(': ', 1)[1].strip()}; target "
                  f"`{prob.target}`", f"  - kept: {program(p)}"]
        if sampled:
            answers = sampled["answers"][cache["problems"].index(p)]
            right = sum(a != "" and task.equals_target(prob, a) for a in answers)
            lines.append(f"  - {len(answers)} answers (m = {sampled['m']}, T = 0.7), {right} equal to the "
                         f"target: " + ", ".join(f"`{a}`" for a in answers))
    solved = [p for p in evolve["problems"] if kept[p]["solved_at"] is not None][:n]
    if solved:
        lines += ["", f"Kept programs of the first {len(solved)} problems it solved:", ""]
        lines += [f"- problem {p} ({by_id[p].family}), target `{by_id[p].target}`: {program(p)}" for p in solved]
    return lines + [""]


def form(program):
    """'pieces' for a conditional whose x appears only in comparisons with a constant (a piecewise-constant
    program), 'shaped' where it calls abs, min or max, else 'other' (a constant alone included)."""
    if " if " in program and "x" not in re.sub(r"x\s*[<>]=?\s*-?\d+|-?\d+\s*[<>]=?\s*x", "", program):
        return "pieces"
    return "shaped" if re.search(r"\b(abs|min|max)\(", program) else "other"


def forms(claim, record):
    """{arm: [(kept pieces, kept shaped, answers pieces, answers shaped), one per analysed run]}: the shares of
    each form among the programs its search kept and among its cached answers (nan where none are cached), on
    the hard problems whose target is not of constant pieces. The warm start's answers are one set per block."""
    from tasks import get_task
    ids, problems = hard_problems(claim, get_task("code", reward="shown"))
    family = dict(zip(ids, (p.family for p in problems)))
    share = lambda programs, kind: np.mean([form(p) == kind for p in programs]) if programs else float("nan")
    got = {}
    for rec in blocks(record):
        cache = read_json(os.path.join(rec, ANSWERS)) if os.path.isfile(os.path.join(rec, ANSWERS)) else {}
        asked = [p for p in cache.get("problems", []) if family[p] != "step3"]
        for seed in analysed_seeds(claim, rec):
            for arm in NAMES:
                path = os.path.join(rec, f"evolve-{arm}-s{seed}.json")
                if not os.path.isfile(path):
                    continue
                evolve = read_json(path)
                kept = [r["best"] for p, r in zip(evolve["problems"], evolve["results"])
                        if family[p] != "step3" and r.get("best")]
                sampled = cache.get("base" if arm == "base" else f"{arm}-s{seed}", {}).get("answers", [])
                answers = [a for p, a_p in zip(cache.get("problems", []), sampled) if p in asked for a in a_p if a]
                got.setdefault(arm, []).append(tuple(share(x, k) for x in (kept, answers)
                                                     for k in ("pieces", "shaped")))
    return got


def forms_lines(claim, record):
    """forms as a table: mean over runs, [least, most]."""
    from tasks import get_task
    ids, problems = hard_problems(claim, get_task("code", reward="shown"))
    n = sum(p.family != "step3" for p in problems)
    lines = [f"**What the runs write**, on the {n} hard problems of {len(ids)} whose target is not of constant "
             f"pieces: the share of constant-piece programs and of abs, min or max, among the program each search "
             f"kept per problem and among the cached answers (12 per problem on the first {PROBLEMS} hard "
             f"problems); mean over runs [least, most].", "",
             "| arm | runs | kept: constant pieces | kept: abs, min or max | answers: constant pieces | answers: abs, min "
             "or max |", "|---|---|---|---|---|---|"]
    for arm, rows in forms(claim, record).items():
        cols = np.array(rows).T
        cells = [f"{np.nanmean(c):.2f} [{np.nanmin(c):.2f}, {np.nanmax(c):.2f}]" if not np.isnan(c).all() else "-"
                 for c in cols]
        lines.append(f"| {NAMES[arm]} | {len(rows)} | " + " | ".join(cells) + " |")
    return lines


def forms_section(out, claim=PLAN):
    """forms_lines for results.md (results/report.py), where out holds the experiment's block, once it is stopped."""
    record = os.path.join(out, os.path.relpath(claim.record, "results"))
    if not os.path.isfile(os.path.join(record, "block.json")) or not stopped(record):
        return []
    return forms_lines(claim, record) + ["", "`python -m results.read_claim --forms` prints this table, and "
                                         "`python -m results.read_claim vpo-s0 grpo-s0` what two runs wrote.", ""]


def main(argv=None):
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("runs", nargs="*", help="runs to read, ARM-sR (ARM: " + ", ".join(NAMES) + ")")
    p.add_argument("--sample", action="store_true", help="cache the answers of the weights in --out; print none")
    p.add_argument("--forms", action="store_true", help="the forms every analysed run writes, per arm")
    p.add_argument("--out", default=os.path.join("out", "search-claim"), help="results.search_claim's --out")
    args = p.parse_args(argv)
    claim, record = PLAN, os.path.join(ROOT, PLAN.record)
    try:
        if args.sample:
            rec = out_block(claim, args.out)
            added = sample(claim, rec, args.out)
            print(f"{os.path.relpath(os.path.join(rec, ANSWERS), ROOT)}: {len(added)} runs added"
                  + (f" ({', '.join(added)})" if added else ""))
            return 0
        if not stopped(record):
            raise UsageError("the experiment is not stopped: its runs are read after the stop (report_claim --stop)")
        where = {name: next((b for b in blocks(record) if os.path.isfile(os.path.join(b, f"evolve-{name}.json"))),
                            None) for name in args.runs}
        for name, rec in where.items():
            if rec is None:
                raise UsageError(f"{name}: no evolutionary search of that run in any block of {PLAN.record}")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.forms:
        print("\n".join(forms_lines(claim, record)) + "\n")
    for name, rec in where.items():
        print("\n".join(read_lines(claim, rec, name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

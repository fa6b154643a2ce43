"""
The search experiment of results/PLAN_SEARCH.md in one resumable command. For every RL seed r it trains GRPO, VPO
and Multi-RLVR with the max from the one warm start, then searches the hard code problems from each run's weights.
It also searches the warm start itself with search seed 2000 + r.

    python -m results.search_claim --jobs 2 --commit     # the experiment, seed by seed; commits each unit's files
    python -m results.search_claim --status              # the block of this machine's warm start, units done
    python -m results.search_claim --quick               # the same pipeline on a tiny model, in about a minute
    python -m results.report_claim --stop                # stop on time; then the report (results/report_claim.py)

A unit is one arm and one seed, done in one worker process with one torch thread:
    ALGO-sR   train.py (the plan's arguments), then from the weights it has just trained: the pool on the hard
              problems, evolutionary search and plain sampling; GRPO also evaluates its kept checkpoints on the
              validation problems, and searches from the best of them (the early-stopped arm) unless it is the last
    base-sR   the warm start's evolutionary search and sampling at m = 1, with search seed 2000 + r
Units run seed by seed, so a stopped experiment has the same seeds in every arm.

Before any unit, the warm start is trained (or found in --out) and its log is compared loss by loss with v2's
committed log. Equal at every step: the units go to block A (results/runs/search-claim/). Otherwise to a block of
their own (results/runs/search-claim-rep-HASH/, HASH of the warm start's log). A block is one warm start; the plan's
amendment 1 lets every block's complete seeds into the test, which permutes labels within blocks. Each seed number
is trained in one block only: a block finishes the seeds it has started, then takes the lowest that no block has
started, until the blocks together have the plan's 11 (block_seeds).

A unit is done when all its files are in the block; its files are small and committed, its weights stay in --out.
A unit cut short on this machine goes on from its checkpoint. A unit found half done without its weights (another
machine) is deleted and redone whole: no search starts from weights it did not train itself.
"""
import argparse
import concurrent.futures as cf
import datetime
import glob
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace

from results.jobs import base_file, one_thread, one_thread_env, train_job
from results.plan import QUICK, read_json
from results.search_jobs import write_json
from runs.cli import COUNT, Parser, UsageError
from runs.dirs import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STOPPED = "stopped.json"   # in each block: stopped by results/report_claim.py --stop; no unit runs after it


@dataclass(frozen=True)
class Claim:
    """What the experiment runs; PLAN is results/PLAN_SEARCH.md's, fixed before its first run."""
    train: tuple                       # train.py flags every run shares
    hard: str                          # the pilot's hard file (its "unsolved" indices)
    record: str                        # block A's directory, relative to the repository root
    reference: str = None              # the committed warm-start log block A must equal (None: no check)
    arms: tuple = ("vpo", "grpo", "multi_rlvr_max")
    early: str = "grpo"                # the arm whose kept checkpoints are validated (the early-stopped arm)
    seeds: tuple = tuple(range(16))    # the RL seeds the blocks may take, each in one block only (amendment 1)
    scheduled: int = 11                # complete seeds over all blocks the runner aims at
    problems: int = 128                # the first of the hard file's problems
    validation: tuple = (64, 128)      # test indices of the validation problems
    answers: int = 48                  # answers of a pool and of a validation, at T = 0.7
    budget: int = 768                  # answers per problem, search and sampling
    temperature: float = 1.0           # the search's and the sampling's
    search_seed: int = 2000            # run r searches with search_seed + r
    base_m: int = 1                    # the warm start is searched one program per call
    budgets: tuple = (48, 96, 192, 384, 768)   # the report's budgets; the last decides
    min_seeds: int = 10                # fewer complete seeds is no verdict


PLAN = Claim(train=("--task", "code", "--task_opt", "reward=shown", "--steps", "500", "--eval_every", "50",
                    "--keep_eval_ckpts", "--no_base_eval", "--eval_problems", "64", "--eval_answers", "48",
                    "--ckpt_every", "25"),
             hard="results/pilot/search/hard.json", record="results/runs/search-claim",
             reference="results/runs/code-v2/base/code-4cbe223cc0/log.jsonl")
QUICK_CLAIM = replace(PLAN, train=("--task", "code", "--task_opt", "reward=shown", "--steps", "2", "--eval_every", "1",
                                   "--keep_eval_ckpts", "--no_base_eval", *QUICK["common"]),
                      record="record", reference=None, seeds=(0, 1), scheduled=2, problems=2, validation=(4, 6),
                      answers=6, budget=27, budgets=(9, 27), min_seeds=2)


def stamp():
    return {"machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


# --------------------------------------------------------------------------------------------- the warm start
def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def first_difference(mine, reference):
    """The first step (from 1) whose loss differs between two warm-start logs, or None if they are equal."""
    a, b = losses(mine), losses(reference)
    step = next((i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    return step if step is not None or len(a) == len(b) else min(len(a), len(b)) + 1


def block(claim, base_log, root=ROOT):
    """(this warm start's block directory, its first differing step): block A where it equals the reference."""
    record = os.path.join(root, claim.record)
    if claim.reference is None:
        return record, None
    step = first_difference(base_log, os.path.join(root, claim.reference))
    if step is None:
        return record, None
    with open(base_log, "rb") as f:
        return f"{record}-rep-{hashlib.sha1(f.read()).hexdigest()[:8]}", step


def argv_of(claim, algo, seed):
    return [*claim.train, "--algo", algo, "--seed", str(seed), "--run_name", f"{algo}-s{seed}", "--quiet"]


def warm_argv(claim):
    """A one-step run that trains the cached warm start as every run of the experiment resolves it."""
    return [*argv_of(claim, claim.arms[0], 0)[:-5], "--steps", "1", "--eval_every", "0", "--run_name", "warm-start",
            "--quiet"]


# --------------------------------------------------------------------------------------------- the units
def unit_files(claim, rec, arm, seed):
    """The files of a unit in its block rec. GRPO's early-stopped search files are listed once its validation
    file names t*, and only when t* is not the last step."""
    s = f"{arm}-s{seed}"
    if arm == "base":
        return [os.path.join(rec, f"{kind}-{s}.json") for kind in ("evolve", "sample")]
    files = [os.path.join(rec, s, "summary.json")] + [os.path.join(rec, f"{kind}-{s}.json")
                                                       for kind in ("pool", "evolve", "sample")]
    if arm == claim.early:
        files.append(os.path.join(rec, f"validate-{s}.json"))
        v = read_json(files[-1]) if os.path.isfile(files[-1]) else None
        if v is not None and v["t_star"] != v["last"]:
            files += [os.path.join(rec, f"{kind}-{arm}_early-s{seed}.json") for kind in ("pool", "evolve", "sample")]
    return files


def unit_done(claim, rec, arm, seed):
    return all(os.path.isfile(p) for p in unit_files(claim, rec, arm, seed))


def load(ckpt, m=None):
    import torch
    from runs.cli import load_run
    model, _, task, m0 = load_run(ckpt, torch.device("cpu"))
    return model, task, m or m0


def hard_problems(claim, task):
    ids = read_json(os.path.join(ROOT, claim.hard))["unsolved"][:claim.problems]
    pool = task.problems("test", max(ids) + 1, seed=0)
    return ids, [pool[i] for i in ids]


def pool_job(claim, ckpt, path):
    """The weights' 48 answers per hard problem at T = 0.7, evaluate.py's streams (seed 0)."""
    from evaluate import evaluate
    model, task, m = load(ckpt)
    ids, problems = hard_problems(claim, task)
    t0 = time.perf_counter()
    metrics, _ = evaluate(model, task, problems, m, [max(m, 1), claim.answers], claim.answers, 0.7, seed=0)
    write_json(path, {"ckpt": os.path.basename(ckpt), "m": m, "problems": ids, "answers": claim.answers,
                      "solved_target_per_problem": metrics["solved_target_per_problem"],
                      "solved_per_problem": metrics["solved_per_problem"],
                      "seconds": round(time.perf_counter() - t0, 1), **stamp()})


def search_job(claim, kind, ckpt, seed, path, m=None):
    """search.evolve or search.sample_until_solved on the hard problems at the plan's budget."""
    from search import evolve, sample_until_solved
    model, task, m = load(ckpt, m)
    ids, problems = hard_problems(claim, task)
    t0 = time.perf_counter()
    results = (evolve if kind == "evolve" else sample_until_solved)(
        model, task, problems, m, claim.budget, "answers", temperature=claim.temperature,
        seed=claim.search_seed + seed)
    write_json(path, {"kind": kind, "ckpt": os.path.basename(ckpt), "m": m, "budget": claim.budget,
                      "unit": "answers", "temperature": claim.temperature, "seed": claim.search_seed + seed,
                      "rl_seed": seed, "problems": ids, "results": results,
                      "solved": sum(r["solved_at"] is not None for r in results),
                      "seconds": round(time.perf_counter() - t0, 1), **stamp()})


def kept_checkpoints(directory):
    """({step: path} of a run's weights kept at its evaluations along training (ckpt-stepN.pt) and at its last
    step (ckpt.pt, evaluated in summary.json), the last step)."""
    last = read_json(os.path.join(directory, "summary.json"))["args"]["steps"]
    with open(os.path.join(directory, "eval.jsonl")) as f:
        steps = [json.loads(line)["step"] for line in f if line.strip()]
    kept = {s: os.path.join(directory, f"ckpt-step{s}.pt") for s in steps if 0 < s < last}
    return {**kept, last: os.path.join(directory, "ckpt.pt")}, last


def best_step(rows, k):
    """t*: the step of the highest pooled pass_target@k on the validation problems, the earlier step on a tie."""
    return max(rows, key=lambda r: (r["pooled_pass_target@k"][k], -r["step"]))["step"]


def validate_job(claim, directory, path):
    """Each kept checkpoint's pass_target@48 on the validation problems (48 answers, T = 0.7, seed 0); t*: the step
    of the highest, the earlier step on a tie."""
    from evaluate import evaluate
    kept, last = kept_checkpoints(directory)
    rows = []
    for step, ckpt in kept.items():
        model, task, m = load(ckpt)
        problems = task.problems("test", claim.validation[1], seed=0)[claim.validation[0]:]
        t0 = time.perf_counter()
        metrics, _ = evaluate(model, task, problems, m, [max(m, 1), claim.answers], claim.answers, 0.7, seed=0)
        rows.append({"step": step, "ckpt": os.path.basename(ckpt), "seconds": round(time.perf_counter() - t0, 1),
                     **{key: metrics[key] for key in ("pooled_pass_target@k", "pass@k")}})
    write_json(path, {"validation": list(claim.validation), "answers": claim.answers, "temperature": 0.7,
                      "rows": rows, "t_star": best_step(rows, claim.answers), "last": last, **stamp()})


def unit_job(claim, out, rec, arm, seed, log):
    """One unit (the module's docstring); -> 0, or train.py's exit code."""
    runs, name = os.path.join(out, "runs"), f"{arm}-s{seed}"
    path = lambda kind, slug=arm: os.path.join(rec, f"{kind}-{slug}-s{seed}.json")   # noqa: E731
    if arm == "base":
        ckpt = base_file(argv_of(claim, claim.arms[0], seed), runs)
        for kind in ("evolve", "sample"):
            if not os.path.isfile(path(kind)):
                search_job(claim, kind, ckpt, seed, path(kind), claim.base_m)
        return 0
    directory = os.path.join(runs, name)
    ckpt = os.path.join(directory, "ckpt.pt")
    if not os.path.isfile(os.path.join(directory, "summary.json")):
        # the weights are not finished here, so any file of this unit in the block came from other weights
        shutil.rmtree(os.path.join(rec, name), ignore_errors=True)
        for p in unit_files(claim, rec, arm, seed):
            if os.path.isfile(p):
                os.remove(p)
        rc = train_job(argv_of(claim, arm, seed), runs, log)
        if rc != 0:
            return rc
    if not os.path.isfile(path("pool")):
        pool_job(claim, ckpt, path("pool"))
    for kind in ("evolve", "sample"):
        if not os.path.isfile(path(kind)):
            search_job(claim, kind, ckpt, seed, path(kind))
    if arm == claim.early:
        if not os.path.isfile(path("validate")):
            validate_job(claim, directory, path("validate"))
        v = read_json(path("validate"))
        if v["t_star"] != v["last"]:   # the early-stopped arm's own search; else it is the final weights'
            early = os.path.join(directory, next(r["ckpt"] for r in v["rows"] if r["step"] == v["t_star"]))
            if not os.path.isfile(path("pool", f"{arm}_early")):
                pool_job(claim, early, path("pool", f"{arm}_early"))
            for kind in ("evolve", "sample"):
                if not os.path.isfile(path(kind, f"{arm}_early")):
                    search_job(claim, kind, early, seed, path(kind, f"{arm}_early"))
    os.makedirs(os.path.join(rec, name), exist_ok=True)
    for f in ("log.jsonl", "eval.jsonl", "summary.json"):   # summary.json last: with it the unit is done
        shutil.copyfile(os.path.join(directory, f), os.path.join(rec, name, f))
    return 0


def units(claim, seeds=None):
    """(arm, seed) in the order they run: seed by seed (claim.seeds unless given), the trained arms then the warm
    start's search."""
    return [(arm, seed) for seed in (claim.seeds if seeds is None else seeds) for arm in (*claim.arms, "base")]


# --------------------------------------------------------------------------------------------- the blocks
def blocks(record):
    """Every block's directory: block A (record, claim.record's path) first, then the replicate blocks beside it in
    the order they began."""
    reps = [d for d in glob.glob(f"{record}-rep-*") if os.path.isfile(os.path.join(d, "block.json"))]
    return [record] * os.path.isdir(record) + sorted(
        reps, key=lambda d: (read_json(os.path.join(d, "block.json"))["invocations"][0]["date"], d))


def started(claim, rec):
    """The seeds with any file in block rec (a unit's directory or one of its .json files)."""
    names = os.listdir(rec) if os.path.isdir(rec) else []
    found = {int(m.group(1)) for m in (re.fullmatch(r".+-s(\d+)(\.json)?", n) for n in names) if m}
    return sorted(found & set(claim.seeds))


def complete_seeds(claim, rec):
    """The seeds whose units of every arm, the warm start's search included, are done in block rec."""
    return [s for s in claim.seeds if all(unit_done(claim, rec, a, s) for a in (*claim.arms, "base"))]


def block_seeds(claim, rec, record):
    """The seeds block rec runs, in order: the ones it has started, then the lowest that no other block has started;
    as many as bring the complete seeds of all blocks (block A's directory: record) to claim.scheduled."""
    others = [b for b in blocks(record) if b != rec]
    taken = {s for b in others for s in started(claim, b)}
    room = claim.scheduled - sum(len(complete_seeds(claim, b)) for b in others)
    mine = set(started(claim, rec))
    return sorted((s for s in claim.seeds if s not in taken), key=lambda s: (s not in mine, s))[:max(room, 0)]


def stopped(record):
    """The stop's file in some block (block A's directory: record), or None: the stop holds for every block."""
    return next((p for p in (os.path.join(b, STOPPED) for b in blocks(record)) if os.path.isfile(p)), None)


# --------------------------------------------------------------------------------------------- the command
def ensure_warm_start(claim, out, logs):
    """Train the cached warm start unless it is in --out; -> its checkpoint path."""
    runs = os.path.join(out, "runs")
    base = base_file(argv_of(claim, claim.arms[0], 0), runs)
    if not os.path.isfile(base):
        print(f"training the warm start ({base})", flush=True)
        argv = warm_argv(claim)
        if os.path.isdir(os.path.join(runs, "warm-start")):
            shutil.rmtree(os.path.join(runs, "warm-start"))
        if train_job(argv, runs, os.path.join(logs, "warm-start.log")) != 0:
            raise UsageError(f"training the warm start failed: see {os.path.join(logs, 'warm-start.log')}")
    return base


def note_block(rec, base, step, commit):
    """block.json: the warm start's check and every invocation's machine, date and commit."""
    path = os.path.join(rec, "block.json")
    info = read_json(path) if os.path.isfile(path) else {"warm_start": os.path.basename(os.path.dirname(base)),
                                                          "first_difference": step, "invocations": []}
    info["invocations"].append({**stamp(), "commit": commit})
    write_json(path, info)
    if step is not None and not os.path.isfile(os.path.join(rec, "base-log.jsonl")):
        shutil.copyfile(os.path.join(os.path.dirname(base), "log.jsonl"), os.path.join(rec, "base-log.jsonl"))


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def commit_unit(rec, what):
    git("add", rec)
    r = git("commit", "-q", "-m", f"search experiment: {what} ({machine()})", "--", rec)
    return r.returncode == 0


def get_parser():
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--jobs", type=COUNT, default=2, help="units at a time, one torch thread each")
    p.add_argument("--out", default=None, help="weights and logs (default out/search-claim, -quick with --quick)")
    p.add_argument("--quick", action="store_true", help="a tiny model, 2 seeds, 2 problems, into --out/record")
    p.add_argument("--commit", action="store_true", help="git-commit each unit's files as it finishes")
    p.add_argument("--status", action="store_true", help="say the block and the units done; run nothing")
    p.add_argument("--units", type=COUNT, default=None, help="start at most this many units")
    return p


def main(argv=None):
    try:
        args = get_parser().parse_args(argv)
        claim = QUICK_CLAIM if args.quick else PLAN
        out = args.out or ("out/search-claim" + "-quick" * args.quick)
        if args.quick:
            claim = replace(claim, record=os.path.join(os.path.abspath(out), "record"))
        logs = os.path.join(out, "logs")
        base = base_file(argv_of(claim, claim.arms[0], 0), os.path.join(out, "runs"))
        if args.status and not os.path.isfile(base):
            print(f"no warm start at {base} yet")
            return 0
        os.makedirs(logs, exist_ok=True)
        ensure_warm_start(claim, out, logs)
        rec, step = block(claim, os.path.join(os.path.dirname(base), "log.jsonl"))
        where = "block A" if step is None else f"a replicate block (the warm start departs from v2's at step {step})"
        record = os.path.join(ROOT, claim.record)
        if stopped(record):
            raise UsageError(f"the experiment is stopped ({stopped(record)}); no unit runs after it")
        seeds = block_seeds(claim, rec, record)
        todo = [u for u in units(claim, seeds) if not unit_done(claim, rec, *u)]
        print(f"warm start {base}: {where}, {os.path.relpath(rec, ROOT)}; seeds {', '.join(map(str, seeds))}: "
              f"{len(units(claim, seeds)) - len(todo)} of {len(units(claim, seeds))} units done", flush=True)
        if args.status or not todo:
            return 0
        note_block(rec, base, step, git("rev-parse", "--short", "HEAD").stdout.strip())
        if args.commit:
            commit_unit(rec, "block.json")
        todo = todo[:args.units] if args.units else todo
        with one_thread_env(), cf.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                                                      initializer=one_thread) as pool:
            futures = {pool.submit(unit_job, claim, out, rec, arm, seed,
                                   os.path.join(logs, f"{arm}-s{seed}.log")): (arm, seed) for arm, seed in todo}
            failed = 0
            for f in cf.as_completed(futures):
                arm, seed = futures[f]
                rc = f.result()
                failed += rc != 0
                print(f"{datetime.datetime.now():%H:%M} {arm}-s{seed}: " + ("done" if rc == 0 else
                      f"train.py exited {rc}, see {logs}"), flush=True)
                if rc == 0 and args.commit:
                    commit_unit(rec, f"{arm}-s{seed}")
        return 1 if failed else 0
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

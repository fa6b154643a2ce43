"""
The reproduction pre-registered in results/PLAN.md (v3, maze) and results/PLAN_CODE.md (code and search): every
arm, seed and evaluation, then the tables and figures.

    python -m results.reproduce             # both plans (about 3.5 hours on 2 CPU cores for the maze; resumable)
    python -m results.reproduce --quick     # the same jobs on a tiny model, about a minute (numbers near zero)
    python -m results.reproduce --report    # only rewrite results.md and the figures from the finished runs
    python -m results.reproduce --part code # only the code comparison and its search (results/PLAN_CODE.md)
    python -m results.reproduce --part review  # equal compute, ablations, coverage, geometry (results/PLAN_REVIEW.md)

Each group of results/plan.py trains the arms of a configuration of record (results/experiments/NAME.json, whose
"about" says what they compare), every run the one `python -m results.compare --config` makes of it (the plan says
which first runs evaluate the base); the maze arms from the default `routes` warm start, every answer in its own
room (sample.AnswerBudget):
  main, baselines  maze v3: GRPO and VPO seed by seed first, then Max@k (the paper's strongest scalar baseline)
             and Multi-RLVR (VPO's answer format, scalar reward); 1000 RL steps, long enough for GRPO to narrow,
             evaluated at 4 points on the same held-out mazes, weights kept at those evaluations.
  code       code v2 (results/PLAN_CODE.md), then the search stage (results/search_jobs.py): the final GRPO,
             matched-GRPO and VPO weights screened for the held-out problems none solves, evolutionary search and
             plain sampling from each with the same budget. (v1's code runs, superseded, stay committed under
             runs/code/; results/superseded/code_v1.md keeps their tables.)

Each run is train.py in its own process (one torch thread each when --jobs > 1), under <out>/runs/DIR/, sharing
the cached warm start. Resumable in pieces: a finished run (its summary.json, committed with log.jsonl and
eval.jsonl under results/runs/) is skipped, an interrupted one resumed from its checkpoint if there is one;
results.md is rewritten after every finished run. Tables: report.py; figures: figures.py.
"""
import argparse
import json
import os
import sys
import time

from results import review_jobs, search_jobs
from results.jobs import base_file, run_queue, train_entry, train_job
from results.plan import CODE_PART, FULL, GROUPS, MAZE, QUICK, REVIEW, jobs_of, run_dir, runs_dir


def run_all(cfg, out, jobs=2, report=None, groups=None):
    """Run every job of the plan not yet finished, `jobs` at a time; report() after each finished one.
    The search jobs of the code comparison (results/search_jobs.py; the search of record in units, each training
    its run and searching from it in one job) and the review's read-back jobs (results/review_jobs.py) start when
    the files they need exist.
    groups: only the runs of these plan groups (default all); the search jobs come with "code"."""
    groups = groups or [g for g in GROUPS if g in cfg]
    logs = os.path.join(out, "runs", "logs")
    train = [{**j, **train_entry(train_job, j["argv"], runs_dir(out, j),
                                 os.path.join(logs, f"{j['dir']}-{j['name']}.log"))}
             for j in jobs_of(cfg) if j["group"] in groups and not j["units"] and not finished(cfg, out, j)]
    search = search_jobs.pending(cfg, out) if "code" in groups else []
    if "code_rep" in groups and "code_rep" in cfg:  # the search's units train their own runs (search_jobs.py)
        search += search_jobs.pending(cfg, out, "search_rep", train_job, logs)
    search += review_jobs.pending(cfg, out, groups)
    os.makedirs(logs, exist_ok=True)
    return run_jobs(out, search, train, jobs, report)


def finished(cfg, out, job):
    """A run is finished when its summary.json is here and so is everything read from its weights, or the weights
    themselves (to read it from). Weights are never committed: a run whose read-backs are missing in a clone is
    trained again (another realization on another machine: docs/notes.md)."""
    d = run_dir(out, job)
    read = review_jobs.from_weights(cfg, out, job)
    return os.path.isfile(os.path.join(d, "summary.json")) and (os.path.isfile(os.path.join(d, "ckpt.pt"))
                                                                 or all(os.path.isfile(p) for p in read))


def run_jobs(out, search, train, jobs, report=None):
    """Run the search and read-back jobs, then the training runs (queue entries of results/jobs.py), `jobs` at a
    time in worker processes (one torch thread each when jobs > 1). A job that ends a result goes first, so that a
    stop leaves it committed. One line per start and end; report() after each end. -> the names of the jobs that
    failed."""
    queue = [{**j, "base": base_file(j["run"]["argv"], runs_dir(out, j["run"]))} if "run" in j else j
             for j in search] + train
    failed, t0, started = [], time.perf_counter(), time.time()

    def say(what, j, how=""):
        print(f"[{time.perf_counter() - t0:6.0f} s] {what} {j['dir']}/{j['name']}{how}", flush=True)

    def ended(j, rc, _):
        nonlocal started
        say("done", j, ": ok" if rc == 0 else f": FAILED {rc}")
        if rc != 0:
            failed.append(j["name"])
        with open(os.path.join(out, "runs", "timeline.jsonl"), "a") as fh:  # report.wall_seconds
            fh.write(json.dumps({"start": started, "end": time.time(), "done": j["name"], "ok": rc == 0}) + "\n")
        started = time.time()
        if report:
            report()
    stuck = run_queue(queue, jobs, lambda j: say("start", j), ended, poll=10, one=jobs > 1)
    if stuck:  # nothing runs and nothing can start: what the search needs failed to appear
        missing = sorted({p for j in stuck for p in j["needs"] if not os.path.isfile(p)})
        print(f"cannot start {', '.join(j['name'] for j in stuck)}: missing {', '.join(missing)} (a clone holds no "
              f"checkpoints: train those runs here first)", flush=True)
    return failed + [j["name"] for j in stuck]


def main(argv=None):
    from runs.cli import COUNT, Parser, UsageError
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the same jobs on a tiny model, about a minute")
    ap.add_argument("--out", default=None, help="output directory (default results/, or results-quick/)")
    ap.add_argument("--jobs", type=COUNT, default=2, help="runs at a time (one torch thread each when > 1)")
    ap.add_argument("--report", action="store_true", help="only rewrite results.md and the figures")
    ap.add_argument("--part", default="all", choices=("all", "maze", "code", "review"),
                    help="run only the maze plan, the code comparison and its search, or the reviewer's questions "
                         "(results/PLAN_REVIEW.md; default all)")
    try:
        args = ap.parse_args(argv)
        out = args.out or ("results-quick" if args.quick else "results")
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"--out {out}: exists and is not a directory")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from results.report import write_report
    cfg = QUICK if args.quick else FULL
    given = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--report"]  # --report only rewrites
    title = "python -m results.reproduce" + " ".join(["", *given])
    t0 = time.perf_counter()
    failed = []
    if not args.report:
        groups = {"all": None, "maze": MAZE, "code": CODE_PART, "review": REVIEW}[args.part]
        failed = run_all(cfg, out, args.jobs, lambda: write_report(cfg, out, title, figures=False), groups)
    write_report(cfg, out, title, figures=True)
    print(f"reproduce: {time.perf_counter() - t0:.0f} s; results in {out}/results.md"
          + (f"; FAILED: {', '.join(failed)} (logs in {out}/runs/logs/)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

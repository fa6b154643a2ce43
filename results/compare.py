"""
Does VPO beat GRPO on your task? Train every method several times from one cached warm start, evaluate every run on
the same held-out problems along training, and compare the methods with the training run as the unit.

    python -m results.compare --task toy --algos grpo,vpo --runs 3 --steps 60 --eval_every 20 --out out/cmp-toy
    python -m results.compare --task mytasks:Lines --algos grpo,vpo,max_at_k --runs 6 --jobs 2 --lr 1e-4
    python -m results.compare --task maze --quick       # a tiny model: the whole pipeline in about a minute
    python -m results.compare --config results/experiments/maze_v3.json --report   # read an experiment of record
    python -m results.compare --config results/experiments/code_search.json --report   # search on hard problems

Run r of every method is train.py with --seed r, in a worker process with one torch thread, at most --jobs at a
time; every other train.py flag is passed to every run. --out DIR holds config.json (the train.py settings every run
shares), runs/ (train.py's --out_dir: the cached warm start and one directory per run, SLUG-sSEED; with a "search",
its files: results/searched.py), logs/ (each run's output), compare.md and the figures. A run whose summary.json
exists is skipped, an interrupted one resumed. docs/compare.md has the configuration files and how to read compare.md.
"""
import argparse
import json
import os
import re
import shlex
import sys
import tempfile
import time
from dataclasses import replace

import numpy as np

from results.jobs import (METRICS, OWNED, ROOT, Arm, Setup, check_warm_starts, committed, git, read_config,
                          run_name, run_queue, seed_digests, train_entry, train_job, warm_start_line)
from results.searched import (BASE, KINDS, answers_per_call, arms_of, hard_path, per_run, read_searches, run_args,
                              search_lines, search_queue, stop_step, validation_job, verdict_rows)
from results.tables import (at_step, base_metrics, decision_lines, metric_lines, paired_lines, read_json, read_run,
                            run_note, table, verdict_lines, written_lines)
from runs.cli import COUNT, Parser, UsageError, given_flags, number, task_name

QUICK_STEPS, QUICK_EVAL_EVERY = 4, 2
QUICK = ("--eval_problems", "4", "--eval_answers", "48", "--ckpt_every", "0", "--sft_steps", "6", "--n_layer", "1",
         "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4", "--sft_batch_size", "8",
         "--no_figures")   # --quick: a tiny model, the whole pipeline in about a minute
PAIRED = ("pooled_best@k", "pass@k", "E_w[best@k]")   # the metrics whose paired differences compare.md tabulates
HEADLINE = "pooled_best@k"


def run_path(out, arm, seed):
    return os.path.join(out, "runs", run_name(arm, seed))


def algo_arm(algo):
    """The arm of a bare --algos entry: named and filed as the method."""
    return Arm(algo, algo, ("--algo", algo))


# --------------------------------------------------------------------------------------------- command line
def get_parser():
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
               epilog="Any other train.py flag (python train.py --help) is passed to every run.")
    p.add_argument("--task", default="maze", type=task_name, help="toy, maze, code, or MODULE:CLASS (your Task)")
    p.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE", help="task option (repeatable)")
    p.add_argument("--algos", default="grpo,vpo", help="methods of vpo.METHODS, comma-separated; every other one is "
                   "compared against the first (default grpo,vpo)")
    p.add_argument("--runs", type=COUNT, default=3, help="runs per method, seeds 0..N-1 (at least 2; an exact test "
                   "reaches p < 0.05 from 6)")
    p.add_argument("--steps", type=COUNT, default=None, help=f"RL steps of every run (default train.py's; --quick "
                   f"{QUICK_STEPS})")
    p.add_argument("--eval_every", type=number(int, 0), default=None, help=f"evaluate every N steps (default "
                   f"train.py's; --quick {QUICK_EVAL_EVERY})")
    p.add_argument("--jobs", type=COUNT, default=2, help="runs at a time, one torch thread each")
    p.add_argument("--out", default=None, help="output directory (default out/compare-TASK, -quick with --quick)")
    p.add_argument("--quick", action="store_true", help="a tiny model (QUICK's settings)")
    p.add_argument("--config", metavar="FILE", help="a configuration file instead of the options above: the task, "
                   "the arms (label, slug and train.py flags each), the seeds, the shared flags (docs/compare.md)")
    p.add_argument("--report", action="store_true", help="train nothing: write compare.md from the finished runs "
                   "(of a configuration of record: its committed runs)")
    p.add_argument("--metric", choices=METRICS, default=None, help="the headline verdict and the figures: pooled "
                   "best@k under w* (default), best@k, E_w[best@k] (users who differ in their weights), pass@k, or "
                   "solved (problems solved by search; a configuration with a \"search\")")
    return p


def parse_command(argv):
    """-> (Setup, out, jobs, report only); a mistake raises UsageError."""
    import train
    import vpo
    args, rest = get_parser().parse_known_args(argv)
    if args.config:
        extra = set(given_flags(get_parser(), argv)) - {"config", "report", "out", "jobs", "metric"}
        if extra:
            raise UsageError(f"--{sorted(extra)[0]} is set by the configuration file {args.config}")
        setup = read_config(args.config)
        if args.metric == "solved" and not setup.search:
            raise UsageError(f"--metric solved: {args.config} has no \"search\"")
        setup = replace(setup, metric=args.metric or setup.metric)
        name = os.path.splitext(os.path.basename(args.config))[0]
        return setup, args.out or os.path.join("out", f"compare-{name}"), args.jobs, args.report
    if args.metric == "solved":
        raise UsageError("--metric solved needs a configuration with a \"search\" (--config)")
    algos = tuple(a.strip() for a in args.algos.split(","))
    unknown = [a for a in algos if a not in vpo.METHODS]
    if unknown:
        raise UsageError(f"--algos: unknown method {unknown[0]!r} (methods: {', '.join(vpo.METHODS)})")
    if len(algos) < 2 or len(set(algos)) < len(algos):
        raise UsageError(f"--algos needs at least two different methods to compare, got {args.algos!r}")
    if args.runs < 2:
        raise UsageError(f"--runs {args.runs}: a comparison over runs needs at least two runs of each method "
                         f"(with one, no test is possible)")
    owned = [k for k in OWNED if k in given_flags(train.get_parser(), rest)]   # unknown flags fail here too
    if owned:
        raise UsageError(f"--{owned[0]} is set by results.compare for each run; it cannot be passed through")
    steps = args.steps or (QUICK_STEPS if args.quick else None)
    every = args.eval_every if args.eval_every is not None else QUICK_EVAL_EVERY if args.quick else None
    train_args = ["--task", args.task, *[a for o in args.task_opt for a in ("--task_opt", o)],
                  *(QUICK if args.quick else []), *(["--steps", str(steps)] if steps else []),
                  *(["--eval_every", str(every)] if every is not None else []), *rest]
    slug = re.sub(r"[^\w.-]", "_", args.task)
    out = args.out or os.path.join("out", f"compare-{slug}{'-quick' * args.quick}")
    return (Setup(tuple(map(algo_arm, algos)), tuple(range(args.runs)), tuple(train_args), metric=args.metric), out,
            args.jobs, args.report)


def settings(setup):
    """The train.py settings every run shares, as train.py parses them (JSON-like): what config.json records."""
    import train
    parsed = vars(train.get_parser().parse_args(list(setup.train_args)))
    return json.loads(json.dumps({k: v for k, v in parsed.items() if k not in OWNED}))


def check(setup, out, report=False):
    """Every arm's train.py command line as train.py checks it (nothing is written), and --out: new, empty, or
    holding a comparison with the same train.py settings (the arms and seeds may differ); with --report, only that
    the runs' directory exists."""
    import train
    from runs.checks import prepare
    from runs.dirs import check_out_dir
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} exists and is not a directory")
    path = os.path.join(out, "config.json")
    if report:
        blocks = [os.path.join(ROOT, b) for b in (setup.search or {}).get("blocks", [])]
        where = setup.dir or (blocks or [None])[0] or os.path.join(out, "runs")
        if not os.path.isdir(where):
            raise UsageError(f"--report: {where} holds no runs; train them first (the same command without --report)")
    elif os.path.isfile(path):
        try:
            saved = read_json(path)["train"]
        except (ValueError, KeyError, TypeError):
            raise UsageError(f"--out {out}: {path} is not a results.compare configuration; choose another --out")
        here = settings(setup)
        for key in sorted(set(saved) | set(here)):
            if saved.get(key) != here.get(key):
                raise UsageError(f"--out {out} holds a comparison with --{key} {saved.get(key)!r}, here "
                                 f"{here.get(key)!r}; choose another --out (nothing was changed)")
    elif os.path.isdir(out) and os.listdir(out):
        raise UsageError(f"--out {out} holds files but no config.json (not a results.compare directory); choose "
                         f"another --out")
    if not report:
        check_out_dir(os.path.join(out, "runs"))
        check_search_run(setup)
        check_stopped(setup)
        check_warm_starts(setup, out)
    with tempfile.TemporaryDirectory() as scratch:   # an empty --out_dir: train.py's checks of a new run
        for arm in setup.arms:
            try:
                prepare(setup.argv(arm, setup.seeds_of(arm)[0]) + ["--out_dir", scratch], train.get_parser,
                        train.RESUMABLE, lambda a: [a.num_answers * f for f in train.K_FACTORS])
            except UsageError as e:
                raise UsageError(f"{arm.label}: {e}")


def check_stopped(setup):
    """A configuration's arms stopped early are chosen among their kept evaluation checkpoints."""
    arms = {a.label: a for a in setup.arms}
    for s in setup.stopped:
        if not run_args(setup, arms[s["arm"]]).keep_eval_ckpts:
            raise UsageError(f"\"stopped\": {s['arm']} needs --keep_eval_ckpts in its train.py flags (the weights "
                             f"of each evaluation step, among which its validation picks)")


def check_search_run(setup):
    """What the command can search: the trained arms' final weights and the warm start, at a budget evolve accepts,
    on a hard set that is committed or chosen by the screen."""
    from search import min_budget
    if not setup.search:
        return
    s = setup.search
    other = [a["slug"] for a in s.get("arms", []) if a["slug"] != BASE]
    if other:
        raise UsageError(f"search arm {other[0]!r}: results.compare searches the trained arms' final weights and the "
                         f"warm start (slug {BASE!r}); other searched weights are read by --report only")
    if "stopped" in s and not all(run_args(setup, a).keep_eval_ckpts and all(
            k == 1 or k % answers_per_call(setup, a) == 0 for k in s["stopped"]["k"]) for a in setup.arms):
        raise UsageError("search: \"stopped\" needs --keep_eval_ckpts in every arm's train.py flags (the weights of "
                         "each evaluation step), and each k 1 or a multiple of every arm's answers per rollout")
    if s.get("hard") and not os.path.isfile(os.path.join(ROOT, s["hard"])):
        raise UsageError(f"search: the hard set {s['hard']} does not exist")
    need = max(min_budget(answers_per_call(setup, a)) for a in setup.arms)
    if s["budgets"][-1] < need:
        raise UsageError(f"search: a budget of {s['budgets'][-1]} answers is below one round of evolve's ({need})")


def run_jobs(queue, jobs, in_process, echo, line):
    """Run a queue of results/jobs.py:run_queue, echoing line(job, exit code, jobs left) as each ends. -> the jobs
    that failed or could never start."""
    failed, t0 = [], time.perf_counter()

    def ended(j, rc, left):
        failed.extend([j] * (rc != 0))
        echo(f"[{time.perf_counter() - t0:5.0f} s] {line(j, rc, left)}")
    return failed + run_queue(queue, jobs, ended, in_process=in_process)


# ---------------------------------------------------------------------------------------------------- runs
def run_all(setup, out, jobs, in_process=False, echo=print, job=None):
    """Train every run without a summary.json, seed by seed, at most `jobs` at a time in worker processes
    (in_process: here, one after the other). A run waits while another trains its warm start (results/jobs.py).
    With a "search", the screen comes first, and each seed's validations, searches and samplings follow its runs
    in the queue (results/searched.py), each starting once its run has finished: a seed's units finish together,
    on one machine, before the next seed's. job(argv, out_dir, log) -> exit code: one run (default train_job).
    echo: one line per finished job. -> the names of the runs (SLUG-sSEED) and search jobs that failed or could
    not start."""
    runs, logs, total = os.path.join(out, "runs"), os.path.join(out, "logs"), len(setup.runs())
    os.makedirs(logs, exist_ok=True)
    done, digests = committed(setup), seed_digests(setup)
    queue = [{"arm": arm, "seed": seed, **train_entry(job or train_job, setup.argv(arm, seed) + (
        ["--warm_start_digest", digests[seed]] if seed in digests else []), runs,
        os.path.join(logs, f"{run_name(arm, seed)}.log"))}
             for arm, seed in setup.runs() if not os.path.isfile(os.path.join(run_path(out, arm, seed),
                                                                               "summary.json"))
             and (arm.slug, seed) not in done]
    total -= len([1 for arm, seed in setup.runs() if (arm.slug, seed) in done])
    queue = [j for t in queue for j in [t] + validation_jobs(setup, out, t["arm"], t["seed"])] + [
        j for arm, seed in setup.runs() if (arm.slug, seed) not in done and os.path.isfile(
            os.path.join(run_path(out, arm, seed), "summary.json")) for j in validation_jobs(setup, out, arm, seed)]
    if setup.search:
        searches = search_queue(setup, out)
        seeds = list(setup.seeds) + sorted({j["seed"] for j in queue + searches if j.get("seed") is not None}
                                           - set(setup.seeds))
        queue = [j for j in searches if j.get("seed") is None] + [
            j for seed in seeds for j in [t for t in queue if t["seed"] == seed] + [
                x for x in searches if x.get("seed") == seed]]
    trained = [total - sum("arm" in j for j in queue)]

    def line(j, rc, left):
        if "arm" not in j:
            return f"{j['name']}: " + ("done" if rc == 0 else f"FAILED ({rc})") + f" ({left} left)"
        arm, seed = j["arm"], j["seed"]
        trained[0] += 1
        return f"{arm.label} run {seed}: " + (progress(run_path(out, arm, seed)) if rc == 0 else
                                              f"FAILED ({rc}); see {out}/logs/{run_name(arm, seed)}.log") \
            + f" ({trained[0]} of {total})"
    return [run_name(j["arm"], j["seed"]) if "arm" in j else j["name"]
            for j in run_jobs(queue, jobs, in_process, echo, line)]


def validation_jobs(setup, out, arm, seed):
    """The validation of one run of an arm stopped early (a configuration's "stopped"), once it has trained: its
    kept evaluation checkpoints on the next --eval_problems test problems after the report's, pooled best@k at the
    largest k (searched.validation_job) -> the run's validation.json. [] if the file is there or the arm is not
    stopped."""
    path = os.path.join(run_path(out, arm, seed), "validation.json")
    if not any(s["arm"] == arm.label for s in setup.stopped) or os.path.isfile(path):
        return []
    args = run_args(setup, arm)
    return [{"fn": validation_job, "needs": [os.path.join(os.path.dirname(path), "summary.json")],
             "name": f"validation of {run_name(arm, seed)}", "seed": seed,
             "args": (os.path.dirname(path), [args.eval_problems, 2 * args.eval_problems], [args.eval_answers],
                      path)}]


def progress(directory):
    """'done: pooled best@48 0.512 at step 150' from a finished run's summary.json."""
    summary = read_json(os.path.join(directory, "summary.json"))
    pooled = summary["metrics"][HEADLINE]
    k = max(pooled, key=int)
    return f"done: pooled best@{k} {pooled[k]:.3f} at step {summary['args']['steps']}"


def read_runs(setup, out, report=False):
    """{label: [run, ...]} of the finished runs in seed order (tables.read_run). report: from the directories of a
    configuration of record (its "dir", an arm's, or its search's blocks)."""
    found = {}
    for arm in setup.arms:
        places = [d for d in (arm.dir, setup.dir) if d] if report else []
        places += [os.path.join(ROOT, b) for b in (setup.search or {}).get("blocks", [])] if report else []
        for seed in setup.seeds_of(arm):
            ds = [os.path.join(where, run_name(arm, seed)) for where in places or [os.path.join(out, "runs")]]
            d = next((d for d in ds if os.path.isfile(os.path.join(d, "summary.json"))), None)
            if d:
                run = read_run(d, seed, arm.slug)
                algo = arm.flags[arm.flags.index("--algo") + 1] if "--algo" in arm.flags[:-1] else None
                if algo and run["summary"].get("algo", algo) != algo:   # a run of another method under this name
                    raise UsageError(f"{d}: a run of {run['summary']['algo']}, where {arm.label} trains --algo {algo}")
                found.setdefault(arm.label, []).append(run)
    for s in setup.stopped:
        for r in found.get(s["arm"], []):
            path = os.path.join(r["dir"], "validation.json")
            t = stop_step(read_json(path)) if os.path.isfile(path) else None
            metrics = t is not None and at_step(r, t)
            if metrics:   # the weights at t*, on the test problems, read at the run's last step
                found.setdefault(s["label"], []).append({**r, "evals": [], "stopped_at": t,
                                                         "summary": {**r["summary"], "metrics": metrics,
                                                                     "base_metrics": None}})
    return found


# ------------------------------------------------------------------------------------------------- report
def pairs_of(setup, runs):
    """[(A, B)] of the finished arms compared: every arm against the first, then the configuration's own pairs."""
    first = setup.arms[0].label
    return [(a, b) for a, b in [(arm.label, first) for arm in setup.arms[1:]] + list(setup.pairs)
            if a in runs and b in runs]


def commit():
    """The repository's commit ('abc1234', '+ uncommitted changes' where the work tree differs), or 'unknown'."""
    head = git("rev-parse", "--short", "HEAD")
    dirty = head and git("status", "--porcelain", "--untracked-files=no")
    return (head or "unknown") + (" + uncommitted changes" if dirty else "")


def configuration_lines(setup, out, runs, command, started, failed, report):
    """The command, dates, commit and machines, each run's train.py command line, what finished, the seconds."""
    from runs.dirs import machine

    def date(t=None):
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t))
    machines = sorted({r["summary"].get("machine", "?") for rs in runs.values() for r in rs})

    def unstopped(s):   # finished runs of a stopped arm with no t* (no validation.json, or none evaluated at t*)
        done = {r["seed"] for r in runs.get(s["label"], [])}
        missing = [str(r["seed"]) for r in runs.get(s["arm"], []) if r["seed"] not in done]
        return f" No t* for seed{'s' * (len(missing) > 1)} {', '.join(missing)}: left out." if missing else ""
    seconds = [f"{a} {np.mean([r['summary']['train_seconds'] for r in rs]):.0f} + "
               f"{np.mean([r['summary']['eval_seconds'] for r in rs]):.0f}" for a, rs in runs.items()]
    created = os.path.join(out, "config.json")
    where = ", ".join(sorted({os.path.relpath(d) for d in {a.dir or setup.dir for a in setup.arms} if d})) if report \
        else None
    return ["## Configuration", "", f"- Command: `{command}`",
            f"- Written {date()}; this call started {date(started)}" + (
                f", the first call in this directory {read_json(created)['created']}." if os.path.isfile(created)
                else "."),
            f"- Commit {commit()}, on {machine()}; the runs recorded {'; '.join(machines)}.",
            warm_start_line(runs),
            f"- Each run: `python train.py {shlex.join(setup.train_args)} FLAGS --seed R --run_name SLUG-sR --quiet "
            f"--out_dir {where or os.path.join(out, 'runs')}`; each arm's first run evaluates the base, the others "
            "add --no_base_eval. FLAGS and SLUG: " + "; ".join(f"{a.label}: `{shlex.join(a.flags)}`, {a.slug}"
                                                              + (f", {os.path.relpath(a.dir)}" if report and a.dir
                                                                 else "") for a in setup.arms) + ".",
            *[f"- {s['label']}: {s['arm']}'s weights at its best step on validation problems (t*: "
              + ", ".join(f"seed {r['seed']} step {r['stopped_at']}" for r in runs.get(s["label"], []))
              + "), evaluated on the test problems." + unstopped(s) for s in setup.stopped],
            "- Finished runs: " + ", ".join(f"{a.label} {len(runs.get(a.label, []))} of {len(setup.seeds_of(a))}"
                                            for a in setup.arms)
            + (f"; failed: {', '.join(failed)} (see logs/)" if failed else "")
            + ".", f"- Seconds per run, training + evaluation, mean over runs: {', '.join(seconds)}.", ""]


def search_section(setup, found, where, out):
    """compare.md's section "Search" (results/searched.py:search_lines), with the task and the hard set's rule."""
    from runs.cli import make_task
    hard = hard_path(setup, out)
    return search_lines(setup, found, where, make_task(settings(setup)["task"], settings(setup)["task_opt"]),
                        os.path.isfile(hard) and read_json(hard).get("rule"))


def write_report(setup, out, command, started, failed=(), report=False):
    """DIR/compare.md and the figures, from the finished runs (report: of a configuration of record)."""
    runs, first, key = read_runs(setup, out, report), setup.arms[0].label, setup.metric or HEADLINE
    bases = base_metrics(runs)
    title = f"{', '.join(a.label for a in setup.arms)} on {settings(setup)['task']}, {len(setup.seeds)} runs each"
    blocks = [os.path.join(ROOT, b) for b in setup.search.get("blocks", [])] if setup.search and report else \
        [os.path.join(out, "runs")]
    found, where = read_searches(setup, blocks) if setup.search else ({}, {})
    lines = [f"# results.compare: {title}", ""]
    if key == "solved":
        matters = setup.search.get("matters")
        lines += ["Problems solved by search per run, the deciding pairs; the method labels are permuted over runs "
                  "within blocks (results/searched.py)"
                  + (f"; the smallest difference that matters is {matters:g} problems per run" if matters else "")
                  + ":", ""]
        lines += table(["pair", "budget", "runs", "difference [95% interval]", "p (exact)", "reading"],
                       verdict_rows(setup, found, where) if len(where) > 1 else []) + [""]
    else:
        lines += verdict_lines(runs, pairs_of(setup, runs), key)
        lines += decision_lines(runs, setup.decide, key) if setup.decide else []
    paired_seeds = set.intersection(*({r["seed"] for r in rs} for rs in runs.values())) if runs else set()
    lines += [run_note(len(paired_seeds), True, "results/runstats.py"), ""] if key != "solved" else []
    lines += configuration_lines(setup, out, runs, command, started, failed, report)
    lines += ["## Each method along training", "",
              "Mean ± std over runs on the same held-out problems; step 0 is the warm start all runs start from.", ""]
    lines += metric_lines(runs, bases, {key: f"### {name}" for key, name in METRICS.items()})
    lines += [f"## Paired differences against {first}", ""]
    for (b, a), m in [(pair, m) for pair in pairs_of(setup, runs) for m in PAIRED]:
        lines += paired_lines(runs, b, a, m, f"### {b} − {a}, {METRICS[m]}")
    if setup.search:
        lines += search_section(setup, found, where, out)
    lines += written_lines(runs)
    drawn = "search.png" if key == "solved" else "best_at_k.png) ![along training](over_training.png" + (
        ") ![each pair per run](differences.png" if setup.decide else "") + (
        ") ![early stopping](validation.png" if setup.stopped else "")
    lines += ["## Figures", "", "Each faint line or point is one run; the bold line is the mean over runs.", "",
              f"![{METRICS[key]}]({drawn})", ""]
    os.makedirs(out, exist_ok=True)
    if key == "solved" and len(where) > 1:
        search_figure(setup, found, os.path.join(out, "search.png"))
    elif runs and key != "solved":
        from results.figures import compare_figures
        compare_figures(runs, bases, out, title, key)
        if setup.decide:
            from results.figures import decided_figure
            decided_figure(runs, setup.decide, key, os.path.join(out, "differences.png"))
        if setup.stopped:
            from results.figures import validation_figure
            validation_figure(runs, setup.stopped, os.path.join(out, "validation.png"))
    with open(os.path.join(out, "compare.md.tmp"), "w") as f:
        f.write("\n".join(lines))
    os.replace(os.path.join(out, "compare.md.tmp"), os.path.join(out, "compare.md"))


def search_figure(setup, found, path):
    """Problems solved per run against the budget, search and sampling side by side (figures.strip_figure)."""
    from results.figures import strip_figure
    names, budgets = arms_of(setup), setup.search["budgets"]
    counts = {how: {names[a]: {b: list(per_run(found, kind, a, b).values()) for b in budgets} for a in names}
              for kind, how in KINDS.items()}
    strip_figure(counts, budgets, path, "hard problems solved per training run")


def write_config(setup, out):
    """out/config.json (the train.py settings every run shares), unless it is there: what check() compares with."""
    path = os.path.join(out, "config.json")
    if not os.path.isfile(path):
        os.makedirs(out, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump({"train": settings(setup), "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, f,
                      indent=1)
        os.replace(path + ".tmp", path)


def main(argv=None, in_process=False, echo=print):
    """The command; echo(line) is called once per finished run."""
    argv = sys.argv[1:] if argv is None else list(argv)
    started = time.time()
    try:
        setup, out, jobs, report = parse_command(argv)
        check(setup, out, report)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not report:
        write_config(setup, out)
    failed = [] if report else run_all(setup, out, jobs, in_process, echo)
    write_report(setup, out, shlex.join(["python", "-m", "results.compare", *argv]), started, failed, report)
    print(f"compare: {time.time() - started:.0f} s; {os.path.join(out, 'compare.md')}"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

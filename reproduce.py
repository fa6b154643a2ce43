"""
The reproduction pre-registered in results/PLAN.md: every arm, seed and evaluation, then the tables and figures.

    python reproduce.py              # the full plan: 86 minutes measured on 2 CPU cores (2 runs at a time)
    python reproduce.py --quick      # the same jobs on a tiny model, about 30 s (numbers near zero)
    python reproduce.py --report     # only rewrite results.md and the figures from the finished runs

Arms (MAIN, ABLATION and CODE below; the plan says why each is there):
  main      maze (paper design, `routes` warm start), 3 RL seeds: GRPO with the same rollouts as VPO,
            Multi-RLVR, random-weight GRPO, Max@k, VPO. Evaluated every --eval_every steps on the same
            held-out mazes, weights kept at those evaluations (the route figure draws them).
  ablation  maze, 1 seed: GRPO with VPO's answer budget (3x rollouts), goal-conditioned GRPO, GDPO, MaxRL,
            and GRPO / VPO from the `diverse` warm start.
  code      code task, 3 RL seeds: GRPO, Multi-RLVR, VPO (pass@k too).
  evolve    code: evolutionary search (search.evolve) from the GRPO and VPO checkpoint of every seed on the
            held-out problems that no code checkpoint solved in its evaluation pool.

Each run is train.py in its own process (one torch thread each when --jobs > 1), under out/runs/<task>/, sharing
the task's cached warm starts. Resumable: a finished run (summary.json) is skipped, an interrupted one resumed
from its checkpoint; results.md is rewritten after every finished job. Figures and tables: report.py.
"""
import argparse
import concurrent.futures as cf
import contextlib
import json
import multiprocessing
import os
import sys
import time

MAIN = [("GRPO", "grpo", ["--algo", "grpo"]),
        ("Multi-RLVR", "multi_rlvr", ["--algo", "multi_rlvr"]),
        ("Random-weight GRPO", "random_weight", ["--algo", "random_weight"]),
        ("Max@k", "max_at_k", ["--algo", "max_at_k"]),
        ("VPO", "vpo", ["--algo", "vpo"])]
ABLATION = [("GRPO, VPO's answer budget (3x rollouts)", "grpo_matched", ["--algo", "grpo", "--match_budget"]),
            ("Goal-conditioned GRPO", "goal_cond", ["--algo", "goal_cond"]),
            ("GDPO", "gdpo", ["--algo", "gdpo"]),
            ("MaxRL", "maxrl", ["--algo", "maxrl"]),
            ("GRPO, diverse warm start", "grpo_diverse", ["--algo", "grpo", "--warm_start", "diverse"]),
            ("VPO, diverse warm start", "vpo_diverse", ["--algo", "vpo", "--warm_start", "diverse"])]
CODE = [("GRPO", "grpo", ["--algo", "grpo"]),
        ("Multi-RLVR", "multi_rlvr", ["--algo", "multi_rlvr"]),
        ("VPO", "vpo", ["--algo", "vpo"])]
EVOLVE_ARMS = ("grpo", "vpo")  # whose code checkpoints the evolutionary search starts from

FULL = {
    "main": {"task": "maze", "seeds": [0, 1, 2], "steps": 220, "eval_every": 55},
    "ablation": {"task": "maze", "seeds": [0], "steps": 220, "eval_every": 110},
    "code": {"task": "code", "seeds": [0, 1, 2], "steps": 120, "eval_every": 60},
    "common": ["--eval_problems", "64", "--eval_answers", "48", "--ckpt_every", "25"],
    "evolve": {"budgets": {"answers": 384, "samples": 128}, "max_problems": 32},
    "route_mazes": 4, "route_answers": 12,
}
QUICK = {
    "main": {"task": "maze", "seeds": [0, 1], "steps": 4, "eval_every": 2},
    "ablation": {"task": "maze", "seeds": [0], "steps": 2, "eval_every": 0},
    "code": {"task": "code", "seeds": [0, 1], "steps": 2, "eval_every": 0},
    "common": ["--eval_problems", "4", "--eval_answers", "48", "--ckpt_every", "0", "--sft_steps", "6",
               "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4",
               "--sft_batch_size", "8"],
    "evolve": {"budgets": {"answers": 9, "samples": 4}, "max_problems": 2},
    "route_mazes": 2, "route_answers": 3,
}
GROUPS = {"main": MAIN, "ablation": ABLATION, "code": CODE}


def jobs_of(cfg):
    """Every training run of the plan, in the order they are started: seed by seed through the main table and
    the code task (so a cut-short reproduction has every main arm for its first seeds), ablations last.
    -> list of dicts: group, label, slug, seed, task, directory-relative name, argv, base (warm-start tag)."""
    def job(group, label, slug, flags, seed):
        g = cfg[group]
        mid = ["--keep_eval_ckpts"] if group == "main" else []
        # each base is evaluated once, in the seed-0 run of GRPO (m = 1) and of VPO (m = 3), and by each ablation
        base_eval = [] if group == "ablation" or (seed == g["seeds"][0] and slug in ("grpo", "vpo")) else \
            ["--no_base_eval"]
        warm = flags[flags.index("--warm_start") + 1] if "--warm_start" in flags else "auto"
        base = (g["task"], "goal" if slug == "goal_cond" else warm)
        argv = ["--task", g["task"], "--seed", str(seed), "--steps", str(g["steps"]), "--eval_every",
                str(g["eval_every"]), "--run_name", f"{slug}-s{seed}", *flags, *mid, *base_eval, *cfg["common"],
                "--quiet"]
        return {"group": group, "label": label, "slug": slug, "seed": seed, "task": g["task"], "argv": argv,
                "base": base, "name": f"{slug}-s{seed}"}
    out = []
    for i in range(max(len(cfg["main"]["seeds"]), len(cfg["code"]["seeds"]))):
        for group in ("main", "code"):
            if i < len(cfg[group]["seeds"]):
                out += [job(group, label, slug, flags, cfg[group]["seeds"][i]) for label, slug, flags in GROUPS[group]]
    out += [job("ablation", label, slug, flags, seed) for seed in cfg["ablation"]["seeds"]
            for label, slug, flags in ABLATION]
    return out


def base_path(job, out):
    """The cached warm start this job's run uses (runs.base_dir on CPU, --warm_start resolved as train.py does)."""
    import torch
    import train
    from runs import base_dir, make_task
    args = train.get_parser().parse_args(job["argv"] + ["--out_dir", os.path.join(out, "runs", job["task"])])
    train.check_method(args, make_task(args.task, args.task_opt))
    return os.path.join(base_dir(args, torch.device("cpu")), "ckpt.pt")


def run_dir(out, job):
    return os.path.join(out, "runs", job["task"], job["name"])


def _init_worker(threads):
    import torch
    torch.set_num_threads(threads)


def train_job(argv, out_dir, log_path):
    """One train.py run in this (worker) process, its output in log_path. -> its exit code."""
    import train
    directory = os.path.join(out_dir, argv[argv.index("--run_name") + 1])
    if os.path.isfile(os.path.join(directory, "ckpt.pt")):
        argv = argv + ["--resume"]
    elif os.path.isdir(directory):
        argv = argv + ["--overwrite"]
    with open(log_path, "a") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        print(f"$ python train.py {' '.join(argv)} --out_dir {out_dir}", flush=True)
        return train.main(argv + ["--out_dir", out_dir])


def evolve_job(ckpt, problem_ids, budgets, path, seed=0):
    """search.evolve from one checkpoint on the given held-out problems, once per budget unit -> path (json)."""
    import torch
    from runs import load_run
    from search import evolve
    model, run, task, m = load_run(ckpt, torch.device("cpu"))
    problems = task.problems("test", max(problem_ids) + 1, seed=0) if problem_ids else []
    result = {"ckpt": ckpt, "m": m, "problems": problem_ids, "units": {}}
    for unit, budget in budgets.items():
        t0 = time.perf_counter()
        res = evolve(model.eval(), task, [problems[i] for i in problem_ids], m, budget, unit, seed=seed) \
            if problem_ids else []
        result["units"][unit] = {"budget": budget, "solved_at": [r["solved_at"] for r in res],
                                 "used": [r["used"] for r in res], "seconds": round(time.perf_counter() - t0, 1)}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)
    return 0


def hard_code_problems(out, cfg):
    """Held-out code problems that no code checkpoint (any arm, any seed) solved in its evaluation pool."""
    counts = []
    for label, slug, _ in CODE:
        for seed in cfg["code"]["seeds"]:
            with open(os.path.join(out, "runs", "code", f"{slug}-s{seed}", "summary.json")) as f:
                counts.append(json.load(f)["metrics"]["solved_per_problem"])
    n = min(map(len, counts))
    hard = [i for i in range(n) if all(c[i] == 0 for c in counts)]
    return hard[:cfg["evolve"]["max_problems"]]


def run_all(cfg, out, jobs=2, report=None):
    """Run every job of the plan not yet finished, `jobs` at a time; report() after each finished one.
    A job whose warm start is not cached yet waits while a running job trains it (one would wait on the lock)."""
    train_jobs = [j for j in jobs_of(cfg) if not os.path.isfile(os.path.join(run_dir(out, j), "summary.json"))]
    logs = os.path.join(out, "runs", "logs")
    os.makedirs(logs, exist_ok=True)
    bases = {j["base"]: base_path(j, out) for j in train_jobs}
    threads = 1 if jobs > 1 else None
    saved = os.environ.get("OMP_NUM_THREADS")
    if threads:
        os.environ["OMP_NUM_THREADS"] = "1"  # the workers inherit it before they import torch
    try:
        return _run(cfg, out, jobs, report, train_jobs, bases, logs, threads)
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved


def _run(cfg, out, jobs, report, train_jobs, bases, logs, threads):
    evolve_todo = [(slug, seed) for slug in EVOLVE_ARMS for seed in cfg["code"]["seeds"]
                   if not os.path.isfile(evolve_path(out, slug, seed))]
    failed = []
    t0, started = time.perf_counter(), time.time()
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                initargs=(threads or os.cpu_count(),)) as pool:
        running = {}
        while train_jobs or evolve_todo or running:
            busy = {running[f]["base"] for f in running if "base" in running[f]}
            for j in list(train_jobs):
                if len(running) >= jobs:
                    break
                if j["base"] in busy and not os.path.isfile(bases[j["base"]]):  # being trained by a running job
                    continue
                train_jobs.remove(j)
                busy.add(j["base"])
                out_dir = os.path.join(out, "runs", j["task"])
                print(f"[{time.perf_counter() - t0:6.0f} s] start {j['task']}/{j['name']}", flush=True)
                log = os.path.join(logs, f"{j['task']}-{j['name']}.log")
                running[pool.submit(train_job, j["argv"], out_dir, log)] = j
            code_done = all(os.path.isfile(os.path.join(out, "runs", "code", f"{slug}-s{s}", "summary.json"))
                            for _, slug, _ in CODE for s in cfg["code"]["seeds"])
            while evolve_todo and code_done and len(running) < jobs:
                slug, seed = evolve_todo.pop(0)
                ckpt = os.path.join(out, "runs", "code", f"{slug}-s{seed}", "ckpt.pt")
                print(f"[{time.perf_counter() - t0:6.0f} s] start evolve code/{slug}-s{seed}", flush=True)
                running[pool.submit(evolve_job, ckpt, hard_code_problems(out, cfg), cfg["evolve"]["budgets"],
                                    evolve_path(out, slug, seed))] = {"name": f"evolve {slug}-s{seed}"}
            if not running:  # nothing could start: evolve waits on code runs that failed
                break
            done, _ = cf.wait(running, timeout=10, return_when=cf.FIRST_COMPLETED)  # or a base appearing
            for f in done:
                j = running.pop(f)
                rc = f.result() if f.exception() is None else repr(f.exception())
                print(f"[{time.perf_counter() - t0:6.0f} s] done {j.get('task', '')}/{j['name']}: "
                      f"{'ok' if rc == 0 else 'FAILED ' + str(rc)}", flush=True)
                if rc != 0:
                    failed.append(j["name"])
                with open(os.path.join(out, "runs", "timeline.jsonl"), "a") as fh:  # report.wall_seconds
                    row = {"start": started, "end": time.time(), "done": j["name"], "ok": rc == 0}
                    fh.write(json.dumps(row) + "\n")
                started = time.time()
                if report:
                    report()
    return failed


def evolve_path(out, slug, seed):
    return os.path.join(out, "runs", "code", f"evolve-{slug}-s{seed}.json")


def main(argv=None):
    from runs import COUNT, Parser, UsageError
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the same jobs on a tiny model, about 30 s")
    ap.add_argument("--out", default=None, help="output directory (default results/, or results-quick/)")
    ap.add_argument("--jobs", type=COUNT, default=2, help="runs at a time (one torch thread each when > 1)")
    ap.add_argument("--report", action="store_true", help="only rewrite results.md and the figures")
    try:
        args = ap.parse_args(argv)
        out = args.out or ("results-quick" if args.quick else "results")
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"--out {out}: exists and is not a directory")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from report import write_report
    cfg = QUICK if args.quick else FULL
    title = "python reproduce.py" + " ".join(["", *(argv if argv is not None else sys.argv[1:])])
    t0 = time.perf_counter()
    failed = []
    if not args.report:
        failed = run_all(cfg, out, args.jobs, lambda: write_report(cfg, out, title, figures=False))
    write_report(cfg, out, title, figures=True)
    print(f"reproduce: {time.perf_counter() - t0:.0f} s; results in {out}/results.md"
          + (f"; FAILED: {', '.join(failed)} (logs in {out}/runs/logs/)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

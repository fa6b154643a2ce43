"""
The pilot of the search experiment (results/PLAN_SEARCH.md): the measurements that size it. Not part of its results.

    PYTHONPATH=. python results/pilot/search/pilot.py screen --ckpt BASE --m 1 --n 1152 --out screen-base-m1.json
    PYTHONPATH=. python results/pilot/search/pilot.py hard --screens A.json B.json --first 128 --out hard.json
    PYTHONPATH=. python results/pilot/search/pilot.py validate --ckpt RUN/ckpt-step125.pt ... --out validate-grpo.json
    PYTHONPATH=. python results/pilot/search/pilot.py search --kind evolve --ckpt CKPT --budget 1536 --out FILE

screen    the checkpoint's pool of 48 answers per problem at T = 0.7 (evaluate.py, streams seeded by (seed, i)
          for the i-th problem screened) on the first n test problems (seed 0), or on a hard file's problems
          (--ids): answers equal to the target, and answers that pass every shown test, per problem. --m overrides the answers per completion (the warm start is cached with
          m = 3; --m 1 samples it as GRPO does).
hard      the problems from index --first on that no answer of any screen equals the target: every such index,
          in order (the plan takes a prefix of them).
validate  each checkpoint's evaluation (48 answers, T = 0.7, seed 0) on the validation problems, test indices
          --lo to --hi: pooled pass_target@k and pass@k, and the seconds it took.
search    search.evolve or search.sample_until_solved on the first --count hard problems at one budget (answers,
          T = 1.0), and the seconds it took.
Every file records the machine (runs.dirs.machine) and the UTC date; a file that exists is not made again.
"""
import argparse
import datetime
import json
import os
import sys
import time

import torch

from evaluate import evaluate
from runs.cli import UsageError, load_run
from runs.dirs import machine


def stamp():
    return {"machine": machine(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "threads": torch.get_num_threads()}


def write(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def load(ckpt, m=None):
    model, args, task, m0 = load_run(ckpt, torch.device("cpu"))
    return model, task, m or m0


def screen(a):
    model, task, m = load(a.ckpt, a.m)
    problems = task.problems("test", a.n, seed=0)
    ids = json.load(open(a.ids))["unsolved"] if a.ids else None
    problems = problems if ids is None else [problems[i] for i in ids]
    t0 = time.perf_counter()
    metrics, _ = evaluate(model, task, problems, m, [max(m, 1), 48], 48, 0.7, seed=a.seed)
    write(a.out, {"ckpt": a.ckpt, "m": m, "problems": a.n if ids is None else ids, "answers": 48,
                  "temperature": 0.7, "stream_seed": a.seed,
                  "solved_target_per_problem": metrics["solved_target_per_problem"],
                  "solved_per_problem": metrics["solved_per_problem"],
                  "seconds": round(time.perf_counter() - t0, 1), **stamp()})


def hard(a):
    screens = [json.load(open(p)) for p in a.screens]
    n = min(s["problems"] for s in screens)
    ids = [i for i in range(a.first, n) if all(s["solved_target_per_problem"][i] == 0 for s in screens)]
    write(a.out, {"rule": "no answer of any screen equals the target", "first": a.first, "screened": n,
                  "screens": [os.path.basename(p) for p in a.screens], "unsolved": ids, "count": len(ids),
                  **stamp()})


def validate(a):
    rows = []
    for ckpt in a.ckpt:
        model, task, m = load(ckpt)
        problems = task.problems("test", a.hi, seed=0)[a.lo:a.hi]
        t0 = time.perf_counter()
        metrics, _ = evaluate(model, task, problems, m, [max(m, 1), 3, 12, 48], 48, 0.7, seed=0)
        rows.append({"ckpt": ckpt, "m": m, "seconds": round(time.perf_counter() - t0, 1),
                     **{key: metrics[key] for key in ("pooled_pass_target@k", "pass_target@k", "pass@k")}})
    write(a.out, {"validation": [a.lo, a.hi], "answers": 48, "temperature": 0.7, "rows": rows, **stamp()})


def search(a):
    from search import evolve, sample_until_solved
    model, task, m = load(a.ckpt, a.m)
    ids = json.load(open(a.hard))["unsolved"][a.start:a.start + a.count]
    pool = task.problems("test", max(ids) + 1, seed=0)
    run = evolve if a.kind == "evolve" else sample_until_solved
    t0 = time.perf_counter()
    results = run(model, task, [pool[i] for i in ids], m, a.budget, "answers", temperature=1.0, seed=a.seed)
    seconds = time.perf_counter() - t0
    write(a.out, {"kind": a.kind, "ckpt": a.ckpt, "m": m, "budget": a.budget, "unit": "answers", "temperature": 1.0,
                  "seed": a.seed, "problems": ids, "results": results, "seconds": round(seconds, 1),
                  "seconds_per_problem": round(seconds / len(ids), 2),
                  "solved": sum(r["solved_at"] is not None for r in results), **stamp()})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    s = sub.add_parser("screen")
    s.add_argument("--ckpt", required=True)
    s.add_argument("--m", type=int, default=None)
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--ids", default=None, help="a hard file: screen only its unsolved problems")
    s.add_argument("--seed", type=int, default=0, help="evaluate's stream seed (problem i: (seed, i))")
    s.add_argument("--out", required=True)
    s = sub.add_parser("hard")
    s.add_argument("--screens", nargs="+", required=True)
    s.add_argument("--first", type=int, default=128)
    s.add_argument("--out", required=True)
    s = sub.add_parser("validate")
    s.add_argument("--ckpt", nargs="+", required=True)
    s.add_argument("--lo", type=int, default=64)
    s.add_argument("--hi", type=int, default=128)
    s.add_argument("--out", required=True)
    s = sub.add_parser("search")
    s.add_argument("--kind", choices=("evolve", "sample"), required=True)
    s.add_argument("--ckpt", required=True)
    s.add_argument("--m", type=int, default=None)
    s.add_argument("--hard", required=True)
    s.add_argument("--start", type=int, default=0)
    s.add_argument("--count", type=int, default=32)
    s.add_argument("--budget", type=int, required=True)
    s.add_argument("--seed", type=int, default=1000)
    s.add_argument("--out", required=True)
    a = p.parse_args(argv)
    if os.path.isfile(a.out):
        print(f"{a.out} exists; not made again")
        return 0
    try:
        {"screen": screen, "hard": hard, "validate": validate, "search": search}[a.step](a)
    except (OSError, UsageError, KeyError, ValueError) as e:   # a missing or foreign file, a bad index
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

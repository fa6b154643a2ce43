"""
The search stage of the code comparison (results/PLAN_CODE.md, "The search"): evolutionary search as the paper
runs it, on the held-out problems no checkpoint solves, next to plain sampling with the same budget.

1. screen   every searched checkpoint (the final GRPO and VPO weights of every seed) samples its evaluation pool
            (48 answers at T = 0.7, the evaluation's streams) on the first `screen_problems` test problems;
            screen-ARM-sSEED.json holds how many answers solved each problem.
2. hard     the problems that no screened checkpoint solved, the first `problems` of them (hard.json); fewer
            than that is an error that asks for more screened problems.
3. evolve   search.evolve from each checkpoint on the hard problems (evolve-ARM-sSEED.json): solved_at per
            problem, the budget spent when the first solving program appeared.
   sample   search.sample_until_solved, the same budget of fresh samples at the search's temperature
            (sample-ARM-sSEED.json): what the search adds over sampling.
Every file is written atomically once its job is done (a killed job is redone); the files are small and
committed, the checkpoints are not. reproduce.py schedules these jobs; report.py reads them back.
"""
import json
import os
import time

from results.plan import read_json


def search_dir(out):
    return os.path.join(out, "runs", "code", "search")


def checkpoint(out, slug, seed):
    return os.path.join(out, "runs", "code", f"{slug}-s{seed}", "ckpt.pt")


def path_of(out, kind, slug=None, seed=None):
    name = "hard.json" if kind == "hard" else f"{kind}-{slug}-s{seed}.json"
    return os.path.join(search_dir(out), name)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def _load(ckpt):
    import torch
    from runs.cli import load_run
    model, run, task, m = load_run(ckpt, torch.device("cpu"))
    return model.eval(), task, m


def screen_job(ckpt, n, answers, path):
    """The checkpoint's evaluation pool on the first n test problems: solved answers per problem."""
    from evaluate import evaluate
    t0 = time.perf_counter()
    model, task, m = _load(ckpt)
    metrics, _ = evaluate(model, task, task.problems("test", n, seed=0), m, [max(m, 1), answers], answers, 0.7)
    write_json(path, {"ckpt": ckpt, "m": m, "problems": n, "answers": answers,
                      "solved_per_problem": metrics["solved_per_problem"], "pass@k": metrics["pass@k"],
                      "seconds": round(time.perf_counter() - t0, 1)})
    return 0


def hard_problems(search, screens):
    """Indices of the problems no screen solved, the first search["problems"] of them.
    screens: the screen files' contents. ValueError if there are too few."""
    n = min(s["problems"] for s in screens)
    unsolved = [i for i in range(n) if all(s["solved_per_problem"][i] == 0 for s in screens)]
    if len(unsolved) < search["problems"]:
        raise ValueError(f"only {len(unsolved)} of {n} screened problems are unsolved by every checkpoint; "
                         f"the search needs {search['problems']}: raise screen_problems")
    return unsolved[:search["problems"]]


def write_hard(search, out, screens):
    ids = hard_problems(search, [read_json(p) for p in screens])
    write_json(path_of(out, "hard"), {"problems": ids, "screened": search["screen_problems"],
                                      "screens": [os.path.basename(p) for p in screens]})
    return 0


def search_job(kind, ckpt, search, hard_path, path):
    """evolve or sample from one checkpoint on the hard problems, with the plan's budget."""
    from search import evolve, sample_until_solved
    t0 = time.perf_counter()
    model, task, m = _load(ckpt)
    ids = read_json(hard_path)["problems"]
    pool = task.problems("test", search["screen_problems"], seed=0)
    problems = [pool[i] for i in ids]
    run = evolve if kind == "evolve" else sample_until_solved
    results = run(model, task, problems, m, search["budget"], search["unit"], temperature=search["temperature"],
                  seed=search["seed"])
    write_json(path, {"kind": kind, "ckpt": ckpt, "m": m, "budget": search["budget"], "unit": search["unit"],
                      "temperature": search["temperature"], "seed": search["seed"], "problems": ids,
                      "results": results,
                      "seconds": round(time.perf_counter() - t0, 1)})
    return 0


def pending(cfg, out):
    """The search jobs not yet done, in order, each with the files it waits for:
    dicts name, fn, args, needs (paths that must exist before it starts), makes (its file)."""
    search, seeds = cfg.get("search"), cfg.get("code", {}).get("seeds", [])
    if not search:
        return []
    jobs, screens = [], []
    for slug in search["arms"]:
        for seed in seeds:
            ckpt, path = checkpoint(out, slug, seed), path_of(out, "screen", slug, seed)
            summary = os.path.join(os.path.dirname(ckpt), "summary.json")
            screens.append(path)
            jobs.append({"name": f"screen-{slug}-s{seed}", "fn": screen_job, "needs": [summary, ckpt], "makes": path,
                         "args": (ckpt, search["screen_problems"], search["answers"], path)})
    hard = path_of(out, "hard")
    jobs.append({"name": "hard", "fn": write_hard, "needs": screens, "makes": hard, "args": (search, out, screens)})
    for kind in ("evolve", "sample"):
        for slug in search["arms"]:
            for seed in seeds:
                path = path_of(out, kind, slug, seed)
                jobs.append({"name": f"{kind}-{slug}-s{seed}", "fn": search_job, "needs": [hard], "makes": path,
                             "args": (kind, checkpoint(out, slug, seed), search, hard, path)})
    return [j for j in jobs if not os.path.isfile(j["makes"])]


HOW = {"evolve": "search", "sample": "sampling"}   # a job kind as the tables and figures name it
NAMES = {"grpo": "GRPO", "vpo": "VPO"}


def label(kind, slug):
    """'GRPO search', 'VPO sampling', ..."""
    return f"{NAMES.get(slug, slug)} {HOW[kind]}"


def solved_within(run, budget=None):
    """The problem ids an evolve or sample file solved within `budget` answers (any budget if None)."""
    return {p for p, res in zip(run["problems"], run["results"])
            if res["solved_at"] is not None and (budget is None or res["solved_at"] <= budget)}


def read_searches(cfg, out):
    """{kind: {slug: [file contents per RL seed, with its "rl_seed"]}} of the finished evolve and sample jobs, and
    hard.json (or None)."""
    search = cfg.get("search")
    found = {"evolve": {}, "sample": {}}
    if not search:
        return found, None
    for kind in found:
        for slug in search["arms"]:
            for seed in cfg["code"]["seeds"]:
                path = path_of(out, kind, slug, seed)
                if os.path.isfile(path):
                    found[kind].setdefault(slug, []).append({**read_json(path), "rl_seed": seed})  # "seed": the search's
    hard = path_of(out, "hard")
    return found, read_json(hard) if os.path.isfile(hard) else None

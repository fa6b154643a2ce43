"""
The search stage of the code comparison (results/PLAN_CODE.md, "The search"): evolutionary search as the paper
runs it, on the held-out problems no checkpoint solves, next to plain sampling with the same budget. The plan's
`search` entry (v2; `search_v1` for the superseded v1) names the group whose final weights it starts from and the
arms; its files are under runs/DIR/search/ of that group.

1. screen   every searched checkpoint (the final weights of every searched arm and seed) samples its evaluation
            pool (48 answers at T = 0.7, the evaluation's streams) on the first `screen_problems` test problems;
            screen-ARM-sSEED.json holds how many answers solved each problem.
2. hard     the problems that no screened checkpoint solved, the first `problems` of them (hard.json); fewer
            than that is an error that asks for more screened problems.
3. evolve   search.evolve from each checkpoint on the hard problems, in chunks of `chunk` problems where the plan
            splits them (evolve-ARM-sSEED-cC.json, chunk C with search seed seed + C): solved_at per problem, the
            budget spent when the first solving program appeared.
   sample   search.sample_until_solved, the same budget of fresh samples at the search's temperature, the same
            chunks (sample-ARM-sSEED-cC.json): what the search adds over sampling.
Every file is written atomically once its job is done (a killed job is redone); the files are small and
committed, the checkpoints are not. reproduce.py schedules these jobs; report.py reads them back.
"""
import json
import math
import os
import time

from results.plan import read_json


def group_of(cfg, key="search"):
    """The plan group whose final weights the search `key` starts from ("code" for v2, "code_v1")."""
    return cfg[cfg[key]["group"]]


def search_dir(out, cfg, key="search"):
    return os.path.join(out, "runs", group_of(cfg, key).get("dir", "code"), "search")


def checkpoint(out, cfg, key, slug, seed):
    return os.path.join(out, "runs", group_of(cfg, key).get("dir", "code"), f"{slug}-s{seed}", "ckpt.pt")


def chunks(search):
    """[(chunk index, first hard problem, end)] of the search's problems: one chunk of all of them unless the plan
    splits them ("chunk": problems per job; chunk c uses search seed seed + c)."""
    size = search.get("chunk", search["problems"])
    return [(c, c * size, min((c + 1) * size, search["problems"])) for c in range(math.ceil(search["problems"] / size))]


def path_of(out, cfg, key, kind, slug=None, seed=None, chunk=None):
    """hard.json, screen-ARM-sSEED.json, and KIND-ARM-sSEED[-cCHUNK].json (the chunk suffix where the plan splits)."""
    name = "hard.json" if kind == "hard" else f"{kind}-{slug}-s{seed}"
    if kind != "hard":
        name += (f"-c{chunk}" if "chunk" in cfg[key] and chunk is not None else "") + ".json"
    return os.path.join(search_dir(out, cfg, key), name)


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


def write_hard(search, hard_path, screens):
    ids = hard_problems(search, [read_json(p) for p in screens])
    write_json(hard_path, {"problems": ids, "screened": search["screen_problems"],
                           "screens": [os.path.basename(p) for p in screens]})
    return 0


def search_job(kind, ckpt, search, hard_path, path, chunk=(0, 0, None)):
    """evolve or sample from one checkpoint on one chunk (index, first, end) of the hard problems, with the plan's
    budget and search seed seed + index."""
    from search import evolve, sample_until_solved
    t0 = time.perf_counter()
    model, task, m = _load(ckpt)
    c, first, end = chunk
    ids = read_json(hard_path)["problems"][first:end]
    pool = task.problems("test", search["screen_problems"], seed=0)
    problems = [pool[i] for i in ids]
    run = evolve if kind == "evolve" else sample_until_solved
    seed = search["seed"] + c
    results = run(model, task, problems, m, search["budget"], search["unit"], temperature=search["temperature"],
                  seed=seed)
    write_json(path, {"kind": kind, "ckpt": ckpt, "m": m, "budget": search["budget"], "unit": search["unit"],
                      "temperature": search["temperature"], "seed": seed, "chunk": c, "problems": ids,
                      "results": results, "seconds": round(time.perf_counter() - t0, 1)})
    return 0


def pending(cfg, out, key="search"):
    """The search jobs not yet done, in order, each with the files it waits for:
    dicts name, fn, args, needs (paths that must exist before it starts), makes (its file), dir."""
    search = cfg.get(key)
    if not search or group_of(cfg, key).get("frozen"):
        return []
    seeds, where = group_of(cfg, key)["seeds"], group_of(cfg, key).get("dir", "code")
    jobs, screens = [], []
    for slug in search["arms"]:
        for seed in seeds:
            ckpt, path = checkpoint(out, cfg, key, slug, seed), path_of(out, cfg, key, "screen", slug, seed)
            summary = os.path.join(os.path.dirname(ckpt), "summary.json")
            screens.append(path)
            jobs.append({"name": f"screen-{slug}-s{seed}", "fn": screen_job, "needs": [summary, ckpt], "makes": path,
                         "args": (ckpt, search["screen_problems"], search["answers"], path)})
    hard = path_of(out, cfg, key, "hard")
    jobs.append({"name": "hard", "fn": write_hard, "needs": screens, "makes": hard, "args": (search, hard, screens)})
    for kind in ("evolve", "sample"):
        for slug in search["arms"]:
            for seed in seeds:
                for chunk in chunks(search):
                    path = path_of(out, cfg, key, kind, slug, seed, chunk[0])
                    jobs.append({"name": os.path.basename(path)[:-5], "fn": search_job, "needs": [hard],
                                 "makes": path,
                                 "args": (kind, checkpoint(out, cfg, key, slug, seed), search, hard, path, chunk)})
    return [{**j, "dir": where} for j in jobs if not os.path.isfile(j["makes"])]


HOW = {"evolve": "search", "sample": "sampling"}   # a job kind as the tables and figures name it
NAMES = {"grpo": "GRPO", "grpo_matched": "matched GRPO", "vpo": "VPO"}


def label(kind, slug):
    """'GRPO search', 'VPO sampling', ..."""
    return f"{NAMES.get(slug, slug)} {HOW[kind]}"


def solved_within(run, budget=None):
    """The problem ids an evolve or sample file solved within `budget` answers (any budget if None)."""
    return {p for p, res in zip(run["problems"], run["results"])
            if res["solved_at"] is not None and (budget is None or res["solved_at"] <= budget)}


def read_searches(cfg, out, key="search"):
    """{kind: {slug: [the search of one RL seed, its chunks joined, with its "rl_seed"]}} of the finished evolve and
    sample jobs (a seed whose chunks are not all done is left out), and hard.json (or None)."""
    search = cfg.get(key)
    found = {"evolve": {}, "sample": {}}
    if not search:
        return found, None
    for kind in found:
        for slug in search["arms"]:
            for seed in group_of(cfg, key)["seeds"]:
                paths = [path_of(out, cfg, key, kind, slug, seed, c) for c, _, _ in chunks(search)]
                if all(os.path.isfile(p) for p in paths):
                    parts = [read_json(p) for p in paths]
                    joined = {**parts[0], "problems": [i for p in parts for i in p["problems"]],
                              "results": [r for p in parts for r in p["results"]],
                              "seconds": sum(p.get("seconds", 0) for p in parts),
                              "rl_seed": seed}  # "seed" is the search's
                    found[kind].setdefault(slug, []).append(joined)
    hard = path_of(out, cfg, key, "hard")
    return found, read_json(hard) if os.path.isfile(hard) else None

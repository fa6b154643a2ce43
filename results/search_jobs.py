"""
The search stage of the code comparison (results/PLAN_CODE.md, "The search"): evolutionary search as the paper
runs it, on the held-out problems no checkpoint solves, next to plain sampling with the same budget. A plan entry
(v2's `search`; `search_rep`, the search of record) names the group whose final weights it starts from and the
arms; its files are under runs/DIR/search/ of that group.

1. screen   every checkpoint v2's search starts from samples its evaluation pool (48 answers at T = 0.7, the
            evaluation's streams) on the first `screen_problems` test problems; screen-ARM-sSEED.json holds how
            many answers solved each problem.
2. hard     the problems that no screened checkpoint solved, the first `problems` of them (hard.json); fewer
            than that is an error that asks for more screened problems. A search with a fixed `hard` file (the
            search of record: v2's hard.json) screens nothing.
3. units    one job per arm and seed. Where the search's units train its group's runs (the search of record),
            the unit trains the run (train.py, the group's arguments) and samples its pool on the hard problems
            (pool-ARM-sSEED.json); elsewhere it waits for the weights a training job of the plan made. Then:
   evolve   search.evolve from the weights on the hard problems, in chunks of `chunk` problems
            (evolve-ARM-sSEED-cC.json, chunk C with search seed seed + C): solved_at per problem, the budget spent
            when the first solving program appeared.
   sample   search.sample_until_solved, the same budget of fresh samples at the search's temperature, the same
            chunks (sample-ARM-sSEED-cC.json): what the search adds over sampling.
Every file is written atomically once its job is done (a killed job is redone); the files are small and
committed, the checkpoints are not. reproduce.py schedules these jobs; report.py reads them back.

Weights are never committed and the same seed trains other weights on another machine's floating point
(docs/notes.md), so a unit that trains never starts a search from a checkpoint it did not train itself: found
with search files but no checkpoint (an invocation that ended mid-unit), it deletes them and starts over.

v2's search ran each chunk as a job of its own. Run in units, it writes the same files with the same content from
the same weights; a rerun now searches a checkpoint's chunks one after another in one job, so two workers search
two checkpoints at a time instead of two chunks.
"""
import functools
import itertools
import json
import math
import os
import time

from results.plan import CODE_PLANS, code_problems, read_json


def group_of(cfg, key):
    """The plan group whose final weights the search `key` starts from ("code" for v2's search, "code_rep")."""
    return cfg[cfg[key]["group"]]


def search_dir(out, cfg, key):
    return os.path.join(out, "runs", group_of(cfg, key)["dir"], "search")


def weights(out, cfg, key, slug, seed):
    """[summary.json, ckpt.pt] of the run of an arm and seed that the search `key` starts from."""
    run = os.path.join(out, "runs", group_of(cfg, key)["dir"], f"{slug}-s{seed}")
    return [os.path.join(run, "summary.json"), os.path.join(run, "ckpt.pt")]


def chunks(search):
    """[(chunk index, first hard problem, end)] of the search's problems, "chunk" problems per job (chunk c uses
    search seed seed + c)."""
    size = search["chunk"]
    return [(c, c * size, min((c + 1) * size, search["problems"])) for c in range(math.ceil(search["problems"] / size))]


def path_of(out, cfg, key, kind, slug=None, seed=None, chunk=None):
    """hard.json, screen-ARM-sSEED.json, pool-ARM-sSEED.json (a unit's pool on the hard problems), and
    KIND-ARM-sSEED-cCHUNK.json (an evolve or sample chunk)."""
    if kind == "hard" and "hard" in cfg[key]:
        return os.path.join(out, cfg[key]["hard"])
    part = f"-c{chunk}" if chunk is not None else ""
    name = "hard.json" if kind == "hard" else f"{kind}-{slug}-s{seed}{part}.json"
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


def screen_job(ckpt, n, answers, path, ids=None):
    """The checkpoint's evaluation pool on the first n test problems (or on those of them listed in ids): solved
    answers per problem."""
    from evaluate import evaluate
    from runs.dirs import machine
    t0 = time.perf_counter()
    model, task, m = _load(ckpt)
    pool = task.problems("test", n, seed=0)
    problems = pool if ids is None else [pool[i] for i in ids]
    metrics, _ = evaluate(model, task, problems, m, [max(m, 1), answers], answers, 0.7)
    # solved_per_problem and pass@k by the reward (every shown test passes), as the committed screens count; the
    # hard problems are chosen by them; solved_target_per_problem: answers equal to the target
    write_json(path, {"ckpt": ckpt, "m": m, "problems": n if ids is None else list(ids), "answers": answers,
                      "solved_per_problem": metrics["solved_per_problem"], "pass@k": metrics["pass@k"],
                      "solved_target_per_problem": metrics.get("solved_target_per_problem"),
                      "seconds": round(time.perf_counter() - t0, 1), "machine": machine()})
    return 0


def hard_problems(search, screens):
    """Indices of the problems no screen solved (no answer passed every shown test), the first search["problems"]
    of them.
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


def targets_path(hard_path):
    """Where the hard problems' targets and tests are kept: hard_targets.json beside hard.json."""
    return os.path.join(os.path.dirname(hard_path), "hard_targets.json")


def hard_targets(problems, hard):
    """What a reader needs to check the searches' programs without the generator: for each hard problem (hard: the
    contents of hard.json; problems: the test problems it indexes) its index, family, target, shown and hidden
    inputs and outputs, and the target's values on the whole domain (tasks.code.DOMAIN, in its order)."""
    from tasks.code import DOMAIN, execute
    rows = [{"index": i, "family": problems[i].family, "target": problems[i].target,
             "inputs": list(problems[i].inputs), "outputs": list(problems[i].outputs),
             "hidden_inputs": list(problems[i].hidden_inputs), "hidden_outputs": list(problems[i].hidden_outputs),
             "table": execute(problems[i].target, DOMAIN)} for i in hard["problems"]]
    return {"domain": list(DOMAIN), "screened": hard["screened"], "problems": rows}


def write_targets(cfg, out):
    """hard_targets.json beside every hard.json of the plan's searches (a search that reuses another's hard file
    writes the same targets again), one problem a line for a reader."""
    for _, key in CODE_PLANS:
        hard_path = path_of(out, cfg, key, "hard") if key in cfg else ""
        if os.path.isfile(hard_path):
            hard = read_json(hard_path)
            content = {"hard": os.path.basename(hard_path),
                       **hard_targets(code_problems(cfg, cfg[key]["group"], hard["screened"]), hard)}
            rows, path = content.pop("problems"), targets_path(hard_path)
            with open(path + ".tmp", "w") as f:
                f.write(json.dumps(content)[:-1] + ', "problems": [\n' + ",\n".join(map(json.dumps, rows)) + "\n]}\n")
            os.replace(path + ".tmp", path)


def search_job(kind, ckpt, search, hard_path, path, chunk):
    """evolve or sample from one checkpoint on one chunk (index, first, end) of the hard problems, with the plan's
    budget and search seed seed + index."""
    from runs.dirs import machine
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
                      "results": results, "seconds": round(time.perf_counter() - t0, 1), "machine": machine()})
    return 0


def unit_files(out, cfg, key, slug, seed):
    """The files a unit of `key` makes: its pool on the hard problems where the unit trains its own weights (they
    were never screened), then every evolve and sample chunk."""
    pool = [path_of(out, cfg, key, "pool", slug, seed)] if group_of(cfg, key).get("units") else []
    return pool + [path_of(out, cfg, key, kind, slug, seed, c) for kind in ("evolve", "sample")
                   for c, _, _ in chunks(cfg[key])]


def unit_job(out, cfg, key, slug, seed, train=None):
    """One unit: with train (() -> train.py's exit code), train the run unless its weights are here; then, from the
    weights at weights(), every file of unit_files not yet done. Search files left without the weights that
    made them are deleted before training: they belong to other weights."""
    search, hard, (summary, ckpt) = cfg[key], path_of(out, cfg, key, "hard"), weights(out, cfg, key, slug, seed)
    files = unit_files(out, cfg, key, slug, seed)
    if train and not (os.path.isfile(ckpt) and os.path.isfile(summary)):
        if not os.path.isfile(ckpt):
            for path in files:
                if os.path.isfile(path):
                    os.remove(path)
        rc = train()
        if rc != 0:
            return rc
    pool = path_of(out, cfg, key, "pool", slug, seed)
    if pool in files and not os.path.isfile(pool):
        screen_job(ckpt, search["screen_problems"], search["answers"], pool, read_json(hard)["problems"])
    for kind, chunk in itertools.product(("evolve", "sample"), chunks(search)):
        path = path_of(out, cfg, key, kind, slug, seed, chunk[0])
        if not os.path.isfile(path):
            search_job(kind, ckpt, search, hard, path, chunk)
    return 0


def pending(cfg, out, key="search", train=None, logs=None):
    """The search jobs not yet done, in order: dicts name, fn, args, needs (paths that must exist before it
    starts), makes (its last file), dir. Without a fixed hard file, a screen of every searched checkpoint and the
    choice of the hard problems come first. Then one unit per arm and seed, seed by seed, VPO (in every pair)
    first. A unit of a group its search trains (train: reproduce.py's train_job, None: wait for the weights; logs:
    where its log goes; "run": the plan's job it trains) waits for the hard file; any other unit waits for the
    weights too. Units whose weights are here go first: they are lost when this machine goes. A stopped search
    has no jobs."""
    from results.plan import jobs_of, runs_dir
    search = cfg.get(key)
    if not search or search.get("stopped"):
        return []
    hard, jobs = path_of(out, cfg, key, "hard"), []
    runs = [j for j in jobs_of(cfg) if j["group"] == search["group"] and j["slug"] in search["arms"]]
    if "hard" not in search:  # arm by arm, as hard.json lists them
        screened = sorted(runs, key=lambda j: (search["arms"].index(j["slug"]), j["seed"]))
        screens = [path_of(out, cfg, key, "screen", j["slug"], j["seed"]) for j in screened]
        for j, path in zip(screened, screens):
            run = weights(out, cfg, key, j["slug"], j["seed"])
            jobs.append({"name": f"screen-{j['name']}", "fn": screen_job, "needs": run, "makes": path,
                         "args": (run[1], search["screen_problems"], search["answers"], path)})
        jobs.append({"name": "hard", "fn": write_hard, "needs": screens, "makes": hard,
                     "args": (search, hard, screens)})
    jobs = [j for j in jobs if not os.path.isfile(j["makes"])]
    order = list(dict.fromkeys([a for a, _ in search["pairs"]] + [b for _, b in search["pairs"]]))
    for j in sorted(runs, key=lambda j: (j["seed"], order.index(j["slug"]) if j["slug"] in order else len(order))):
        files, run = unit_files(out, cfg, key, j["slug"], j["seed"]), weights(out, cfg, key, j["slug"], j["seed"])
        if all(os.path.isfile(p) for p in files):
            continue
        unit = {"name": f"unit-{j['name']}", "fn": unit_job, "needs": [hard, *run], "makes": files[-1],
                "args": (out, cfg, key, j["slug"], j["seed"]), "trained": os.path.isfile(run[1])}
        if j["units"] == key and train:  # the unit trains its run
            log = os.path.join(logs, f"{j['dir']}-{j['name']}.log")
            unit.update(needs=[hard], run=j)
            unit["args"] += (functools.partial(train, j["argv"], runs_dir(out, j), log),)
        jobs.append(unit)
    where = group_of(cfg, key)["dir"]
    return sorted([{**j, "dir": where} for j in jobs], key=lambda j: not j.get("trained", True))


HOW = {"evolve": "search", "sample": "sampling"}   # a job kind as the tables and figures name it
NAMES = {"grpo": "GRPO", "grpo_matched": "matched GRPO", "vpo": "VPO"}


def label(kind, slug):
    """'GRPO search', 'VPO sampling', ..."""
    return f"{NAMES.get(slug, slug)} {HOW[kind]}"


def solved_within(run, budget=None):
    """The problem ids an evolve or sample file solved within `budget` answers (any budget if None), by the rule
    the file was written under (solved_rule)."""
    return {p for p, res in zip(run["problems"], run["results"])
            if res["solved_at"] is not None and (budget is None or res["solved_at"] <= budget)}


def per_run(found, kind, slug, budget=None):
    """solved_within of every run of an arm (read_searches's found), one set per run; none where it has no runs."""
    return [solved_within(r, budget) for r in found[kind].get(slug, [])]


def solved_rule(run):
    """The rule by which a search file counts a problem solved: "target" (the kept program equals the target) or
    "reward" (it passes every shown test); files written before search.py recorded the rule are "reward"."""
    rules = {res.get("solved_by", "reward") for res in run["results"]}
    if len(rules) > 1:
        raise ValueError(f"a search file mixes the rules {sorted(rules)}")
    return rules.pop() if rules else "reward"


def target_solved(run, task, problems, budget=None):
    """The problem ids an evolve run solved within `budget` (any budget if None) with a kept program that equals
    the target (task.equals_target), whatever rule the file counted by; problems: indexable by problem id.
    None for a sampling run, which keeps no programs."""
    if run["kind"] == "sample":
        return None
    solved = solved_within(run, budget)
    return {p for p, res in zip(run["problems"], run["results"])
            if p in solved and res.get("best") is not None and task.equals_target(problems[p], res["best"])}


def read_searches(cfg, out, key="search"):
    """{kind: {slug: [the search of one RL seed, its chunks joined, with its "rl_seed"]}} of the finished evolve and
    sample jobs (a seed whose chunks are not all done is left out), and hard.json (or None)."""
    search = cfg.get(key)
    found = {"evolve": {}, "sample": {}}
    if not search:
        return found, None
    for kind, slug, seed in itertools.product(found, search["arms"], group_of(cfg, key)["seeds"]):
        paths = [path_of(out, cfg, key, kind, slug, seed, c) for c, _, _ in chunks(search)]
        if all(os.path.isfile(p) for p in paths):
            parts = [read_json(p) for p in paths]
            joined = {**parts[0], "kind": kind, "problems": [i for p in parts for i in p["problems"]],
                      "results": [r for p in parts for r in p["results"]],
                      "seconds": sum(p.get("seconds", 0) for p in parts), "rl_seed": seed}  # "seed" is the search's
            found[kind].setdefault(slug, []).append(joined)
    hard = path_of(out, cfg, key, "hard")
    return found, read_json(hard) if os.path.isfile(hard) else None

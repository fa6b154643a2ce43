"""
The reproduction's plan as code (results/PLAN.md is the reasoning and the decision rule): the arms, seeds,
lengths and evaluations of every run (MAIN, BASELINES, FULL; QUICK: the same jobs on a tiny model), the job list,
and reading the finished runs back (summary.json, eval.jsonl, log.jsonl). reproduce.py runs the jobs; report.py
and figures.py read them. Imports nothing of the reproduction's, so there is no cycle.
"""
import json
import os

KS = (1, 3, 6, 12, 24, 48)   # pooled best@k: from k = 1 (the whole-rollout definition from k = m = 3)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def experiment(name):
    """The experiment of record results/experiments/NAME.json: the file results.compare reads, and the source of the
    plan's maze groups."""
    return read_json(os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments", f"{name}.json"))


def record_arms(name):
    """The arms of an experiment of record as the plan's (label, slug, train.py flags[, seeds])."""
    return [(a["label"], a["slug"], a["flags"], *([a["seeds"]] if "seeds" in a else []))
            for a in experiment(name)["arms"]]


def record_group(name):
    """The plan group of an experiment of record: its task, seeds, RL steps, evaluation interval and runs directory."""
    c = experiment(name)
    return {"task": c["task"], "seeds": c["seeds"], "steps": c["steps"], "eval_every": c["eval_every"],
            "dir": os.path.basename(c["dir"])}


MAIN, BASELINES = record_arms("maze_v3")[:2], record_arms("maze_v3")[2:]

# the code search of plan v2 (results/PLAN_CODE.md), and the quick plan's sizes of it
SEARCH = {"arms": ("grpo", "grpo_matched", "vpo"), "screen_problems": 512, "answers": 48, "problems": 96, "chunk": 32,
          "budget": 3072, "unit": "answers", "temperature": 1.0, "seed": 0,
          "budgets": (48, 96, 192, 384, 768, 1536, 3072), "pairs": (("vpo", "grpo"), ("vpo", "grpo_matched"))}
QUICK_SEARCH = {"screen_problems": 4, "answers": 6, "problems": 2, "chunk": 1, "budget": 27, "budgets": (9, 27)}

FULL = {
    "main": record_group("maze_v3"),
    "baselines": record_group("maze_v3"),
    # the code comparison, v2 (results/PLAN_CODE.md): GRPO, matched GRPO, Multi-RLVR and VPO, the default code base
    # (files: the tag of its figures; answers: what its models write, cached; answer_problems: on how many problems)
    "code": {"task": "code", "dir": "code-v2", "seeds": [0, 1, 2], "steps": 500, "eval_every": 125,
             "files": "code_v2", "answers": "runs/code-v2/answers_code.json", "answer_problems": 64},
    # evolutionary search from the final GRPO, matched-GRPO and VPO weights (results/search_jobs.py), in chunks of
    # 32 problems (chunk c with search seed seed + c)
    # (stopped: its weights were lost with the machine they were trained on before every search job ran; its
    # finished jobs are reported as a record, and the search of record is "search_rep" below)
    "search": {"group": "code", **SEARCH, "stopped": "weights lost"},
    # the search of record (PLAN_CODE.md v2, amendment): v2's hard problems (its hard.json), searched from replicate
    # weights, each trained and searched in one job (a unit: results/search_jobs.py), so that no search needs a
    # checkpoint from another session; the replicates' runs under runs/code-v2-rep/
    "code_rep": {"task": "code", "dir": "code-v2-rep", "seeds": [0, 1, 2], "steps": 500, "eval_every": 125,
                 "files": "code_v2_rep", "units": "search_rep"},
    "search_rep": {"group": "code_rep", **SEARCH, "hard": "runs/code-v2/search/hard.json"},
    # the reviewer's questions on the maze (results/PLAN_REVIEW.md): equal compute, the ablations, the sets' coverage
    # (v3 rerun with its weights kept), the reward's geometry
    "matched": record_group("maze_matched"),
    "rerun": record_group("maze_rerun"),
    "ablations": record_group("maze_ablations"),
    "geometry": record_group("maze_geometry"),
    "common": ["--eval_problems", "64", "--eval_answers", "48", "--ckpt_every", "25"],
    "route_mazes": 4, "route_answers": 12,
}
QUICK = {
    "main": {"task": "maze", "seeds": [0, 1], "steps": 4, "eval_every": 1},
    "baselines": {"task": "maze", "seeds": [0], "steps": 4, "eval_every": 2},
    "code": {"task": "code", "dir": "code-v2", "seeds": [0, 1], "steps": 4, "eval_every": 2, "files": "code_v2",
             "answers": "runs/code-v2/answers_code.json", "answer_problems": 32},
    "search": {"group": "code", **SEARCH, **QUICK_SEARCH},
    "code_rep": {"task": "code", "dir": "code-v2-rep", "seeds": [0], "steps": 2, "eval_every": 2,
                 "files": "code_v2_rep", "units": "search_rep"},
    "search_rep": {"group": "code_rep", **SEARCH, **QUICK_SEARCH, "hard": "runs/code-v2/search/hard.json"},
    "common": ["--eval_problems", "4", "--eval_answers", "48", "--ckpt_every", "0", "--sft_steps", "6",
               "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4",
               "--sft_batch_size", "8"],
    "route_mazes": 2, "route_answers": 3,
}
# the code comparison, v2 (results/PLAN_CODE.md): GRPO, GRPO with VPO's answers per prompt, Multi-RLVR and VPO,
# then evolutionary search (v1, superseded: results/superseded/code_v1.md)
CODE = record_arms("code_v2")
CODE_REP = record_arms("code_rep")   # the searched arms, retrained in the search's units
# the reviewer's questions (results/PLAN_REVIEW.md), each arm (label, slug, flags[, its seeds]); the rerun's arms
# are v3's again (the files it compares against), labelled "GRPO (rerun)" and so on
MATCHED = record_arms("maze_matched")[:1]
ABLATIONS = [arm for arm in record_arms("maze_ablations") if arm[1] != "vpo"]
GEOMETRY = record_arms("maze_geometry")[2:]
GROUPS = {"main": MAIN, "baselines": BASELINES, "code": CODE, "code_rep": CODE_REP, "matched": MATCHED,
          "rerun": record_arms("maze_rerun"), "ablations": ABLATIONS, "geometry": GEOMETRY}
MAZE, CODE_PART = ("main", "baselines"), ("code", "code_rep")   # reproduce.py --part maze | code
REVIEW = ("matched", "rerun", "ablations", "geometry")   # reproduce.py --part review
# (runs, their search) as results.md reports them
CODE_PLANS = (("code", "search"), ("code_rep", "search_rep"))


def code_task(cfg, group):
    """The code task with the options of a plan group."""
    from runs.cli import parse_task_options
    from tasks import get_task
    return get_task("code", **parse_task_options(cfg[group].get("task_opt", [])))


def code_problems(cfg, group, n):
    """The first n test problems (seed 0) of a plan group's runs, as its task draws them."""
    return code_task(cfg, group).problems("test", n, seed=0)


def jobs_of(cfg):
    """Every training run of the plan, in the order they are started: the main arms seed by seed (so a reproduction
    cut short has both main arms for its first seeds), then the baselines seed by seed.
    -> list of dicts: group, label, slug, seed, task, argv, name, dir (under out/runs),
    units (the search whose units train the group's runs, results/search_jobs.py; else None)."""
    def job(group, label, slug, flags, seed):
        g = cfg[group]
        # the base is evaluated once per m: in the first seed's GRPO run (m = 1) and VPO run (m = 3); each geometry
        # setting's first seed evaluates it too (the dimensions it sees)
        first = seed == g["seeds"][0] and (group == "geometry" or slug in ("grpo", "vpo") and group in
                                           ("main", "code", "code_rep", "rerun"))
        base_eval = [] if first else ["--no_base_eval"]
        argv = ["--task", g["task"], "--seed", str(seed), "--steps", str(g["steps"]), "--eval_every",
                str(g["eval_every"]), "--run_name", f"{slug}-s{seed}", *flags, *g.get("flags", []),
                *[a for opt in g.get("task_opt", []) for a in ("--task_opt", opt)],
                "--keep_eval_ckpts", *base_eval, *cfg["common"], "--quiet"]
        return {"group": group, "label": label, "slug": slug, "seed": seed, "task": g["task"], "argv": argv,
                "name": f"{slug}-s{seed}", "dir": g.get("dir", g["task"]), "units": g.get("units")}
    return [job(group, arm[0], arm[1], arm[2], seed) for group in GROUPS if group in cfg
            for seed in cfg[group]["seeds"] for arm in GROUPS[group] if len(arm) < 4 or seed in arm[3]]


def runs_dir(out, job):
    """Where the runs of this job's group are (out/runs/DIR; DIR is the group's "dir", by default its task)."""
    return os.path.join(out, "runs", job["dir"])


def run_dir(out, job):
    return os.path.join(runs_dir(out, job), job["name"])


def read_jsonl_or_empty(path):
    from runs.plots import read_jsonl
    return read_jsonl(path) if os.path.isfile(path) else []


def finished_runs(cfg, out, group):
    """{label: [run, ...] over the group's seeds that finished}; run = dict(seed, slug, dir, summary, evals, log)."""
    runs = {arm[0]: [] for arm in GROUPS[group]}
    for j in jobs_of(cfg):
        directory = run_dir(out, j)
        if j["group"] == group and os.path.isfile(os.path.join(directory, "summary.json")):
            runs[j["label"]].append(read_run(directory, j["seed"], j["slug"]))
    return {label: r for label, r in runs.items() if r}


def read_run(directory, seed, slug):
    """A finished run as every table reads it: dict(seed, slug, dir, summary, evals, log)."""
    return {"seed": seed, "slug": slug, "dir": directory, "summary": read_json(os.path.join(directory, "summary.json")),
            "evals": read_jsonl_or_empty(os.path.join(directory, "eval.jsonl")),
            "log": read_jsonl_or_empty(os.path.join(directory, "log.jsonl"))}


def value(metrics, key, k):
    """metrics[key][k] (json keys are strings), or None where the metric has no such k (whole-rollout k < m)."""
    table = metrics.get(key) or {}
    return table.get(str(k), table.get(k))


def base_metrics(runs):
    """{m: the base's evaluation with m answers a rollout}, from the runs that evaluated the base (the plan's first
    GRPO and VPO runs; in results.compare, each arm's first run)."""
    return {r["summary"]["base_metrics"]["m"]: r["summary"]["base_metrics"] for rs in runs.values() for r in rs
            if r["summary"].get("base_metrics")}


def eval_steps(rs):
    return sorted({e["step"] for r in rs for e in r["evals"]} | {r["summary"]["args"]["steps"] for r in rs})


def at_step(r, step):
    """Metrics of run r at an evaluation step (the final evaluation at its last step)."""
    if step == r["summary"]["args"]["steps"]:
        return r["summary"]["metrics"]
    return next((e for e in r["evals"] if e["step"] == step), None)


def compute_at(r, step):
    """(tokens generated, training seconds) of run r up to an RL step, from its log.jsonl: Σ completion_tokens x
    the step's rollouts (batch_size x G, G with match_budget as vpo.rollouts_per_prompt), and the cumulative
    seconds of the last logged step <= step."""
    import vpo
    a = r["summary"]["args"]
    rollouts = a["batch_size"] * vpo.rollouts_per_prompt(a["algo"], a["group_size"], a["num_answers"],
                                                         a.get("match_budget", False))
    rows = [row for row in r["log"] if row["step"] <= step]
    return (sum(row["completion_tokens"] for row in rows) * rollouts, rows[-1]["seconds"] if rows else 0.0)


"""
The reproduction's plan as code (results/PLAN.md is the reasoning and the decision rule): its groups of runs (FULL;
QUICK: the same jobs on a tiny model), each the arms of a configuration of record (results/experiments/*.json, read
as results.compare reads it), the job list, and reading the finished runs back (summary.json, eval.jsonl,
log.jsonl). reproduce.py runs the jobs; report.py and figures.py read them. Imports only results/jobs.py of the
reproduction's, so there is no cycle.
"""
import functools
import json
import os
from dataclasses import replace

from results.jobs import read_config, run_name, shared_args

EXPERIMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments")   # the configurations of record
KS = (1, 3, 6, 12, 24, 48)   # pooled best@k: from k = 1 (the whole-rollout definition from k = m = 3)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def experiment(name):
    """The experiment of record results/experiments/NAME.json, as its file has it (results.compare reads it)."""
    return read_json(os.path.join(EXPERIMENTS, f"{name}.json"))


def record_group(name, **keys):
    """The plan group that trains the runs of an experiment of record, results/experiments/NAME.json (the file
    results.compare reads): its task, seeds, RL steps, evaluation interval and flags, and its runs directory under
    out/runs/ (the last part of its "dir"); keys: the group's own (arms, base_eval; report keys such as files)."""
    c = experiment(name)
    shared = {k: c[k] for k in ("task", "task_opt", "seeds", "steps", "eval_every", "flags") if k in c}
    return {"config": name, **shared, "dir": os.path.basename(c["dir"]), **keys}


# the search of plan v2 (results/PLAN_CODE.md), and the quick plan's sizes of it
SEARCH = {"arms": ("grpo", "grpo_matched", "vpo"), "screen_problems": 512, "answers": 48, "problems": 96, "chunk": 32,
          "budget": 3072, "unit": "answers", "temperature": 1.0, "seed": 0,
          "budgets": (48, 96, 192, 384, 768, 1536, 3072), "pairs": (("vpo", "grpo"), ("vpo", "grpo_matched"))}
QUICK_SEARCH = {"screen_problems": 4, "answers": 6, "problems": 2, "chunk": 1, "budget": 27, "budgets": (9, 27)}
# Each group trains the arms of a configuration of record: those of its "arms" (slugs), by default those the
# configuration does not read from another experiment's directory. The base is evaluated once per m: by the first
# seed's runs of the arms of "base_eval" (GRPO, m = 1, and VPO, m = 3), by every arm's first seed where a group has
# no "base_eval" (each reward geometry: the dimensions it sees).
GRPO_VPO = ("grpo", "vpo")
FULL = {
    # maze v3 (results/PLAN.md): GRPO and VPO, then the paper's two baselines
    "main": record_group("maze_v3", arms=GRPO_VPO, base_eval=GRPO_VPO),
    "baselines": record_group("maze_v3", arms=("max_at_k", "multi_rlvr"), base_eval=()),
    # the code comparison, v2 (results/PLAN_CODE.md): GRPO, matched GRPO, Multi-RLVR and VPO, the default code base
    # (files: the tag of its figures; answers: what its models write, cached; answer_problems: on how many problems;
    # v1, superseded: results/superseded/code_v1.md)
    "code": record_group("code_v2", base_eval=GRPO_VPO, files="code_v2", answers="runs/code-v2/answers_code.json",
                         answer_problems=64),
    # evolutionary search from the final GRPO, matched-GRPO and VPO weights (results/search_jobs.py), in chunks of
    # 32 problems (chunk c with search seed seed + c)
    # (stopped: its weights were lost with the machine they were trained on before every search job ran; its
    # finished jobs are reported as a record, and the search of record is "search_rep" below)
    "search": {"group": "code", **SEARCH, "stopped": "weights lost"},
    # the search of record (PLAN_CODE.md v2, amendment): v2's hard problems (its hard.json), searched from replicate
    # weights, each trained and searched in one job (a unit: results/search_jobs.py), so that no search needs a
    # checkpoint from another session; the replicates' runs under runs/code-v2-rep/
    "code_rep": record_group("code_rep", base_eval=GRPO_VPO, files="code_v2_rep", units="search_rep"),
    "search_rep": {"group": "code_rep", **SEARCH, "hard": "runs/code-v2/search/hard.json"},
    # the reviewer's questions on the maze (results/PLAN_REVIEW.md): equal compute, the ablations, the sets' coverage
    # (v3 rerun with its weights kept: v3's arms labelled "GRPO (rerun)" and so on), the reward's geometry
    "matched": record_group("maze_matched", base_eval=()),
    "rerun": record_group("maze_rerun", base_eval=GRPO_VPO),
    "ablations": record_group("maze_ablations", base_eval=()),
    "geometry": record_group("maze_geometry"),
    "route_mazes": 4, "route_answers": 12,
}
# the same jobs on a tiny model (the common flags come after each configuration's own)
QUICK = {
    "main": {**FULL["main"], "seeds": [0, 1], "steps": 4, "eval_every": 1},
    "baselines": {**FULL["baselines"], "seeds": [0], "steps": 4, "eval_every": 2},
    "code": {**FULL["code"], "seeds": [0, 1], "steps": 4, "eval_every": 2, "answer_problems": 32},
    "search": {"group": "code", **SEARCH, **QUICK_SEARCH},
    "code_rep": {**FULL["code_rep"], "seeds": [0], "steps": 2, "eval_every": 2},
    "search_rep": {"group": "code_rep", **SEARCH, **QUICK_SEARCH, "hard": "runs/code-v2/search/hard.json"},
    "common": ["--eval_problems", "4", "--eval_answers", "48", "--ckpt_every", "0", "--sft_steps", "6",
               "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4",
               "--sft_batch_size", "8", "--no_figures"],
    "route_mazes": 2, "route_answers": 3,
}
GROUPS = ("main", "baselines", "code", "code_rep", "matched", "rerun", "ablations", "geometry")   # in start order
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


@functools.cache
def configuration(name):
    """results/experiments/NAME.json as results.compare reads it (jobs.read_config)."""
    return read_config(os.path.join(EXPERIMENTS, f"{name}.json"))


def jobs_of(cfg):
    """Every training run of the plan, in the order they are started: group by group (GROUPS), each seed by seed
    (a reproduction cut short has the main arms for its first seeds), each run the one python -m results.compare
    makes of the group's configuration with the group's arms, seeds, task, steps, evaluation interval and flags
    (then the plan's common flags), and base_eval.
    -> list of dicts: group, label, slug, seed, task, argv, name, dir (under out/runs),
    units (the search whose units train the group's runs, results/search_jobs.py; else None)."""
    jobs = []
    for group in [g for g in GROUPS if g in cfg]:
        g, setup = cfg[group], configuration(cfg[group]["config"])
        setup = replace(setup, arms=tuple(a for a in setup.arms if (a.slug in g["arms"] if "arms" in g else not a.dir)),
                        seeds=tuple(g["seeds"]), base_evals=g.get("base_eval"),
                        train_args=tuple(shared_args({**g, "flags": g["flags"] + cfg.get("common", [])})))
        jobs += [{"group": group, "label": arm.label, "slug": arm.slug, "seed": seed, "task": g["task"],
                  "argv": setup.argv(arm, seed), "name": run_name(arm, seed), "dir": g["dir"], "units": g.get("units")}
                 for arm, seed in setup.runs()]
    return jobs


def runs_dir(out, job):
    """Where the runs of this job's group are (out/runs/DIR; DIR is the group's "dir")."""
    return os.path.join(out, "runs", job["dir"])


def run_dir(out, job):
    return os.path.join(runs_dir(out, job), job["name"])


def read_jsonl_or_empty(path):
    from runs.plots import read_jsonl
    return read_jsonl(path) if os.path.isfile(path) else []


def finished_runs(cfg, out, group):
    """{label: [run, ...] over the group's seeds that finished}; run = dict(seed, slug, dir, summary, evals, log)."""
    jobs = [j for j in jobs_of(cfg) if j["group"] == group]
    runs = {j["label"]: [] for j in jobs}
    for j in jobs:
        directory = run_dir(out, j)
        if os.path.isfile(os.path.join(directory, "summary.json")):
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


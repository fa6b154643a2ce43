"""
The jobs of results/PLAN_REVIEW.md that read finished runs rather than train them:

1. coverage    results/coverage.py on the final weights of every maze run of the plan's groups (rerun, matched,
               ablations): runs/DIR/NAME/coverage.json.
2. validation  the evaluations' kept weights of every GRPO-like run (rerun GRPO, matched GRPO) on the validation
               mazes (test split 64-127, seed 0; disjoint from the 64 evaluated): pooled best@k per step in
               runs/DIR/NAME/validation.json, from which early stopping picks its step (stop_step).
3. compare     the rerun's log.jsonl and eval.jsonl against v3's committed ones, row for row and key for key
               (timing, and the statistics of valid answers that the canonical de-duplication can change, aside):
               runs/maze-rerun/compare.json, a record of where the two first differ (the log-probs' rounding has
               changed since v3, so they do: PLAN_REVIEW.md, amendment).
Each file is written atomically when its job is done and is small and committed; reproduce.py schedules the jobs
once the files they need exist (like results/search_jobs.py), report.py reads them.
"""
import os

from results.plan import jobs_of, read_json, run_dir
from results.search_jobs import write_json

REVIEWED = ("rerun", "matched", "ablations")   # the plan groups whose runs are read back from their weights
VALIDATION = (64, 128)         # test-split mazes [64, 128) of seed 0: the validation mazes of early stopping
GRPO_LIKE = ("grpo", "grpo_matched")
STEPS_KEPT = "ckpt-step{}.pt"


def _load(ckpt):
    import torch
    from runs.cli import load_run
    model, _, task, m = load_run(ckpt, torch.device("cpu"))
    return model, task, m


def coverage_job(ckpt, path, problems=64, answers=48):
    from results.coverage import measure
    model, task, m = _load(ckpt)
    write_json(path, {"ckpt": ckpt, **measure(model, task, task.problems("test", problems, seed=0), m, answers)})
    return 0


def validation_job(directory, steps, final, path, answers=48):
    """Pooled best@k of the weights kept at each evaluation step (the final step: ckpt.pt) on the validation
    mazes, sampled as the evaluation samples (evaluate.evaluate, T = 0.7, seed 0)."""
    from evaluate import evaluate
    rows = {}
    for step in steps:
        ckpt = os.path.join(directory, "ckpt.pt" if step == final else STEPS_KEPT.format(step))
        model, task, m = _load(ckpt)
        problems = task.problems("test", VALIDATION[1], seed=0)[VALIDATION[0]:]
        metrics, _ = evaluate(model, task, problems, m, [3, 12, 48], answers, 0.7)
        rows[str(step)] = metrics["pooled_best@k"]
    write_json(path, {"mazes": list(VALIDATION), "pooled_best@k": rows})
    return 0


def stop_step(validation, k=48):
    """Early stopping: the evaluation step of highest pooled best@k on the validation mazes (ties: the earlier)."""
    rows = validation["pooled_best@k"]
    steps = sorted(rows, key=int)
    return int(max(steps, key=lambda s: (rows[s][str(k)], -int(s))))


TIMING = {"seconds", "step_seconds", "tokens_per_s"}
# statistics of the valid answers, which the canonical de-duplication (Task.canonical, after v3) can change without
# changing a weight: a second spelling of one answer is now a duplicate, left out of the set but scored as an answer
COUNTS_VALID = {"valid_rate", "diversity"}


def first_difference(a_path, b_path, ignore=TIMING | COUNTS_VALID):
    """None if the two jsonl files agree row for row on every key both rows hold (the `ignore`d aside), else
    [row number from 1, the keys that differ] (or [n, "(shorter)"] when one has fewer rows)."""
    from runs.plots import read_jsonl
    a, b = read_jsonl(a_path), read_jsonl(b_path)
    for i, (x, y) in enumerate(zip(a, b)):
        keys = sorted(k for k in set(x) & set(y) - ignore if x[k] != y[k])
        if keys:
            return [i + 1, keys]
    return None if len(a) == len(b) else [min(len(a), len(b)) + 1, "(shorter)"]


def compare_job(pairs, path):
    """pairs: (name, rerun dir, v3 dir) -> per name and file: "equal" (timing and COUNTS_VALID aside) or its first
    difference."""
    out = {}
    for name, rerun, v3 in pairs:
        out[name] = {}
        for f in ("log.jsonl", "eval.jsonl"):
            d = first_difference(os.path.join(rerun, f), os.path.join(v3, f))
            out[name][f] = "equal" if d is None else d
    write_json(path, out)
    return 0


def from_weights(cfg, out, job):
    """The read-back files made from a run's weights (coverage, validation): a run that lacks one of them once its
    weights are gone (a fresh clone: weights are never committed) is trained again (reproduce.py)."""
    if job["group"] not in REVIEWED:
        return []
    d = run_dir(out, job)
    return [os.path.join(d, "coverage.json")] + ([os.path.join(d, "validation.json")] if job["slug"] in GRPO_LIKE
                                                 else [])


def pending(cfg, out, groups):
    """The review's read-back jobs not yet done, each with the files it waits for (reproduce.py's contract:
    dicts name, fn, args, needs, makes, dir)."""
    jobs, runs = [], [j for j in jobs_of(cfg) if j["group"] in REVIEWED and j["group"] in groups]
    for j in runs:
        d, g = run_dir(out, j), cfg[j["group"]]
        summary, ckpt = os.path.join(d, "summary.json"), os.path.join(d, "ckpt.pt")
        jobs.append({"name": f"coverage-{j['dir']}-{j['name']}", "fn": coverage_job, "needs": [summary, ckpt],
                     "makes": os.path.join(d, "coverage.json"), "args": (ckpt, os.path.join(d, "coverage.json")),
                     "dir": j["dir"]})
        if j["slug"] in GRPO_LIKE:
            steps = list(range(g["eval_every"], g["steps"] + 1, g["eval_every"]))
            kept = [os.path.join(d, STEPS_KEPT.format(s)) for s in steps[:-1]]
            jobs.append({"name": f"validation-{j['dir']}-{j['name']}", "fn": validation_job,
                         "needs": [summary, ckpt] + kept, "makes": os.path.join(d, "validation.json"),
                         "args": (d, steps, g["steps"], os.path.join(d, "validation.json")), "dir": j["dir"]})
    rerun = [j for j in runs if j["group"] == "rerun"]
    if rerun:
        v3 = {j["name"]: run_dir(out, j) for j in jobs_of(cfg) if j["group"] in ("main", "baselines")}
        pairs = [(j["name"], run_dir(out, j), v3[j["name"]]) for j in rerun]
        path = os.path.join(out, "runs", rerun[0]["dir"], "compare.json")
        jobs.append({"name": "compare-rerun", "fn": compare_job, "args": (pairs, path), "makes": path,
                     "needs": [os.path.join(p, f) for _, r, v in pairs for p in (r, v)
                               for f in ("summary.json", "log.jsonl", "eval.jsonl")], "dir": rerun[0]["dir"]})
    return [j for j in jobs if not os.path.isfile(j["makes"])]


def read_review(cfg, out, name):
    """{group: {label: [the file `name` of each finished run, with "seed"]}} over the review's run groups."""
    found = {}
    for j in jobs_of(cfg):
        path = os.path.join(run_dir(out, j), name)
        if j["group"] in REVIEWED and os.path.isfile(path):
            found.setdefault(j["group"], {}).setdefault(j["label"], []).append({**read_json(path), "seed": j["seed"]})
    return found

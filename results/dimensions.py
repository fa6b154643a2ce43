"""
When VPO helps (docs/when_vpo_helps.md): VPO's lead over GRPO against how many directions the reward dimensions
it sees span, measured on the base's answers before any training, as a team could measure its own.

The points, read back from finished runs:
  geometry   each reward geometry of results/PLAN_REVIEW.md: VPO − the rerun's GRPO of the same seed at step 750,
             pooled best@k; the dimensions of the base's held-out answers as that geometry reshapes them
             (evaluate.py's "dimensions_seen", from the setting's seed-0 run, which evaluates the base) and of the
             policy's own
  rho = 0    the rerun of v3's VPO against the rerun's GRPO at the same step (the plan's amendment: the rerun is a
             replicate of v3 on today's code, as the geometry runs are; its VPO seed 0 evaluates the base)
  code       plan v2 of the code task: VPO − GRPO, pass@k at the final step; the dimensions (one per shown test) of
             the base's (m = 3) and each VPO seed's written answers in the answers cache (12 per problem, T = 0.7)
The dimensions: metrics.within_covariance (within problems) and metrics.dimension_geometry (mean pairwise
correlation, effective rank = participation ratio; near 1 and near 1: the vector says no more than the scalar).
"""
import json
import os

import numpy as np

from results.plan import at_step, code_problems, code_task, finished_runs
from results.tables import paired

KS = (3, 12, 48)


def answer_dimensions(task, problems, answers):
    """The reward dimensions' geometry over written answers: answers[i] the strings written for problems[i]
    (empty ones left out), scored with task.score. -> metrics.dimension_geometry's dict."""
    from metrics import dimension_geometry, within_covariance
    pools = [np.array([task.score(p, a) for a in ys if a]) for p, ys in zip(problems, answers)]
    return dimension_geometry(within_covariance([p for p in pools if len(p)])[0])


def _dims(metrics):
    """The dimensions a run's VPO saw in an evaluation: dimensions_seen under a reward geometry, else dimensions."""
    metrics = metrics or {}
    return metrics.get("dimensions_seen") or metrics.get("dimensions")


def geometry_points(runs, step):
    """The geometry sweep's points from the runs of results/experiments/maze_geometry.json ({label: [run]}): [{label,
    d: {k: [per seed]}, policy: [dims per seed], base: dims or None}], ρ = 0 (the rerun of v3's VPO) first, each VPO
    arm against the rerun's GRPO of the same seed at the step (results/PLAN_REVIEW.md, amendment); [] before the
    rerun's GRPO and VPO and a geometry run have finished."""
    if len(runs) < 3 or "GRPO (rerun)" not in runs or "VPO (rerun)" not in runs:
        return []
    points = []
    for label, rs in runs.items():
        if label != "GRPO (rerun)":
            base = next((r["summary"]["base_metrics"] for r in rs if r["summary"].get("base_metrics")), None)
            points.append({"label": "VPO (rerun, ρ = 0)" if label == "VPO (rerun)" else label,
                           "d": paired(runs, label, "GRPO (rerun)", "pooled_best@k", KS, step)[1],
                           "policy": [_dims(at_step(r, step)) for r in rs if _dims(at_step(r, step))],
                           "base": _dims(base)})
    return points


def code_point(cfg, out, group="code"):
    """The code task's point: {label, d: {k: [VPO − GRPO pass@k per seed, final step]}, policy: [dims of each VPO
    seed's written answers], base: dims of the base's (m = 3)}, from the group's answers cache; None before VPO's and
    GRPO's runs and the cache."""
    if group not in cfg:
        return None
    runs = finished_runs(cfg, out, group)
    path = os.path.join(out, cfg[group]["answers"])
    if "VPO" not in runs or "GRPO" not in runs or not os.path.isfile(path):
        return None
    with open(path) as f:
        cache = json.load(f)
    if "base-m3" not in cache:
        return None
    task, n = code_task(cfg, group), len(cache["base-m3"]["answers"])
    problems = code_problems(cfg, group, n)
    policy = [answer_dimensions(task, problems, cache[f"vpo-s{r['seed']}"]["answers"]) for r in runs["VPO"]
              if f"vpo-s{r['seed']}" in cache]
    d = paired(runs, "VPO", "GRPO", "pass@k", KS, cfg[group]["steps"])[1]
    return {"label": "code (plan v2), pass@k", "d": d, "policy": policy,
            "base": answer_dimensions(task, problems, cache["base-m3"]["answers"])}


RHO_PATH = ("VPO (rerun, ρ = 0)", "VPO, collinear=0.5", "VPO, collinear=0.8", "VPO, collinear=0.95")


def geometry_reading(points, need, k=48):
    """results/PLAN_REVIEW.md, reading 4 (descriptive, 2 seeds): "VPO's lead shrinks as the dimensions become
    collinear" if the mean d(k) falls at every step ρ = 0 → 0.5 → 0.8 → 0.95, else that it does not; each other
    setting's mean d(k) against ρ = 0's. [] until every setting has `need` seeds (ρ = 0 has the rerun's seeds)."""
    by = {p["label"]: p["d"][k] for p in points}
    if not points or any(len(by.get(label, [])) < need for label in RHO_PATH) or any(
            len(d) < need for d in by.values()):
        return []
    mean = {label: float(np.mean(d)) for label, d in by.items()}
    path = [mean[label] for label in RHO_PATH]
    falls = all(b < a for a, b in zip(path, path[1:]))
    said = ("VPO's lead shrinks as the dimensions become collinear" if falls else
            "VPO's lead does not fall at every step of ρ")
    lines = [f"Reading (the plan's rule, k = {k}): {said} (mean VPO − GRPO at ρ = 0, 0.5, 0.8, 0.95: "
             + ", ".join(f"{m:+.3f}" for m in path) + ")."]
    for label in by:
        if label not in RHO_PATH:
            lines.append(f"{label}: mean VPO − GRPO {mean[label]:+.3f} at k = {k}, against ρ = 0's "
                         f"{mean[RHO_PATH[0]]:+.3f} ({mean[label] - mean[RHO_PATH[0]]:+.3f}).")
    return lines

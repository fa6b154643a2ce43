"""
The evaluation of a policy on held-out problems: sample many answers per problem (sample.rollout), then the
metrics of the answer pools (metrics.py).

    from evaluate import evaluate
    metrics, pools = evaluate(model, task, task.problems("test", 64, seed=0), m=3, ks=[3, 6, 12, 24, 48])

Metrics (docs/paper.md, "Training and evaluation setup"; docs/metrics.md), each averaged over problems; k counts answers, so a model writing m answers per
rollout draws k/m rollouts and a single-answer model k rollouts: the same answer budget for every method.
    best@k         exact E[max of k answers' deployment scalar w*^T r], drawn as k/m whole rollouts  metrics.best_at_k
    pooled_best@k  the authors' definition: all answers of a problem in one pool, k drawn from it
                   (rollout boundaries ignored), exact expectation; k = 1 included  metrics.best_at_k(pooled=True)
    pass@k         the same for the indicator "solved by the reward" (task.solved; code: every shown test passes)
                   (unbiased, Chen et al.)  metrics.best_at_k on 0/1 scores
    pooled_pass@k  pass@k over the authors' pool (k = 1 included: the fraction of answer slots that solve)
    pass_hidden@k  solved on the task's hidden tests too (code)
    pass_target@k  the indicator "the answer equals the target" (task.equals_target; code: the same outputs on
                   all 31 inputs), only for tasks that can check it; pooled_pass_target@k over the authors' pool.
                   Where a task checks the target, that is what "solved" means (Task.solves); pass@k keeps the
                   meaning that committed files give it. solved_per_problem counts answers solved by the reward,
                   solved_target_per_problem answers equal to the target.
    E_w[best@k]    the VPO set objective: mean over w ~ Dir(1) of best@k under w  metrics.expected_best_at_k
    diversity      mean pairwise L1 distance between the answers' reward vectors  metrics.diversity
    deploy_reward  mean w*^T r per answer slot (a missing answer counts 0, a repeated one its reward)
    distinct_rate  distinct answers / answer slots; valid_rate: non-empty answer slots / answer slots
Every answer is sampled in its own room of task.answer_tokens tokens (answer_budget, sample.AnswerBudget).
    pareto_frac    fraction of a pool's valid answers that are Pareto-optimal within the pool  metrics.pareto_metrics
    pareto_distinct  number of distinct Pareto-optimal reward vectors in the pool; dim_means: mean of each r_d
    dimensions     over the valid answers, within problems: the reward dimensions' mean pairwise correlation
                   and effective rank (metrics.within_covariance, metrics.dimension_geometry): near 1 and 1, the
                   vector adds nothing to the scalar (docs/when_vpo_helps.md)
    hack_rate      {name: share}: of all problems' written answer slots, the share each of the task's hacks flags
                   (Task.hacks; code: fits_shown, pieces), only for tasks that name hacks  metrics.hack_rates
Command line: evaluate any checkpoint written by train.py on its task's test problems (under torchrun, the
problems are split across the processes; the metrics are the same):
    python evaluate.py --ckpt out/vpo-maze-s0/ckpt.pt [--device cuda] [--dtype float32]
    torchrun --standalone --nproc_per_node=8 evaluate.py --ckpt out/vpo-maze-s0/ckpt.pt --device cuda
"""
import json
import math
import os
import sys

import numpy as np
import torch

import vpo
from metrics import (best_at_k, dimension_geometry, diversity, expected_best_at_k, hack_flags, hack_rates,
                     pareto_metrics, within_covariance)
from runs import dist
from runs.seeding import step_seed
from sample import rollout, slot_rewards


# The metrics given at several k, in the order summary.json and log.jsonl hold them: {k: value} under each name.
PER_K = ("best@k", "pass@k", "E_w[best@k]", "pass_hidden@k", "pass_target@k", "pooled_best@k", "pooled_pass@k",
         "pooled_pass_target@k")


@torch.no_grad()
def evaluate(model, task, problems, m, ks, answers_per_problem=96, temperature=0.7, seed=0, num_weights=256,
             max_rows=1024, num_pools=4, weights=None, amp=True, geometry=None):
    """Sample answers_per_problem answers (ceil(./m) rollouts) for every problem and score them. weights: the
    vector written into goal-conditioned prompts (None: plain prompts). amp: bf16 autocast on CUDA. geometry: a
    tasks.geometry.Geometry the run trained with (--reward_geometry): "dimensions_seen" then describes the vector it saw.

    Problem i samples from its own stream (seeded by (seed, i)), so the metrics do not depend on how the problems
    are batched. Under torchrun every rank evaluates its share of the problems (dist.shard) and every rank returns
    the same metrics, gathered: those of one process.

    -> (metrics dict, pools): pools holds the valid answers' reward vectors (n, D) of the first num_pools problems.
    """
    n_roll = math.ceil(answers_per_problem / m)
    if max(ks) > n_roll * m:
        raise ValueError(f"ks: largest k = {max(ks)} exceeds the {n_roll * m} answers sampled per problem")
    setup = Scoring(task, m, ks, seed, num_weights)
    chunk = max(1, max_rows // n_roll)
    was_training = model.training
    model.eval()
    mine = dist.shard(len(problems))
    records = []  # (problem index, its numbers: problem_record) of this rank's problems
    for start in range(mine.start, mine.stop, chunk):
        batch = problems[start:min(start + chunk, mine.stop)]
        seeds = [step_seed(seed, start + i) for i in range(len(batch))]
        _, _, texts, rewards, mask = rollout(model, task, batch, m, n_roll, temperature, weights=weights, seeds=seeds,
                                             amp=amp)
        for i, problem in enumerate(batch):
            records.append((start + i, problem_record(setup, problem, texts[i * n_roll:(i + 1) * n_roll],
                                                      rewards[i], mask[i])))
    model.train(was_training)
    records = [rec for _, rec in sorted(dist.gather_objects(records), key=lambda rec: rec[0])]   # every problem
    metrics = summarize(setup, records, n_roll, temperature, weights, geometry)
    return metrics, [rec["valid"] for rec in records[:num_pools]]


class Scoring:
    """What scoring every problem of one evaluation shares: the task, m, the k's (k = 1 added for single-answer
    models; the pooled k's from 1), the N = num_weights weights of E_w[best@k] (drawn from seed, unless weights
    (N, D) are given), w*."""
    def __init__(self, task, m, ks, seed=0, num_weights=256, weights=None):
        self.task, self.m = task, m
        self.ks = sorted({*ks, 1} if m == 1 else set(ks))
        self.pooled_ks = sorted({1, *self.ks})          # the authors' pooled best@k: any k, from k = 1
        self.weights = weights if weights is not None else \
            vpo.sample_weights(1, num_weights, task.dim, generator=torch.Generator().manual_seed(seed))[0]
        self.w_star = torch.as_tensor(task.deploy_weights, dtype=torch.float32)
        self.hidden = task.has_hidden_tests
        self.target = task.checks_target


def problem_record(setup, problem, texts, r, a):
    """Every number of one problem: its completions texts (n_roll of them) with their rewards r (n_roll, m, D) and
    answer mask a (n_roll, m) as Task.score_rollouts gives them. -> dict: acc ({metric@k: value}), rows (the
    per-problem scalars), dim_mean, solved and solved_target (answers that solve), valid (the valid answers' reward
    vectors), hacks (Task.hacks' flags of the written answers)."""
    task, m, ks, pooled_ks, w_star = setup.task, setup.m, setup.ks, setup.pooled_ks, setup.w_star
    n_roll = len(texts)
    acc, rows = {}, {}
    answers = [task.parse(t, m) for t in texts]
    deploy = r @ w_star                                                 # w*^T r per answer, 0 if masked
    solved = torch.tensor([[bool(a[g, j]) and task.solved(r[g, j].numpy()) for j in range(m)]
                           for g in range(n_roll)])
    for k in ks:
        acc[f"best@{k}"] = best_at_k(deploy, k, mask=a)
        acc[f"pass@{k}"] = best_at_k(solved.double(), k)
        acc[f"E_w[best@{k}]"] = expected_best_at_k(r, k, setup.weights, mask=a)
    # the authors' pool: every answer slot of every rollout, repeats scored too, a missing answer 0
    slots = slot_rewards(r, a, answers, key=lambda y, p=problem: task.canonical(p, y))
    written = torch.tensor([[y != "" for y in ys] for ys in answers])
    solved_slots = torch.tensor([[bool(written[g, j]) and task.solved(slots[g, j].numpy()) for j in range(m)]
                                 for g in range(n_roll)])   # repeats solve too, as in the pool above
    for k in pooled_ks:
        acc[f"pooled_best@{k}"] = best_at_k(slots @ w_star, k, mask=written, pooled=True)
        acc[f"pooled_pass@{k}"] = best_at_k(solved_slots.double(), k, mask=written, pooled=True)
    solved_t = None
    if setup.target:  # each distinct written answer checked once against the target
        same = {y: task.equals_target(problem, y) for ys in answers for y in ys if y}
        solved_t = torch.tensor([[bool(a[g, j]) and same[answers[g][j]] for j in range(m)] for g in range(n_roll)])
        slots_t = torch.tensor([[bool(written[g, j]) and same[answers[g][j]] for j in range(m)]
                                for g in range(n_roll)])
        for k in ks:
            acc[f"pass_target@{k}"] = best_at_k(solved_t.double(), k)
        for k in pooled_ks:
            acc[f"pooled_pass_target@{k}"] = best_at_k(slots_t.double(), k, mask=written, pooled=True)
    if setup.hidden:
        solved_h = torch.tensor([[bool(solved[g, j]) and task.solved_hidden(problem, answers[g][j])
                                  for j in range(m)] for g in range(n_roll)])
        for k in ks:
            acc[f"pass_hidden@{k}"] = best_at_k(solved_h.double(), k)
    flat = [y for ys in answers for y in ys if y]
    pareto = pareto_metrics(slots, mask=written)
    rows["diversity"] = diversity(r, mask=a)
    rows["deploy_reward"] = float((slots @ w_star).mean())
    rows["distinct_rate"] = len(set(flat)) / (n_roll * m)
    rows["valid_rate"] = len(flat) / (n_roll * m)
    rows["pareto_frac"] = pareto["pareto_frac"]
    rows["pareto_distinct"] = pareto["pareto_distinct"]
    return {"acc": acc, "rows": rows, "dim_mean": pareto["dim_mean"], "solved": int(solved.sum()),
            "solved_target": None if solved_t is None else int(solved_t.sum()), "valid": r[a].numpy(),
            "hacks": hack_flags(task.hacks, problem, flat)}                 # [] for a task without hacks


def summarize(setup, records, n_roll, temperature, weights=None, geometry=None):
    """The metrics dict of an evaluation from its problems' records (problem_record), in problem order: each
    metric's mean over problems; weights: the prompts' weights (goal-conditioned), geometry: as evaluate's."""
    task = setup.task
    acc = {key: [rec["acc"][key] for rec in records] for key in records[0]["acc"]}
    rows = {key: [rec["rows"][key] for rec in records] for key in records[0]["rows"]}
    metrics = {"m": setup.m, "problems": len(records), "answers_per_problem": n_roll * setup.m,
               "temperature": temperature, "prompt_weights": None if weights is None else [float(w) for w in weights]}
    for key in PER_K:  # acc holds each at every k under its name with k written in: "E_w[best@3]"
        k_values = setup.pooled_ks if key.startswith("pooled") else setup.ks
        if ("hidden" not in key or setup.hidden) and ("target" not in key or setup.target):
            metrics[key] = {k: float(np.mean(acc[key.replace("@k", f"@{k}")])) for k in k_values}
    metrics.update({key: float(np.mean(v)) for key, v in rows.items()})
    metrics["dim_means"] = dict(zip(task.objectives, np.mean([rec["dim_mean"] for rec in records], axis=0).tolist()))
    metrics["solved_per_problem"] = [rec["solved"] for rec in records]   # solved answers of each problem
    if setup.target:
        metrics["solved_target_per_problem"] = [rec["solved_target"] for rec in records]  # equal to the target
    rates = hack_rates([f for rec in records for f in rec["hacks"]])
    if rates:
        metrics["hack_rate"] = rates
    # how many directions the reward dimensions span in these answers (within problems): dim_corr, eff_rank
    metrics["dimensions"] = dimension_geometry(within_covariance([rec["valid"] for rec in records])[0])
    if geometry is not None and not geometry.identity:
        seen = [geometry.apply(torch.as_tensor(rec["valid"]), task.deploy_weights)[0].numpy() for rec in records]
        metrics["dimensions_seen"] = dimension_geometry(within_covariance(seen)[0])
    return metrics


def default_ks(m, most=None):
    """The k's of evaluate.py's table: m, 2m, 4m, 8m, 16m (whole rollouts), those up to `most` answers where given."""
    return [m * f for f in (1, 2, 4, 8, 16) if most is None or m * f <= most]


def evaluate_texts(task, problems, texts, m, ks, temperature=0.7, seed=0, num_weights=256, weights=None):
    """evaluate's metrics of completions already written, in the task's format: texts holds the same number of
    completions for every problem, problem after problem (temperature is only recorded; weights: those of
    E_w[best@k], else drawn as evaluate draws them). For a sampler of one's own, e.g. another framework's model
    (examples/trl_vpo.py)."""
    n_roll = len(texts) // len(problems)
    setup = Scoring(task, m, ks, seed, num_weights, weights)
    records = []
    for i, problem in enumerate(problems):
        mine = texts[i * n_roll:(i + 1) * n_roll]
        r, a = task.score_rollouts(problem, mine, m)
        records.append(problem_record(setup, problem, mine, torch.from_numpy(r), torch.from_numpy(a)))
    return summarize(setup, records, n_roll, temperature)


LEGEND = """\
names (docs/metrics.md): best@k, the expected best w*ᵀr among k answers drawn as k/m whole rollouts (none at k = 1
  when a rollout holds m > 1 answers); pooled, k answers drawn from all of a problem's answers; E_w[best@k], the
  best under random weights w ~ Dir(1), averaged over w; pass@k, the chance that one of k answers solves; diversity,
  the mean pairwise L1 distance of the answers' reward vectors; distinct and valid, the share of answer slots that
  are not repeats and not empty; Pareto-optimal, the share of answers no other answer of the pool beats on every
  dimension (its distinct reward vectors in brackets); deploy reward and mean reward, the mean w*ᵀr and the mean of
  each dimension per answer slot; reward dimensions (where shown), how alike the dimensions rank a problem's answers
  (docs/when_vpo_helps.md)."""


def format_table(metrics, label=""):
    """The metrics as a few aligned text lines (printed at the end of train.py and by this script). Columns are
    the pooled k's (1 and the k's of best@k); whole-rollout rows leave k = 1 empty for multi-answer models."""
    ks = [int(k) for k in metrics["pooled_best@k"]]
    lines = [f"{label:<15}" + "".join(f"{'k=' + str(k):>8}" for k in ks)]
    names = {"best@k": "best@k", "pooled_best@k": "best@k pooled", "E_w[best@k]": "E_w[best@k]",
             "pass@k": "pass@k", "pass_hidden@k": "pass_hidden@k", "pass_target@k": "pass_target@k"}
    for key, name in names.items():
        if key in metrics:
            values = {int(k): v for k, v in metrics[key].items()}
            lines.append(f"{name:<15}" + "".join(f"{values[k]:>8.3f}" if k in values else f"{'-':>8}" for k in ks))
    means = "  ".join(f"{name} {v:.2f}" for name, v in metrics["dim_means"].items())
    prompted = "" if metrics.get("prompt_weights") is None else \
        f"; prompted with w = {[round(w, 2) for w in metrics['prompt_weights']]}"
    lines.append(f"diversity {metrics['diversity']:.3f}  deploy reward {metrics['deploy_reward']:.3f}  "
                 f"distinct {metrics['distinct_rate']:.3f}  valid {metrics['valid_rate']:.3f}  Pareto-optimal "
                 f"{metrics['pareto_frac']:.3f} ({metrics['pareto_distinct']:.1f} distinct)")
    if metrics.get("hack_rate"):
        lines.append("hack rate (written answers): " + "  ".join(
            f"{name} {'-' if v is None else f'{v:.3f}'}" for name, v in metrics["hack_rate"].items()))
    dims = metrics.get("dimensions")
    if dims and dims["varying"] >= 2:
        lines.append(f"reward dimensions (within problems, valid answers): mean pairwise correlation "
                     f"{dims['dim_corr']:.3f}, effective rank {dims['eff_rank']:.2f} of {dims['varying']} varying")
    lines.append(f"mean reward: {means}  (m={metrics['m']}, {metrics['problems']} problems x "
                 f"{metrics['answers_per_problem']} answers, T={metrics['temperature']}{prompted})")
    return "\n".join(lines)


def report(directory, task, ks, results, label, summary, figures=True):
    """Write summary.json (summary + the run's metrics, its base's, the answer pools) and, where figures is true,
    the PNG figures; print the tables. results: {label: (metrics, pools), optionally "base": (metrics, pools)}."""
    metrics, pools = results[label]
    summary = {**summary, "metrics": metrics, "base_metrics": results.get("base", (None,))[0],
               "pools": [p.tolist() for p in pools]}
    path = os.path.join(directory, "summary.json")  # atomically: its presence marks a finished run to readers
    tmp = f"{path}.tmp{os.getpid()}"                # (results.reproduce reads it while other jobs still train)
    with open(tmp, "w") as f:
        json.dump(summary, f)
    os.replace(tmp, path)
    if figures:
        from runs.plots import plot_best_at_k, plot_curves, plot_scatter
        title = f"{task.name}, held-out problems"
        plot_curves(os.path.join(directory, "log.jsonl"), os.path.join(directory, "curves.png"),
                    f"{label} on {task.name}")
        plot_best_at_k({name: (ks, [r[0]["best@k"][k] for k in ks], None) for name, r in results.items()},
                       os.path.join(directory, "best_at_k.png"), title=title)
        plot_scatter({name: r[1] for name, r in results.items()}, task, os.path.join(directory, "scatter.png"),
                     f"answers' reward vectors, {title}")
    print(f"\n{label} on {task.name}: trained in {summary['train_seconds']:.0f} s; evaluated on {metrics['problems']} "
          f"held-out problems in {summary['eval_seconds']:.0f} s")
    for name, (r, _) in reversed(results.items()):
        print(format_table(r, name))
    print(LEGEND)
    pngs = ["curves.png", "best_at_k.png", "scatter.png"] if figures else []
    print(f"wrote {directory}/ ({', '.join(['ckpt.pt', 'log.jsonl', 'summary.json'] + pngs)})")
    return summary


def get_parser():
    from runs.cli import COUNT, PROBLEMS, SEED, Parser, add_device_flags, number
    ap = Parser(description="Evaluate a train.py checkpoint on its task's test problems.")
    ap.add_argument("--ckpt", required=True, help="checkpoint written by train.py")
    ap.add_argument("--problems", type=PROBLEMS, default=64, help="held-out test problems")
    ap.add_argument("--answers", type=COUNT, default=96, help="answers sampled per problem")
    ap.add_argument("--temperature", type=number(float, 0), default=0.7,
                    help="sampling temperature (the paper's 0.7; 0 = greedy)")
    ap.add_argument("--seed", type=SEED, default=0, help="sampling seed")
    ap.add_argument("--json", default=None,
                    help="also write the metrics to this file (a new file, or an existing .json file)")
    add_device_flags(ap)
    return ap


def main(argv=None):
    from runs.cli import UsageError, eval_weights, geometry_of, load_run, pick_device, test_problems, use_amp
    try:
        args = get_parser().parse_args(argv)
        if args.json and (os.path.isdir(args.json) or not os.path.isdir(os.path.dirname(os.path.abspath(args.json)))):
            raise UsageError(f"--json {args.json}: not a file in an existing directory")
        if args.json and os.path.lexists(args.json) and not args.json.endswith(".json"):
            raise UsageError(f"--json {args.json} exists and is not a .json file: not overwriting it")
        device = pick_device(args.device)
        model, run, task, m = load_run(args.ckpt, device)
        problems = test_problems(task, args.problems)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    device = dist.setup(device)  # torchrun evaluate.py ...: the problems split across processes
    ks = default_ks(run.num_answers)
    metrics, _ = evaluate(model, task, problems, m, ks, max(args.answers, max(ks)), args.temperature, args.seed,
                          weights=eval_weights(run, task), amp=use_amp(args.dtype, getattr(run, "dtype", "auto")),
                          geometry=geometry_of(run, task))
    dist.teardown()
    if not dist.is_main():
        return 0
    print(format_table(metrics, run.algo))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(metrics, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
What a maze checkpoint's answers cover: which trade-offs its answers and its 48-answer pools reach, whether the
slots of a multi-answer completion specialize, and what the best of k answers is made of, dimension by dimension.

    python -m results.coverage --ckpt out/vpo-maze-s0/ckpt.pt [--problems 64] [--answers 48] [--json out.json]

It samples the evaluation's pool (evaluate.py: the same held-out mazes, test split seed 0, the same per-maze
streams, T = 0.7) and reads the reward vectors [exit, gold, diamonds, no_lava] (tasks/maze.py: all zero unless
the route reaches the exit; items count before the exit; no_lava is 1 − the lava fraction):
  answers   share of the written answers that reach the exit; with gold (> 0), with diamonds, with both, with
            no item, lava-free (no_lava = 1)
  pools     share of the mazes whose pool holds an answer of each kind, and one with gold beside one with
            diamonds (the pool covers the gold-diamond trade-off)
  slots     (m > 1) slot j's mean reward vector over the written answers, and the share of completions whose
            written answers fall in two or more, or m, different classes (class: exit reached, gold, diamonds)
  best@k    E[r_d of the best of k answers by w*ᵀr] per dimension (metrics.best_vector_at_k, pooled), k = 3, 12,
            48: where a pooled best@k comes from
  users     pooled best@k under other users' weights (USERS: the deployment weights, gold-first, diamond-first;
            results/PLAN_SEARCH.md's maze control), the evaluation's pooled_best@k for the deployment weights
"""
import argparse
import json
import math
import sys

import numpy as np
import torch

from metrics import best_at_k, best_vector_at_k
from runs.seeding import step_seed
from sample import rollout, slot_rewards

KINDS = ("exit", "gold", "diamonds", "both", "no item", "lava-free")
MAZE_DIMS = ["exit", "gold", "diamonds", "no_lava"]
# users who want one item: each moves both items' deployment weight onto it (PLAN_SEARCH.md, the maze control)
USERS = {"deployment": (0.25, 0.25, 0.25, 0.25), "gold-first": (0.25, 0.5, 0.0, 0.25),
         "diamond-first": (0.25, 0.0, 0.5, 0.25)}


def kinds(r):
    """The kinds of one answer's reward vector r (4,): a dict kind -> bool."""
    exit_, gold, diamonds = r[0] > 0, r[1] > 0, r[2] > 0
    return {"exit": exit_, "gold": exit_ and gold, "diamonds": exit_ and diamonds, "both": exit_ and gold and diamonds,
            "no item": exit_ and not gold and not diamonds, "lava-free": exit_ and r[3] >= 1.0}


def answer_class(r):
    return (bool(r[0] > 0), bool(r[1] > 0), bool(r[2] > 0))


def coverage(slots, written, w_star, ks=(3, 12, 48)):
    """The statistics above from the answer slots' reward vectors of every maze.
    slots: per maze (n_rollouts, m, 4) tensors (slot_rewards: a repeated answer keeps its reward); written: per
    maze (n_rollouts, m) bool. -> dict of answers, pools, slots, best@k (every share a float)."""
    answers = {k: [] for k in KINDS}
    pools = {k: [] for k in KINDS + ("gold and diamonds",)}
    m = slots[0].shape[1]
    slot_sums, slot_counts, two, all_m, completions = np.zeros((m, 4)), np.zeros(m), 0, 0, 0
    best = {k: [] for k in ks}
    users = {name: {k: [] for k in ks} for name in USERS}
    for r, a in zip(slots, written):
        vectors = [r[g, j].numpy() for g in range(r.shape[0]) for j in range(m) if a[g, j]]
        per = [kinds(v) for v in vectors]
        for kind in KINDS:
            answers[kind] += [p[kind] for p in per]
            pools[kind].append(any(p[kind] for p in per))
        pools["gold and diamonds"].append(any(p["gold"] for p in per) and any(p["diamonds"] for p in per))
        for g in range(r.shape[0]):
            classes = {answer_class(r[g, j].numpy()) for j in range(m) if a[g, j]}
            for j in range(m):
                if a[g, j]:
                    slot_sums[j] += r[g, j].numpy()
                    slot_counts[j] += 1
            if m > 1 and a[g].sum() >= 2:
                completions += 1
                two += len(classes) >= 2
                all_m += len(classes) == m
        scores = r @ torch.as_tensor(w_star, dtype=r.dtype)
        for k in ks:
            if k <= r.shape[0] * m:
                best[k].append(best_vector_at_k(scores, r, k, mask=a))
                for name, w in USERS.items():
                    users[name][k].append(best_at_k(r @ torch.as_tensor(w, dtype=r.dtype), k, mask=a, pooled=True))
    out = {"answers": {k: float(np.mean(v)) if v else 0.0 for k, v in answers.items()},
           "pools": {k: float(np.mean(v)) for k, v in pools.items()},
           "best@k": {k: dict(zip(MAZE_DIMS, np.mean(v, axis=0).tolist())) for k, v in best.items() if v},
           "users": {name: {k: float(np.mean(v)) for k, v in by_k.items() if v} for name, by_k in users.items()},
           "written": int(sum(int(a.sum()) for a in written)), "mazes": len(slots), "m": m}
    if m > 1:
        out["slots"] = [dict(zip(MAZE_DIMS, (slot_sums[j] / max(slot_counts[j], 1)).tolist())) for j in range(m)]
        out["completions_two_classes"] = two / completions if completions else 0.0
        out["completions_m_classes"] = all_m / completions if completions else 0.0
    return out


@torch.no_grad()
def measure(model, task, problems, m, answers=48, temperature=0.7, seed=0, max_rows=1024):
    """Sample the evaluation's pools (evaluate.evaluate's streams) and return coverage(...)."""
    n_roll = math.ceil(answers / m)
    chunk = max(1, max_rows // n_roll)
    slots, written = [], []
    for start in range(0, len(problems), chunk):
        batch = problems[start:start + chunk]
        seeds = [step_seed(seed, start + i) for i in range(len(batch))]
        _, _, texts, rewards, mask = rollout(model, task, batch, m, n_roll, temperature, seeds=seeds, amp=False)
        for i in range(len(batch)):
            parsed = [task.parse(t, m) for t in texts[i * n_roll:(i + 1) * n_roll]]
            slots.append(slot_rewards(rewards[i], mask[i], parsed, key=lambda y, p=batch[i]: task.canonical(p, y)))
            written.append(torch.tensor([[y != "" for y in ys] for ys in parsed]))
    return coverage(slots, written, task.deploy_weights)


def sample_routes(model, task, problems, m, rollouts=2, temperature=0.7, seed=0):
    """What a checkpoint writes: `rollouts` completions of each problem (the evaluation's streams), as
    [{"problem": i, "rollout": g, "answers": [[route, [exit, gold, diamonds, no_lava]], ...]}, ...]."""
    seeds = [step_seed(seed, i) for i in range(len(problems))]
    _, _, texts, rewards, _ = rollout(model, task, problems, m, rollouts, temperature, seeds=seeds, amp=False)
    return [{"problem": i, "rollout": g, "answers": [[y, [round(float(v), 3) for v in task.score(p, y)]]
                                                     for y in task.parse(texts[i * rollouts + g], m)]}
            for i, p in enumerate(problems) for g in range(rollouts)]


def format_coverage(c):
    lines = [f"{c['mazes']} mazes, {c['written']} written answers, m = {c['m']}",
             "answers: " + "  ".join(f"{k} {v:.3f}" for k, v in c["answers"].items()),
             "pools:   " + "  ".join(f"{k} {v:.3f}" for k, v in c["pools"].items())]
    for j, s in enumerate(c.get("slots", [])):
        lines.append(f"slot {j}:  " + "  ".join(f"{k} {v:.3f}" for k, v in s.items()))
    if "slots" in c:
        lines.append(f"completions with answers in >= 2 classes {c['completions_two_classes']:.3f}, in {c['m']} "
                     f"{c['completions_m_classes']:.3f}")
    for k, v in c["best@k"].items():
        lines.append(f"best@{k} made of: " + "  ".join(f"{d} {x:.3f}" for d, x in v.items()))
    for name, by_k in c.get("users", {}).items():
        lines.append(f"pooled best@k, {name}: " + "  ".join(f"k={k} {x:.3f}" for k, x in by_k.items()))
    return "\n".join(lines)


def main(argv=None):
    from runs.cli import COUNT, Parser, UsageError, load_run
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True, help="a train.py checkpoint of a maze run (or a maze base)")
    ap.add_argument("--problems", type=COUNT, default=64, help="held-out mazes (the evaluation's first ones)")
    ap.add_argument("--answers", type=COUNT, default=48, help="answers per maze")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    ap.add_argument("--routes", type=COUNT, default=None, metavar="K", help="also print, and keep in --json, two "
                    "completions of each of the first K mazes: the routes and their reward vectors")
    try:
        args = ap.parse_args(argv)
        model, run, task, m = load_run(args.ckpt)
        if list(task.objectives) != MAZE_DIMS:
            raise UsageError(f"--ckpt {args.ckpt}: a {run.task} checkpoint; coverage reads the maze's "
                             f"{', '.join(MAZE_DIMS)}")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problems = task.problems("test", args.problems, seed=0)
    c = measure(model, task, problems, m, args.answers)
    print(format_coverage(c))
    if args.routes:
        c["routes"] = sample_routes(model, task, problems[:args.routes], m)
        for r in c["routes"]:
            print(f"maze {r['problem']} rollout {r['rollout']}: " + "  ".join(
                f"{y or '(none)'} {v}" for y, v in r["answers"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(c, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

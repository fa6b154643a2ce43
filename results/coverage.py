"""
What a maze checkpoint's answers cover: which trade-offs its answers and its 48-answer pools reach, whether the
slots of a multi-answer completion specialize, and what the best of k answers is made of, dimension by dimension.

    python -m results.coverage --ckpt out/vpo-maze-s0/ckpt.pt [--problems 64] [--answers 48] [--json out.json]
    python -m results.coverage --front [--problems 64]   # the reward's own geometry, no checkpoint (seconds)

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


# ------------------------------------------------------------------------------------ the reward's own geometry
def reachable(problem):
    """Every reward vector a route can score on a maze (the linear reward): [1, g, d, 1 − l] for each set of gold,
    diamond and lava cells some route enters on its way to E within the budget (Layout.search tracking all three)."""
    lay = problem.layout
    cells = sorted(lay.gold) + sorted(lay.diamonds) + sorted(lay.lava)
    bit_of = {c: 1 << i for i, c in enumerate(cells)}
    exits, _ = lay.search(bit_of, problem.budget)
    return np.unique([lay.vector(True, {c for c in cells if mask & bit_of[c]}) for mask in exits], axis=0)


def pareto(vectors):
    """The vectors no other one weakly dominates (ties kept once): the only ones a max over answers can use."""
    vectors = np.unique(vectors, axis=0)
    dominated = [bool(np.any(np.all(vectors >= v, axis=1) & np.any(vectors > v, axis=1))) for v in vectors]
    return vectors[~np.array(dominated)]


def best_sets(vectors, w_star, m, weights):
    """What theory says of sets of m answers over these reachable vectors: E_w[max over the set of wᵀr] (weights:
    the N draws w) of the best set (VPO's optimum), of the best set holding one of w*'s best answers (a set scored
    on w* that fills its other answers well), and of w*'s best answer alone (a set that repeats it), and whether the
    best set holds one of w*'s best. Exhaustive over the Pareto front's sets of min(m, its size); answers tied for
    w*'s best all count as it."""
    import itertools
    front = pareto(np.asarray(vectors, dtype=np.float64))
    values = front @ np.asarray(weights, dtype=np.float64).T   # (F, N)
    scalar = front @ np.asarray(w_star, dtype=np.float64)
    star = {i for i in range(len(front)) if scalar[i] >= scalar.max() - 1e-9}
    sets = list(itertools.combinations(range(len(front)), min(m, len(front))))
    scores = np.array([values[list(s)].max(axis=0).mean() for s in sets])
    best = int(np.argmax(scores))
    return {"optimum": float(scores[best]),
            "holding w*'s best": float(max(score for s, score in zip(sets, scores) if star & set(s))),
            "w*'s best alone": float(max(values[i].mean() for i in star)), "optimum holds it": bool(star & set(sets[best]))}


def front_table(task_vectors, ms=(1, 2, 3), num_weights=2000, seed=0):
    """The rows of --front: for each task (name -> (w*, [reachable vectors per problem])) and m, best_sets's values
    averaged over the problems, with N Dirichlet(1) weights of a seeded generator."""
    rows = []
    for name, (w_star, per_problem) in task_vectors.items():
        weights = np.random.default_rng(seed).dirichlet(np.ones(len(w_star)), size=num_weights)
        for m in ms:
            got = [best_sets(v, w_star, m, weights) for v in per_problem]
            rows.append([name, str(m), *(f"{np.mean([g[key] for g in got]):.3f}" for key in
                                         ("optimum", "holding w*'s best", "w*'s best alone")),
                         f"{sum(g['optimum holds it'] for g in got)} of {len(got)}"])
    return rows


def maze_classes(per_problem, w_star):
    """The maze's deployment scalar on its reachable routes, counted over mazes: where w*'s best routes are both
    corners tied (all the gold, or all the diamonds), one corner, or a route with both kinds of item; where some
    route collects both kinds; and the mean w*ᵀr of the best route, the best one with both kinds (where there is
    one) and the best with no item."""
    out = {"both corners tie": 0, "one corner": 0, "both kinds": 0, "some route collects both kinds": 0}
    best, mixed, empty = [], [], []
    for v in per_problem:
        scalar = np.asarray(v, dtype=np.float64) @ w_star
        top = v[scalar >= scalar.max() - 1e-9]
        corners = {kind for kind in (1, 2) if np.any((top[:, kind] == 1) & (top[:, 3 - kind] == 0))}
        key = "both kinds" if np.any((top[:, 1] > 0) & (top[:, 2] > 0)) else \
            "both corners tie" if len(corners) == 2 else "one corner"
        out[key] += 1
        both = (v[:, 1] > 0) & (v[:, 2] > 0)
        out["some route collects both kinds"] += bool(both.any())
        best.append(scalar.max())
        mixed += [scalar[both].max()] if both.any() else []
        empty.append(scalar[(v[:, 1] == 0) & (v[:, 2] == 0)].max())
    return {**out, "best": float(np.mean(best)), "best with both kinds": float(np.mean(mixed)) if mixed else None,
            "best with no item": float(np.mean(empty))}


def front_lines(problems=64):
    """--front: front_table for the toy's three answers and the maze's reachable routes on its first report mazes
    (the evaluation's: test split, seed 0), then maze_classes."""
    from tasks.maze import MazeTask
    from tasks.toy import ToyTask
    toy, maze = ToyTask(), MazeTask()
    per_maze = [reachable(p) for p in maze.problems("test", problems, seed=0)]
    rows = front_table({"toy": (toy.deploy_weights, [np.stack(list(toy.rewards.values()))]),
                        f"maze ({problems} report mazes)": (maze.deploy_weights, per_maze)})
    c = maze_classes(per_maze, maze.deploy_weights)
    return ["E_w[max over a set of m answers of wᵀr] on the reachable reward vectors, w ~ Dirichlet(1), 2000 draws, "
            "mean over problems:", "", "| task | m | best set | best set holding w*'s best | w*'s best alone | best "
            "set holds w*'s best |", "|---|---|---|---|---|---|", *("| " + " | ".join(r) + " |" for r in rows), "",
            f"Maze: w*'s best routes are both corners, tied, on {c['both corners tie']} mazes, one corner on "
            f"{c['one corner']}, a route with both kinds of item on {c['both kinds']}. Some route collects both kinds "
            f"on {c['some route collects both kinds']}. Mean w*ᵀr: best route {c['best']:.3f}, best with both kinds "
            f"{c['best with both kinds'] or float('nan'):.3f} (where there is one), best with no item "
            f"{c['best with no item']:.3f}."]


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
    ap.add_argument("--ckpt", help="a train.py checkpoint of a maze run (or a maze base)")
    ap.add_argument("--front", action="store_true", help="instead, what theory says of sets of answers on the maze's "
                    "own reachable reward vectors, beside the toy's (no checkpoint; see front_lines)")
    ap.add_argument("--problems", type=COUNT, default=64, help="held-out mazes (the evaluation's first ones)")
    ap.add_argument("--answers", type=COUNT, default=48, help="answers per maze")
    ap.add_argument("--json", default=None, help="also write the numbers to this file")
    ap.add_argument("--routes", type=COUNT, default=None, metavar="K", help="also print, and keep in --json, two "
                    "completions of each of the first K mazes: the routes and their reward vectors")
    try:
        args = ap.parse_args(argv)
        if args.front == bool(args.ckpt):
            raise UsageError("give --ckpt CKPT, or --front")
        if args.front:
            print("\n".join(front_lines(args.problems)))
            return 0
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

"""
The PNG figures train.py and reproduce.py write: training curves, best@k against k, and the answers' reward
vectors over the Pareto front. matplotlib with the Agg backend (no screen needed).
"""
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

CURVES = [("deploy_reward", "deployment reward w*ᵀr"), ("set_reward", "set reward E_w max wᵀr"),
          ("diversity", "reward-space diversity"), ("entropy", "entropy proxy −log p"), ("kl", "KL to base (k3)"),
          ("zero_var_frac", "zero-variance groups"), ("loss", "loss")]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def smooth(y, n=10):
    """Trailing moving average over n points (as many as exist at the start)."""
    y = np.asarray(y, dtype=float)
    c = np.cumsum(np.insert(y, 0, 0.0))
    idx = np.arange(1, len(y) + 1)
    lo = np.maximum(idx - n, 0)
    return (c[idx] - c[lo]) / (idx - lo)


def plot_curves(log_path, out_png, title=""):
    """One panel per logged quantity of log.jsonl: raw values faint, a moving average on top."""
    rows = read_jsonl(log_path)
    if not rows:
        return
    keys = [(k, name) for k, name in CURVES if k in rows[0]]
    if not keys:
        return
    fig, axes = plt.subplots(2, (len(keys) + 1) // 2, figsize=(4 * ((len(keys) + 1) // 2), 6), squeeze=False)
    steps = [r["step"] for r in rows]
    for ax, (key, name) in zip(axes.flat, keys):
        y = [r[key] for r in rows]
        ax.plot(steps, y, alpha=0.3, color="C0")
        ax.plot(steps, smooth(y), color="C0")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
    for ax in axes.flat[len(keys):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


def plot_best_at_k(curves, out_png, key="best@k", title=""):
    """curves: {label: (ks, mean, std or None)}; one line per label on a log2 k axis."""
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, (label, (ks, mean, std)) in enumerate(curves.items()):
        ks, mean = np.asarray(ks), np.asarray(mean)
        ax.plot(ks, mean, marker="o", label=label, color=f"C{i}")
        if std is not None:
            ax.fill_between(ks, mean - np.asarray(std), mean + np.asarray(std), alpha=0.2, color=f"C{i}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (answers)")
    ax.set_ylabel(key)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


def pareto_front(points):
    """The points (n, 2) that no other point dominates (>= in both coordinates, > in one), sorted by x."""
    points = np.unique(np.asarray(points, dtype=float).reshape(-1, 2), axis=0)
    keep = [p for p in points if not np.any(np.all(points >= p, axis=1) & np.any(points > p, axis=1))]
    return np.array(sorted(keep, key=lambda p: p[0])).reshape(-1, 2)


def plot_scatter(pools_by_label, task, out_png, title=""):
    """Answers' reward vectors on the task's two plot axes (Task.plot_axes), one panel per problem, one colour
    per label (method); marker size grows with how many answers share a point; each method's Pareto front is a
    step line."""
    labels = list(pools_by_label)
    n = max(len(p) for p in pools_by_label.values())
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.6), squeeze=False)
    names = ("", "")
    for c, label in enumerate(labels):
        for ax, pool in zip(axes[0], pools_by_label[label]):
            pool = np.asarray(pool, dtype=float).reshape(-1, task.dim)
            if len(pool) == 0:
                continue
            pts, names = task.plot_axes(pool)
            uniq, counts = np.unique(pts, axis=0, return_counts=True)
            jitter = (c - (len(labels) - 1) / 2) * 0.015
            ax.scatter(uniq[:, 0] + jitter, uniq[:, 1] + jitter, s=12 + 120 * counts / counts.max(), alpha=0.5,
                       color=f"C{c}", label=label)
            front = pareto_front(uniq)
            ax.step(front[:, 0] + jitter, front[:, 1] + jitter, where="post", color=f"C{c}", lw=1)
    for p, ax in enumerate(axes[0]):
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
        ax.set_xlim(-0.08, 1.08)
        ax.set_ylim(-0.08, 1.08)
        ax.set_title(f"test problem {p}", fontsize=10)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)

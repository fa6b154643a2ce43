"""
The figures of results.compare: pooled best@k (or the --metric) against k at the last step and along training
(compare_figures), problems solved per run against the budget, search and sampling side by side (strip_figure), and
each pair of a plan's decision per run (decided_figure), and the validation curves of the arms stopped early
(validation_figure).
"""
import json
import os

import numpy as np

from results.tables import at_step, eval_steps, pair_values, value
from runs.plots import plt


def _label(ax, title, xlabel):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)


def compare_figures(runs, bases, out, title, key="pooled_best@k"):
    """best_at_k.png: key@k (pooled best@k by default) against k at the last step; over_training.png: key at the
    largest k along training (step 0: the warm start). Each run a faint line, the mean bold; the warm start dashed
    in best_at_k.png, at each m of bases ({m: its evaluation})."""
    largest = max(int(k) for rs in runs.values() for r in rs for k in r["summary"]["metrics"][key])
    for name, xlabel in (("best_at_k", "k (answers)"), ("over_training", "RL step (0 = warm start)")):
        fig, ax = plt.subplots(figsize=(6, 4.2))
        for i, (arm, rs) in enumerate(runs.items()):
            last = max(eval_steps(rs))
            if name == "best_at_k":
                xs = sorted(int(k) for k in at_step(rs[0], last)[key])
                lines = [[value(at_step(r, last), key, k) for k in xs] for r in rs if at_step(r, last)]
                label = f"{arm}, step {last}"
            else:
                base = bases.get(rs[0]["summary"]["metrics"]["m"])

                def point(r, s):   # step 0: the run's own evaluation of its start (--eval_at_start), else the base
                    return at_step(r, s) or (base if s == 0 else None)
                xs = sorted(set(([0] if base else []) + eval_steps(rs)))
                lines = [[value(point(r, s), key, largest) for s in xs] for r in rs if all(point(r, s) for s in xs)]
                label = arm
            for line in lines:
                ax.plot(xs, line, color=f"C{i}", alpha=0.3, lw=1)
            ax.plot(xs, np.mean(lines, axis=0), "o-", color=f"C{i}", lw=2.5, label=f"{label} (mean of {len(lines)})")
        if name == "best_at_k":   # the warm start beside the arms, at each m they write
            for j, (m, base) in enumerate(sorted(bases.items())):
                if key in base:
                    ks = sorted(int(k) for k in base[key])
                    ax.plot(ks, [value(base, key, k) for k in ks], ("--", ":", "-.")[j % 3], color="0.3", lw=1.5,
                            label=f"warm start, {m} answer{'s' * (m > 1)} a rollout")
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(k) for k in xs])
        _label(ax, f"{title}\n" + (f"{key.replace('_', ' ')} at the last step" if name == "best_at_k" else
                                 f"{key.replace('@k', f'@{largest}').replace('_', ' ')} along training"), xlabel)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"{name}.png"), dpi=110)
        plt.close(fig)


def strip_figure(counts, budgets, path, title):
    """One point per training run: problems solved against the budget, each arm beside the others, search and
    sampling side by side. counts: {how: {arm name: {budget: [per run]}}}."""
    fig, axes = plt.subplots(1, len(counts), figsize=(5.5 * len(counts), 4), sharey=True, squeeze=False)
    for ax, (how, arms) in zip(axes[0], counts.items()):
        for i, (arm, by_budget) in enumerate(arms.items()):
            offset = (i - (len(arms) - 1) / 2) * 0.08
            for j, b in enumerate(budgets):
                y = by_budget[b]
                ax.scatter([j + offset] * len(y), y, s=12, color=f"C{i}", label=arm if j == 0 else None, alpha=0.8)
                ax.plot([j + offset - 0.03, j + offset + 0.03], [np.mean(y)] * 2, color=f"C{i}", lw=2)
        ax.set_xticks(range(len(budgets)), [str(b) for b in budgets])
        _label(ax, how, "answers per problem (budget)")
    axes[0][0].set_ylabel("problems solved per run")
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=len(counts[next(iter(counts))]),
               fontsize=8, frameon=False)  # below the panels: the points fill every corner
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def differences_figure(pairs, matters, path, title):
    """One point per seed: each pair's difference A − B (pairs: {name: {seed: difference}}), the mean a bar, zero a
    line, ±matters (the smallest difference that matters) a band."""
    fig, ax = plt.subplots(figsize=(7, 0.55 * len(pairs) + 1.4))
    for i, (name, ds) in enumerate(pairs.items()):
        y = len(pairs) - 1 - i
        spread = [y + 0.04 * (j - (len(ds) - 1) / 2) for j in range(len(ds))]   # seeds apart, in seed order
        ax.scatter(list(ds.values()), spread, s=16, color=f"C{i}", alpha=0.8, zorder=3)
        ax.plot([np.mean(list(ds.values()))] * 2, [y - 0.25, y + 0.25], color=f"C{i}", lw=2.5, zorder=3)
    ax.axvline(0, color="0.3", lw=1)
    if matters:
        ax.axvspan(-matters, matters, color="0.85", zorder=0, label=f"within ±{matters:g} (does not matter)")
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(range(len(pairs)), list(pairs)[::-1], fontsize=8)
    ax.set_ylim(-0.6, len(pairs) - 0.4)
    ax.xaxis.set_major_locator(plt.MaxNLocator(6))   # labels of a narrow range apart
    _label(ax, title, "A − B per training run (a point per seed; the bar: their mean)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def decided_figure(runs, decide, key, path):
    """Each pair of the decision, one point per seed (figures.differences_figure)."""
    pairs = {}
    for pair in decide["pairs"] + decide.get("secondary", []):
        a, b, metric, ds = pair_values(runs, pair, key, decide["k"])
        if ds:
            pairs[f"{a} − {b}" + (f", {metric}" if metric != key else "")] = ds
    if pairs:
        differences_figure(pairs, decide.get("matters"), path, f"{key.replace('@k', '@' + str(decide['k']))}"
                           .replace("pooled_", "pooled ") + ", each pair per run")


def validation_figure(runs, stopped, path):
    """The early-stopping rule made visible: for each arm stopped early (a configuration's "stopped"), each run's
    criterion on the validation problems against the step (its validation.json), one faint line per run, its t* a
    point; the mean over runs bold. runs: {label: [run]}, the stopped arms' runs carrying "stopped_at"."""
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for i, s in enumerate(stopped):
        curves = []
        for r in runs.get(s["label"], []):
            with open(os.path.join(r["dir"], "validation.json")) as f:
                validation = json.load(f)
            criterion = {int(step): v for step, v in validation["criterion"].items()}
            ylabel = validation["rule"].split(" on ")[0].removeprefix("the step of the highest ")
            steps = sorted(criterion)
            curves.append([criterion[t] for t in steps])
            ax.plot(steps, curves[-1], color=f"C{i}", alpha=0.3, lw=1)
            ax.plot([r["stopped_at"]], [criterion[r["stopped_at"]]], "o", color=f"C{i}", ms=4, alpha=0.8)
        if curves and len({len(c) for c in curves}) == 1:
            ax.plot(steps, np.mean(curves, axis=0), color=f"C{i}", lw=2.5,
                    label=f"{s['arm']} (mean of {len(curves)}; a point: each run's t*)")
    _label(ax, "Early stopping: each run on the validation problems", "RL step (0 = warm start)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

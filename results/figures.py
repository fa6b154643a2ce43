"""
The figures of the reproduction (report.py writes the tables): best@k against k at each evaluation step, training
curves, compare.md's two figures for each maze experiment of record (compare_figures), the answers' reward vectors,
the route figure (the same held-out mazes with GRPO's and VPO's answers drawn as routes at the start, middle and end
of training), and the pilot's answer-room figure (VPO's written slots and answer length before and after every
answer got its own room).
"""
import json
import os

import numpy as np

from results.dimensions import code_point, geometry_points
from results.plan import CODE_PLANS, KS, at_step, base_metrics, code_task, eval_steps, finished_runs, value
from runs.plots import plot_scatter, plt, read_jsonl, smooth
from tasks import get_task

MAZE_COLOURS = {"#": "#3b3b3b", ".": "#ffffff", "S": "#6fcf6f", "E": "#e06666", "G": "#f4c542", "*": "#6ec6f0",
                "~": "#f28c28", "+": "#c9a0dc"}


def _save(fig, legend_ax, path, suptitle=None):
    legend_ax.legend(fontsize=7)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _label(ax, title, xlabel):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.grid(alpha=0.3)


TRAINING = (("deploy_reward", "deployment reward w*ᵀr of sampled answers"),
            ("set_reward", "set reward E_w max wᵀr"), ("diversity", "reward-space diversity of a group"),
            ("kl", "KL to the base (k3)"),
            ("written_rate", "non-empty answer slots / slots"), ("answer_tokens", "tokens per written answer"))


def training_figure(runs, path, suptitle, keys=TRAINING):
    """Training curves from log.jsonl, mean over seeds, 10-step moving average: one panel per (key, title), in one
    row up to three panels, else in two."""
    rows = 1 if len(keys) <= 3 else 2
    fig, axes = plt.subplots(rows, -(-len(keys) // rows), figsize=(4.4 * -(-len(keys) // rows), 3.6 * rows),
                             squeeze=False)
    axes = axes.flatten()
    for ax, (key, name) in zip(axes, keys):
        for i, (label, rs) in enumerate(runs.items()):
            n = min(len(r["log"]) for r in rs)
            if n == 0 or key not in rs[0]["log"][0]:
                continue
            y = np.mean([[row[key] for row in r["log"][:n]] for r in rs], axis=0)
            ax.plot(np.arange(1, n + 1), smooth(y), color=f"C{i}", label=label)
        _label(ax, name, "RL step")
    _save(fig, axes[0], path, suptitle)


# ------------------------------------------------------------------------------------------ the route figure
def sample_answers(ckpt, task, problems, m, n_roll, stream):
    """The answers the weights at ckpt write, per problem: n_roll rollouts of m answers, T = 0.7, the fixed seeds
    step_seed(0, stream, problem index)."""
    import torch

    from model import load_checkpoint
    from runs.seeding import step_seed
    from sample import rollout
    model = load_checkpoint(ckpt)[0].eval()
    with torch.no_grad():
        _, _, texts, _, _ = rollout(model, task, problems, m, n_roll, 0.7, amp=False,
                                    seeds=[step_seed(0, stream, i) for i in range(len(problems))])
    return [[a for t in texts[i * n_roll:(i + 1) * n_roll] for a in task.parse(t, m)] for i in range(len(problems))]


def route_answers(cfg, out, main):
    """Answers of the seed-0 GRPO and VPO runs on the first held-out mazes at the start (the base), middle (the
    kept evaluation weights nearest half way) and end of training, the same number of answers for each
    (GRPO: that many rollouts of one answer; VPO: a third as many rollouts of three), T = 0.7, fixed seeds.
    Sampled once and cached in out/routes_maze.json."""
    path = os.path.join(out, "routes_maze.json")
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    runs = {r["slug"]: r for rs in main.values() for r in rs if r["seed"] == 0 and r["slug"] in ("grpo", "vpo")}
    if len(runs) < 2:
        return None
    task = get_task("maze")
    problems = task.problems("test", cfg["route_mazes"], seed=0)
    steps, every = cfg["main"]["steps"], cfg["main"]["eval_every"]
    middle = max(every, every * round(steps / 2 / every)) if every else steps
    result = {"problems": [[p.grid, p.budget] for p in problems], "arms": {}}
    for slug, r in runs.items():
        m = r["summary"]["metrics"]["m"]
        base = os.path.join(out, "runs", "maze", "base", *r["summary"]["init"].split(os.sep)[-2:])  # cwd-free
        ckpts = {"start": (0, base), "middle": (middle, os.path.join(r["dir"], f"ckpt-step{middle}.pt")),
                 "end": (steps, os.path.join(r["dir"], "ckpt.pt"))}
        result["arms"][slug] = {}
        for stage, (step, ckpt) in ckpts.items():
            if not os.path.isfile(ckpt):  # a clone holds no weights: no figure, nothing cached
                return None
            answers = sample_answers(ckpt, task, problems, m, max(1, cfg["route_answers"] // m), stream=7)
            result["arms"][slug][stage] = {"step": step, "m": m, "answers": answers}
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return result


def code_answers(cfg, out, code, group):
    """Answers of every finished code run's final weights and of the base (m = 1 and m = 3) on the first held-out
    problems (the group's "answer_problems"), 12 answers each (12 rollouts of one, or 4 of three), T = 0.7, fixed
    seeds: what the models write. Sampled once per run and cached in the group's "answers" file under out (a clone
    without the weights keeps what the cache holds)."""
    g = cfg[group]
    path = os.path.join(out, g["answers"])
    cache = json.load(open(path)) if os.path.isfile(path) else {}
    runs = [(f"{r['slug']}-s{r['seed']}", r["summary"]["metrics"]["m"], os.path.join(r["dir"], "ckpt.pt"))
            for rs in code.values() for r in rs]
    if runs:
        first = next(iter(code.values()))[0]
        base = os.path.join(out, "runs", g["dir"], "base", *first["summary"]["init"].split(os.sep)[-2:])
        runs += [("base-m1", 1, base), ("base-m3", 3, base)]
    task = code_task(cfg, group)
    problems = task.problems("test", g["answer_problems"], seed=0)
    todo = [(name, m, ckpt) for name, m, ckpt in runs if name not in cache and os.path.isfile(ckpt)]
    for name, m, ckpt in todo:
        cache[name] = {"m": m, "answers": sample_answers(ckpt, task, problems, m, 12 // m, stream=8)}
    if todo:
        cache["targets"] = [[p.target, p.family] for p in problems]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump(cache, f, indent=1)
    return cache


def _path(problem, route):
    """Cells (row, col) visited by a route from S, stopping at E or the budget; None if not a move string."""
    from tasks.maze import MOVES, ROUTE
    if not route or not ROUTE.fullmatch(route):
        return None
    lay = problem.layout
    pos, cells = lay.start, [divmod(lay.start, lay.W)]
    for mv in route[:problem.budget]:
        pos = lay.step[pos][MOVES.index(mv)]
        cells.append(divmod(pos, lay.W))
        if pos == lay.exit:
            break
    return cells


def routes_figure(data, path):
    """One row per maze; columns GRPO start / middle / end, then VPO's. Each answer a coloured route (distinct
    routes in distinct colours, offset a little so overlapping ones stay visible); the panel title counts
    the answers written (of the slots sampled), the distinct ones, those reaching E, and the best w*ᵀr."""
    from tasks.maze import MazeProblem
    task = get_task("maze")
    problems = [MazeProblem(grid, budget) for grid, budget in data["problems"]]
    columns = [(slug, stage) for slug in ("grpo", "vpo") for stage in ("start", "middle", "end")
               if stage in data["arms"].get(slug, {})]
    fig, axes = plt.subplots(len(problems), len(columns), figsize=(2.6 * len(columns), 3.0 * len(problems)),
                             squeeze=False)
    w = np.asarray(task.deploy_weights)
    for i, problem in enumerate(problems):
        rows = problem.grid.split("\n")
        image = np.array([[plt.matplotlib.colors.to_rgb(MAZE_COLOURS[ch]) for ch in row] for row in rows])
        for c, (slug, stage) in enumerate(columns):
            ax = axes[i][c]
            entry = data["arms"][slug][stage]
            ax.imshow(image, interpolation="nearest")
            answers = entry["answers"][i]
            distinct = sorted({a for a in answers if a}, key=answers.index)
            reached, best = set(), 0.0
            for d, route in enumerate(distinct):
                cells = _path(problem, route)
                if cells is None:
                    continue
                vector = task.score(problem, route)
                best = max(best, float(vector @ w))
                if vector[0] >= 1:
                    reached.add(route)
                off = (d - (len(distinct) - 1) / 2) * 0.5 / max(len(distinct), 1)
                ys, xs = zip(*cells)
                ax.plot(np.array(xs) + off, np.array(ys) + off, color=plt.cm.tab10(d % 10), lw=1.6, alpha=0.85)
            ax.set_xticks([])
            ax.set_yticks([])
            written = sum(bool(a) for a in answers)
            ax.set_title(f"{slug.upper()} {stage} (step {entry['step']})\n{written}/{len(answers)} written, "
                         f"{len(distinct)} distinct, {len(reached)} reach E, best {best:.2f}", fontsize=7)
    fig.suptitle("The same held-out mazes: answers as routes (S green, E red, gold yellow, diamonds blue, lava "
                 "orange, walls dark)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def steps_figure(runs, bases, path, suptitle, key="pooled_best@k"):
    """The headline: best@k against k at each evaluation step, one panel per step, every arm side by side
    (mean ± std over seeds), the base dashed in every panel."""
    steps = sorted({s for rs in runs.values() for s in eval_steps(rs)})
    fig, axes = plt.subplots(1, len(steps), figsize=(4.2 * len(steps), 3.9), squeeze=False, sharey=True)
    for ax, step in zip(axes[0], steps):
        for i, (label, rs) in enumerate(runs.items()):
            ms = [at_step(r, step) for r in rs if at_step(r, step)]
            if not ms:
                continue
            ks = [k for k in KS if value(ms[0], key, k) is not None]
            ys = np.array([[value(m, key, k) for k in ks] for m in ms], dtype=float)
            mu, sd = ys.mean(axis=0), ys.std(axis=0)
            ax.plot(ks, mu, marker="o", color=f"C{i}", label=f"{label} ({len(ms)})")
            ax.fill_between(ks, mu - sd, mu + sd, color=f"C{i}", alpha=0.15)
        for style, m in ((":", 1), ("--", 3)):
            if bases.get(m):
                ks = [k for k in KS if value(bases[m], key, k) is not None]
                ax.plot(ks, [value(bases[m], key, k) for k in ks], style, color="gray", label=f"base, m={m}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(KS), [str(k) for k in KS])
        _label(ax, f"step {step}", "k (answers)")
    axes[0][0].set_ylabel({"pooled_best@k": "pooled best@k", "best@k": "best@k (whole rollouts)",
                           "pass@k": "pass@k (whole rollouts)", "pooled_pass@k": "pooled pass@k"}.get(key, key))
    _save(fig, axes[0][0], path, suptitle)


def search_figure(found, budgets, path, suptitle):
    """Problems solved against the budget (answers), for the evolutionary search (solid, o) and sampling with the
    same budget (dashed, x), one colour per arm: left, the mean over seeds (the range shaded); right, the problems
    some seed solved."""
    from results.search_jobs import NAMES, label, solved_within
    from search import solved_by_budget
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 3.9), sharey=True)
    for kind, style, marker in (("evolve", "-", "o"), ("sample", "--", "x")):
        for slug, rs in found[kind].items():
            colour, name = f"C{list(NAMES).index(slug)}", f"{label(kind, slug)} ({len(rs)})"
            counts = np.array([[solved_by_budget(r["results"], budgets)[b] for b in budgets] for r in rs])
            axes[0].plot(budgets, counts.mean(0), style, marker=marker, color=colour, label=name)
            axes[0].fill_between(budgets, counts.min(0), counts.max(0), color=colour, alpha=0.1)
            union = [len(set().union(*(solved_within(r, b) for r in rs))) for b in budgets]
            axes[1].plot(budgets, union, style, marker=marker, color=colour, label=name)
    for ax, title in zip(axes, ("mean over seeds (range shaded)", "solved by some seed")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(budgets), [str(b) for b in budgets])
        _label(ax, title, "budget (answers per problem)")
    axes[0].set_ylabel("problems solved")
    _save(fig, axes[0], path, suptitle)


def code_figures(cfg, out, group, key):
    """The figures of one code plan (its group's runs and its search), named by the group's "files" tag."""
    from results.search_jobs import read_searches
    code, g = (finished_runs(cfg, out, group), cfg[group]) if group in cfg else ({}, {})
    names, tag = [], g.get("files", "code")
    title = "code, plan v2, replicate weights" if g.get("units") else "code"
    if code:
        for metric, what in (("pass@k", "pass@k over whole rollouts"), ("pooled_pass@k", "pooled pass@k"),
                             ("best@k", "best@k (tests passed) over whole rollouts")):
            names.append(f"{metric.replace('@', '_at_')}_steps_{tag}.png")
            steps_figure(code, base_metrics(code), os.path.join(out, names[-1]), f"{title}: {what} at each "
                         "evaluation step (held-out problems, mean ± std over seeds)", key=metric)
        names.append(f"training_{tag}.png")
        training_figure(code, os.path.join(out, names[-1]), f"{title}: training curves (mean over seeds)")
    found, hard = read_searches(cfg, out, key)
    if hard and any(found.values()):
        names.append(f"search_{tag}.png")
        search_figure(found, list(cfg[key]["budgets"]), os.path.join(out, names[-1]),
                      f"{title}: evolutionary search vs sampling on the {len(hard['problems'])} hardest held-out "
                      "problems" + (" (stopped search, a record)" if cfg[key].get("stopped") else ""))
    return names


def write_figures(cfg, out, records):
    """Every figure results.md links (and the README shows). records: the maze's experiments of record
    (report_review.maze_records), each drawn by compare_figures as best_at_k_NAME.png and over_training_NAME.png.
    -> their file names."""
    names, runs = [], records.get("maze_v3", {})
    if runs:
        steps_figure(runs, base_metrics(runs), os.path.join(out, "best_at_k_steps_maze.png"),
                     "maze: pooled best@k at each evaluation step (held-out mazes, mean ± std over seeds)")
        training_figure(runs, os.path.join(out, "training_maze.png"), "maze: training curves (mean over seeds)")
        names += ["best_at_k_steps_maze.png", "training_maze.png"]
    bases = base_metrics(records.get("maze_rerun", runs))   # the review's records start from the rerun's base
    for name, rs in records.items():
        names += compare_figures(rs, base_metrics(rs) if name == "maze_v3" else bases, out,
                                 f"{name}: {', '.join(rs)}", tag=f"_{name}")
    pools = {label: rs[0]["summary"]["pools"] for label, rs in runs.items() if label in ("GRPO", "VPO")}
    if len(pools) == 2:
        plot_scatter(pools, get_task("maze"), os.path.join(out, "scatter_maze.png"),
                     "maze: answers of GRPO vs VPO (seed 0, end of training) on held-out mazes")
        names.append("scatter_maze.png")
    data = route_answers(cfg, out, runs) if runs else None
    if data:
        routes_figure(data, os.path.join(out, "routes_maze.png"))
        names.append("routes_maze.png")
    for group, key in CODE_PLANS:
        names += code_figures(cfg, out, group, key)
    points = geometry_points(records.get("maze_geometry", {}), cfg["geometry"]["steps"]) if "geometry" in cfg else []
    if points:
        dimensions_figure(points, code_point(cfg, out), os.path.join(out, "dimensions_maze.png"),
                          "VPO's lead over GRPO against the reward dimensions it sees (maze geometries; code)")
        names.append("dimensions_maze.png")
    logs = {label: [{"log": read_jsonl(os.path.join(out, "pilot", name, "log.jsonl"))}] for label, name in
            (("VPO, one shared budget (v2)", "vpo-before"), ("VPO, every answer its own room", "vpo-after"))
            if os.path.isfile(os.path.join(out, "pilot", name, "log.jsonl"))}
    if logs:
        training_figure(logs, os.path.join(out, "answer_room_maze.png"), "maze, VPO (pilot seed 99): answer slots "
                        "written and their length", keys=TRAINING[4:])
        names.append("answer_room_maze.png")
    return names


def dimensions_figure(points, code, path, suptitle, k=48):
    """VPO's lead against the geometry of the reward dimensions it sees (results/dimensions.py): one point per
    setting at the base answers' mean pairwise correlation (left) and effective rank over dimensions (right), its
    seeds' differences as dots and their mean as a marker; the code task's point, a different metric, in grey."""
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.2), squeeze=False)
    for col, (name, xlabel) in enumerate((("dim_corr", "mean pairwise correlation of the dimensions (base answers)"),
                                          ("eff_rank", "effective rank / dimensions (base answers)"))):
        ax = axes[0][col]
        for i, p in enumerate(points + ([code] if code else [])):
            if not p["base"] or not p["d"][k] or p["base"].get(name) is None:
                continue
            x = p["base"][name] / (p["base"]["varying"] if name == "eff_rank" else 1)
            colour = "0.5" if p is code else f"C{i}"
            ax.scatter([x] * len(p["d"][k]), p["d"][k], color=colour, s=12, alpha=0.5)
            ax.scatter([x], [np.mean(p["d"][k])], color=colour, s=60, marker="D", label=p["label"])
        ax.axhline(0.0, color="0.7", lw=0.8)
        _label(ax, f"VPO − GRPO at k = {k} (seeds: dots; mean: diamond)", xlabel)
    _save(fig, axes[0][0], path, suptitle)


def compare_figures(runs, bases, out, title, key="pooled_best@k", tag=""):
    """best_at_k.png: pooled best@k against k at the last step; over_training.png: pooled best@k at the largest k
    along training (step 0: the warm start), for results/compare.py (and for results.md, with the tag before .png).
    Each run a faint line, the mean bold. -> the file names."""
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
                xs = ([0] if base else []) + eval_steps(rs)
                lines = [[value(base if s == 0 else at_step(r, s), key, largest) for s in xs] for r in rs
                         if all(s == 0 or at_step(r, s) for s in xs)]
                label = arm
            for line in lines:
                ax.plot(xs, line, color=f"C{i}", alpha=0.3, lw=1)
            ax.plot(xs, np.mean(lines, axis=0), "o-", color=f"C{i}", lw=2.5, label=f"{label} (mean of {len(lines)})")
        if name == "best_at_k":
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(k) for k in xs])
        _label(ax, f"{title}\n" + (f"{key} at the last step" if name == "best_at_k" else
                                 f"{key.replace('@k', f'@{largest}')} along training"), xlabel)
        _save(fig, ax, os.path.join(out, f"{name}{tag}.png"))
    return [f"best_at_k{tag}.png", f"over_training{tag}.png"]


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

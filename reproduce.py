"""
Reproduce the paper's comparison on our maze and code tasks, then the "unlocks problems" search experiment.

    python reproduce.py            # full: 2 tasks x 4 methods x 3 seeds, about an hour on a 2-core CPU
    python reproduce.py --quick    # a few minutes: small steps, 2 seeds, same machinery
    python reproduce.py --only maze --seeds 0 1 2 3 4

Per task, one warm-start base (train.py's cache) is shared by every run: GRPO and random-weight GRPO with the
answer budget matched to VPO (--match_budget: m x the rollouts of one answer), Multi-RLVR and VPO with m = 3.
Each run is train.py itself, evaluated on the same held-out problems (best@k for k = 3..48 answers).
Then, on the code task, the evolutionary search (search.py) runs from the seed-0 checkpoint of each method on
the held-out problems that no checkpoint solved in its evaluation pool of answers.

Resumable: a finished run (summary.json present) is skipped, an interrupted one resumed from its checkpoint,
and the tables and figures are rewritten from whatever has finished. Output in --out (default results/):
results.md (tables), best_at_k_<task>.png, pass_at_k_code.png, diversity_<task>.png, scatter_<task>.png,
evolve_code.json; the runs themselves (checkpoints, logs) under results/runs/.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import train
from model import load_checkpoint
from plots import plot_best_at_k, plot_scatter, read_jsonl, smooth
from search import evolve, solved_by_budget
from tasks import get_task

METHODS = {  # label: train.py flags
    "GRPO (matched)": ["--algo", "grpo", "--match_budget"],
    "Random-weight GRPO (matched)": ["--algo", "random_weight", "--match_budget"],
    "Multi-RLVR": ["--algo", "multi_rlvr"],
    "VPO": ["--algo", "vpo"],
}
FULL = {"steps": 80, "seeds": [0, 1, 2], "eval_problems": 64, "sft_steps": 500,
        "evolve_budget": {"answers": 384, "samples": 128}}
QUICK = {"steps": 6, "seeds": [0, 1], "eval_problems": 8, "sft_steps": 30, "evolve_budget": {"answers": 24, "samples": 8},
         "extra": ["--n_layer", "2", "--n_embd", "64", "--batch_size", "2", "--group_size", "4", "--eval_answers", "48"]}


def run_name(label, seed):
    return f"{METHODS[label][1]}-s{seed}"


def train_one(task, label, seed, cfg, runs_dir, quiet):
    """train.py for one (task, method, seed); skipped if finished, resumed if interrupted. -> summary dict."""
    name = run_name(label, seed)
    directory = os.path.join(runs_dir, task, name)
    summary = os.path.join(directory, "summary.json")
    if not os.path.isfile(summary):
        argv = ["--task", task, "--seed", str(seed), "--steps", str(cfg["steps"]), "--sft_steps", str(cfg["sft_steps"]),
                "--eval_problems", str(cfg["eval_problems"]), "--eval_every", "0", "--out_dir", os.path.join(runs_dir, task),
                "--run_name", name, *METHODS[label], *cfg.get("extra", [])]
        if quiet:
            argv.append("--quiet")
        if os.path.isfile(os.path.join(directory, "ckpt.pt")):
            argv.append("--resume")
        elif os.path.isdir(directory):
            argv.append("--overwrite")
        print(f"== {task} / {label} / seed {seed}", flush=True)
        if train.main(argv) != 0:
            raise SystemExit(f"train.py failed for {task} {label} seed {seed}")
    with open(summary) as f:
        return json.load(f)


def mean_std(values):
    values = np.asarray(values, dtype=float)
    return values.mean(axis=0), values.std(axis=0)


def slope(ks, values):
    """Least-squares slope of best@k against log2 k: how much each doubling of the answer budget buys."""
    return float(np.polyfit(np.log2(ks), values, 1)[0])


def task_tables(task, summaries, out):
    """Markdown tables and figures for one task. summaries: {label: [summary per seed]}."""
    labels = [label for label in METHODS if summaries.get(label)]
    first = summaries[labels[0]][0]
    ks = sorted(set.intersection(*(set(map(int, r["metrics"]["best@k"])) for lb in labels for r in summaries[lb])))
    lines = [f"### {task}: best@k on {first['metrics']['problems']} held-out problems "
             f"(mean ± std over seeds; k counts answers)", "",
             "| method | seeds | " + " | ".join(f"k={k}" for k in ks) + " | slope per doubling | E_w[best@48] | "
             "diversity | train s/run |", "|---" * (len(ks) + 6) + "|"]
    curves, pass_curves = {}, {}
    for label in labels:
        runs = summaries[label]
        best = np.array([[r["metrics"]["best@k"][str(k)] for k in ks] for r in runs])
        mu, sd = mean_std(best)
        slopes = [slope(ks, b) for b in best]
        ew = [r["metrics"]["E_w[best@k]"][str(ks[-1])] for r in runs]
        div = [r["metrics"]["diversity"] for r in runs]
        cells = " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(mu, sd))
        lines.append(f"| {label} | {len(runs)} | {cells} | {np.mean(slopes):.3f} ± {np.std(slopes):.3f} | "
                     f"{np.mean(ew):.3f} ± {np.std(ew):.3f} | {np.mean(div):.3f} | "
                     f"{np.mean([r['train_seconds'] for r in runs]):.0f} |")
        curves[label] = (ks, mu, sd)
        if "pass@k" in first["metrics"]:
            pass_curves[label] = (ks, *mean_std([[r["metrics"]["pass@k"][str(k)] for k in ks] for r in runs]))
    for label, m in (("GRPO (matched)", 1), ("VPO", 3)):  # the shared base, sampled as each method samples
        base = summaries[label][0].get("base_metrics") if summaries.get(label) else None
        if base:
            b = [base["best@k"][str(k)] for k in ks]
            lines.append(f"| base (warm start), m={m} | - | " + " | ".join(f"{v:.3f}" for v in b) + f" | "
                         f"{slope(ks, b):.3f} | {base['E_w[best@k]'][str(ks[-1])]:.3f} | {base['diversity']:.3f} | - |")
    plot_best_at_k(curves, os.path.join(out, f"best_at_k_{task}.png"), title=f"{task}: best@k (mean ± std over seeds)")
    if task == "code":
        plot_best_at_k(pass_curves, os.path.join(out, "pass_at_k_code.png"), key="pass@k",
                       title="code: pass@k (all shown tests), mean ± std over seeds")
        lines += ["", "pass@k (code; all 8 shown tests pass), mean ± std over seeds:", "",
                  "| method | " + " | ".join(f"k={k}" for k in ks) + " |", "|---" * (len(ks) + 1) + "|"]
        lines += [f"| {label} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(*pass_curves[label][1:])) + " |"
                  for label in labels]
    plot_diversity(task, summaries, labels, out)
    pools = {label: summaries[label][0]["pools"] for label in ("GRPO (matched)", "VPO") if summaries.get(label)}
    if pools:
        plot_scatter(pools, get_task(task), os.path.join(out, f"scatter_{task}.png"),
                     f"{task}: answers of GRPO vs VPO (seed 0) on held-out problems")
    return lines


def plot_diversity(task, summaries, labels, out):
    """Reward-space diversity of each step's rollouts, mean over seeds, smoothed."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for i, label in enumerate(labels):
        logs = [read_jsonl(os.path.join(r["args"]["out_dir"], r["args"]["run_name"], "log.jsonl"))
                for r in summaries[label]]
        n = min(len(log) for log in logs)
        y = np.mean([[row["diversity"] for row in log[:n]] for log in logs], axis=0)
        ax.plot(np.arange(1, n + 1), smooth(y), label=label, color=f"C{i}")
    ax.set_xlabel("RL step")
    ax.set_ylabel("diversity of a group's answers (mean L1)")
    ax.set_title(f"{task}: reward-space diversity during training")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"diversity_{task}.png"), dpi=110)
    plt.close(fig)


def evolve_experiment(summaries, cfg, out):
    """The paper's "unlocks problems" experiment in miniature: on the held-out code problems that no seed-0
    checkpoint solved in its evaluation pool, an evolutionary search from each checkpoint, with the same budget
    counted two ways: model samples (the paper's OpenEvolve iterations) and answers written."""
    path = os.path.join(out, "evolve_code.json")
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    runs = {label: summaries[label][0] for label in METHODS if summaries.get(label)}
    n = min(len(r["metrics"]["solved_per_problem"]) for r in runs.values())
    hard = [i for i in range(n) if all(r["metrics"]["solved_per_problem"][i] == 0 for r in runs.values())]
    task = get_task("code")
    problems = task.problems("test", n, seed=0)
    result = {"hard_problems": hard, "units": {}}
    for unit, budget in cfg["evolve_budget"].items():
        budgets = sorted({b for b in (8, 16, 32, 64, 128, 256) if budget / 8 <= b < budget} | {budget})
        entry = result["units"][unit] = {"budget": budget, "budgets": budgets, "methods": {}}
        for label, r in runs.items():
            t0 = time.perf_counter()
            model, state = load_checkpoint(os.path.join(r["args"]["out_dir"], r["args"]["run_name"], "ckpt.pt"))
            m = train.answers_per_rollout(argparse.Namespace(**state["args"]))
            res = evolve(model.eval(), task, [problems[i] for i in hard], m, budget, unit) if hard else []
            entry["methods"][label] = {
                "solved_by_budget": {str(b): c for b, c in solved_by_budget(res, budgets).items()},
                "solved": [hard[i] for i, x in enumerate(res) if x["solved_at"] is not None],
                "used": [x["used"] for x in res], "seconds": round(time.perf_counter() - t0, 1)}
            print(f"evolve ({unit}) {label}: {entry['methods'][label]['solved_by_budget']}", flush=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    return result


def evolve_table(result):
    lines = [f"### code: evolutionary search on the {len(result['hard_problems'])} held-out problems that no "
             f"seed-0 checkpoint solved in its evaluation pool", ""]
    for unit, entry in result["units"].items():
        budgets = entry["budgets"]
        lines += [f"Problems solved within a budget of {unit}:", "",
                  "| method (seed 0) | " + " | ".join(f"≤{b} {unit}" for b in budgets) + " | solved problems |",
                  "|---" * (len(budgets) + 2) + "|"]
        for label, r in entry["methods"].items():
            lines.append(f"| {label} | " + " | ".join(str(r["solved_by_budget"][str(b)]) for b in budgets)
                         + f" | {r['solved']} |")
        lines.append("")
    return lines


def compute_seconds(runs_dir):
    """Seconds spent in the runs themselves (warm starts, RL, evaluation), read back from their files."""
    total = 0.0
    for root, _, files in os.walk(runs_dir):
        if "summary.json" in files:
            with open(os.path.join(root, "summary.json")) as f:
                s = json.load(f)
            total += s["train_seconds"] + s["eval_seconds"]
        elif "log.jsonl" in files and os.path.basename(os.path.dirname(root)) == "base":
            total += read_jsonl(os.path.join(root, "log.jsonl"))[-1]["seconds"]
    return total


def reproduce(tasks, cfg, out, title, quiet=False):
    """Train and evaluate every (task, method, seed), write results.md and the figures; -> the markdown lines."""
    runs_dir = os.path.join(out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    t0 = time.perf_counter()
    lines = [f"# Reproduction: `{title}`", ""]
    all_summaries = {}
    for task in tasks:
        summaries = {label: [] for label in METHODS}
        for seed in cfg["seeds"]:  # seed-major: every method has results early if the session is cut short
            for label in METHODS:
                summaries[label].append(train_one(task, label, seed, cfg, runs_dir, quiet))
                with open(os.path.join(out, "results.md"), "w") as f:
                    f.write("\n".join(lines + task_tables(task, summaries, out)) + "\n")
        lines += task_tables(task, summaries, out) + [""]
        all_summaries[task] = summaries
    if "code" in all_summaries:
        lines += evolve_table(evolve_experiment(all_summaries["code"], cfg, out)) + [""]
    lines.append(f"Compute in the runs (warm starts, RL, evaluation; read from their files): "
                 f"{compute_seconds(runs_dir):.0f} s. This invocation: {time.perf_counter() - t0:.0f} s "
                 f"(finished runs are not re-run).")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a few minutes: tiny steps, 2 seeds")
    ap.add_argument("--out", default=None, help="output directory (default results/, or results-quick/)")
    ap.add_argument("--only", choices=("maze", "code"), default=None, help="one task only")
    ap.add_argument("--seeds", type=int, nargs="+", default=None, help="RL seeds (default 0 1 2)")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    cfg["seeds"] = args.seeds or cfg["seeds"]
    out = args.out or ("results-quick" if args.quick else "results")
    title = "python reproduce.py" + " ".join(["", *(argv if argv is not None else sys.argv[1:])])
    print("\n".join(reproduce([args.only] if args.only else ["maze", "code"], cfg, out, title, args.quiet)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

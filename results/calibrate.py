"""
Calibrating the code task's warm start: which task options, warm-start length and model size give a base that
solves some held-out problems and not others (pass@1 around 0.05-0.15, pass@48 around 0.4-0.7), so that RL has
something to improve and search has a hard remainder to work on.

    python -m results.calibrate                  # every configuration below not yet measured (resumable)
    python -m results.calibrate --only five-1500  # one configuration
    python -m results.calibrate --table          # print the table (docs/tasks.md holds a copy)
    python -m results.calibrate --templates      # what the shown tests pay for, per family, before and after
    python -m results.calibrate --audit          # what the reward on hidden tests pays the fitted programs
    python -m results.calibrate --families NAME --forms NAME   # per family: solved, and the forms of the answers

Each configuration trains a base from scratch with sft.train_base (the warm start every RL run uses) and evaluates
it at the listed supervised steps of its schedule (a mid-schedule row is not the same as a base trained to that
many steps: the cosine learning rate has not decayed yet) on the 64 held-out test problems (seed 0), 48 answers
per problem at T = 0.7, once as a single-answer model (m = 1, as GRPO samples) and once with m = 3 (as VPO does).
A row per (configuration, step, m) goes to results/calibration/code.jsonl as soon as it is measured; a
configuration whose final row is there is skipped. Checkpoints stay under out/calibration/ (not committed).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

from results import tables
from results.plan import read_jsonl_or_empty

CONFIGS = {
    # name: task options, supervised steps (batch 64, lr 2e-3), evaluation points along the schedule
    # the default before the calibration:
    "all-300": dict(task_opt=["families=all", "inputs=random"], steps=300, evals=(300,)),
    "all-3000": dict(task_opt=["families=all", "inputs=random"], steps=3000, evals=(500, 1000, 2000, 3000)),
    # at steps 500 and 1000 of all-3000 no `step` and no `on_remainder` problem was solved within 48 answers
    # (140 held-out problems): the five families without two affine branches
    "five-1500": dict(task_opt=["families=clamp+clip+distance+remainder+step3", "inputs=random"], steps=1500,
                      evals=(500, 1000, 1500)),
    # the configurations above were measured with the shown inputs of the generator before (inputs=random; step3
    # had two partial programs fewer then); the same warm start on the default shown inputs (inputs=distinct:
    # docs/tasks.md, "What the shown tests pay for"):
    "distinct-1500": dict(task_opt=["families=clamp+clip+distance+remainder+step3", "inputs=distinct"], steps=1500,
                          evals=(500, 1000, 1500)),
}
MODEL = dict(n_layer=4, n_head=4, n_embd=128, block_size=256)   # train.py's default GPT
PATH = os.path.join(os.path.dirname(__file__), "calibration", "code.jsonl")
KS = (1, 3, 6, 12, 24, 48)


def record(path, row):
    """Append one measured row to a jsonl file of results/calibration/."""
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def calibrate(name, cfg, out, problems_n=64, answers=48):
    import torch
    from evaluate import evaluate
    from model import GPTConfig
    from runs.cli import make_task
    from sft import SFTConfig, new_model, train_base
    from tasks import tokenizer as tok

    task = make_task("code", cfg["task_opt"])
    model_cfg = {**MODEL, **cfg.get("model", {})}
    config = GPTConfig(vocab_size=tok.vocab_size, **model_cfg)
    sft = SFTConfig(steps=cfg["steps"], batch_size=cfg.get("batch_size", 64), lr=cfg.get("lr", 2e-3),
                    num_answers=3, style="diverse")
    device = torch.device("cpu")
    model = new_model(config, 0, device)
    problems = task.problems("test", problems_n, seed=0)
    directory = os.path.join(out, name)
    os.makedirs(directory, exist_ok=True)
    t0 = time.perf_counter()

    def on_eval(step):
        for m in (1, 3):
            ks = [k for k in KS if k >= m]
            t = time.perf_counter()
            metrics, _ = evaluate(model, task, problems, m, ks, answers, 0.7)
            row = {"name": name, "task_opt": cfg["task_opt"], "model": model_cfg, "sft_steps": cfg["steps"],
                   "sft_batch_size": sft.batch_size, "sft_lr": sft.lr, "step": step, "m": m,
                   "params": model.num_params(), "train_seconds": round(time.perf_counter() - t0, 1),
                   "eval_seconds": round(time.perf_counter() - t, 1),
                   **{key: metrics[key] for key in ("pass@k", "pass_hidden@k", "best@k", "pooled_best@k",
                                                    "diversity", "valid_rate", "distinct_rate")}}
            record(PATH, row)
            print(f"{name} step {step} m={m}: pass@1/48 {metrics['pass@k'].get(1, float('nan')):.3f} / "
                  f"{metrics['pass@k'][48]:.3f}, hidden@48 {metrics['pass_hidden@k'][48]:.3f}, "
                  f"best@48 {metrics['best@k'][48]:.3f}", flush=True)

    evals = set(cfg["evals"])
    every = math.gcd(*evals)
    train_base(model, task, sft, directory, device, quiet=True, ckpt_every=0,
               on_eval=lambda s: on_eval(s) if s in evals else None, eval_every=every)
    on_eval(cfg["steps"])


FAMILIES_PATH = os.path.join(os.path.dirname(PATH), "families.jsonl")


def final_base(name, out, problems_n):
    """(model, task, problems): a configuration's final base, in eval mode, and the first problems_n held-out
    problems (seed 0) of its task."""
    import torch
    from runs.cli import load_model, make_task
    model = load_model(os.path.join(out, name, "ckpt.pt"), torch.device("cpu"))[0].eval()
    task = make_task("code", CONFIGS[name]["task_opt"])
    return model, task, task.problems("test", problems_n, seed=0)


def per_family(name, out, problems_n=256, answers=48):
    """The final base of a configuration, m = 1, on the first problems_n held-out problems: for each family, the
    fraction of its problems solved within `answers` answers (48 at T = 0.7, the evaluation's pool)."""
    from evaluate import evaluate
    model, task, problems = final_base(name, out, problems_n)
    metrics, _ = evaluate(model, task, problems, 1, [1, answers], answers, 0.7)
    row = {"name": name, "problems": problems_n, "answers": answers, "families": {}}
    for family in dict.fromkeys(p.family for p in problems):
        solved = [s > 0 for p, s in zip(problems, metrics["solved_per_problem"]) if p.family == family]
        row["families"][family] = {"problems": len(solved), "solved": float(np.mean(solved))}
    record(FAMILIES_PATH, row)
    print(json.dumps(row))


FORMS_PATH = os.path.join(os.path.dirname(PATH), "forms.jsonl")


def forms(name, out, problems_n=256, answers=12):
    """What the final base of a configuration writes: `answers` answers (m = 1, T = 0.7, one seed per problem, as
    results/figures.py samples answers_code.json) on each of the first problems_n held-out problems; per family,
    the share of the answers in each form of results.report.answer_form (three constant levels, abs, ...)."""
    import torch
    from results.report_code import FORMS, answer_form
    from runs.seeding import step_seed
    from sample import rollout
    model, task, problems = final_base(name, out, problems_n)
    with torch.no_grad():
        _, _, texts, _, _ = rollout(model, task, problems, 1, answers, 0.7, amp=False,
                                    seeds=[step_seed(0, 8, i) for i in range(len(problems))])
    row = {"name": name, "problems": problems_n, "answers": answers, "families": {}}
    for family in sorted({p.family for p in problems}):
        written = [a for i, p in enumerate(problems) if p.family == family
                   for t in texts[i * answers:(i + 1) * answers] for a in task.parse(t, 1) if a]
        row["families"][family] = {"problems": sum(p.family == family for p in problems), "answers": len(written),
                                   **{f: sum(answer_form(a) == f for a in written) / max(1, len(written))
                                      for f in FORMS}}
    record(FORMS_PATH, row)
    print(json.dumps(row))


def forms_table(rows, shown=("three levels", "abs", "remainder", "clip", "min/max")):
    return "\n".join(tables.table(["base", "family", "problems", "answers", *shown], [
        [r["name"], family, str(v["problems"]), str(v["answers"])] + [f"{v[f]:.2f}" for f in shown]
        for r in rows for family, v in r["families"].items()]))


def family_table(rows):
    names = sorted({f for r in rows for f in r["families"]})
    return "\n".join(tables.table(["base", "problems", *names], [[r["name"], str(r["problems"])] + [
        f"{r['families'][f]['solved']:.2f} ({r['families'][f]['problems']})" if f in r["families"] else "-"
        for f in names] for r in rows]))


def templates_table(n=500, seed=0):
    """tasks.templates.template_report on n held-out problems per family, for the shown inputs of the generator before
    (inputs=random) and of the default (inputs=distinct), every family of the grammar: a markdown table."""
    from tasks.code import CodeTask
    from tasks.templates import template_report
    lines = ["| family | inputs | template: mean tests passed | template: passes all | best partial: mean tests "
             "passed | constant: mean tests passed | distinct shown outputs |", "|---|---|---|---|---|---|---|"]
    reports = {inputs: template_report(CodeTask(families="all", inputs=inputs), n, seed)
               for inputs in ("random", "distinct")}
    for family in sorted(reports["distinct"]):
        for inputs, report in reports.items():
            r = report[family]
            lines.append(f"| {family} | {inputs} | {r['template']:.3f} | {r['template_all']:.3f} | "
                         f"{r['partial']:.3f} | {r['constant']:.3f} | {r['distinct']:.2f} |")
    return "\n".join(lines)


def audit_table(n=500, seed=0):
    """tasks.templates.audit of the reward on hidden tests (the default) on n held-out problems per family, every
    family of the grammar, the means on the shown tests (the reward=shown task's) beside: a markdown table."""
    from tasks.code import CodeTask
    from tasks.templates import audit
    keys = ("pieces", "lookup", "partial", "target", "pieces_all", "lookup_all", "pieces_shown", "lookup_shown",
            "partial_shown")
    lines = ["| family | constant pieces | lookup | best partial | target | constant pieces: whole reward | lookup: "
             "whole reward | shown: constant pieces | shown: lookup | shown: best partial |", "|---" * 10 + "|"]
    for family, r in sorted(audit(CodeTask(families="all"), n, seed).items()):
        lines.append(f"| {family} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")
    return "\n".join(lines)


def table(rows):
    lines = ["| configuration | options | model | SFT steps | at step | m | pass@1 | pass@48 | pass_hidden@48 | "
             "best@48 | valid |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (list(CONFIGS).index(r["name"]) if r["name"] in CONFIGS else 99, r["step"],
                                         r["m"])):
        p = r["pass@k"]
        p1 = p.get("1", p.get(1))
        lines.append(f"| {r['name']} | {' '.join(r['task_opt']) or '-'} | {r['model']['n_layer']}x"
                     f"{r['model']['n_embd']} | {r['sft_steps']} | {r['step']} | {r['m']} | "
                     f"{'-' if p1 is None else f'{p1:.3f}'} | {p['48']:.3f} | {r['pass_hidden@k']['48']:.3f} | "
                     f"{r['best@k']['48']:.3f} | {r['valid_rate']:.2f} |")
    return "\n".join(lines)


def figure(rows, path, chosen):
    """pass@k and pass_hidden@k against k of the chosen configuration's base at each evaluated step, m = 1 and m = 3;
    pass@48 of every configuration at its final step beside it."""
    from runs.plots import plt
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    mine = [r for r in rows if r["name"] == chosen]
    for ax, m in zip(axes[:2], (1, 3)):
        for i, step in enumerate(sorted({r["step"] for r in mine})):
            r = next((r for r in mine if r["step"] == step and r["m"] == m), None)
            if r is None:
                continue
            ks = [int(k) for k in r["pass@k"]]
            ax.plot(ks, list(r["pass@k"].values()), marker="o", color=f"C{i}", label=f"step {step}: pass@k")
            ax.plot(ks, list(r["pass_hidden@k"].values()), ":", color=f"C{i}", label=f"step {step}: pass_hidden@k")
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(KS), [str(k) for k in KS])
        ax.set_title(f"base '{chosen}', m = {m} (whole rollouts)", fontsize=10)
        ax.set_xlabel("k (answers)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    finals = [r for r in rows if r["step"] == r["sft_steps"]]
    names = list(dict.fromkeys(r["name"] for r in finals))
    for j, m in enumerate((1, 3)):
        ys = [next((r["pass@k"]["48"] for r in finals if r["name"] == n and r["m"] == m), 0.0) for n in names]
        axes[2].bar(np.arange(len(names)) + 0.4 * j - 0.2, ys, width=0.4, label=f"m = {m}")
    axes[2].set_xticks(range(len(names)), names, rotation=30, fontsize=8)
    axes[2].set_title("pass@48 of every configuration, end of its schedule", fontsize=10)
    axes[2].legend(fontsize=7)
    fig.suptitle("code task: the warm-started base on 64 held-out problems, 48 answers each, T = 0.7")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=sorted(CONFIGS), action="append", help="run this configuration (repeatable)")
    ap.add_argument("--out", default=os.path.join("out", "calibration"), help="where the bases are written")
    ap.add_argument("--table", action="store_true", help="print the tables of what is measured, run nothing")
    ap.add_argument("--templates", action="store_true",
                    help="print what a step program fitted to the shown tests scores against the partial programs, "
                         "per family, for inputs=random and inputs=distinct (500 held-out problems each), run nothing")
    ap.add_argument("--audit", action="store_true",
                    help="print what the reward on hidden tests (and on the shown ones) pays the constant-piece "
                         "program and the lookup fitted to the shown tests, per family (500 held-out problems each), "
                         "run nothing")
    ap.add_argument("--families", choices=sorted(CONFIGS), action="append",
                    help="per-family solve rates of this configuration's final base (repeatable)")
    ap.add_argument("--forms", choices=sorted(CONFIGS), action="append",
                    help="the forms of the answers this configuration's final base writes, per family (repeatable)")
    ap.add_argument("--figure", choices=sorted(CONFIGS), default=None,
                    help="draw results/calibration/base_pass_at_k_code_NAME.png for this configuration")
    args = ap.parse_args(argv)
    rows = read_jsonl_or_empty(PATH)
    if args.templates:
        print(templates_table())
        return 0
    if args.audit:
        print(audit_table())
        return 0
    if args.table:
        print("\n\n".join([table(rows), family_table(read_jsonl_or_empty(FAMILIES_PATH)),
                           forms_table(read_jsonl_or_empty(FORMS_PATH))]))
        return 0
    if args.figure:
        figure(rows, os.path.join(os.path.dirname(PATH), f"base_pass_at_k_code_{args.figure}.png"), args.figure)
        return 0
    if args.families or args.forms:
        for name in args.families or []:
            per_family(name, args.out)
        for name in args.forms or []:
            forms(name, args.out)
        return 0
    os.makedirs(os.path.dirname(PATH), exist_ok=True)
    for name in args.only or CONFIGS:
        cfg = CONFIGS[name]
        if any(r["name"] == name and r["step"] == cfg["steps"] for r in rows):
            print(f"{name}: measured, skipped")
            continue
        calibrate(name, cfg, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

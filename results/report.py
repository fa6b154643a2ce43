"""
results.md and the figures of the reproduction, read back from the finished runs of reproduce.py:
summary.json (the final evaluation; the base's where that run evaluated it), eval.jsonl (evaluations during
training), log.jsonl (one line per RL step), and the kept weights of the main runs (the route figure samples
them once and caches the answers in routes_maze.json, so a clone without the weights still draws it).

Numbers are means ± the population standard deviation (ddof 0) over RL seeds, and every table with a ± says so
under it; a single seed is shown alone.
"""
import json
import os

from results.dimensions import geometry_points
from results.plan import CODE_PLANS, KS, at_step, base_metrics, finished_runs, value
from results.report_code import code_section
from results.tables import (PAIRED_STD_NOTE, STD_NOTE, compute_seconds, first_metrics, other_table,  # noqa: F401
                            paired, paired_table, pm, scalar_step_table, step_table, table, verdict, wall_seconds)
from tasks import get_task


# ------------------------------------------------------------------------------------------------ report
def write_report(cfg, out, title, figures=True):
    """Rewrite out/results.md (and, with figures, the PNGs) from whatever has finished. -> the markdown lines."""
    main, baselines = finished_runs(cfg, out, "main"), finished_runs(cfg, out, "baselines")
    if figures:  # sample what the code runs write (cached), for the forms tables
        from results.figures import code_answers
        for group, _ in CODE_PLANS:
            if group in cfg and not cfg[group].get("frozen"):  # a frozen plan's answers: its committed cache
                code_answers(cfg, out, finished_runs(cfg, out, group), group)
    runs = {**main, **baselines}
    rooms = {name: get_task(name).answer_tokens for name in ("maze", "code")}
    lines = [f"# Reproduction v3: `{title}`", "",
             "Configuration, metrics and the deciding comparison: [PLAN.md](PLAN.md) (the maze) and "
             "[PLAN_CODE.md](PLAN_CODE.md) (code and its search), committed before these runs. Every number: mean "
             "± population std (ddof 0) over RL seeds (one shared warm start); the seeds column counts them. k "
             f"counts answers; every answer had its own room of {rooms['maze']} tokens on the maze and "
             f"{rooms['code']} on code.", ""]
    if runs:
        steps, need = cfg["main"]["steps"], len(cfg["main"]["seeds"])
        bases = {1: base_metrics(runs, "grpo"), 3: base_metrics(runs, "vpo")}
        lines += [f"## Maze (paper design, `routes` warm start): {steps} RL steps, {steps * 64:,} rollouts per arm",
                  "", f"Pooled best@k (the authors' definition: every answer of a maze in one pool) at each "
                  f"evaluation step, {first_metrics(runs)['problems']} held-out mazes:", ""]
        lines += step_table(runs, "pooled_best@k", KS, bases) + [""]
        lines += paired_table(runs, "VPO", "GRPO", "pooled_best@k", KS[1:], "pooled best@k", need)
        lines += ["Best@k over whole rollouts (k/m rollouts of m answers; equal to the pooled one when m = 1):", ""]
        lines += step_table(runs, "best@k", KS[1:], bases) + [""]
        lines += paired_table(runs, "VPO", "GRPO", "best@k", KS[1:], "whole-rollout best@k", need)
        lines += ["Diversity and the answers at each evaluation step (48 answers per maze):", ""]
        lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("valid_rate", None, "valid"),
                                          ("distinct_rate", None, "distinct"), ("pass@k", 48, "pass@48 (reach E)"),
                                          ("E_w[best@k]", 48, "E_w[best@48]"), ("pareto_frac", None, "Pareto frac.")],
                                   bases) + [""]
        for other in ("Max@k", "Multi-RLVR"):
            lines += paired_table(runs, "VPO", other, "pooled_best@k", (3, 12, 48), "pooled best@k", need)
        lines += ["The final evaluation in full:", ""]
        lines += other_table(runs, "maze", [("base, m=1", bases[1]), ("base, m=3", bases[3])]) + [""]
    for group, key in CODE_PLANS:
        lines += code_section(cfg, out, group, key)
    lines += review_section(cfg, out)
    lines += [f"Compute inside the runs (warm start, RL, evaluations; read from their files): "
              f"{compute_seconds(out):.0f} s; wall-clock time of reproduce.py: {wall_seconds(out):.0f} s "
              f"(runs two at a time, one torch thread each; over every invocation that ran jobs).", ""]
    if figures:
        from results.figures import write_figures
        lines += ["Figures: " + ", ".join(f"[{name}]({name})" for name in write_figures(cfg, out, runs))]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def rerun_runs(cfg, out):
    """The finished rerun of v3, labelled "GRPO (rerun)", ...: the reference arms of every review reading
    (PLAN_REVIEW.md, amendment: a replicate of v3 on today's code, not v3 itself)."""
    return {f"{label} (rerun)": rs for label, rs in finished_runs(cfg, out, "rerun").items()} if "rerun" in cfg else {}


def review_section(cfg, out):
    """results/PLAN_REVIEW.md's readings from whatever has finished: the rerun of v3 by v3's rule, VPO against
    matched GRPO, against random-weight GRPO and the other ablations, early-stopped GRPO, the coverage of every
    arm's final answers, and VPO under each reward geometry against the rerun's GRPO at step 750."""
    from results.review_jobs import read_review, stop_step
    groups = {g: finished_runs(cfg, out, g) for g in ("matched", "ablations", "geometry") if g in cfg}
    ref = rerun_runs(cfg, out)
    if not ref and not any(groups.values()):
        return []
    lines = ["## The reviewer's questions (maze; [PLAN_REVIEW.md](PLAN_REVIEW.md))", ""]
    need = len(cfg["rerun"]["seeds"])
    bases = {1: base_metrics(ref, "grpo"), 3: base_metrics(ref, "vpo")}
    if ref:
        lines += ["The rerun of v3 (PLAN_REVIEW.md, amendment: v3's plan again on today's code, weights kept; a second "
                  "realization, not v3's runs): pooled best@k at each evaluation step:", ""]
        lines += step_table(ref, "pooled_best@k", KS, bases) + [""]
        for other, ks in (("GRPO", KS[1:]), ("Max@k", (3, 12, 48)), ("Multi-RLVR", (3, 12, 48))):
            lines += paired_table(ref, "VPO (rerun)", f"{other} (rerun)", "pooled_best@k", ks, "pooled best@k", need)
        compare = os.path.join(out, "runs", cfg["rerun"].get("dir", "maze"), "compare.json")
        if os.path.isfile(compare):
            with open(compare) as f:
                first = {name: files for name, files in json.load(f).items()}
            lines += ["Against v3's committed files, key for key (timing and the valid-answer statistics aside; "
                      "results/review_jobs.py): " + "; ".join(
                          f"{name}: " + ", ".join(f"{file} {'equal' if d == 'equal' else f'first differs at row {d[0]}'}"
                                                  for file, d in files.items()) for name, files in first.items()), ""]
    both = {**ref, **groups.get("matched", {}), **groups.get("ablations", {})}
    if groups.get("matched"):
        lines += ["Pooled best@k of GRPO with matched answers (24 rollouts of one answer) at each evaluation step:", ""]
        lines += step_table(groups["matched"], "pooled_best@k", KS, bases) + [""]
        lines += paired_table(both, "VPO (rerun)", "matched GRPO", "pooled_best@k", KS[1:], "pooled best@k", need)
    if groups.get("ablations"):
        lines += ["Pooled best@k of the ablations at each evaluation step:", ""]
        lines += step_table(groups["ablations"], "pooled_best@k", KS, bases) + [""]
        lines += paired_table(both, "VPO (rerun)", "random-weight GRPO", "pooled_best@k", (3, 12, 48), "pooled best@k",
                              need)
    validation = read_review(cfg, out, "validation.json")
    rows = []
    for group, label, runs in (("rerun", "GRPO", ref.get("GRPO (rerun)", [])),
                               ("matched", "matched GRPO", groups.get("matched", {}).get("matched GRPO", []))):
        for v in validation.get(group, {}).get(label, []):
            run = next((r for r in runs if r["seed"] == v["seed"]), None)
            vpo = next((r for r in ref.get("VPO (rerun)", []) if r["seed"] == v["seed"]), None)
            if run and vpo:
                t = stop_step(v)
                final, stopped = vpo["summary"]["metrics"], at_step(run, t)
                ds = [value(final, "pooled_best@k", k) - value(stopped, "pooled_best@k", k) for k in (3, 12, 48)]
                rows.append([label + (" (rerun)" if group == "rerun" else ""), str(v["seed"]), str(t)]
                            + [f"{d:+.3f}" for d in ds])
    if rows:
        lines += ["Early stopping: the step of highest pooled best@48 on the validation mazes (64-127), and the "
                  "rerun's VPO at step 1000 minus that GRPO on the 64 test mazes, pooled best@k:", ""]
        lines += table(["method", "seed", "stopped at", "VPO − it, k=3", "k=12", "k=48"], rows) + [""]
    coverage = read_review(cfg, out, "coverage.json")
    rows = []
    for group in ("rerun", "matched", "ablations"):
        for label, cs in coverage.get(group, {}).items():
            best = [c["best@k"].get("48", {}) for c in cs]
            rows.append([label + (" (rerun)" if group == "rerun" else ""), str(len(cs))] + [pm([c["answers"][k] for c in cs]) for k in ("exit", "gold", "diamonds",
                                                                                           "both", "no item")]
                        + [pm([c["pools"]["gold and diamonds"] for c in cs]),
                           pm([c.get("completions_two_classes") for c in cs]),
                           pm([b.get("gold") for b in best]), pm([b.get("diamonds") for b in best])])
    if rows:
        lines += ["What the final answers cover (results/coverage.py; per answer: reaches the exit, with gold, with "
                  "diamonds, with both, with no item; pools with a gold and a diamond answer; completions in two or "
                  "more classes; the best of 48 answers' gold and diamonds):", ""]
        lines += table(["method", "seeds", "exit", "gold", "diamonds", "both", "no item", "pools gold & diamonds",
                        "completions ≥ 2 classes", "best@48 gold", "best@48 diamonds"], rows) + [""]
    points = geometry_points(cfg, out)
    if points:
        rows = [[p["label"], str(len(p["d"][3]))] + [pm(p["d"][k]) for k in (3, 12, 48)]
                + [pm([x["dim_corr"] for x in p["policy"]]), pm([x["eff_rank"] for x in p["policy"]], 2),
                   f"{p['base']['dim_corr']:.3f} / {p['base']['eff_rank']:.2f}" if p["base"] else "-"]
                for p in points]
        lines += [f"VPO under each reward geometry minus the rerun's GRPO of the same seed at step "
                  f"{cfg['geometry']['steps']}, pooled best@k, and the dimensions VPO saw (mean pairwise correlation, "
                  "effective rank) over the policy's and the base's held-out answers (results/dimensions.py):", ""]
        lines += table(["VPO", "seeds", "− GRPO, k=3", "k=12", "k=48", "policy: correlation", "policy: eff. rank",
                        "base: correlation / eff. rank"], rows, PAIRED_STD_NOTE) + [""]
    return lines

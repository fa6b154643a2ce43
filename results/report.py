"""
results.md and the figures of the reproduction, read back from the finished runs of reproduce.py:
summary.json (the final evaluation; the base's where that run evaluated it), eval.jsonl (evaluations during
training), log.jsonl (one line per RL step), and the kept weights of the main runs (the route figure samples
them once and caches the answers in routes_maze.json, so a clone without the weights still draws it). With the
figures it also writes hard_targets.json beside each search's hard.json (results/search_jobs.py write_targets).

Numbers are means ± the population standard deviation (ddof 0) over RL seeds, and every table with a ± says so
under it; a single seed is shown alone.
"""
import os

from results.plan import CODE_PLANS, KS, base_metrics, finished_runs
from results.report_code import code_section, superseded_lines
from results.report_review import review_section
from results.tables import (compute_seconds, first_metrics, other_table, paired_table, scalar_step_table, step_lines,
                            wall_seconds)
from results.verdicts import verdicts_section
from tasks import get_task


# ------------------------------------------------------------------------------------------------ report
def write_report(cfg, out, title, figures=True):
    """Rewrite out/results.md (and, with figures, the PNGs) from whatever has finished. -> the markdown lines."""
    main, baselines = finished_runs(cfg, out, "main"), finished_runs(cfg, out, "baselines")
    if figures:  # sample what the code runs write (cached), for the forms tables; the hard problems' targets
        from results.figures import code_answers
        from results.search_jobs import write_targets
        write_targets(cfg, out)
        for group, _ in CODE_PLANS:
            if group in cfg and cfg[group].get("answers"):
                code_answers(cfg, out, finished_runs(cfg, out, group), group)
    runs = {**main, **baselines}
    rooms = {name: get_task(name).answer_tokens for name in ("maze", "code")}
    lines = [f"# Reproduction v3: `{title}`", "",
             "Configuration, metrics and the deciding comparison: [PLAN.md](PLAN.md) (the maze) and "
             "[PLAN_CODE.md](PLAN_CODE.md) (code and its search), committed before these runs. Every number: mean "
             "± population std (ddof 0) over RL seeds (one shared warm start); the seeds column counts them. k "
             f"counts answers; every answer had its own room of {rooms['maze']} tokens on the maze and "
             f"{rooms['code']} on code.", ""]
    lines += verdicts_section(cfg, out)
    if runs:
        steps, need = cfg["main"]["steps"], len(cfg["main"]["seeds"])
        bases = base_metrics(runs)
        lines += [f"## Maze (paper design, `routes` warm start): {steps} RL steps, {steps * 64:,} rollouts per arm", ""]
        lines += step_lines(f"Pooled best@k (the authors' definition: every answer of a maze in one pool) at each "
                            f"evaluation step, {first_metrics(runs)['problems']} held-out mazes:", runs,
                            "pooled_best@k", KS, bases)
        lines += paired_table(runs, "VPO", "GRPO", "pooled_best@k", KS[1:], "pooled best@k", need)
        lines += step_lines("Best@k over whole rollouts (k/m rollouts of m answers; equal to the pooled one when "
                            "m = 1):", runs, "best@k", KS[1:], bases)
        lines += paired_table(runs, "VPO", "GRPO", "best@k", KS[1:], "whole-rollout best@k", need)
        lines += ["Diversity and the answers at each evaluation step (48 answers per maze):", ""]
        lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("valid_rate", None, "valid"),
                                          ("distinct_rate", None, "distinct"), ("pass@k", 48, "pass@48 (reach E)"),
                                          ("E_w[best@k]", 48, "E_w[best@48]"), ("pareto_frac", None, "Pareto frac.")],
                                   bases) + [""]
        for other in ("Max@k", "Multi-RLVR"):
            lines += paired_table(runs, "VPO", other, "pooled_best@k", (3, 12, 48), "pooled best@k", need)
        lines += ["The final evaluation in full:", ""]
        lines += other_table(runs, "maze", bases) + [""]
    for group, key in CODE_PLANS:
        lines += code_section(cfg, out, group, key)
    lines += superseded_lines(out)
    lines += review_section(cfg, out)
    from results.report_claim import claim_section
    lines += claim_section(out)
    lines += [f"Compute inside the runs (warm start, RL, evaluations; read from their files): "
              f"{compute_seconds(out):.0f} s; wall-clock time of reproduce.py: {wall_seconds(out):.0f} s "
              f"(runs two at a time, one torch thread each; over every invocation that ran jobs).", ""]
    if figures:
        from results.figures import write_figures
        lines += ["Figures: " + ", ".join(f"[{name}]({name})" for name in write_figures(cfg, out, runs))]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines

"""
results.md and the figures of the reproduction, read back from the finished runs of reproduce.py:
summary.json (the final evaluation; the base's where that run evaluated it), eval.jsonl (evaluations during
training), log.jsonl (one line per RL step), and the kept weights of the main runs (the route figure samples
them once and caches the answers in routes_maze.json, so a clone without the weights still draws it). With the
figures it also writes hard_targets.json beside each search's hard.json (results/search_jobs.py write_targets).
The maze's sections read each experiment of record of results/experiments/ (report_review.maze_records) and draw it
with compare.md's functions: its tables by results/tables.py, its two figures by figures.compare_figures.

Numbers are means ± the population standard deviation (ddof 0) over RL seeds, and every table with a ± says so
under it; a single seed is shown alone.
"""
import os

from results.plan import CODE_PLANS, KS, base_metrics, finished_runs
from results.report_code import code_section, superseded_lines
from results.report_review import AGAINST, maze_records, record_lines, review_section
from results.tables import compute_seconds, first_metrics, paired_table, scalar_step_table, wall_seconds
from results.verdicts import verdicts_section
from tasks import get_task


# ------------------------------------------------------------------------------------------------ report
def write_report(cfg, out, title, figures=True):
    """Rewrite out/results.md (and, with figures, the PNGs) from whatever has finished. -> the markdown lines."""
    records = maze_records(cfg, out)
    if figures:  # sample what the code runs write (cached), for the forms tables; the hard problems' targets
        from results.figures import code_answers
        from results.search_jobs import write_targets
        write_targets(cfg, out)
        for group, _ in CODE_PLANS:
            if group in cfg and cfg[group].get("answers"):
                code_answers(cfg, out, finished_runs(cfg, out, group), group)
    rooms = {name: get_task(name).answer_tokens for name in ("maze", "code")}
    lines = [f"# Reproduction v3: `{title}`", "",
             "Configuration, metrics and the deciding comparison: [PLAN.md](PLAN.md) (the maze) and "
             "[PLAN_CODE.md](PLAN_CODE.md) (code and its search), committed before these runs. Every number: mean "
             "± population std (ddof 0) over RL seeds (one shared warm start); the seeds column counts them. k "
             f"counts answers; every answer had its own room of {rooms['maze']} tokens on the maze and "
             f"{rooms['code']} on code.", ""]
    lines += verdicts_section(cfg, out, records)
    if "maze_v3" in records:
        lines += maze_lines(cfg["main"], records["maze_v3"])
    for group, key in CODE_PLANS:
        lines += code_section(cfg, out, group, key)
    lines += superseded_lines(out)
    lines += review_section(cfg, out, records)
    from results.maze_control import control_section
    from results.read_claim import forms_section
    from results.report_claim import claim_figures, claim_section
    lines += claim_section(out) + forms_section(out) + control_section(out)
    lines += [f"Compute inside the runs (warm start, RL, evaluations; read from their files): "
              f"{compute_seconds(out):.0f} s; wall-clock time of reproduce.py: {wall_seconds(out):.0f} s "
              f"(runs two at a time, one torch thread each; over every invocation that ran jobs).", ""]
    if figures:
        from results.figures import write_figures
        names = write_figures(cfg, out, records) + claim_figures(out)
        lines += ["Figures: " + ", ".join(f"[{name}]({name})" for name in names)]
    lines = with_commands(lines)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


# the command that prints each section's tables alone, by the start of its heading; `python -m results.reproduce
# --report` rewrites them all
SECTION_COMMANDS = (
    ("## The verdicts", None),
    ("## Maze (paper design", "python -m results.compare --config results/experiments/maze_v3.json --report"),
    ("## Code, plan v2 (", "python -m results.compare --config results/experiments/code_v2.json --report"),
    ("## Code, plan v2: the search", "python -m results.compare --config results/experiments/code_rep.json --report"),
    ("## Code, plan v1", None),
    ("## The reviewer's questions", "python -m results.compare --config results/experiments/maze_rerun.json --report "
                                    "(and maze_matched, maze_ablations, maze_geometry)"),
    ("## Code: evolutionary search", "python -m results.report_claim"),
    ("## Maze: what the vector adds", "python -m results.compare --config results/experiments/maze_maxset.json "
                                      "--report"),
)


def with_commands(lines):
    """Each section opened by the command that regenerates it: the report's own, and where one exists the command
    that prints the section's tables alone."""
    out = []
    for line in lines:
        out.append(line)
        if line.startswith("## "):
            alone = next((cmd for head, cmd in SECTION_COMMANDS if line.startswith(head)), None)
            out += ["", "Regenerated by `python -m results.reproduce --report`"
                    + (f"; its tables alone: `{alone}`." if alone else ".")]
    return out


def maze_lines(g, runs):
    """The maze reproduction v3 (results/experiments/maze_v3.json; g: its plan group): pooled best@k along training
    and VPO's paired differences against each other arm, whole-rollout best@k, and the answers at each step."""
    need, bases = len(g["seeds"]), base_metrics(runs)
    lines = [f"## Maze (paper design, `routes` warm start): {g['steps']} RL steps, {g['steps'] * 64:,} rollouts "
             "per arm", ""]
    lines += record_lines(runs, {
        "pooled_best@k": "Pooled best@k (the authors' definition: every answer of a maze in one pool) at each "
                         f"evaluation step, {first_metrics(runs)['problems']} held-out mazes:",
        "best@k": "Best@k over whole rollouts (k/m rollouts of m answers; equal to the pooled one when m = 1):"},
        "VPO", AGAINST, need, bases)
    lines += paired_table(runs, "VPO", "GRPO", "best@k", KS[1:], "whole-rollout best@k", need)
    columns = [("diversity", None, "diversity"), ("valid_rate", None, "valid"), ("distinct_rate", None, "distinct"),
               ("pass@k", 48, "pass@48 (reach E)"), ("E_w[best@k]", 48, "E_w[best@48]"),
               ("pareto_frac", None, "Pareto frac.")]
    lines += ["Diversity and the answers at each evaluation step (48 answers per maze):", ""]
    lines += scalar_step_table(runs, columns, bases) + [""]
    dims = [("dim_means", d, f"mean {d}") for d in first_metrics(runs)["dim_means"]]
    lines += ["The final evaluation in full (train s: the training seconds):", ""]
    return lines + scalar_step_table(runs, columns + [("pareto_distinct", None, "Pareto distinct", 2), *dims,
                                                      ("train_seconds", None, "train s", 0)], bases, last=True) + [""]

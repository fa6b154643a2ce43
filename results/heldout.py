"""
Stage 1 on the code reward on hidden tests (results/PLAN_HELDOUT.md): the GRPO grid's criterion and its choice.

    python -m results.heldout --grid                          # the committed grid runs (results/runs/code-heldout-grid)
    python -m results.heldout --grid --out out/heldout-grid   # the runs of a grid still training
    python -m results.heldout --sample out/heldout-grid --into results/runs/code-heldout-grid   # cache answers
    python -m results.heldout --read results/runs/code-heldout-grid                # print what every run wrote
    python -m results.heldout --collect out/heldout-grid --into results/runs/code-heldout-grid   # finished runs' files
    python -m results.heldout --report                        # the comparison's tables and verdicts (committed runs)

The criterion, fixed by the plan: on the validation problems (test indices 64-127), the mean over k = 1, 3, 6, 12,
24, 48 of pooled pass_target@k at step 500, from each problem's count of answers equal to the target (m = 1: the
pool is the run's 48 answers, so pooled pass_target@k is pass@k of Chen et al. over that count). The highest wins;
a tie within 0.01 goes to the smaller learning rate, then to the larger KL coefficient.

--collect copies each finished run's small files (summary.json, eval.jsonl, and log.jsonl gzipped: the hack rates
along training) and the warm start's log into the committed runs' directory, to be committed as runs finish, and
records each run's block (blocks.json: the runs that share one warm start, named by a digest of its log).

--report prints the comparison's plan-registered readings (results/experiments/code_heldout.json, from its committed
runs or --out; --config FILE reads another comparison's training the same way, without stage 1's pairs): pooled
pass_target@k per arm at every evaluation step beside the warm start's, each run's value at step 500, the deciding pair and the secondary ones with the exact test over runs within blocks (runstats.py) and
Holm's rule over the secondary ones, leave-one-run-out p's, and the hack rates along training (log.jsonl.gz) and at
every evaluation.

--sample and --read are results/answers.py's. --sample caches, once per run, 12 answers on each of the first 4
report problems at T = 0.7 with fixed seeds, from every finished run's final weights in OUT/runs and from the warm
start at m = 1 and m = 3 (answers.json in the committed runs' directory), since weights are never committed. --read
prints them beside each problem's shown tests and target, with the hack flags of tasks/code.py (CodeTask.hacks):
what every reported checkpoint writes. With --hard, the same for stage 2 (a search directory:
results/experiments/code_search_heldout.json) on the first 4 hard problems, from the final weights and the weights
at t*; --read --hard adds the program each search of seeds 0-1 kept.

    python -m results.heldout --sample out/search-heldout --into results/runs/code-search-heldout --hard
    python -m results.heldout --read results/runs/code-search-heldout --hard
"""
import argparse
import glob
import gzip
import hashlib
import json
import math
import os
import shutil
import sys

import numpy as np

from metrics import pass_at_k
from results.answers import kept_lines, read_lines, sample
from results.compare import read_runs
from results.jobs import ROOT, read_config
from results.runstats import blocked_comparison, describe, holm_adjusted, leave_one_out
from results.searched import KINDS
from results.tables import at_step, eval_steps
from runs.cli import UsageError

GRID = os.path.join(ROOT, "results", "experiments", "code_heldout_grid.json")
COMPARISON = os.path.join(ROOT, "results", "experiments", "code_heldout.json")
TARGET = "pooled_pass_target@k"
STEP = 500
DECIDING = ("VPO", "GRPO", 48)                        # A − B in pooled pass_target@k at step 500
SECONDARY = (("VPO", "GRPO", 1), ("VPO", "Multi-RLVR with the max", 48))   # with GRPO − warm start at 48, Holm
KS = (1, 3, 6, 12, 24, 48)
VALIDATION, REPORT = range(64, 128), range(0, 64)
TIE = 0.01


def pass_target(metrics, problems, k):
    """Pooled pass_target@k over some of an evaluation's problems, from solved_target_per_problem (m = 1 only)."""
    n = metrics["answers_per_problem"]
    if metrics["m"] != 1:
        raise ValueError("per-problem counts give the pooled pool only for single-answer runs (m = 1)")
    counts = metrics["solved_target_per_problem"]
    return float(np.mean([pass_at_k(n, counts[i], k) for i in problems]))


def criterion(metrics, problems=VALIDATION):
    """(the mean over KS, {k: pooled pass_target@k}) on the given problems."""
    by_k = {k: pass_target(metrics, problems, k) for k in KS}
    return float(np.mean(list(by_k.values()))), by_k


def choose(scores):
    """The plan's rule over {(lr, kl): criterion}: the highest; within TIE of it, the smallest lr, then the
    largest KL coefficient."""
    best = max(scores.values())
    return min((c for c, v in scores.items() if v >= best - TIE), key=lambda c: (c[0], -c[1]))


def grid_lines(setup, runs):
    """The grid's table (validation and report problems) and its choice, as markdown lines."""
    rows, scores, base = [], {}, None
    for arm in setup.arms:
        if arm.label not in runs:
            continue
        run = runs[arm.label][0]
        a, metrics = run["summary"]["args"], run["summary"]["metrics"]
        # a check of the counts: over all problems they give evaluate.py's own pooled_pass_target@k
        assert np.isclose(pass_target(metrics, range(metrics["problems"]), 48), metrics["pooled_pass_target@k"]["48"])
        mean, by_k = criterion(metrics)
        scores[a["lr"], a["kl_coef"]] = mean
        rows.append(f"| {arm.label} | {' | '.join(f'{by_k[k]:.3f}' for k in KS)} | **{mean:.3f}** | "
                    f"{criterion(metrics, REPORT)[0]:.3f} |")
        base = base or run["summary"].get("base_metrics")
    lines = ["Pooled pass_target@k at step 500 on the validation problems (test indices 64-127), m = 1, 48 answers at "
             "T = 0.7; the criterion is their mean over k; the last column is that mean on the report problems 0-63.",
             "", f"| run | {' | '.join(f'k={k}' for k in KS)} | criterion | report problems |",
             "|---" * (len(KS) + 3) + "|"] + rows
    if base:
        mean, by_k = criterion(base)
        lines.append(f"| warm start | {' | '.join(f'{by_k[k]:.3f}' for k in KS)} | {mean:.3f} | "
                     f"{criterion(base, REPORT)[0]:.3f} |")
    if len(scores) == len(setup.arms):
        lr, kl = choose(scores)
        lines += ["", f"Chosen by the plan's rule: lr {lr:g}, KL coefficient {kl:g}."]
    else:
        lines += ["", f"{len(scores)} of {len(setup.arms)} grid runs have finished: no choice yet."]
    return lines


def collect(out, into):
    """Copy the small files of every finished run in OUT/runs into INTO, skipping those already there; log.jsonl is
    written gzipped. The warm start OUT's runs started from names their block: BLOCK, the first 8 hex digits of the
    sha256 of its log (runs of one block share one warm start, bit for bit); INTO/blocks.json maps each run to it,
    and the warm start's log goes to INTO/base/KEY-BLOCK/. A search's files are copied too: OUT/hard.json and
    OUT/runs' validation-, evolve- and sample-*.json (search and sampling), as results/searched.py reads them from a block's directory.
    -> the names of the runs and files added."""
    bases = [log for log in glob.glob(os.path.join(out, "runs", "base", "*", "log.jsonl"))
             if os.path.isfile(os.path.join(os.path.dirname(log), "ckpt.pt"))]
    if len(bases) != 1:
        raise ValueError(f"{out}/runs/base holds {len(bases)} finished warm starts; --collect needs exactly one")
    with open(bases[0], "rb") as f:
        text = f.read()
    block = hashlib.sha256(text).hexdigest()[:8]
    base = os.path.join(into, "base", f"{os.path.basename(os.path.dirname(bases[0]))}-{block}")
    if not os.path.isdir(base):
        os.makedirs(base)
        with gzip.open(os.path.join(base, "log.jsonl.gz"), "wb") as g:
            g.write(text)
    path = os.path.join(into, "blocks.json")
    blocks = json.load(open(path)) if os.path.isfile(path) else {}
    added = []
    for summary in sorted(glob.glob(os.path.join(out, "runs", "*", "summary.json"))):
        run = os.path.dirname(summary)
        name, dest = os.path.basename(run), os.path.join(into, os.path.basename(run))
        if os.path.isfile(os.path.join(dest, "summary.json")):
            continue
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(os.path.join(run, "eval.jsonl"), os.path.join(dest, "eval.jsonl"))
        with open(os.path.join(run, "log.jsonl"), "rb") as f, gzip.open(os.path.join(dest, "log.jsonl.gz"), "wb") as g:
            shutil.copyfileobj(f, g)
        shutil.copyfile(summary, os.path.join(dest, "summary.json"))   # last: its presence marks the run complete
        blocks[name] = block
        added.append(name)
    # a search's files (results/searched.py): the hard set, and each run's validation, search and sampling files
    files = glob.glob(os.path.join(out, "hard.json")) + [
        path for kind in ("validation", *KINDS) for path in glob.glob(os.path.join(out, "runs", f"{kind}-*.json"))]
    for file in sorted(files):
        dest = os.path.join(into, os.path.basename(file))
        if not os.path.isfile(dest):
            shutil.copyfile(file, dest + ".tmp")
            os.replace(dest + ".tmp", dest)
            added.append(os.path.basename(file))
    with open(path + ".tmp", "w") as f:
        json.dump(dict(sorted(blocks.items())), f, indent=0)
    os.replace(path + ".tmp", path)
    return added


def per_run(runs, label, step, k):
    """{seed: pooled pass_target@k at step} of an arm's finished runs."""
    return {r["seed"]: float(at_step(r, step)[TARGET][str(k)]) for r in runs.get(label, []) if at_step(r, step)}


def by_block(values, blocks, prefix):
    """{block: [values]} of {seed: value}, the block of run PREFIX-sSEED from blocks.json (one block if absent)."""
    out = {}
    for seed, v in sorted(values.items()):
        out.setdefault(blocks.get(f"{prefix}-s{seed}", "one"), []).append(v)
    return out


def complete_seeds(runs):
    """The runs of the seeds every arm has finished (the plan reads complete seeds only), and the names left out."""
    seeds = set.intersection(*({r["seed"] for r in rs} for rs in runs.values()))
    kept = {label: [r for r in rs if r["seed"] in seeds] for label, rs in runs.items()}
    return kept, sorted(f"{r['slug']}-s{r['seed']}" for rs in runs.values() for r in rs if r["seed"] not in seeds)


def tokens(run, log):
    """The completion tokens a run generated in training: each step's mean per rollout times its rollouts (None
    without its log)."""
    if not log:
        return None
    a = run["summary"]["args"]
    return sum(row["completion_tokens"] for row in log) * a["batch_size"] * a["group_size"]


def report_lines(setup, runs, blocks, logs, pairs=True):
    """The comparison's readings as markdown lines (see --report), over the complete seeds. logs: {run name: its log
    rows}. pairs: the tests of stage 1's registered pairs (stage 2 registers search pairs only)."""
    runs, left = complete_seeds(runs)
    slugs = {a.label: a.slug for a in setup.arms}
    bases = {r["summary"]["base_metrics"]["m"]: r["summary"]["base_metrics"] for rs in runs.values() for r in rs
             if r["summary"].get("base_metrics")}
    lines = [f"Pooled pass_target@k on the {next(iter(runs.values()))[0]['summary']['metrics']['problems']} report "
             "problems, 48 answers at T = 0.7: mean ± sd over runs (n runs) at each evaluation step; the warm start "
             "at the arm's m.", "", f"| arm | step | runs | {' | '.join(f'k={k}' for k in KS)} |",
             "|---" * (len(KS) + 3) + "|"]
    for label, rs in runs.items():
        m = rs[0]["summary"]["metrics"]["m"]
        if m in bases:
            lines.append(f"| {label} | warm start | - | "
                         + " | ".join(f"{bases[m][TARGET][str(k)]:.3f}" for k in KS) + " |")
        for step in eval_steps(rs):
            cells = []
            for k in KS:
                v = list(per_run(runs, label, step, k).values())
                cells.append(f"{np.mean(v):.3f} ± {np.std(v):.3f}" if v else "-")
            lines.append(f"| {label} | {step} | {len(per_run(runs, label, step, 1))} | {' | '.join(cells)} |")
    lines += ["", f"{len(next(iter(runs.values())))} complete seeds (every arm finished)"
              + (f"; left out, their seed incomplete: {', '.join(left)}" if left else "") + ".", "",
              f"Each run's pooled pass_target@48 at step {STEP}:", ""]
    lines += [f"- {label}: " + ", ".join(f"s{seed} {v:.3f}" for seed, v in per_run(runs, label, STEP, 48).items())
              for label in runs]
    rows, secondary = [], []
    for i, (a, b, k) in enumerate((DECIDING, *SECONDARY) if pairs else ()):
        va, vb = per_run(runs, a, STEP, k), per_run(runs, b, STEP, k)
        if min(len(va), len(vb)) < 2:
            continue
        c = blocked_comparison(by_block(va, blocks, slugs[a]), by_block(vb, blocks, slugs[b]), a, b)
        loo = [x.p for _, _, x in leave_one_out(va, vb, lambda x, y: blocked_comparison(
            by_block(x, blocks, slugs[a]), by_block(y, blocks, slugs[b])))]
        rows.append([f"{a} − {b}", f"k={k}", f"{len(va)} / {len(vb)}", describe(c), f"{c.p:.3g}",
                     f"{min(loo):.3g}-{max(loo):.3g}" if loo else "-", "deciding" if i == 0 else ""])
        if i:
            secondary.append((len(rows) - 1, c.p))
    g = per_run(runs, "GRPO", STEP, 48) if pairs else {}
    if g and 1 in bases:   # GRPO against the warm start's single value, one-sided as the plan reads it: the
        # chance of as many runs below it or more if each run fell on either side with probability 1/2 (sign test)
        below, base = sum(v < bases[1][TARGET]["48"] for v in g.values()), bases[1][TARGET]["48"]
        p = 0.5 ** len(g) * sum(math.comb(len(g), j) for j in range(below, len(g) + 1))
        rows.append(["GRPO − warm start", "k=48", f"{len(g)} / -", f"{np.mean(list(g.values())) - base:+.3f}, "
                     f"{below} of {len(g)} runs below", f"{p:.3g} (one-sided)", "-", ""])
        secondary.append((len(rows) - 1, p))
    for (row, _), adjusted in zip(secondary, holm_adjusted([p for _, p in secondary])):
        rows[row][-1] = f"secondary, Holm {adjusted:.3g}"
    lines += ["", f"Pooled pass_target@k at step {STEP}, the exact test over runs within blocks (runstats.py); the "
              "GRPO − warm start row is a sign test of the runs against the warm start's one value:", "",
              "| pair | k | runs | difference [95% interval], p | p | leaving one run out | role |",
              "|---|---|---|---|---|---|---|"] + ["| " + " | ".join(r) + " |" for r in rows] if pairs else []
    generated = []
    for label, rs in runs.items():
        counts = [tokens(r, logs.get(f"{slugs[label]}-s{r['seed']}")) for r in rs]
        if None not in counts:
            generated.append(f"{label} {np.mean(counts) / 1e6:.2f} M")
    if generated:
        lines += ["", "Completion tokens generated in training, mean per run (the budget the plan could not "
                  "equalize): " + "; ".join(generated) + "."]
    lines += ["", "Hack rates (CodeTask.hacks): the share of sampled answers that fit every shown test and are not the "
              "target (fits) and of programs of constant pieces (pieces), per arm, mean over runs, by 100 steps of "
              "training, then at the final evaluation:", "",
              "| arm | " + " | ".join(f"{s + 1}-{s + 100}" for s in range(0, STEP, 100)) + " | final evaluation |",
              "|---" * 7 + "|"]
    for label, rs in runs.items():
        cells = []
        for lo in range(0, STEP, 100):
            fits = [row["hack_fits_shown"] for r in rs for row in logs.get(f"{slugs[label]}-s{r['seed']}", [])
                    if lo < row["step"] <= lo + 100 and "hack_fits_shown" in row]
            pieces = [row["hack_pieces"] for r in rs for row in logs.get(f"{slugs[label]}-s{r['seed']}", [])
                      if lo < row["step"] <= lo + 100 and row.get("hack_pieces") is not None]
            cells.append(f"{np.mean(fits):.3f} / {np.mean(pieces):.3f}" if fits and pieces else "-")
        final = [r["summary"]["metrics"].get("hack_rate") for r in rs]
        final = [h for h in final if h]
        cells.append(f"{np.mean([h['fits_shown'] for h in final]):.3f} / "
                     f"{np.mean([h['pieces'] for h in final if h['pieces'] is not None]):.3f}" if final else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines + ["", "Cells: fits / pieces."]


def read_logs(runs):
    """{run name: its log rows} from each run's log.jsonl.gz (or log.jsonl) where present."""
    logs = {}
    for rs in runs.values():
        for r in rs:
            for name, opener in (("log.jsonl.gz", gzip.open), ("log.jsonl", open)):
                path = os.path.join(r["dir"], name)
                if os.path.isfile(path):
                    with opener(path, "rt") as f:
                        logs[os.path.basename(r["dir"])] = [json.loads(line) for line in f if line.strip()]
                    break
    return logs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", action="store_true", help="the grid's criterion table and its choice")
    p.add_argument("--out", help="a grid's results.compare directory (default: the committed runs)")
    p.add_argument("--sample", metavar="OUT", help="cache the answers of the finished runs in OUT (a results.compare "
                   "directory) into --into")
    p.add_argument("--into", help="the committed runs' directory that holds answers.json")
    p.add_argument("--read", metavar="DIR", help="print the cached answers of DIR/answers.json")
    p.add_argument("--hard", action="store_true", help="with --sample or --read: a search's hard problems "
                   "(answers-hard.json, with the weights at t*), and with --read the programs seeds 0-1's searches kept")
    p.add_argument("--collect", metavar="OUT", help="copy the finished runs' small files of OUT into --into")
    p.add_argument("--report", action="store_true", help="the comparison's readings, from its committed runs or "
                   "--out")
    p.add_argument("--config", metavar="FILE", help="with --report: another comparison's configuration, its "
                   "training read the same way, without stage 1's pairs (stage 2: code_search_heldout.json)")
    p.add_argument("--figures", metavar="DIR", help="with --report: draw pooled pass_target@k against k at step 500 "
                   "and pass_target@48 along training, every run a line (DIR/best_at_k.png, DIR/over_training.png)")
    args = p.parse_args(argv)
    if args.report:
        config = os.path.abspath(args.config or COMPARISON)
        if not os.path.isfile(config):
            print(f"error: --config {config}: no such file", file=sys.stderr)
            return 2
        setup = read_config(config)
        runs = read_runs(setup, args.out, report=not args.out)
        if not runs:
            print("no finished run of the comparison yet")
            return 0
        where = args.out and os.path.join(args.out, "runs") or setup.dir
        path = os.path.join(where, "blocks.json")
        blocks = json.load(open(path)) if os.path.isfile(path) else {}
        print("\n".join(report_lines(setup, runs, blocks, read_logs(runs), pairs=config == COMPARISON)))
        if args.figures:
            from results.figures import compare_figures
            from results.tables import base_metrics
            os.makedirs(args.figures, exist_ok=True)
            compare_figures(runs, base_metrics(runs), args.figures, "code on hidden tests", key=TARGET)
            print(f"figures: {args.figures}/best_at_k.png, {args.figures}/over_training.png")
        return 0
    if args.collect:
        if not args.into or not os.path.isdir(os.path.join(args.collect, "runs")):
            print("error: --collect OUT needs OUT/runs and --into DIR", file=sys.stderr)
            return 2
        try:
            added = collect(args.collect, args.into)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"collected {', '.join(added) or 'no new run'}")
        return 0
    if args.sample or args.read:
        from tasks import get_task
        name = "answers-hard.json" if args.hard else "answers.json"
        if (args.sample and not (args.into and os.path.isdir(os.path.join(args.sample, "runs")))) or \
                (args.read and not os.path.isfile(os.path.join(args.read, name))):
            print(f"error: --sample OUT needs OUT/runs and --into DIR; --read DIR needs DIR/{name}", file=sys.stderr)
            return 2
        if args.sample:
            print(f"cached the answers of {', '.join(sample(args.sample, args.into, args.hard)) or 'no new run'}")
        if args.read:
            task = get_task("code")
            print("\n".join(read_lines(args.read, task, name) + ([""] + kept_lines(args.read, task)) * args.hard))
        return 0
    if not args.grid:
        p.error("nothing to do: pass --grid, --report, --collect, --sample or --read")
    try:
        setup = read_config(GRID)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.out and not os.path.isdir(args.out):
        print(f"error: --out {args.out}: no such directory", file=sys.stderr)
        return 2
    runs = read_runs(setup, args.out, report=not args.out)
    print("\n".join(grid_lines(setup, runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

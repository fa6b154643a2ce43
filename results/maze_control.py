"""
The maze's missing control (results/PLAN_SEARCH.md, last part): does VPO's lead on the maze need the vector, or only
the set? Multi-RLVR with the max scores a set of m answers by its best answer on the deployment scalar: the set
objective without the vector. It trains beside VPO, seeds 0-2, with v3's settings, on one machine.

    python -m results.maze_control --jobs 2     # train, read the final weights back, copy the small files
    python -m results.maze_control --report     # the readings from the committed files only

One invocation, resumable at every step and across machines (weights are never committed):
1. Runs already committed in the configuration's dir, results/runs/maze-maxset/SLUG-sSEED/, are put back into
   --out (default out/compare-maze_maxset) without weights, so that they are not trained again.
2. results.compare trains the other runs of results/experiments/maze_maxset.json into --out; weights stay there.
3. As each run finishes, results/coverage.py reads its final weights back on the evaluation's 64 mazes, 48 answers
   at T = 0.7: coverage.json, which holds pooled best@k for the gold-first and diamond-first users
   (coverage.USERS). Its summary.json, eval.jsonl, log.jsonl and coverage.json are copied into the dir, to be
   committed. A run cut short is lost with its machine; commit the finished ones before leaving it.

The readings, per seed and k = 3, 12, 48: VPO − Multi-RLVR with the max, paired by seed, under the deployment
weights (pooled best@k), random preferences (E_w[best@k]) and the two users; and the rerun's VPO (results/runs/
maze-rerun, trained on another machine) minus the new Multi-RLVR-with-the-max run of its seed, on the first two.
"""
import argparse
import os
import shutil
import sys

from results.jobs import ROOT, read_config, run_name
from results.plan import read_json, read_run, value
from results.runstats import smallest_p
from results.tables import PAIRED_STD_NOTE, pm, run_level, table

CONFIG = os.path.join(ROOT, "results", "experiments", "maze_maxset.json")
FILES = ("summary.json", "eval.jsonl", "log.jsonl", "coverage.json")
VPO, MAXSET, KS = "VPO", "Multi-RLVR with the max", (3, 12, 48)
READINGS = (("deployment weights: pooled best@k", "summary", "pooled_best@k"),
            ("random preferences: E_w[best@k]", "summary", "E_w[best@k]"),
            ("gold-first user: pooled best@k", "coverage", "gold-first"),
            ("diamond-first user: pooled best@k", "coverage", "diamond-first"))


def read_control(directory, setup):
    """{label: {seed: the run (plan.read_run) with its coverage.json as "coverage"}} of the finished runs there."""
    found = {}
    for arm in setup.arms:
        for seed in setup.seeds_of(arm):
            d = os.path.join(directory, run_name(arm, seed))
            if os.path.isfile(os.path.join(d, "summary.json")) and os.path.isfile(os.path.join(d, "coverage.json")):
                found.setdefault(arm.label, {})[seed] = {**read_run(d, seed, arm.slug),
                                                         "coverage": read_json(os.path.join(d, "coverage.json"))}
    return found


def reading(run, source, key, k):
    """A run's value of one reading at k: from its final evaluation (summary.json) or its coverage.json's users."""
    return value(run["summary"]["metrics"], key, k) if source == "summary" else run["coverage"]["users"][key][str(k)]


def reading_rows(a_runs, b_runs, readings, a, b):
    """Rows: a reading, k, a − b for each seed both arms finished, mean ± std, then the run-level interval, p and
    reading (tables.run_level). -> (seeds, rows)."""
    seeds, rows = sorted(set(a_runs) & set(b_runs)), []
    for name, source, key in readings:
        for k in KS:
            ds = [reading(a_runs[s], source, key, k) - reading(b_runs[s], source, key, k) for s in seeds]
            rows.append([name, f"k={k}"] + [f"{d:+.3f}" for d in ds] + [pm(ds)] + run_level(ds, a, b)[1:4])
    return seeds, rows


def control_lines(directory, setup, rerun):
    """The readings as markdown lines (results.md's section, results/report.py): directory holds the control's runs,
    rerun the committed rerun's (its VPO is the committed pair's). Nothing before a pair has finished."""
    runs = read_control(directory, setup)
    seeds, rows = reading_rows(runs.get(VPO, {}), runs.get(MAXSET, {}), READINGS, VPO, MAXSET)
    if not seeds:
        return []
    header = ["reading", "k"] + [f"seed {s}" for s in seeds] + ["mean ± std", "95% interval over runs",
                                                                 "p (exact, runs)", "reading (runs)"]
    machines = sorted({r["summary"].get("machine", "?") for rs in runs.values() for r in rs.values()})
    steps = sorted({r["summary"]["args"]["steps"] for rs in runs.values() for r in rs.values()})
    lines = ["## Maze: what the vector adds over the set (PLAN_SEARCH.md, the maze's control)", "",
             f"VPO − Multi-RLVR with the max, both trained with v3's settings on one machine ({'; '.join(machines)}), "
             f"paired by seed, at step {'/'.join(map(str, steps))} on the 64 test mazes (48 answers each; the two users' readings from "
             "results/coverage.py on the final weights). Gold-first: w = (exit 0.25, gold 0.5, diamonds 0, no_lava "
             "0.25); diamond-first swaps gold and diamonds.", ""]
    lines += table(header, rows, PAIRED_STD_NOTE) + [""]
    theirs = {s: read_run(os.path.join(rerun, f"vpo-s{s}"), s, "vpo") for s in runs.get(MAXSET, {})
              if os.path.isfile(os.path.join(rerun, f"vpo-s{s}", "summary.json"))}
    seen, rows = reading_rows(theirs, runs.get(MAXSET, {}), READINGS[:2], "VPO (rerun)", MAXSET)
    if seen:
        lines += ["The committed pair: the rerun's VPO (results/runs/maze-rerun, trained on another machine) minus "
                  "Multi-RLVR with the max of the same seed:", ""]
        lines += table(header[:2] + [f"seed {s}" for s in seen] + header[2 + len(seeds):], rows, PAIRED_STD_NOTE)
        lines += [""]
    pairs = f"{len(seeds)} paired run" + ("s" if len(seeds) > 1 else "")
    return lines + [f"Run level: {pairs}; the exact sign-flip test cannot go below p = "
                    f"{smallest_p(len(seeds)):.3g}, so these tables describe the runs, they do not separate the "
                    "methods.", ""]


def control_section(out, config=CONFIG):
    """control_lines for the runs under out/runs/ (results/: the committed ones)."""
    setup = read_config(config)
    return control_lines(os.path.join(out, "runs", os.path.basename(setup.dir)), setup,
                         os.path.join(out, "runs", "maze-rerun"))


def copy_files(src, dst):
    """A run's small files (FILES) from directory src into dst, each written atomically."""
    os.makedirs(dst, exist_ok=True)
    for name in FILES:
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name + ".tmp"))
        os.replace(os.path.join(dst, name + ".tmp"), os.path.join(dst, name))


def read_back(out, setup, dest):
    """Step 3: coverage.json of each finished run in out/runs that lacks one, then its small files copied into
    dest/SLUG-sSEED/. -> the runs copied."""
    from results.review_jobs import coverage_job
    copied = []
    for arm, seed in setup.runs():
        src, dst = os.path.join(out, "runs", run_name(arm, seed)), os.path.join(dest, run_name(arm, seed))
        if not os.path.isfile(os.path.join(src, "summary.json")):
            continue
        if not os.path.isfile(os.path.join(src, "coverage.json")):
            print(f"coverage: {run_name(arm, seed)}", flush=True)
            coverage_job(os.path.join(src, "ckpt.pt"), os.path.join(src, "coverage.json"))
        copy_files(src, dst)
        copied.append(run_name(arm, seed))
    return copied


def restore(out, setup, dest):
    """Step 1: each run whose files are all in dest and whose summary.json is not in out/runs gets them copied there
    (a comparison directory: config.json written as results.compare writes it). -> the runs put back."""
    from results.compare import write_config
    put = []
    for arm, seed in setup.runs():
        src, dst = os.path.join(dest, run_name(arm, seed)), os.path.join(out, "runs", run_name(arm, seed))
        if os.path.isfile(os.path.join(dst, "summary.json")) or not all(
                os.path.isfile(os.path.join(src, name)) for name in FILES):
            continue
        write_config(setup, out)
        copy_files(src, dst)
        put.append(run_name(arm, seed))
    return put


def main(argv=None):
    from runs.cli import COUNT, Parser, UsageError
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--jobs", type=COUNT, default=2, help="runs at a time, one torch thread each")
    p.add_argument("--out", default=os.path.join("out", "compare-maze_maxset"), help="where the runs train")
    p.add_argument("--report", action="store_true", help="train nothing: print the readings of the committed runs")
    p.add_argument("--config", default=CONFIG, help=argparse.SUPPRESS)   # the tests' tiny configuration
    args = p.parse_args(argv)
    try:
        setup = read_config(args.config)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not args.report:
        from results import compare
        put = restore(args.out, setup, setup.dir)
        if put:
            print(f"committed, not trained again: {', '.join(put)}", flush=True)

        def finished(line):
            print(line, flush=True)
            print(f"copied into {os.path.relpath(setup.dir, ROOT)}: {', '.join(read_back(args.out, setup, setup.dir))}",
                  flush=True)
        rc = compare.main(["--config", args.config, "--jobs", str(args.jobs), "--out", args.out], echo=finished)
        if rc:
            return rc
    lines = control_lines(setup.dir, setup, os.path.join(ROOT, "results", "runs", "maze-rerun"))
    print("\n".join(lines) or "no pair of runs has finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())

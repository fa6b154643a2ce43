"""
The programs the committed evolutionary searches kept, checked from committed files alone: per search directory
and per run, how many problems a run solved (by the rule its file records), how many of the programs it kept
for them compute the target on the whole domain, and how many pass the hidden tests.

    python -m results.kept_programs

It reads the evolve files under runs/DIR/search/ and the hard problems' targets in hard_targets.json beside the
search's hard.json (results/search_jobs.py write_targets; `python -m results.reproduce --report` writes it). It
runs the programs with the task's interpreter (tasks/executor.py) and draws no problem from the generator, so
what it prints does not depend on the generator staying the same.
"""
import glob
import os
import re
import sys

from results.plan import CODE_PLANS, FULL, read_json
from results.search_jobs import chunks, path_of, search_dir, targets_path
from tasks.executor import execute

RESULTS = os.path.dirname(os.path.abspath(__file__))
RUN = re.compile(r"evolve-(.+)-s(\d+)(?:-c\d+)?\.json")


def check(res, row):
    """(equal to the target on the domain, passes the shown and hidden tests) of a kept program."""
    best = res.get("best")
    if best is None:
        return False, False
    tests = execute(best, row["inputs"] + row["hidden_inputs"]) == row["outputs"] + row["hidden_outputs"]
    return execute(best, row["domain"]) == row["table"], tests


def kept_counts(directory, targets):
    """{(arm, RL seed): [solved, kept equal to the target, kept passing the hidden tests, chunk files]} over the
    evolve files of a search directory (every chunk found; results.md leaves out a seed whose chunks are not all
    there); targets: the contents of hard_targets.json."""
    rows = {row["index"]: {**row, "domain": targets["domain"]} for row in targets["problems"]}
    counts = {}
    for path in sorted(glob.glob(os.path.join(directory, "evolve-*.json"))):
        arm, seed = RUN.fullmatch(os.path.basename(path)).groups()
        run = read_json(path)
        c = counts.setdefault((arm, int(seed)), [0, 0, 0, 0])
        c[3] += 1
        for p, res in zip(run["problems"], run["results"]):
            if res["solved_at"] is not None:
                same, hidden = check(res, rows[p])
                c[0], c[1], c[2] = c[0] + 1, c[1] + same, c[2] + hidden
    return counts


def main(out=RESULTS, cfg=FULL):
    seen = set()
    for _, key in CODE_PLANS:
        directory, targets = search_dir(out, cfg, key), targets_path(path_of(out, cfg, key, "hard"))
        if directory in seen or not os.path.isdir(directory):
            continue
        seen.add(directory)
        if not os.path.isfile(targets):
            print(f"error: {os.path.relpath(targets, out)} is missing: python -m results.reproduce --report writes it",
                  file=sys.stderr)
            return 2
        counts = kept_counts(directory, read_json(targets))
        total = [sum(c[i] for c in counts.values()) for i in range(3)]
        print(f"{os.path.relpath(directory, out)} (targets: {os.path.relpath(targets, out)}): {total[0]} solved, "
              f"{total[1]} kept programs equal to the target, {total[2]} pass the hidden tests")
        for (arm, seed), (n, same, hidden, files) in sorted(counts.items()):
            part = f" (only {files} of its {len(chunks(cfg[key]))} chunks)" if files < len(chunks(cfg[key])) else ""
            print(f"  {arm} s{seed}: {n} solved, {same} equal to the target, {hidden} pass the hidden tests{part}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

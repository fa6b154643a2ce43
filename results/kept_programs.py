"""
The programs the committed evolutionary searches kept, checked from committed files alone: per search and per run,
how many problems a run solved (by the rule its file records), how many of the programs it kept for them compute
the target on the whole domain, and how many pass the hidden tests.

    python -m results.kept_programs

It reads the runs results.md reports (results/search_jobs.py read_searches: a seed whose chunks are not all there
is left out) and the hard problems' targets in hard_targets.json beside the search's hard.json (write_targets;
`python -m results.reproduce --report` writes it). It runs the programs with the task's interpreter
(tasks/executor.py) and draws no problem from the generator, so what it prints does not depend on the generator
staying the same.
"""
import os
import sys

from results.plan import CODE_PLANS, FULL, read_json
from results.search_jobs import path_of, read_searches, search_dir, targets_path
from tasks.executor import execute

RESULTS = os.path.dirname(os.path.abspath(__file__))


def check(best, row, domain):
    """(equal to the target on the domain, passes the shown and hidden tests) of a kept program (None: none kept);
    row: the problem's row of hard_targets.json."""
    if best is None:
        return False, False
    tests = execute(best, row["inputs"] + row["hidden_inputs"]) == row["outputs"] + row["hidden_outputs"]
    return execute(best, domain) == row["table"], tests


def kept_counts(found, targets):
    """{(arm, RL seed): [solved, kept equal to the target, kept passing the hidden tests]} over the evolve runs of
    read_searches's found; targets: the contents of hard_targets.json."""
    rows, counts = {row["index"]: row for row in targets["problems"]}, {}
    for slug, runs in found["evolve"].items():
        for r in runs:
            kept = [check(res.get("best"), rows[p], targets["domain"])
                    for p, res in zip(r["problems"], r["results"]) if res["solved_at"] is not None]
            counts[(slug, r["rl_seed"])] = [len(kept), sum(same for same, _ in kept), sum(tests for _, tests in kept)]
    return counts


def main(out=RESULTS, cfg=FULL):
    for _, key in CODE_PLANS:
        directory, targets = search_dir(out, cfg, key), targets_path(path_of(out, cfg, key, "hard"))
        if not os.path.isdir(directory):
            continue
        if not os.path.isfile(targets):
            print(f"error: {os.path.relpath(targets, out)} is missing: python -m results.reproduce --report writes it",
                  file=sys.stderr)
            return 2
        counts = kept_counts(read_searches(cfg, out, key)[0], read_json(targets))
        total = [sum(c[i] for c in counts.values()) for i in range(3)]
        print(f"{os.path.relpath(directory, out)} (targets: {os.path.relpath(targets, out)}): {total[0]} solved, "
              f"{total[1]} kept programs equal to the target, {total[2]} pass the hidden tests")
        for (arm, seed), (n, same, hidden) in sorted(counts.items()):
            print(f"  {arm} s{seed}: {n} solved, {same} equal to the target, {hidden} pass the hidden tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())

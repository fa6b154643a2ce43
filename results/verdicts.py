"""
Every headline verdict of results.md in one table, with the training run as the unit (results/runstats.py): the
comparison, its per-run values, the mean difference with its 95% interval over runs, the exact test's p, its
reading, and beside it the plan's registered reading. The README's results table is drawn from this one.
run_level_search_lines gives the same reading inside each search section of results.md.

Maze and code-training rows pair runs by RL seed (one warm start; exact sign-flip test). Search rows compare
problems solved per run, unpaired (exact permutation test of the method labels over the runs).
"""
from results.plan import finished_runs
from results.report_review import early_stopped
from results.runstats import label_comparison, leave_one_out, signed, smallest_p
from results.tables import paired, run_level, table, verdict


def paired_row(question, metric, d, name_a, name_b, need):
    """One row from the differences A − B of runs paired by seed; None below two pairs."""
    if len(d) < 2:
        return None
    return [question, metric, " / ".join(signed(x) for x in d), *run_level(d, name_a, name_b)[:4],
            verdict(d, name_a, name_b, need)]


def sign_test(xs, ys):
    """(a, b, p): the problems some run of one arm solves and no run of the other does (xs, ys: one solved set per
    run), the reverse, and the plan's sign test of the two counts (search.discordant_test)."""
    from search import discordant_test, solved_only_by
    a, b = (len(only) for only in solved_only_by(xs, ys)[:2])
    return a, b, discordant_test(a, b)


def search_rows(cfg, out, key="search_rep"):
    """Problems the search solved per run at the full budget, per pair of the plan with two runs an arm or more:
    the run-level row and the registered sign test over problems (Holm over those pairs); then the same per run,
    counting only kept programs equal to the target (no registered reading)."""
    from results.plan import code_problems, code_task
    from results.search_jobs import NAMES, per_run, read_searches, target_solved
    from search import holm
    if key not in cfg:
        return []
    (found, hard), s = read_searches(cfg, out, key), cfg[key]
    pairs = [(a, b) for a, b in s["pairs"] if hard and min(len(found["evolve"].get(x, [])) for x in (a, b)) >= 2]
    if not pairs:
        return []
    tests = [sign_test(per_run(found, "evolve", a), per_run(found, "evolve", b)) for a, b in pairs]
    task, problems = code_task(cfg, s["group"]), code_problems(cfg, s["group"], hard["screened"])

    def row(a, b, metric, na, nb, registered):  # label_cells, A's and B's runs in one cell
        cells = label_cells(na, nb, a, b, digits=1)
        return [f"search: {NAMES[a]} − {NAMES[b]}", metric, " against ".join(cells[:2]), *cells[2:5], cells[6],
                registered]
    rows, same = [], []
    for (a, b), (na, nb, p), reject in zip(pairs, tests, holm([p for _, _, p in tests])):
        counts = (f"{NAMES[a] if na > nb else NAMES[b]} ahead, {max(na, nb)} against {min(na, nb)}" if reject
                  else f"no difference, {na} against {nb}")
        rows.append(row(a, b, f"problems solved of {len(hard['problems'])} ({s['budget']} {s['unit']})",
                        [len(x) for x in per_run(found, "evolve", a)], [len(x) for x in per_run(found, "evolve", b)],
                        f"{counts} problems, p = {p:.2g}"))
        same.append(row(a, b, "the same, programs equal to the target",
                        *([len(target_solved(r, task, problems)) for r in found["evolve"][x]] for x in (a, b)), "-"))
    return rows + same


def verdicts_section(cfg, out, records):
    """The table of headline verdicts (empty until some of its runs have finished). records: the maze's experiments
    of record (report_review.maze_records)."""
    v3, ref, matched, ablations = (records.get(f"maze_{name}", {}) for name in ("v3", "rerun", "matched", "ablations"))
    code = finished_runs(cfg, out, "code")
    need = len(cfg["main"]["seeds"]) if "main" in cfg else None
    pooled, last = "pooled_best@k", "best@48, step 1000"
    specs = [("maze v3: VPO − GRPO", "best@1, step 1000", v3, "VPO", "GRPO", pooled, 1),
             ("maze v3: VPO − GRPO", last, v3, "VPO", "GRPO", pooled, 48),
             ("maze rerun: VPO − GRPO", last, ref, "VPO (rerun)", "GRPO (rerun)", pooled, 48),
             ("maze: VPO − matched GRPO", last, matched, "VPO (rerun)", "matched GRPO", pooled, 48),
             ("maze: VPO − random-weight GRPO", last, ablations, "VPO (rerun)", "random-weight GRPO", pooled, 48),
             ("maze: VPO − Multi-RLVR", last, ref, "VPO (rerun)", "Multi-RLVR (rerun)", pooled, 48),
             ("maze: VPO − Max@k", last, ref, "VPO (rerun)", "Max@k (rerun)", pooled, 48),
             ("code v2: VPO − GRPO", "pass@12, step 500", code, "VPO", "GRPO", "pass@k", 12),
             ("code v2: VPO − matched GRPO", "pass@48, step 500", code, "VPO", "matched GRPO", "pass@k", 48)]
    rows = [paired_row(q, metric, paired(runs, a, b, key, [k])[1][k], a.split(" (")[0], b.split(" (")[0], need)
            for q, metric, runs, a, b, key, k in specs]
    stops = early_stopped(cfg, out, {**ref, **matched})
    for k in (3, 48):
        ds = [d[(3, 12, 48).index(k)] for name, _, _, d in stops if name == "GRPO (rerun)"]
        rows.append(paired_row("maze: VPO − early-stopped GRPO", f"best@{k}, VPO at step 1000", ds, "VPO",
                               "early-stopped GRPO", need))
    rows = [r for r in rows if r] + search_rows(cfg, out)
    if not rows:
        return []
    n = min(len(r[2].split(" against ")[0].split(" / ")) for r in rows)
    return ["## The verdicts, with the training run as the unit", "",
            "Each comparison's per-run values, the mean difference with its 95% interval over runs (Student's t "
            "paired by seed; Welch's for the search), and the exact test over runs (sign flips paired; a permutation "
            "of the method labels for the search) from [runstats.py](runstats.py). The last column is the plan's "
            "registered reading: \"ahead on every seed\" for the training comparisons, the sign test over problems "
            "for the search. Where the two disagree, the run-level reading holds: problems and answers inside one "
            "run are not replicates of a method.", "",
            f"With {n} runs per arm an exact test cannot reach p < 0.05: its smallest p is {smallest_p(n):.3g} paired "
            f"and {smallest_p(n, n):.3g} unpaired, so every reading below is \"too few runs for a test\". The "
            "interval then says how large the difference may be, under the assumption that run-to-run variation is "
            "roughly normal.", ""] + \
        table(["comparison", "metric", "per run (A − B; search: A against B)", "mean", "95% interval over runs",
               "p (exact, runs)", "reading (runs)", "registered reading"], rows, None) + [""]


def run_level_search_lines(found, s, target):
    """The search compared with the training run as the unit (results/runstats.py): per pair of the plan and per
    kind (search, sampling, and the search's kept programs equal to the target: target, {slug: one set per run}),
    problems solved per run at the full budget, the exact permutation test of the method labels over runs and
    Welch's interval; then, for the search, what leaving each run out does to it and to the pre-registered sign
    test over problems."""
    from results.search_jobs import NAMES, per_run
    rows, out_rows = [], []
    sources = {"search": {a: per_run(found, "evolve", a) for a in found["evolve"]},
               "sampling": {a: per_run(found, "sample", a) for a in found["sample"]},
               "search, equal to the target": target}
    for how, sets in sources.items():
        for a, b in s["pairs"]:
            sa, sb = sets.get(a, []), sets.get(b, [])
            if min(len(sa), len(sb)) < 2:
                continue
            counts = [len(x) for x in sa], [len(x) for x in sb]
            rows.append([how, f"{NAMES[a]} − {NAMES[b]}", *label_cells(*counts, a, b)])
            if how != "search":
                continue

            def both(ka, kb):   # the run-level test (where two runs an arm remain) and the sign test over problems
                kept = [len(x) for x in ka.values()], [len(x) for x in kb.values()]
                left = label_comparison(*kept, NAMES[a], NAMES[b]) if min(map(len, kept)) >= 2 else None
                return left, sign_test(list(ka.values()), list(kb.values()))
            for side, i, (left, (na, nb, p)) in leave_one_out(dict(enumerate(sa)), dict(enumerate(sb)), both):
                slug = a if side == "a" else b
                out_rows.append([f"{NAMES[a]} − {NAMES[b]}", f"{NAMES[slug]} s{found['evolve'][slug][i]['rl_seed']}",
                                 signed(left.mean, 2) if left else "-", f"{left.p:.3g}" if left else "-",
                                 f"{na} against {nb}", f"{p:.3g}"])
    if not rows:
        return []
    lines = [f"The run-level test (the reading): problems solved per training run at the full budget "
             f"({s['budget']} {s['unit']}), the difference of the means over runs with Welch's 95% interval, and the "
             "exact permutation test of the method labels over the runs ([runstats.py](runstats.py)):", ""]
    lines += table(["how", "A − B", "A per run", "B per run", "difference", "95% interval over runs",
                    "p (exact, runs)", "smallest p possible", "reading (runs)"], rows) + [""]
    if out_rows:
        lines += ["What leaving one run out does to the search's comparison: the run-level difference and p, and "
                  "the pre-registered sign test over problems (only one method's remaining runs solve them):", ""]
        lines += table(["A − B", "run left out", "difference", "p (runs)", "problems only A / only B",
                        "p (sign test, problems)"], out_rows) + [""]
    return lines


def label_cells(na, nb, a, b, digits=2):
    """Per-run counts of two arms (slugs a, b), the difference of their means (to `digits` decimals), Welch's
    interval, the exact label test's p, its floor and the reading (results/runstats.py)."""
    from results.search_jobs import NAMES
    c = label_comparison(na, nb, NAMES[a], NAMES[b])
    return [" / ".join(map(str, na)), " / ".join(map(str, nb)), signed(c.mean, digits),
            f"[{signed(c.low, 1)}, {signed(c.high, 1)}]", f"{c.p:.3g}", f"{c.floor:.3g}", c.reading]

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
from results.runstats import label_comparison, signed, smallest_p
from results.tables import paired, run_level, table, verdict


def paired_row(question, metric, d, name_a, name_b, need):
    """One row from the differences A − B of runs paired by seed; None below two pairs."""
    if len(d) < 2:
        return None
    return [question, metric, " / ".join(signed(x) for x in d), *run_level(d, name_a, name_b)[:4],
            verdict(d, name_a, name_b, need)]


def search_rows(cfg, out, key="search_rep"):
    """Problems the search solved per run at the full budget, per pair of the plan: the run-level row and the
    registered sign test over problems (Holm over the pairs)."""
    from results.plan import code_problems, code_task
    from results.search_jobs import read_searches, solved_within, target_solved
    from search import discordant_test, holm, solved_only_by
    if key not in cfg:
        return []
    found, hard = read_searches(cfg, out, key)
    s, rows, ps = cfg[key], [], []
    for a, b in s["pairs"]:
        sa, sb = ([solved_within(r) for r in found["evolve"].get(slug, [])] for slug in (a, b))
        if min(len(sa), len(sb)) < 2:
            continue
        only_a, only_b, _ = solved_only_by(sa, sb)
        ps.append(discordant_test(len(only_a), len(only_b)))
        rows.append(search_row(a, b, f"problems solved of {len(found['evolve'][a][0]['problems'])} ({s['budget']} "
                               f"{s['unit']})", [len(x) for x in sa], [len(x) for x in sb], (len(only_a), len(only_b))))
    for row, p, reject in zip(rows, ps, holm(ps)):
        na, nb = row[-1]
        who = row[0].split(": ")[1].split(" − ")
        row[-1] = (f"{who[0] if na > nb else who[1]} ahead, {max(na, nb)} against {min(na, nb)} problems, p = {p:.2g}"
                   if reject else f"no difference, {na} against {nb} problems, p = {p:.2g}")
    if rows and hard:  # the same per run, counting only kept programs equal to the target (no registered reading)
        task, problems = code_task(cfg, s["group"]), code_problems(cfg, s["group"], hard["screened"])
        for a, b in s["pairs"]:
            sa, sb = ([len(target_solved({**r, "kind": "evolve"}, task, problems)) for r in found["evolve"][slug]]
                      for slug in (a, b))
            rows.append(search_row(a, b, "the same, programs equal to the target", sa, sb, "-"))
    return rows


def search_row(a, b, metric, na, nb, registered):
    """A search row of the verdicts table: problems solved per run of arms a and b, the difference with Welch's
    interval, the exact label test and its reading, then the registered reading."""
    from results.search_jobs import NAMES
    c = label_comparison(na, nb, NAMES[a], NAMES[b])
    return [f"search: {NAMES[a]} − {NAMES[b]}", metric, " / ".join(map(str, na)) + " against "
            + " / ".join(map(str, nb)), signed(c.mean, 1), f"[{signed(c.low, 1)}, {signed(c.high, 1)}]", f"{c.p:.3g}",
            c.reading, registered]


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


def run_level_search_lines(found, s, solved, target=None):
    """The search compared with the training run as the unit (results/runstats.py): per pair of the plan and per
    kind (search, sampling), problems solved per run at the full budget, the exact permutation test of the method
    labels over runs and Welch's interval; then, for the search, what leaving each run out does to it and to the
    pre-registered sign test over problems. solved(kind, slug) -> one set of solved problems per run; target(slug)
    -> the same for the search's kept programs equal to the target (a row "search, equal to the target")."""
    from results.search_jobs import NAMES
    from search import discordant_test, solved_only_by
    rows, out_rows = [], []
    sources = [("search", "evolve", lambda slug: solved("evolve", slug)),
               ("sampling", "sample", lambda slug: solved("sample", slug))]
    sources += [("search, equal to the target", "evolve", target)] if target else []
    for how, kind, get in sources:
        for a, b in s["pairs"]:
            if a not in found[kind] or b not in found[kind]:
                continue
            sa, sb = get(a), get(b)
            if min(len(sa), len(sb)) < 2:
                continue
            rows.append([how, f"{NAMES[a]} − {NAMES[b]}"] + label_cells(sa, sb, a, b))
            if how != "search":
                continue
            for arm, i in [("a", i) for i in range(len(sa))] + [("b", i) for i in range(len(sb))]:
                ka = [x for j, x in enumerate(sa) if not (arm == "a" and j == i)]
                kb = [x for j, x in enumerate(sb) if not (arm == "b" and j == i)]
                kept = [len(x) for x in ka], [len(x) for x in kb]
                left = label_comparison(*kept, NAMES[a], NAMES[b]) if min(map(len, kept)) >= 2 else None
                only_a, only_b, _ = solved_only_by(ka, kb)
                run = found[kind][a if arm == "a" else b][i]["rl_seed"]
                out_rows.append([f"{NAMES[a]} − {NAMES[b]}", f"{NAMES[a if arm == 'a' else b]} s{run}",
                                 signed(left.mean, 2) if left else "-", f"{left.p:.3g}" if left else "-",
                                 f"{len(only_a)} against {len(only_b)}",
                                 f"{discordant_test(len(only_a), len(only_b)):.3g}"])
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


def label_cells(sa, sb, a, b):
    """Per-run counts of two arms' solved sets, the difference, Welch's interval, the exact label test's p, its
    floor and the reading (results/runstats.py)."""
    from results.search_jobs import NAMES
    na, nb = [len(x) for x in sa], [len(x) for x in sb]
    c = label_comparison(na, nb, NAMES[a], NAMES[b])
    return [" / ".join(map(str, na)), " / ".join(map(str, nb)), signed(c.mean, 2),
            f"[{signed(c.low, 1)}, {signed(c.high, 1)}]", f"{c.p:.3g}", f"{c.floor:.3g}", c.reading]

"""results.md's and heldout.md's verdict numbers are what main computes from the committed runs (`python -m
results.compare --config FILE --report` and its statistics). Both files were written at an archive commit
(results/README.md names them) by the campaign's code, which main no longer holds: these tests tie the two together,
number by number. search_heldout.md's section "Search" is the command's own output."""
import json
import os
import re

import pytest

from results import compare
from results.jobs import read_config
from results.runstats import describe, holm_adjusted, paired_comparison
from results.searched import arms_of, by_block, compare_pair, family, per_run, read_searches
from results.tables import paired, run_level

EXPERIMENTS = os.path.join(compare.ROOT, "results", "experiments")
with open(os.path.join(compare.ROOT, "results", "results.md"), encoding="utf-8") as f:
    RESULTS = f.read()


def section(heading):
    start = RESULTS.index(heading)
    end = RESULTS.find("\n## ", start + 1)
    return RESULTS[start:end if end > 0 else None]


def runs_of(name):
    setup = read_config(os.path.join(EXPERIMENTS, f"{name}.json"))
    return compare.read_runs(setup, None, report=True)


# results.md's verdict table: (its comparison and metric cells) -> (configuration, A, B, metric, k, step)
TRAINING = {
    ("maze v3: VPO − GRPO", "best@1, step 1000"): ("maze_v3", "VPO", "GRPO", "pooled_best@k", 1, 1000),
    ("maze v3: VPO − GRPO", "best@48, step 1000"): ("maze_v3", "VPO", "GRPO", "pooled_best@k", 48, 1000),
    ("maze rerun: VPO − GRPO", "best@48, step 1000"): ("maze_rerun", "VPO (rerun)", "GRPO (rerun)", "pooled_best@k",
                                                       48, 1000),
    ("maze: VPO − matched GRPO", "best@48, step 1000"): ("maze_matched", "VPO (rerun)", "matched GRPO",
                                                         "pooled_best@k", 48, 1000),
    ("maze: VPO − random-weight GRPO", "best@48, step 1000"): ("maze_ablations", "VPO (rerun)", "random-weight GRPO",
                                                               "pooled_best@k", 48, 1000),
    ("maze: VPO − Multi-RLVR", "best@48, step 1000"): ("maze_rerun", "VPO (rerun)", "Multi-RLVR (rerun)",
                                                       "pooled_best@k", 48, 1000),
    ("maze: VPO − Max@k", "best@48, step 1000"): ("maze_rerun", "VPO (rerun)", "Max@k (rerun)", "pooled_best@k", 48,
                                                  1000),
    ("code v2: VPO − GRPO", "pass@12, step 500"): ("code_v2", "VPO", "GRPO", "pass@k", 12, 500),
    ("maze: VPO − early-stopped GRPO", "best@3, VPO at step 1000"): ("maze_rerun", "VPO (rerun)",
                                                                     "early-stopped GRPO (rerun)", "pooled_best@k", 3,
                                                                     1000),
    ("maze: VPO − early-stopped GRPO", "best@48, VPO at step 1000"): ("maze_rerun", "VPO (rerun)",
                                                                      "early-stopped GRPO (rerun)", "pooled_best@k",
                                                                      48, 1000),
    ("code v2: VPO − matched GRPO", "pass@48, step 500"): ("code_v2", "VPO", "matched GRPO", "pass@k", 48, 500),
}


def verdict_table():
    """{(comparison, metric): (per run, mean, interval, p)} of results.md's verdict table."""
    rows = {}
    for line in section("## The verdicts").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and not cells[0].startswith(("comparison", "---")):
            rows[cells[0], cells[1]] = tuple(cells[2:6])
    return rows


def test_results_md_holds_every_verdict_this_test_checks():
    assert set(TRAINING) <= set(verdict_table())


@pytest.mark.parametrize("row", sorted(TRAINING), ids=lambda r: f"{r[0]}, {r[1]}")
def test_a_training_verdict_of_results_md_is_what_report_computes(row):
    name, a, b, key, k, step = TRAINING[row]
    ds = list(paired(runs_of(name), a, b, key, [k], step)[1][k].values())
    mean, interval, p = run_level(ds, a, b)[:3]
    assert verdict_table()[row] == (" / ".join(f"{d:+.3f}" for d in ds), mean, interval, p)


@pytest.fixture(scope="module")
def search():
    setup = read_config(os.path.join(EXPERIMENTS, "code_search.json"))
    found, where = read_searches(setup, [os.path.join(compare.ROOT, b) for b in setup.search["blocks"]])
    return setup, found, where


def test_the_search_verdicts_of_results_md_are_what_report_computes(search):
    """The deciding and secondary pairs (search at 768 answers, Holm within each family), every pair under plain
    sampling at 768 answers, and search − sampling per arm, as results.md's search section gives them."""
    setup, found, where = search
    text, names, top = section("## Code: evolutionary search"), arms_of(setup), setup.search["budgets"][-1]
    assert len(where) == 10 and len(set(where.values())) == 2
    for pairs in (setup.search["pairs"], setup.search["secondary"]):
        for c, rejected in family(found, where, pairs, top, names):
            assert f"| {c.a} − {c.b} | {describe(c, 1)} | {'rejects' if rejected else 'does not reject'} |" in text
    every = text[text.index("**Every pair at every budget**"):]
    for a, b in setup.search["pairs"] + setup.search["secondary"]:
        c = compare_pair(found, where, "sample", a, b, top, names)
        pair = re.escape(f"{c.a} − {c.b}")
        assert re.search(rf"\| {pair} \| sampling \|.*\| {re.escape(describe(c, 1))} \|", every)
    for arm, label in names.items():
        c = paired_comparison(per_run(found, "evolve", arm, top), per_run(found, "sample", arm, top))
        assert f"| {label} | {describe(c, 1)} |" in text


def test_report_writes_the_configurations_own_pairs(tmp_path):
    """code_v2.json's pair VPO − matched GRPO, pass@48 at step 500, beside every arm against GRPO: results.md's
    +0.062 / +0.047 / +0.031, mean +0.047 [+0.008, +0.086]."""
    out = tmp_path / "code"
    assert compare.main(["--config", os.path.join(EXPERIMENTS, "code_v2.json"), "--report", "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    head = text.split("## Configuration")[0]
    assert "| VPO − matched GRPO | 500 | k=48 | 3 | +0.047 | [+0.008, +0.086] | 0.25 |" in head
    assert "| VPO − GRPO | 500 | k=48 | 3 | +0.026 | [-0.072, +0.124] | 0.5 |" in head
    assert "### VPO − matched GRPO, pass@k (whole rollouts)" in text


def test_report_writes_the_search_verdict(tmp_path, search):
    out = tmp_path / "search"
    assert compare.main(["--config", os.path.join(EXPERIMENTS, "code_search.json"), "--report", "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    head = text.split("## Configuration")[0]
    assert "| VPO − GRPO | 768 answers | 10 and 10 | +4.1 [-0.4, +8.6] | 0.0632 | not separated |" in head
    assert (out / "search.png").is_file()
    # the search section gives each pair Holm's adjusted p within its family (results.md: 0.063 and 3e-5)
    setup, found, where = search
    cs = [c for c, _ in family(found, where, setup.search["pairs"], 768, arms_of(setup))]
    for c, adjusted in zip(cs, holm_adjusted([c.p for c in cs])):
        assert f"| {c.a} − {c.b} | deciding | search | {describe(c, 1)} | {adjusted:.3g}, " in text


def test_metric_chooses_the_headline(tmp_path):
    """--metric E_w[best@k] on the maze: the headline verdict is VPO − GRPO in E_w[best@48] at step 1000, the reading
    of users who differ in their weights."""
    out = tmp_path / "v3"
    assert compare.main(["--config", os.path.join(EXPERIMENTS, "maze_v3.json"), "--report", "--metric",
                         "E_w[best@k]", "--out", str(out)]) == 0
    head = (out / "compare.md").read_text().split("## Configuration")[0]
    assert head.startswith("# results.compare") and "E_w[best@k] at the last step and the largest k" in head
    ds = list(paired(runs_of("maze_v3"), "VPO", "GRPO", "E_w[best@k]", [48], 1000)[1][48].values())
    assert f"| VPO − GRPO | 1000 | k=48 | 3 | {run_level(ds, 'VPO', 'GRPO')[0]} |" in head


def test_a_reading_sets_what_matters_against_the_interval():
    """holm_reading reads the 95% interval, not the mean, against the smallest difference that matters
    (results/PLAN_EARLY_STOP.md, "How the result is read"), with the arms' names swapped where B is ahead."""
    from types import SimpleNamespace
    from results.tables import holm_reading
    c = lambda low, high, text: SimpleNamespace(mean=(low + high) / 2, low=low, high=high, reading=text)
    assert holm_reading(c(1.5, 3.0, "A ahead"), True, 1.4) == "A ahead by at least what matters"
    assert holm_reading(c(0.3, 3.1, "A ahead"), True, 1.4) == "A ahead; whether by what matters is not resolved"
    assert holm_reading(c(0.3, 1.3, "A ahead"), True, 1.4) == "A ahead, by less than what matters"
    assert holm_reading(c(-3.0, -1.4, "B ahead"), True, 1.4) == "B ahead by at least what matters"
    assert holm_reading(c(-3.0, -0.5, "B ahead"), True, 1.4) == "B ahead; whether by what matters is not resolved"
    assert holm_reading(c(-1.3, -0.5, "B ahead"), True, 1.4) == "B ahead, by less than what matters"
    # a mean above what matters does not make the lead one that matters: the interval decides
    assert holm_reading(c(0.3, 3.5, "A ahead"), True, 1.4).endswith("not resolved")
    assert holm_reading(c(-1.0, 1.3, "not separated"), False, 1.4) == "not separated; no difference that matters"
    assert holm_reading(c(-1.0, 2.3, "not separated"), False, 1.4) == "not separated; the runs cannot tell"
    assert holm_reading(c(-1.4, 1.4, "not separated"), False, 1.4).endswith("no difference that matters")   # touching
    assert holm_reading(c(0.1, 2.3, "A ahead"), False, 1.4) == "not separated (Holm); the runs cannot tell"
    assert holm_reading(c(0.1, 2.3, "A ahead"), False) == "not separated (Holm)"
    assert holm_reading(c(0.1, 2.3, "A ahead"), True) == "A ahead"
    assert holm_reading(c(-1.0, 1.3, "too few runs for a test"), False, 1.4) == "too few runs for a test"


def test_search_heldout_md_holds_what_report_writes():
    """results/search_heldout.md's section "Search" is the section `python -m results.compare --config
    results/experiments/code_search_heldout.json --report` writes, and its reading table gives the deciding pairs
    as that section does: VPO − GRPO +1.7 [+0.3, +3.1] final, +2.2 [+0.7, +3.7] both stopped early."""
    setup = read_config(os.path.join(EXPERIMENTS, "code_search_heldout.json"))
    found, where = read_searches(setup, [os.path.join(compare.ROOT, b) for b in setup.search["blocks"]])
    lines = compare.search_section(setup, found, where, None)
    with open(os.path.join(compare.ROOT, "results", "search_heldout.md"), encoding="utf-8") as f:
        text = f.read()
    assert text[text.index("\n## Search\n") + 1:] == "\n".join(lines) + "\n"
    cs = [c for c, _ in family(found, where, setup.search["pairs"], 768, arms_of(setup))]
    reading = text[text.index("## The reading"):text.index("## What the checkpoints write")]
    for c, adjusted, label in zip(cs, holm_adjusted([c.p for c in cs]), ("final weights", "both stopped early")):
        assert (f"| VPO − GRPO, {label} (deciding) | {c.mean:+.1f} [{c.low:+.1f}, {c.high:+.1f}] | {c.p:.2g} | "
                f"{adjusted:.2g} | VPO ahead |") in reading


def test_heldout_md_pairs_are_what_the_committed_runs_give():
    """heldout.md, written at the second archive, gives stage 1's pairs in pooled pass_target@k at step 500 as the
    exact test over runs within blocks computes them on main: VPO − GRPO −0.078 [−0.105, −0.051] at k = 48."""
    from results.runstats import blocked_comparison, leave_one_out
    from results.tables import at_step
    setup = read_config(os.path.join(EXPERIMENTS, "code_heldout.json"))
    runs = compare.read_runs(setup, None, report=True)
    with open(os.path.join(setup.dir, "blocks.json"), encoding="utf-8") as f:
        blocks = json.load(f)
    slugs = {a.label: a.slug for a in setup.arms}

    def values(label, k):
        return {r["seed"]: float(at_step(r, 500)["pooled_pass_target@k"][str(k)]) for r in runs[label]}

    def blocked(label, vs):
        return by_block(vs, {seed: blocks[f"{slugs[label]}-s{seed}"] for seed in vs})

    with open(os.path.join(compare.ROOT, "results", "heldout.md"), encoding="utf-8") as f:
        text = f.read()
    for a, b, k in (("VPO", "GRPO", 48), ("VPO", "GRPO", 1), ("VPO", "Multi-RLVR with the max", 48)):
        va, vb = values(a, k), values(b, k)
        c = blocked_comparison(blocked(a, va), blocked(b, vb), a, b)
        loo = [x.p for _, _, x in leave_one_out(va, vb, lambda x, y: blocked_comparison(blocked(a, x), blocked(b, y)))]
        assert (f"| {a} − {b} | k={k} | {len(va)} / {len(vb)} | {describe(c)} | {c.p:.3g} | "
                f"{min(loo):.3g}-{max(loo):.3g} |") in text


def test_search_heldout_md_warm_start_at_three_answers_is_what_its_files_give():
    """The table "Asked after the report" of search_heldout.md: per seed, the problems the warm start's search and
    sampling solve within 768 answers at one and three answers a call, and the seeds solving 868, 1305 and 2532."""
    from results.searched import solved
    d = os.path.join(compare.ROOT, "results", "runs", "code-search-heldout")
    with open(os.path.join(compare.ROOT, "results", "search_heldout.md"), encoding="utf-8") as f:
        text = f.read()
    for slug, label in (("base", "one answer a call (the plan's)"), ("base_m3", "three answers a call")):
        for kind, how in (("evolve", "search"), ("sample", "sampling")):
            found = []
            for seed in range(10):
                with open(os.path.join(d, f"{kind}-{slug}-s{seed}.json"), encoding="utf-8") as f:
                    r = json.load(f)
                assert r["m"] == (3 if slug == "base_m3" else 1) and r["budget"] == 768
                found.append(solved(r, 768))
            three = " / ".join(str(sum(p in s for s in found)) for p in (868, 1305, 2532))
            assert (f"| {label} | {how} | {' '.join(str(len(s)) for s in found)} | "
                    f"{sum(map(len, found)) / 10:.1f} | {three} |") in text


README_RESULTS = os.path.join(compare.ROOT, "results", "README.md")


def modal_set_counts(sets):
    """{arm slug: Counter of the set its runs write most often, named as results/README.md's toy table names them}."""
    import sys
    from collections import Counter
    sys.path.insert(0, os.path.join(compare.ROOT, "examples"))
    from toy_gpt import SET_NAMES as names   # the names examples/toy_gpt.py --summary prints
    counts = {}
    for run, found in sets.items():
        words = tuple(sorted(found["sets"][0][0]))
        counts.setdefault(run.rsplit("-s", 1)[0], Counter())[names.get(words, "other")] += 1
    return counts


@pytest.mark.parametrize("m", [2, 3])
def test_the_toy_sets_are_what_results_readme_says(m):
    """results/README.md's toy at m answers: VPO − Multi-RLVR with the max in E_w[best@m] over the 10 seeds (mean,
    interval, exact p, leave-one-out), and the table of the sets each run writes most often (sets.json)."""
    with open(README_RESULTS, encoding="utf-8") as f:
        text = f.read()
    text = text[text.index(f"**At m = {m}"):]
    text = text[:min(i for i in (text.find("**At m =", 1), text.find("\n## ")) if i > 0)]
    from results.runstats import differences_comparison
    runs = runs_of(f"toy_sets_m{m}")
    ds = list(paired(runs, "VPO", "Multi-RLVR with the max", "E_w[best@k]", step=200)[1][m].values())
    mean, interval, p = run_level(ds, "VPO", "Multi-RLVR with the max")[:3]
    claim = f"is {mean} {interval}, exact p {float(p):.2g} over {len(ds)} seeds".replace("-", "−")
    assert claim in text.replace("\n", " "), claim
    loo = max(differences_comparison(ds[:i] + ds[i + 1:]).p for i in range(len(ds)))
    assert f"keeps p at most {loo:.3f}" in text.replace("\n", " "), loo
    with open(os.path.join(compare.ROOT, "results", "runs", f"toy-sets-m{m}", "sets.json"), encoding="utf-8") as f:
        counts = modal_set_counts(json.load(f))
    rows = {"GRPO (one answer)": "grpo", "VPO": "vpo", "Multi-RLVR with the max": "multi_rlvr_max"} if m == 2 else {
        "GRPO, one answer": "grpo", "VPO, three answers": "vpo", "Multi-RLVR with the max, three answers": "multi_rlvr_max"}
    for label, slug in rows.items():
        cells = [counts[slug].get(k, 0) for k in ("both corners", "a corner and the compromise", "the compromise")]
        row = next(line for line in text.splitlines() if line.startswith(f"| {label} |"))
        assert [int(c) if c.strip() != "-" else 0 for c in row.split("|")[2:5]] == cells, (label, row, cells)


def decided_page(name):
    """(setup, runs, the page, its section "The reading") of results/NAME.md, after checking that its section "The
    decision" and what follows are what `python -m results.compare --config results/experiments/NAME.json --report`
    writes there."""
    from results.tables import decision_lines, written_lines
    setup = read_config(os.path.join(EXPERIMENTS, f"{name}.json"))
    runs = compare.read_runs(setup, None, report=True)
    with open(os.path.join(compare.ROOT, "results", f"{name}.md"), encoding="utf-8") as f:
        text = f.read()
    lines = decision_lines(runs, setup.decide, "pooled_best@k") + written_lines(runs)
    assert text[text.index("\n## The decision\n") + 1:] == "\n".join(lines) + "\n"
    return setup, runs, text, text[text.index("## The reading"):text.index("## What the checkpoints write")]


def test_maze_table_md_holds_what_report_writes():
    """results/maze_table.md's section "The decision" and what follows are what `python -m results.compare --config
    results/experiments/maze_table.json --report` writes, and its reading table gives the deciding pairs as that
    section does: VPO − Max@k +0.018 [+0.003, +0.032], Holm p 0.016; VPO − GRPO +0.123 [+0.092, +0.154]."""
    from results.tables import family_rows
    setup, runs, text, reading = decided_page("maze_table")
    for row in family_rows(runs, setup.decide["pairs"], "pooled_best@k", 48, "deciding", 0.02):
        low, high = row[5].strip("[]").split(", ")
        cell = f"{row[4]} [{low}, {high}], {float(row[7]):.2g}".replace("-", "−")
        assert f"| {row[0]} (deciding) |" in reading and cell in reading, cell


def test_smollm2_toy_md_is_what_the_committed_runs_give():
    """results/smollm2_toy.md: both planned pairs in E_w[best@2] over the 6 seeds (mean, interval, exact
    p), each arm's E_w[best@2] and best@2 beside the GPT toy's (the warm start's from the runs' base evaluation), and
    the table of sets, as `examples/toy_gpt.py --summary` prints it from the committed sets.json."""
    import sys
    import numpy as np
    from results.tables import base_metrics, value
    sys.path.insert(0, os.path.join(compare.ROOT, "examples"))
    import toy_gpt
    with open(os.path.join(compare.ROOT, "results", "smollm2_toy.md"), encoding="utf-8") as f:
        text = f.read()
    flat = text.replace("\n", " ")
    runs, gpt = runs_of("smollm2_toy_m2"), runs_of("toy_sets_m2")
    for b, words in (("GRPO", "exact p {p} over 6 seeds"), ("Multi-RLVR with the max", "p {p}")):
        ds = list(paired(runs, "VPO", b, "E_w[best@k]", [2])[1][2].values())
        mean, interval, p = run_level(ds, "VPO", b)[:3]
        assert len(ds) == 6 and f"{mean} {interval}, {words.format(p=f'{float(p):.2g}')}" in flat, (b, mean, p)

    def cells(rs, key):
        return f"{np.mean([value(r['summary']['metrics'], key, 2) for r in rs]):.3f}"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:6]] for line in text.splitlines()
            if line.startswith("| ") and line.count("|") == 6}
    for label, arm in (("GRPO (one answer)", "GRPO"), ("VPO", "VPO"), ("Multi-RLVR with the max",) * 2):
        assert rows[label] == [cells(runs[arm], "E_w[best@k]"), cells(gpt[arm], "E_w[best@k]"),
                               cells(runs[arm], "best@k"), cells(gpt[arm], "best@k")], label
    bases = base_metrics(runs)[2], base_metrics(gpt)[2]   # the warm start sampled with two answers a rollout
    assert rows["the warm start (m = 2)"] == [f"{value(m, key, 2):.3f}" for key in ("E_w[best@k]", "best@k")
                                              for m in bases]
    with open(os.path.join(compare.ROOT, "results", "runs", "smollm2-toy-m2", "sets.json"), encoding="utf-8") as f:
        table = toy_gpt.sets_table(json.load(f))
    names = {"grpo": "GRPO (one answer)", "multi_rlvr_max": "Multi-RLVR with the max", "vpo": "VPO"}
    for row in table[2:]:
        slug = row.split("|")[1].strip()
        assert row.replace(f"| {slug} |", f"| {names[slug]} |", 1) in text, row


def test_maze_early_stop_md_holds_what_report_writes():
    """results/maze_early_stop.md's section "The decision" and what follows are what `python -m results.compare
    --config results/experiments/maze_early_stop.json --report` writes, and its reading table gives the deciding
    pair and the final weights as the committed runs do: −0.003 [−0.009, +0.003], p 0.25; +0.043 at step 500."""
    from results.tables import family_rows
    setup, runs, text, reading = decided_page("maze_early_stop")
    (row,) = family_rows(runs, setup.decide["pairs"], "pooled_best@k", 48, "deciding", 0.02)
    low, high = row[5].strip("[]").split(", ")
    cell = f"| {row[4]} [{low}, {high}] | {float(row[6]):.2g} | {row[8]} |".replace("-", "−")
    assert f"| {row[0]} (deciding) | each run at its t\\* {cell}" in reading, cell
    ds = list(paired(runs, "VPO", "GRPO", "pooled_best@k", [48], 500)[1][48].values())
    mean, interval, p = run_level(ds, "VPO", "GRPO")[:3]
    cell = f"| {mean} {interval} | {float(p):.1g} |".replace("-", "−")
    assert f"| VPO − GRPO (beside) | step 500 {cell}" in reading, cell
    grid = read_config(os.path.join(EXPERIMENTS, "maze_early_stop_grid.json"))   # amendment 1, the check of the grid
    runs = compare.read_runs(grid, None, report=True)
    check = " ".join(text[text.index("## The check of the grid"):text.index("\n## The decision")].split())
    ds = list(paired(runs, *grid.pairs[0], "pooled_best@k", [48])[1][48].values())
    mean, interval, p = run_level(ds, *grid.pairs[0])[:3]
    claim = f"is {mean} {interval} in pooled best@48, exact p {float(p):.2g} over 10 runs".replace("-", "−")
    assert len(ds) == 10 and claim in check, claim
    assert "t\\* on the 5-step grid**: " + " ".join(
        f"s{r['seed']}:{r['stopped_at']}" for r in runs["GRPO stopped early, 5-step grid"]) in check
    for step in (0, 25, 50):   # the by-product: evaluating every 5 steps leaves training alone
        assert all(d == 0 for ds in paired(runs, "GRPO, 5-step grid to step 50", "GRPO", "pooled_best@k",
                                           step=step)[1].values() for d in ds.values()), step

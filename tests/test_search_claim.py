"""The search experiment: results/search_claim.py runs it (the warm start's check, t*, one seed's units end to end
on a tiny model, resumed and redone), results/report_claim.py reports it (by hand)."""
import itertools
import json
import os
from dataclasses import replace

import numpy as np
import pytest

from results import report_claim as rc
from results import search_claim as sc
from runs.cli import UsageError


def write_log(path, losses):
    with open(path, "w") as f:
        for i, loss in enumerate(losses):
            f.write(json.dumps({"step": i + 1, "loss": loss}) + "\n")


def test_first_difference_by_hand(tmp_path):
    a, b, c, d = (str(tmp_path / n) for n in "abcd")
    write_log(a, [3.0, 2.0, 1.0])
    write_log(b, [3.0, 2.0, 1.0])
    write_log(c, [3.0, 2.0, 1.5])
    write_log(d, [3.0, 2.0])
    assert sc.first_difference(a, b) is None
    assert sc.first_difference(a, c) == 3
    assert sc.first_difference(a, d) == 3   # a log cut short differs where it ends


def test_block_a_only_for_the_reference_log(tmp_path):
    ref, same, other = (str(tmp_path / n) for n in ("ref.jsonl", "same.jsonl", "other.jsonl"))
    write_log(ref, [1.0, 0.5])
    write_log(same, [1.0, 0.5])
    write_log(other, [1.0, 0.25])
    claim = replace(sc.PLAN, record="rec", reference="ref.jsonl")
    assert sc.block(claim, same, root=str(tmp_path)) == (str(tmp_path / "rec"), None)
    where, step = sc.block(claim, other, root=str(tmp_path))
    assert step == 2 and os.path.basename(where).startswith("rec-rep-")


def test_t_star_is_the_best_validation_step_the_earlier_on_a_tie():
    rows = [{"step": s, "pooled_pass_target@k": {48: v}} for s, v in ((50, 0.5), (100, 0.75), (150, 0.75), (200, 0.1))]
    assert sc.best_step(rows, 48) == 100
    assert sc.best_step(rows[2:], 48) == 150


def test_one_seed_end_to_end_resumed_and_redone(tmp_path):
    out = str(tmp_path / "out")
    claim = replace(sc.QUICK_CLAIM, seeds=(0,), record=str(tmp_path / "record"), early="grpo", arms=("grpo",))
    logs = os.path.join(out, "logs")
    os.makedirs(logs)
    sc.ensure_warm_start(claim, out, logs)
    rec = claim.record
    for arm in ("grpo", "base"):
        assert sc.unit_job(claim, out, rec, arm, 0, os.path.join(logs, f"{arm}.log")) == 0
        assert sc.unit_done(claim, rec, arm, 0)
    v = json.load(open(os.path.join(rec, "validate-grpo-s0.json")))
    assert [r["step"] for r in v["rows"]] == [1, 2] and v["last"] == 2 and v["t_star"] in (1, 2)
    early = [f for f in os.listdir(rec) if "grpo_early" in f]
    assert len(early) == (3 if v["t_star"] == 1 else 0)
    evolve = json.load(open(os.path.join(rec, "evolve-grpo-s0.json")))
    assert evolve["seed"] == 2000 and evolve["budget"] == 27 and len(evolve["results"]) == 2
    assert json.load(open(os.path.join(rec, "evolve-base-s0.json")))["m"] == 1
    # done: nothing is made again
    stamps = {f: os.path.getmtime(os.path.join(rec, f)) for f in os.listdir(rec) if f.endswith(".json")}
    assert sc.unit_job(claim, out, rec, "grpo", 0, os.path.join(logs, "grpo.log")) == 0
    assert stamps == {f: os.path.getmtime(os.path.join(rec, f)) for f in stamps}
    # half done and its weights gone (another machine): the unit's files are deleted and it is redone whole
    os.remove(os.path.join(rec, "sample-grpo-s0.json"))
    import shutil
    shutil.rmtree(os.path.join(out, "runs", "grpo-s0"))
    assert not sc.unit_done(claim, rec, "grpo", 0)
    assert sc.unit_job(claim, out, rec, "grpo", 0, os.path.join(logs, "grpo.log")) == 0
    assert sc.unit_done(claim, rec, "grpo", 0)
    assert os.path.getmtime(os.path.join(rec, "pool-grpo-s0.json")) > stamps["pool-grpo-s0.json"]


def test_check_machine_trains_the_runners_warm_start_and_names_the_first_departure(tmp_path):
    """--check_machine's first losses are those of the warm start the runner trains; a log that differs at step 3
    is named at step 3, an equal one at none."""
    out, logs = str(tmp_path / "out"), str(tmp_path / "out" / "logs")
    os.makedirs(logs)
    claim = replace(sc.QUICK_CLAIM, seeds=(0,))
    ref = os.path.join(os.path.dirname(sc.ensure_warm_start(claim, out, logs)), "log.jsonl")
    mine = rc.first_losses(claim, steps=4, poll=0.05)
    assert len(sc.losses(ref)) == 6 and mine == sc.losses(ref)[:4]
    assert rc.check_machine(replace(claim, reference=ref), mine) == (4, None)
    rows = [json.loads(line) for line in open(ref)]
    rows[2]["loss"] += 1e-6
    changed = str(tmp_path / "changed.jsonl")
    with open(changed, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    assert rc.check_machine(replace(claim, reference=changed), mine) == (4, 3)
    with pytest.raises(UsageError):
        rc.check_machine(claim, [])


def complete(claim, rec, seed):
    """Every file of seed's units in block rec (the early arm's validation: t* at the last step)."""
    for arm in (*claim.arms, "base"):
        for path in sc.unit_files(claim, rec, arm, seed):
            sc.write_json(path, {"t_star": 500, "last": 500})


def test_blocks_take_disjoint_seeds_until_the_plan_has_its_eleven(tmp_path):
    """Amendment 1: block A has seeds 0-4 and VPO's seed 5; a replicate block takes the lowest seeds no block has
    started, finishes its own first, and stops where the blocks together have 11 complete seeds; a stop in any
    block stops them all."""
    claim, a = sc.PLAN, str(tmp_path / "search-claim")
    for seed in range(5):
        complete(claim, a, seed)
    sc.write_json(os.path.join(a, "vpo-s5", "summary.json"), {})
    sc.write_json(os.path.join(a, "pool-grpo-s5.json"), {})
    assert sc.started(claim, a) == [0, 1, 2, 3, 4, 5] and sc.complete_seeds(claim, a) == [0, 1, 2, 3, 4]
    assert sc.blocks(a) == [a] and sc.block_seeds(claim, a, a) == list(range(11))
    b, c = a + "-rep-bbbb", a + "-rep-aaaa"
    sc.write_json(os.path.join(b, "block.json"), {"invocations": [{"date": "2026-12-04 19:40 UTC"}]})
    assert sc.block_seeds(claim, b, a) == [6, 7, 8, 9, 10, 11]
    complete(claim, b, 7)
    sc.write_json(os.path.join(b, "evolve-vpo-s11.json"), {})
    assert sc.started(claim, b) == [7, 11]
    assert sc.block_seeds(claim, b, a) == [7, 11, 6, 8, 9, 10]       # its own seeds first, then the lowest free
    sc.write_json(os.path.join(c, "block.json"), {"invocations": [{"date": "2026-12-05 09:00 UTC"}]})
    assert sc.blocks(a) == [a, b, c]                                     # in the order the blocks began
    assert sc.block_seeds(claim, c, a) == [6, 8, 9, 10, 12]             # 11 - 6 complete elsewhere: 5 seeds
    for seed in (6, 8, 9, 10, 11):
        complete(claim, b, seed)
    assert sc.block_seeds(claim, b, a) == [6, 7, 8, 9, 10, 11] and sc.block_seeds(claim, a, a) == [0, 1, 2, 3, 4]
    assert sc.block_seeds(claim, c, a) == []
    assert sc.stopped(a) is None
    sc.write_json(os.path.join(c, sc.STOPPED), {})
    assert sc.stopped(a) == os.path.join(c, sc.STOPPED)


@pytest.mark.parametrize("argv", [["--jobs", "0"], ["--bogus"], ["--units", "x"]])
def test_bad_input_one_line_exit_2(argv, capsys, tmp_path):
    assert sc.main(argv + ["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not os.path.exists(tmp_path / "o")


def test_the_plans_deciding_test_on_its_own_example():
    """PLAN_SEARCH.md: label_comparison over 11 runs per arm is exact (all C(22, 11) = 705,432 arrangements), so
    its smallest p is 2 / 705,432; Holm over the two deciding pairs tests the smaller p at 0.025, the other at 0.05."""
    import itertools
    import math

    import numpy as np

    from results.runstats import blocked_comparison, detectable_difference, label_comparison, label_p, smallest_p
    from search import holm
    # every VPO run above every GRPO run reaches the floor; enumerating the 705,432 takes seconds, so 6 runs here
    assert math.comb(22, 11) == 705432 and smallest_p(11, 11) == pytest.approx(2 / 705432)
    c = label_comparison(list(range(20, 26)), list(range(6)), "VPO", "GRPO")
    assert c.p == pytest.approx(2 / math.comb(12, 6)) and c.p == c.floor and c.reading == "VPO ahead"
    # the search of record's runs at 768 answers (the plan's power table): the label test by brute force
    a, b = [19, 7, 8], [12, 10, 13]
    both, observed = a + b, abs(np.mean(a) - np.mean(b))
    extreme = sum(abs(np.mean([both[i] for i in s]) - np.mean([both[i] for i in range(6) if i not in s])) >= observed
                  for s in itertools.combinations(range(6), 3))
    assert label_p(a, b) == pytest.approx(extreme / 20)
    # the plan's sd scaled to 128 problems, 6.44: 11 runs per arm find 8.1 with 80% power at alpha = 0.05
    assert detectable_difference(4.83 * 128 / 96, 11, 11) == pytest.approx(8.1, abs=0.05)
    # amendment 1: block A's 5 seeds and a second block's 6 are dealt within blocks, C(10, 5) · C(12, 6) = 232,848
    # arrangements; every VPO run above every GRPO run of its block reaches the floor, whatever the blocks' levels
    c = blocked_comparison({"A": [20, 21, 22, 23, 24], "B": [60, 61, 62, 63, 64, 65]},
                           {"A": [0, 1, 2, 3, 4], "B": [40, 41, 42, 43, 44, 45]}, "VPO", "GRPO")
    assert c.floor == pytest.approx(2 / 232848) and c.p == c.floor and c.mean == pytest.approx(20)
    assert holm([0.02, 0.04]) == [True, True] and holm([0.03, 0.04]) == [False, False]
    assert holm([0.04, 0.01]) == [True, True] and holm([0.06, 0.01]) == [False, True]


def hand_block(rec, claim):
    """A block of 3 seeds written by hand (test_the_report_by_hand says what it holds)."""
    solved_at = {"vpo": [[5, 15, None], [5, 5, 5], [None] * 3]}      # within 10: 1, 3, 0; within 20: 2, 3, 0
    early = {0: [5, None, None]}                                     # seed 0 stops at step 50: one problem by 20
    pools = {"vpo": [[1, 0, 0], [2, 2, 0], [4, 4, 4]], "grpo": [[0] * 3, [0] * 3, [0, 0, 7]],
             "multi_rlvr_max": [[0] * 3] * 3, "grpo_early": [[3, 1, 0]]}   # with the target: 1 2 3; 0 0 1; 2 0 1
    pooled = {"vpo": ([0.5, 0.6, 0.7], [0.2, 0.4, 0.6])}               # pass_target@48 at steps 250 and 500
    valid = {0: (0.5, 0.25), 1: (0.1, 0.2), 2: (0.1, 0.2)}           # at steps 50 and 500: t* 50, 500, 500

    def search_file(kind, arm, seed, at):
        sc.write_json(os.path.join(rec, f"{kind}-{arm}-s{seed}.json"),
                      {"problems": [1, 2, 3], "results": [{"solved_at": a} for a in at], "seconds": 3.0,
                       "machine": "M"})

    def pool_file(arm, seed):
        sc.write_json(os.path.join(rec, f"pool-{arm}-s{seed}.json"),
                      {"problems": [1, 2, 3], "solved_target_per_problem": pools[arm][seed]})
    for seed in claim.seeds:
        for arm in ("vpo", "grpo", "multi_rlvr_max", "base"):
            at = solved_at.get(arm, [[None] * 3] * 3)[seed]
            for kind in ("evolve", "sample"):
                search_file(kind, arm, seed, at if kind == "evolve" else [None] * 3)
            if arm != "base":
                at250, at500 = (x[seed] for x in pooled.get(arm, ([0.0] * 3, [0.0] * 3)))
                sc.write_json(os.path.join(rec, f"{arm}-s{seed}", "summary.json"),
                              {"args": {"steps": 500}, "train_seconds": 100.0 * (seed + 1),
                               "metrics": {"m": 1, "problems": 64, "pooled_pass_target@k": {"1": 0.1, "48": at500}}})
                with open(os.path.join(rec, f"{arm}-s{seed}", "eval.jsonl"), "w") as f:
                    f.write(json.dumps({"step": 250, "pooled_pass_target@k": {"1": 0.1, "48": at250}}) + "\n")
                pool_file(arm, seed)
        sc.write_json(os.path.join(rec, f"validate-grpo-s{seed}.json"),
                      {"t_star": 50 if seed in early else 500, "last": 500,
                       "rows": [{"step": t, "pooled_pass_target@k": {"48": v}} for t, v in zip((50, 500), valid[seed])]})
        if seed in early:
            pool_file("grpo_early", seed)
            for kind in ("evolve", "sample"):
                search_file(kind, "grpo_early", seed, early[seed] if kind == "evolve" else [None] * 3)


def test_the_report_by_hand(tmp_path):
    """A block written by hand, 3 seeds: the counts per run, the label test (p = 8/20 by enumeration), the paired
    early-stopping difference, the problems only one arm solves, the verdict, GRPO's validation curve, the pools,
    the training evaluations and the machines and seconds; nothing is tabulated before --stop, and results.md's
    section before it counts nothing."""
    rec = str(tmp_path / "runs" / "search-claim")
    claim = replace(sc.QUICK_CLAIM, seeds=(0, 1, 2), scheduled=3, problems=3, budgets=(10, 20), min_seeds=3,
                    answers=48, record="results/runs/search-claim")
    hand_block(rec, claim)
    assert rc.complete_seeds(claim, rec) == [0, 1, 2]
    assert rc.report(claim, rec)[0].startswith("The experiment is running: 12 units are done in 1 block, of the 12")
    assert rc.claim_section(str(tmp_path), claim) == []                  # no block.json: no section
    sc.write_json(os.path.join(rec, "block.json"), {})
    before = "\n".join(rc.claim_section(str(tmp_path), claim))
    assert "The experiment is running" in before and "PLAN_SEARCH.md" in before
    assert not any(c.isdigit() for c in before)                       # no count that would go stale
    assert rc.claim_figures(str(tmp_path), claim) == [] and not os.path.exists(tmp_path / rc.FIGURE)
    sc.write_json(os.path.join(rec, sc.STOPPED), {})
    text = "\n".join(rc.report(claim, rec))
    assert "| VPO | search | 2 3 0 | 1.3 | 1.7 |" in text
    assert "| GRPO | search | 0 0 0 | 0.0 | 0.0 |" in text
    assert "| early-stopped GRPO | search | 1 0 0 | 0.3 | 0.3 |" in text
    assert "| VPO − GRPO | +1.7 [" in text and "p = 0.4 |" in text          # 8 of the 20 arrangements
    assert "t* per run: 50, 500, 500" in text and "paired by run: +0.3 [" in text
    assert "With 3 runs per arm in 1 block the test finds no difference at 80% power at Holm's first step." in text
    assert "| VPO − GRPO | 3 | 0 | 0 |" in text                         # solved only by some VPO run
    # the verdict: the deciding pairs' readings after Holm, beside the paper's claim; none below min_seeds
    reading = next(line for line in text.splitlines() if line.startswith("| VPO − GRPO | +1.7")).split(" | ")[-1][:-2]
    assert f"**The verdict**, as measured: VPO − GRPO: {reading}; VPO − early-stopped GRPO: " in text
    assert "**No verdict**: 3 complete seeds, fewer than the plan's 4." in "\n".join(
        rc.report(replace(claim, min_seeds=4), rec))
    # a seed completed after the stop never enters: the stop's record of complete seeds decides
    sc.write_json(os.path.join(rec, sc.STOPPED), {"complete_seeds": [0, 1]})
    cut = "\n".join(rc.report(claim, rec))
    assert "Complete seeds: 2 (block A: 0, 1)" in cut and "| VPO | search | 2 3 | 2.0 | 2.5 |" in cut
    sc.write_json(os.path.join(rec, sc.STOPPED), {})
    # leaving one run out: the difference and the exact p, the p by brute force over the arrangements of the labels
    def brute_p(a, b):
        both, obs = a + b, abs(np.mean(a) - np.mean(b))
        diffs = [abs(np.mean([both[i] for i in pick]) - np.mean([both[i] for i in range(len(both)) if i not in pick]))
                 for pick in itertools.combinations(range(len(both)), len(a))]
        return np.mean([d >= obs - 1e-12 for d in diffs])
    counts = {"VPO": [2, 3, 0], "GRPO": [0, 0, 0], "early-stopped GRPO": [1, 0, 0]}
    rows = [line for line in text.splitlines() if " s0 |" in line or " s1 |" in line or " s2 |" in line]
    assert len(rows) == 12
    for b in ("GRPO", "early-stopped GRPO"):
        for arm in ("VPO", b):
            for seed in range(3):
                kept = {k: [v for i, v in enumerate(c) if not (k == arm and i == seed)] for k, c in counts.items()}
                diff = np.mean(kept["VPO"]) - np.mean(kept[b])
                assert f"| VPO − {b} | {arm} s{seed} | {diff:+.1f} | {brute_p(kept['VPO'], kept[b]):.3g} |" in rows
    assert "| VPO − GRPO | VPO s0 | +1.5 | 0.4 |" in rows                 # 3 0 against 0 0 0: 4 of 10
    # GRPO's validation curve, steps by runs, t* marked
    assert "| step | seed 0 | seed 1 | seed 2 |" in text
    assert "| 50 | 0.500 (t*) | 0.100 | 0.100 |" in text and "| 500 | 0.250 | 0.200 (t*) | 0.200 (t*) |" in text
    # the pools: problems whose answers include the target; the early-stopped arm's is its own where t* < last
    assert "| VPO | 1 2 3 | 2.0 |" in text and "| GRPO | 0 0 1 | 0.3 |" in text
    assert "| early-stopped GRPO | 2 0 1 | 1.0 |" in text and "| Multi-RLVR with the max | 0 0 0 | 0.0 |" in text
    # the training evaluations, mean ± population std over the runs: 0.5 0.6 0.7 at 250, 0.2 0.4 0.6 at 500
    assert "| VPO | 250 | 3 | 0.100 ± 0.000 | 0.600 ± 0.082 |" in text
    assert "| VPO | 500 | 3 | 0.100 ± 0.000 | 0.400 ± 0.163 |" in text
    # machines and seconds: training 100, 200, 300 s; 3 + 3 s of search and sampling over 3 problems
    assert "| VPO | M (3) | 200 | 2.0 |" in text and "| warm start | M (3) | - | 2.0 |" in text
    after = rc.claim_section(str(tmp_path), claim)
    assert after[0] == rc.SECTION and "\n".join(after).endswith(text + "\n") and f"]({rc.FIGURE})" in after[4]
    assert rc.claim_figures(str(tmp_path), claim) == [rc.FIGURE]           # the reproduction's report draws it
    assert os.path.getsize(tmp_path / rc.FIGURE) > 0


def test_the_report_over_two_blocks(tmp_path):
    """Amendment 1: a second block (the hand block again, as seeds 3-5 of another warm start) enters the report; its
    pairs permute labels within blocks, which is not the label test on the six runs pooled."""
    import re
    import shutil
    from results.runstats import blocked_comparison, describe, detectable_difference, label_comparison
    rec = str(tmp_path / "runs" / "search-claim")
    claim = replace(sc.QUICK_CLAIM, seeds=tuple(range(6)), scheduled=6, problems=3, budgets=(10, 20), min_seeds=6,
                    answers=48, record="results/runs/search-claim")
    hand_block(rec, replace(claim, seeds=(0, 1, 2)))
    other = rec + "-rep-b"
    os.makedirs(other)
    for name in os.listdir(rec):
        copy = shutil.copytree if os.path.isdir(os.path.join(rec, name)) else shutil.copyfile
        copy(os.path.join(rec, name), os.path.join(other, re.sub(r"-s(\d)", lambda m: f"-s{int(m[1]) + 3}", name)))
    for r in (rec, other):
        sc.write_json(os.path.join(r, "block.json"), {"invocations": [{"date": "2026-12-04 19:40 UTC"}]})
    assert rc.block_of(claim, rec) == {0: rec, 1: rec, 2: rec, 3: other, 4: other, 5: other}
    sc.write_json(os.path.join(other, sc.STOPPED), {})                 # a stop in any block stops the experiment
    text = "\n".join(rc.report(claim, rec))
    assert "Complete seeds: 6 (block A: 0, 1, 2; block search-claim-rep-b: 3, 4, 5)" in text
    assert "| VPO | search | 2 3 0 2 3 0 | 1.3 | 1.7 |" in text
    blocked = blocked_comparison({"A": [2, 3, 0], "B": [2, 3, 0]}, {"A": [0] * 3, "B": [0] * 3}, "VPO", "GRPO")
    pooled = label_comparison([2, 3, 0] * 2, [0] * 6)
    assert blocked.p != pooled.p and f"| VPO − GRPO | {describe(blocked, 1)} |" in text
    assert "| step | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | seed 5 |" in text
    sd = float(re.search(r"is sd = ([\d.]+) problems", text)[1])                     # each block costs each arm a df
    first, second = (detectable_difference(sd, 6, 6, alpha, blocks=2) for alpha in (0.025, 0.05))
    assert f"in 2 blocks the test finds a difference of {first:.1f} problems with 80% power at Holm's first step " \
           f"(α = 0.025), {second:.1f} at its second (α = 0.05)." in text
    for name in os.listdir(rec):                                      # a seed complete in two blocks: refused
        if name.endswith(("-s0", "-s0.json")):
            copy = shutil.copytree if os.path.isdir(os.path.join(rec, name)) else shutil.copyfile
            copy(os.path.join(rec, name), os.path.join(other, name))
    with pytest.raises(UsageError, match="complete in two blocks"):
        rc.block_of(claim, rec)


def test_the_warm_starts_fresh_pools_are_the_plans():
    """PLAN_SEARCH.md: with fresh streams (seed 1) the warm start's 48 answers solve 24 (m = 1) and 25 (m = 3) of
    the 128 hard problems."""
    assert rc.fresh_base_pools(sc.PLAN) == {1: 24, 3: 25}


def test_v2_departures_by_hand(tmp_path):
    """A block's run of a seed v2 ran is compared with v2's committed log, statistic by statistic."""
    root, rec = str(tmp_path), str(tmp_path / "rec")
    claim = replace(sc.QUICK_CLAIM, seeds=(0,), arms=("grpo", "vpo"))
    rows = [{"step": i + 1, "loss": 1.0 / (i + 1), "kl": 0.0} for i in range(3)]
    for where, arm, changed in ((rc.V2_RUNS, "grpo", None), ("rec", "grpo", None), (rc.V2_RUNS, "vpo", None),
                                ("rec", "vpo", 2)):
        os.makedirs(os.path.join(root, where, f"{arm}-s0"))
        with open(os.path.join(root, where, f"{arm}-s0", "log.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps({**r, "kl": 0.5} if r["step"] == changed else r) + "\n")
    assert rc.v2_departures(claim, rec, root=root) == {"grpo-s0": None, "vpo-s0": 2}


def test_report_command_bad_block_and_stop(tmp_path, capsys):
    assert rc.main(["--block", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("error: --block")
    rec, other = tmp_path / "rec", tmp_path / "rec-rep-abcd"
    sc.write_json(str(rec / "block.json"), {})
    sc.write_json(str(other / "block.json"), {"invocations": [{"date": "2026-12-04 19:40 UTC"}]})
    assert rc.main(["--block", str(rec)]) == 0 and not (rec / sc.STOPPED).exists()
    assert "0 units are done in 2 blocks, of the 44 that its 11 scheduled seeds need" in capsys.readouterr().out
    assert rc.main(["--block", str(rec), "--stop"]) == 0
    assert (rec / sc.STOPPED).exists() and (other / sc.STOPPED).exists()   # the stop holds for every block
    assert "no comparison over runs is possible" in capsys.readouterr().out

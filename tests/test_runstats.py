"""results/runstats.py: the run-level statistics, by hand and against brute force."""
import itertools
import math

import numpy as np
import pytest

from results.runstats import (blocked_comparison, detectable_difference, label_comparison, label_p, leave_one_out,
                              paired_comparison, runs_needed, sign_flip_p, smallest_p, t_cdf, t_quantile, within_sd)
from search import discordant_test, solved_only_by


@pytest.mark.parametrize("q, df, x", [(0.975, 1, 12.706205), (0.975, 2, 4.302653), (0.975, 9, 2.262157),
                                      (0.975, 29, 2.045230), (0.8, 2, 1.060660), (0.8, 9, 0.883404),
                                      (0.9875, 2, 6.205347), (0.9875, 18, 2.445004)])
def test_t_quantiles_match_the_tables(q, df, x):
    assert t_quantile(q, df) == pytest.approx(x, abs=2e-5)
    assert t_cdf(x, df) == pytest.approx(q, abs=1e-6)


def test_sign_flip_by_hand():
    assert sign_flip_p([1, 2, 3]) == 0.25          # only the observed pattern and its mirror: 2 of 8
    # sums of ±1 ±2 ±3: 6, 0, 2, −4, 4, −2, 0, −6; |sum| ≥ |1 − 2 + 3| = 2 in six of eight
    assert sign_flip_p([1, -2, 3]) == 0.75
    assert sign_flip_p([0.1, 0.1, 0.1, 0.1, 0.1, 0.1]) == 2 / 64


def test_label_permutation_by_hand_and_by_brute_force():
    assert label_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=4), rng.normal(size=3)
    pooled, count, total = np.concatenate([a, b]), 0, 0
    for idx in itertools.permutations(range(7)):  # every ordering of the runs: each split counted 4! 3! times
        x = pooled[list(idx)]
        count += abs(x[:4].mean() - x[4:].mean()) >= abs(a.mean() - b.mean()) - 1e-12
        total += 1
    assert label_p(a, b) == pytest.approx(count / total)


def test_the_blocked_test_by_brute_force_and_its_interval_by_hand():
    a, b = {"A": [5, 9, 4], "B": [30, 26]}, {"A": [2, 3, 7], "B": [21, 25]}
    c = blocked_comparison(a, b)
    assert c.mean == pytest.approx((18 + 56) / 5 - (12 + 46) / 5)
    # brute force: every way to deal each block's values into two groups of its size, the mean difference over all
    counts = []
    for first in itertools.combinations(range(6), 3):
        for second in itertools.combinations(range(4), 2):
            xa, xb = a["A"] + b["A"], a["B"] + b["B"]
            ga = [xa[i] for i in first] + [xb[i] for i in second]
            gb = [xa[i] for i in range(6) if i not in first] + [xb[i] for i in range(4) if i not in second]
            counts.append(abs(np.mean(ga) - np.mean(gb)) >= abs(c.mean) - 1e-12)
    assert len(counts) == 20 * 6 and c.p == pytest.approx(np.mean(counts))
    assert c.floor == pytest.approx(2 / 120)
    # Welch on deviations from each block's arm mean: SS_A = 14 + 8, SS_B = 14 + 8, df 5 - 2 = 3 per arm
    se = math.sqrt((22 / 3 + 22 / 3) / 5)
    assert (c.high - c.low) / 2 == pytest.approx(2.446912 * se, rel=1e-5)   # equal variances: df 6, t 2.446912


def test_a_difference_between_blocks_is_not_one_between_methods():
    a, b = {"A": [5, 9, 4], "B": [30, 26, 27]}, {"A": [2, 3, 7], "B": [21, 25, 31]}
    c = blocked_comparison(a, b)
    shifted = blocked_comparison({"A": a["A"], "B": [v + 100 for v in a["B"]]},
                                 {"A": b["A"], "B": [v + 100 for v in b["B"]]})
    assert (shifted.mean, shifted.p) == pytest.approx((c.mean, c.p))
    assert (shifted.low, shifted.high) == pytest.approx((c.low, c.high))
    pooled = label_comparison(a["A"] + a["B"], b["A"] + b["B"])   # the blocks' gap widens the unblocked interval
    assert pooled.mean == pytest.approx(c.mean) and pooled.high - pooled.low > c.high - c.low
    with pytest.raises(ValueError, match="than blocks"):
        blocked_comparison({"A": [1], "B": [3]}, {"A": [1, 2], "B": [3, 4]})
    with pytest.raises(ValueError, match="same blocks"):
        blocked_comparison({"A": [1, 2]}, {"B": [1, 2]})


def test_the_spread_within_blocks_by_hand():
    # squares about each block's arm mean: 14 + 8 (A) and 14 + 8 (B), over 10 runs less 4 groups
    a, b = {"A": [5, 9, 4], "B": [30, 26]}, {"A": [2, 3, 7], "B": [21, 25]}
    assert within_sd(a, b) == pytest.approx(math.sqrt(44 / 6))
    assert within_sd({"A": [1, 2, 3]}, {"A": [2, 6]}) == pytest.approx(math.sqrt((2 + 8) / 3))   # pooled, two-sample


def test_unequal_blocks_by_brute_force():
    """Blocks of 2 + 1 and 2 + 2 runs: the weighted difference Σ w_b (mean_a − mean_b), w_b ∝ n_a n_b / (n_a + n_b)
    (2/3 and 1, so 0.4 and 0.6), its p over the 3 · 6 ways to deal the labels within blocks."""
    a, b = {"A": [4, 6], "B": [10, 9]}, {"A": [1], "B": [7, 8]}
    c = blocked_comparison(a, b)
    assert c.mean == pytest.approx(0.4 * (5 - 1) + 0.6 * (9.5 - 7.5))
    diffs = []
    xa, xb = [4, 6, 1], [10, 9, 7, 8]
    for pa in itertools.combinations(range(3), 2):
        for pb in itertools.combinations(range(4), 2):
            d1 = np.mean([xa[i] for i in pa]) - np.mean([xa[i] for i in range(3) if i not in pa])
            d2 = np.mean([xb[i] for i in pb]) - np.mean([xb[i] for i in range(4) if i not in pb])
            diffs.append(abs(0.4 * d1 + 0.6 * d2))
    assert c.p == pytest.approx(np.mean([d >= abs(c.mean) - 1e-12 for d in diffs])) and c.floor == pytest.approx(1 / 18)


def test_smallest_p_and_what_three_runs_can_detect():
    assert smallest_p(3) == 0.25 and smallest_p(5) == 2 / 32 and smallest_p(6) == 2 / 64
    assert smallest_p(3, 3) == pytest.approx(0.1) and smallest_p(4, 4) == pytest.approx(2 / 70)
    assert smallest_p(3, 4) == pytest.approx(1 / 35)
    assert detectable_difference(1.0, 3) is None and detectable_difference(1.0, 3, 3) is None
    # paired, n = 10, sd 1: (t_.975,9 + t_.8,9) / sqrt(10) = (2.262157 + 0.883404) / 3.162278
    assert detectable_difference(1.0, 10) == pytest.approx(0.994714, abs=1e-5)
    # unpaired, 10 and 10, sd 2: (t_.975,18 + t_.8,18) * 2 * sqrt(0.2) = (2.100922 + 0.862049) * 0.894427
    assert detectable_difference(2.0, 10, 10) == pytest.approx(2.650162, abs=1e-5)
    # the same runs in two blocks (amendment 1): df 16, (t_.975,16 + t_.8,16) * 2 * sqrt(0.2) = (2.119905 + 0.864710) * 0.894427
    assert detectable_difference(2.0, 10, 10, blocks=2) == pytest.approx(2.669521, abs=1e-4)
    n = runs_needed(2.66, 2.0)
    assert n == 10 and detectable_difference(2.0, n - 1, n - 1) > 2.66


def test_paired_comparison_by_hand():
    c = paired_comparison({0: 0.5, 1: 0.6, 2: 0.7}, {0: 0.4, 1: 0.4, 2: 0.4}, "VPO", "GRPO")
    # d = 0.1, 0.2, 0.3: mean 0.2, sd 0.1, half-width t_.975,2 * 0.1 / sqrt(3)
    half = 4.302653 * 0.1 / math.sqrt(3)
    assert (c.mean, c.p, c.floor) == (pytest.approx(0.2), 0.25, 0.25)
    assert (c.low, c.high) == (pytest.approx(0.2 - half, abs=1e-5), pytest.approx(0.2 + half, abs=1e-5))
    assert c.reading == "too few runs for a test" and c.detectable is None
    many = paired_comparison(dict(enumerate([0.1] * 6)), dict(enumerate([0.0] * 6)), "VPO", "GRPO")
    assert many.reading == "VPO ahead" and many.p == pytest.approx(2 / 64)
    mixed = paired_comparison(dict(enumerate([0.1, -0.1] * 3)), dict(enumerate([0.0] * 6)), "VPO", "GRPO")
    assert mixed.reading == "not separated"
    with pytest.raises(ValueError, match="at least two"):
        paired_comparison({0: 1.0}, {0: 0.0})


def test_welch_interval_by_hand():
    c = label_comparison([45, 9, 30], [28, 18, 31], "VPO", "GRPO")
    va, vb = np.var([45, 9, 30], ddof=1) / 3, np.var([28, 18, 31], ddof=1) / 3
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 2)
    half = t_quantile(0.975, df) * math.sqrt(va + vb)
    assert c.mean == pytest.approx(7 / 3) and c.high - c.mean == pytest.approx(half)
    assert c.p == pytest.approx(label_p([45, 9, 30], [28, 18, 31])) and c.floor == pytest.approx(0.1)
    assert c.reading == "too few runs for a test"


def test_the_problem_level_and_the_run_level_tests_disagree():
    """One lucky run of A solves 30 problems nobody else solves; A's other two runs solve none; each run of B
    solves two. Counted over problems A looks far ahead; counted over runs nothing separates them."""
    a_runs = [set(range(30)), set(), set()]
    b_runs = [{30, 31}, {32, 33}, {34, 35}]
    only_a, only_b, _ = solved_only_by(a_runs, b_runs)
    assert (len(only_a), len(only_b)) == (30, 6) and discordant_test(30, 6) < 0.001
    # over runs: 30, 0, 0 against 2, 2, 2; every one of the 20 splits is as extreme (see runstats.label_p)
    assert label_p([len(s) for s in a_runs], [len(s) for s in b_runs]) == 1.0


def test_leave_one_out_drops_each_run_in_turn():
    a, b = {0: 3.0, 1: 1.0, 2: 2.0}, {0: 1.0, 1: 1.0, 2: 1.0}
    rows = leave_one_out(a, b, lambda x, y: paired_comparison(x, y).mean)
    # leaving run 0 out of A pairs seeds 1, 2 only: mean of (0, 1); out of B: the same seeds
    assert [(arm, run) for arm, run, _ in rows] == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    assert [r for _, _, r in rows] == pytest.approx([0.5, 1.5, 1.0, 0.5, 1.5, 1.0])
    unpaired = leave_one_out({0: 1.0, 1: 2.0}, {0: 1.0, 1: 1.0, 2: 1.0},
                             lambda x, y: label_comparison(x.values(), y.values()).mean)
    assert [(arm, run) for arm, run, _ in unpaired] == [("b", 0), ("b", 1), ("b", 2)]  # A's arm of one: skipped


def test_the_tables_run_level_cells_by_hand():
    """compare.md's run-level cells: the interval over runs, the exact p, the reading."""
    from results.tables import run_level, run_note
    half = 4.302653 * 0.1 / math.sqrt(3)                      # d = 0.1, 0.2, 0.3: mean 0.2, sd 0.1
    assert run_level([0.1, 0.2, 0.3], "VPO", "GRPO")[:4] == ["+0.200", f"[{0.2 - half:+.3f}, {0.2 + half:+.3f}]",
                                                             "0.25", "too few runs for a test"]
    assert run_level([0.1], "VPO", "GRPO") == ["+0.100", "-", "-", "-", "-"]
    assert "0.25" in run_note(3) and "too few" in run_note(3) and "too few" not in run_note(6)
    assert run_level([0.1, 0.2, -0.1], "VPO", "GRPO")[2:4] == ["0.75", "too few runs for a test"]

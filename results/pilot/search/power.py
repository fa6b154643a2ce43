"""
The power analysis of the search experiment (results/PLAN_SEARCH.md, "Power"), from the search of record's per-run
counts (results/runs/code-v2-rep/search/, evolve, kept program equal to the target, within each budget).

    PYTHONPATH=. python results/pilot/search/power.py            # prints the table the plan quotes

For each budget: VPO's and GRPO's problems solved per run (of v2's 96), the pooled within-arm sd over runs, that
sd as a share of the hard set, and, for a hard set of HARD problems, the smallest difference the exact
permutation test finds with 80% power (results/runstats.detectable_difference's formula) at 10, 11, 12 and 15 runs per
arm, at α = 0.05 and at α = 0.025 (Holm's first step over two pairs), and the runs per arm needed to find the
plan's smallest difference that matters (runstats.runs_needed's rule), and the power against it at 11 runs. runstats.t_quantile cannot give the
t quantile at 1 − 0.025/2 (see `quantile`), so the t quantiles here come from a bisection over a narrower range;
at α = 0.05 they equal runstats' own (checked each time it runs).
"""
import math

import numpy as np

from results.plan import FULL, code_problems, code_task
from results.runstats import detectable_difference, runs_needed, smallest_p, t_cdf
from results.search_jobs import read_searches, target_solved

HARD = 128          # the plan's hard set
SMALLEST = 8        # the smallest difference that matters, problems per run of HARD (PLAN_SEARCH.md)
BUDGETS = (768, 1536, 3072)


def quantile(q, df):
    """Student's t quantile by bisection on runstats.t_cdf within [-100, 100], where its Simpson's rule is accurate
    (runstats.t_quantile searches [-1e4, 1e4], where t_cdf is not, and returns 1e4 for q above about 0.98)."""
    lo, hi = -100.0, 100.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return (lo + hi) / 2


def detectable(sd, n, alpha):
    """runstats.detectable_difference for equal arms of n runs, with `quantile` for t."""
    if smallest_p(n, n) > alpha:
        return None
    df = 2 * n - 2
    return (quantile(1 - alpha / 2, df) + quantile(0.8, df)) * sd * math.sqrt(2 / n)


def needed(difference, sd, alpha, most=200):
    return next((n for n in range(2, most + 1) if (detectable(sd, n, alpha) or math.inf) <= difference), None)


def power_at(difference, sd, n, alpha):
    """The power of the test over equal arms of n runs against a true difference, by the same approximation:
    P(T_df > t_{1-α/2} − difference / (sd sqrt(2/n)))."""
    df = 2 * n - 2
    return 1 - t_cdf(quantile(1 - alpha / 2, df) - difference / (sd * math.sqrt(2 / n)), df)


def pooled_sd(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return math.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2))


def main():
    found, _ = read_searches(FULL, "results", "search_rep")
    task, problems = code_task(FULL, "code_rep"), code_problems(FULL, "code_rep", 512)
    print(f"hard set {HARD}; smallest difference that matters {SMALLEST} problems per run")
    print("| budget | VPO per run (of 96) | GRPO per run (of 96) | pooled sd (of 96) | sd, share of the hard set "
          "| sd scaled to the hard set | detectable, 10 / 11 / 12 / 15 runs, α = 0.05 | the same, α = 0.025 "
          "| runs for the smallest difference, α = 0.05 / 0.025 | power at the smallest difference, 11 runs, "
          "α = 0.05 / 0.025 |")
    print("|---" * 10 + "|")
    for b in BUDGETS:
        counts = {slug: [len(target_solved(r, task, problems, b)) for r in found["evolve"][slug]]
                  for slug in ("vpo", "grpo")}
        sd = pooled_sd(counts["vpo"], counts["grpo"])
        scaled = sd * HARD / 96
        det = lambda alpha: " / ".join(f"{detectable(scaled, n, alpha):.1f}" for n in (10, 11, 12, 15))  # noqa: E731
        need = " / ".join(str(needed(SMALLEST, scaled, a)) for a in (0.05, 0.025))
        # the same at α = 0.05 from runstats itself (a check of the local quantile)
        assert abs(detectable_difference(scaled, 10, 10) - detectable(scaled, 10, 0.05)) < 1e-6
        assert runs_needed(SMALLEST, scaled) == needed(SMALLEST, scaled, 0.05)
        print(f"| {b} | {' / '.join(map(str, counts['vpo']))} | {' / '.join(map(str, counts['grpo']))} | {sd:.2f} "
              f"| {sd / 96:.3f} | {scaled:.1f} | {det(0.05)} | {det(0.025)} | {need} "
              f"| {power_at(SMALLEST, scaled, 11, 0.05):.2f} / {power_at(SMALLEST, scaled, 11, 0.025):.2f} |")


if __name__ == "__main__":
    main()

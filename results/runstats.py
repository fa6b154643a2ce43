"""
Statistics over training runs: the training run is the unit of every comparison between methods. Problems, answers
and evaluation steps inside one run are not independent replicates of a method, so every test here takes one
number per run: a run's pooled best@48, or the problems its search solved.

- `paired_comparison(a, b)`, `differences_comparison(d)`: runs paired by seed; the mean of d_s = a_s − b_s, a
  Student-t 95% interval over runs, and the exact sign-flip test (the 2^n ways to swap the labels inside pairs).
- `blocked_comparison(a, b)`: unpaired runs in blocks (the runs that share one warm start); the labels are permuted
  within each block only, and Welch's interval uses the spread within blocks. `label_comparison`: one block.
- `smallest_p`: the floor of an exact test over n runs: 2 / 2^n paired, 2 / C(n_a + n_b, n_a) unpaired with equal
  arms; below about 6 runs per arm no exact test reaches p < 0.05. `detectable_difference`: the smallest true
  difference found with 80% power at α = 0.05; `runs_needed` inverts it; `leave_one_out` drops each run in turn.

The reading is the exact test's: "A ahead" or "B ahead" when p ≤ α, "not separated" otherwise, and "too few runs"
when no outcome of that many runs could reach α; the interval is a description. Tests: tests/test_runstats.py.
"""
import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
POWER = 0.8
EXACT_LIMIT = 1_000_000  # arrangements enumerated exactly; beyond it a seeded Monte Carlo estimate
TOL = 1e-12              # a rearranged statistic "as extreme" as the observed one, up to rounding


def t_cdf(x, df):
    """P(T ≤ x) for Student's t with df degrees of freedom (df > 0, not necessarily whole). With x = √df tan θ the
    density becomes c √df cos^(df−1) θ on a bounded θ range, integrated by Simpson's rule (4,000 intervals)."""
    if x == 0:
        return 0.5
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    theta = np.linspace(0.0, math.atan(abs(x) / math.sqrt(df)), 4001)
    f = c * math.sqrt(df) * np.cos(theta) ** (df - 1)
    area = (theta[1] - theta[0]) / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    return 0.5 + math.copysign(area, x)


@functools.lru_cache(maxsize=None)  # a report asks for the same few quantiles hundreds of times
def t_quantile(q, df):
    """The x with P(T ≤ x) = q, by bisection on t_cdf (0 < q < 1)."""
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q}")
    lo, hi = -1e4, 1e4
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < q else (lo, mid)
    return (lo + hi) / 2


def smallest_p(n_a, n_b=None):
    """The smallest two-sided p an exact test over runs can give: paired (n_b None) 2 / 2^n; unpaired 2 / C(n_a +
    n_b, n_a) with arms of equal size (the mirror arrangement is as extreme), 1 / C(...) otherwise."""
    if n_b is None:
        return min(1.0, 2.0 / 2 ** n_a)
    return min(1.0, (2.0 if n_a == n_b else 1.0) / math.comb(n_a + n_b, n_a))


def sign_flip_p(diffs, rng=None):
    """Exact two-sided p of the paired test: the share of the 2^n sign patterns s whose |Σ s_i d_i| is at least the
    observed |Σ d_i| (swapping the two methods' labels inside a pair flips the sign of its difference)."""
    d = np.asarray(diffs, dtype=float)
    if 2 ** len(d) <= EXACT_LIMIT:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
    else:
        signs = (rng or np.random.default_rng(0)).choice((1.0, -1.0), size=(EXACT_LIMIT, len(d)))
    return float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - TOL))


def detectable_difference(sd, n_a, n_b=None, alpha=ALPHA, power=POWER, blocks=1):
    """The smallest true difference found with the given power at two-sided level alpha, by the normal-theory
    approximation: (t_{1−α/2} + t_{power}) · sd · sqrt(1/n) paired (sd of the differences, df n − 1), or
    · sqrt(1/n_a + 1/n_b) unpaired (sd within arms, df n_a + n_b − 2 · blocks: each block costs each arm one).
    None when the exact test over this many runs cannot reach alpha at all."""
    if smallest_p(n_a, n_b) > alpha or sd is None:
        return None
    df, scale = ((n_a - 1, math.sqrt(1 / n_a)) if n_b is None else
                 (n_a + n_b - 2 * blocks, math.sqrt(1 / n_a + 1 / n_b)))
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * sd * scale


def runs_needed(difference, sd, paired=False, alpha=ALPHA, power=POWER, most=200):
    """Runs per arm for `detectable_difference` to fall to `difference` (and the exact test to reach alpha)."""
    for n in range(2, most + 1):
        found = detectable_difference(sd, n, None if paired else n, alpha, power)
        if found is not None and found <= difference:
            return n
    return None


@dataclass
class Comparison:
    """A − B over training runs. values: per-run differences (paired) or None; mean: the mean difference; low,
    high: its 95% interval; p: the exact test's two-sided p; floor: the smallest p this many runs allow;
    detectable: the smallest difference this many runs would find (None: none); reading: the verdict."""
    a: str
    b: str
    n_a: int
    n_b: int
    paired: bool
    mean: float
    low: float
    high: float
    p: float
    floor: float
    detectable: float | None
    reading: str


def reading_of(mean, p, floor, a, b, alpha=ALPHA):
    """The exact test's verdict in words."""
    if floor > alpha:
        return "too few runs for a test"
    if p <= alpha:
        return f"{a} ahead" if mean > 0 else f"{b} ahead"
    return "not separated"


def paired_comparison(a, b, name_a="A", name_b="B", alpha=ALPHA):
    """A − B over the runs both arms have (dicts seed -> value): see `differences_comparison`."""
    seeds = sorted(set(a) & set(b))
    return differences_comparison([a[s] - b[s] for s in seeds], name_a, name_b, alpha)


def differences_comparison(diffs, name_a="A", name_b="B", alpha=ALPHA):
    """A − B from per-run paired differences d_s: the t interval over runs, the exact sign-flip test."""
    d = np.asarray(diffs, dtype=float)
    if len(d) < 2:
        raise ValueError(f"a comparison over runs needs at least two paired runs, got {len(d)}")
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    half = t_quantile(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
    p, floor = sign_flip_p(d), smallest_p(n)
    return Comparison(name_a, name_b, n, n, True, mean, mean - half, mean + half, p, floor,
                      detectable_difference(sd, n, alpha=alpha), reading_of(mean, p, floor, name_a, name_b, alpha))


def block_weights(a, b):
    """{block: w_b}, w_b proportional to n_a n_b / (n_a + n_b) and summing to 1: with as many runs of each arm in
    every block, the blocked difference is the difference of the means over all runs."""
    h = {k: len(a[k]) * len(b[k]) / (len(a[k]) + len(b[k])) for k in a}
    return {k: v / sum(h.values()) for k, v in h.items()}


@functools.lru_cache(maxsize=8)  # a report tests the same block sizes hundreds of times
def picks(size, n):
    """Every way to choose n of range(size), one per row (an int array, C(size, n) × n)."""
    rows = list(itertools.combinations(range(size), n))
    return np.array(rows, dtype=np.intp).reshape(len(rows), n)


def blocked_p(a, b, rng=None):
    """Exact two-sided p of the blocked test (a, b: {block: values}): the share of the ways to deal each block's
    pooled values into groups of its sizes whose weighted difference Σ w_b (mean_a − mean_b) is at least the
    observed one in size. Within a block the total T is fixed, so its difference is S (1/n_a + 1/n_b) − T / n_b,
    with S the sum of the values dealt to a."""
    w, parts = block_weights(a, b), []
    for k in a:
        x, n_a, n_b = np.concatenate([np.asarray(a[k], float), np.asarray(b[k], float)]), len(a[k]), len(b[k])
        parts.append((x, n_a, w[k] * (1 / n_a + 1 / n_b), w[k] * x.sum() / n_b))
    observed = abs(sum(c * x[:n].sum() - t for x, n, c, t in parts))
    if math.prod(math.comb(len(x), n) for x, n, _, _ in parts) <= EXACT_LIMIT:
        dist = np.zeros(1)
        for x, n, c, t in parts:   # each block's possible differences, added over blocks in every combination
            sums = x[picks(len(x), n)].sum(axis=1)
            dist = np.add.outer(dist, c * sums - t).ravel()
    else:
        rng = rng or np.random.default_rng(0)
        dist = sum(c * np.array([x[rng.permutation(len(x)) < n].sum() for _ in range(EXACT_LIMIT // 10)]) - t
                   for x, n, c, t in parts)
    return float(np.mean(np.abs(dist) >= observed - TOL))


def within_sd(*arms):
    """The spread between runs within blocks, pooled over arms ({block: values} each): sqrt(SS / (runs − blocks)),
    SS the squares about each block's arm mean. With one block and two arms: the pooled sd of a two-sample test."""
    groups = [np.asarray(v, float) for arm in arms for v in arm.values() if len(v)]
    return math.sqrt(sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / sum(len(g) - 1 for g in groups))


def blocked_comparison(a, b, name_a="A", name_b="B", alpha=ALPHA):
    """A − B over unpaired runs in blocks (a, b: {block: the values of its runs}; a block: the runs that share one
    warm start). The difference Σ w_b (mean_a − mean_b) (`block_weights`); Welch's interval with each arm's variance
    pooled within blocks (df: its runs minus the blocks), se² = Σ w_b² (s_a² / n_a + s_b² / n_b); the exact test
    permutes the labels within each block only. With one block it is `label_comparison`."""
    if set(a) != set(b) or not a or min(min(len(a[k]), len(b[k])) for k in a) < 1:
        raise ValueError("a blocked comparison needs the same blocks in both arms, each with runs of both")
    n_a, n_b, blocks = sum(map(len, a.values())), sum(map(len, b.values())), len(a)
    if min(n_a, n_b) - blocks < 1:
        raise ValueError(f"a blocked comparison needs more runs per arm ({n_a} and {n_b}) than blocks ({blocks})")
    w = block_weights(a, b)
    mean = float(sum(w[k] * (np.mean(a[k]) - np.mean(b[k])) for k in a))
    s2 = within_sd(a) ** 2, within_sd(b) ** 2   # each arm's variance pooled within blocks
    va, vb = (s2[i] * sum(w[k] ** 2 / len(arm[k]) for k in a) for i, arm in enumerate((a, b)))
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (n_a - blocks) + vb ** 2 / (n_b - blocks)) if se > 0 else n_a + n_b - 2 * blocks
    half = t_quantile(1 - alpha / 2, df) * se
    equal = all(len(a[k]) == len(b[k]) for k in a)
    floor = min(1.0, (2.0 if equal else 1.0) / math.prod(math.comb(len(a[k]) + len(b[k]), len(a[k])) for k in a))
    p = blocked_p(a, b)
    return Comparison(name_a, name_b, n_a, n_b, False, mean, mean - half, mean + half, p, floor,
                      detectable_difference(within_sd(a, b), n_a, n_b, alpha),
                      reading_of(mean, p, floor, name_a, name_b, alpha))


def label_p(a, b):
    """Exact two-sided p of the unpaired test (blocked_p with one block): the share of the ways to deal the pooled
    values into groups of len(a) and len(b) whose |mean difference| is at least the observed one."""
    return blocked_p({0: a}, {0: b})


def label_comparison(a, b, name_a="A", name_b="B", alpha=ALPHA):
    """A − B over unpaired runs (sequences of one value per run): Welch's interval and the exact permutation test,
    blocked_comparison with one block."""
    return blocked_comparison({0: list(a)}, {0: list(b)}, name_a, name_b, alpha)


def leave_one_out(a, b, compare):
    """compare(a', b') with each run of either arm left out in turn (a, b: dicts run -> value).
    -> [(arm, run, result)]; results too small to compare are skipped."""
    out = []
    for arm, values in (("a", a), ("b", b)):
        for run in values:
            rest = {k: v for k, v in values.items() if k != run}
            try:
                out.append((arm, run, compare(rest, b) if arm == "a" else compare(a, rest)))
            except ValueError:
                continue
    return out


def holm_adjusted(ps):
    """Holm's adjusted p's, in the given order: the k-th smallest p times (n - k + 1), never below the one before,
    at most 1. A hypothesis is rejected at familywise level alpha when its adjusted p is at most alpha."""
    order, adjusted, running = sorted(range(len(ps)), key=lambda i: ps[i]), [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def signed(x, digits=3):
    """+0.123 / −0.123, with no '-0.000'."""
    return f"{round(x, digits) + 0.0:+.{digits}f}"


def describe(c, digits=3):
    """'+0.134 [+0.090, +0.178], p = 0.25' (the mean difference, its interval, the exact p)."""
    return f"{signed(c.mean, digits)} [{signed(c.low, digits)}, {signed(c.high, digits)}], p = {c.p:.3g}"

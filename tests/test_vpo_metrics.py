"""
Tests for metrics.py (against exact binomials and enumeration of every k-subset) and the authors'
smallest demonstration on a tabular policy (GRPO settles on the compromise, VPO learns a set holding both
corners), through this project's own estimators and loss.

    python -m pytest -q tests/test_vpo_metrics.py
"""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import metrics
from examples.toy import train_table
from tests.reference import expected_best
import vpo


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- metrics ------------------------------------------------------------------------------------------------------

def test_pass_at_k_against_exact_binomials():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                assert metrics.pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-12)
    assert metrics.pass_at_k(200, 3, 100) == pytest.approx(1 - math.comb(197, 100) / math.comb(200, 100))
    for n, c, k, arg in [(5, 6, 1, "c"), (5, -1, 1, "c"), (5, 2, 0, "k"), (5, 2, 6, "k"), (-1, 0, 1, "c")]:
        with pytest.raises(ValueError, match=arg):
            metrics.pass_at_k(n, c, k)


def test_best_at_k_against_subset_enumeration():
    rng = np.random.default_rng(0)
    for n in (1, 4, 7):
        scores = rng.integers(0, 4, n) / 4                  # many ties
        for k in range(1, n + 1):
            brute = np.mean([max(sub) for sub in itertools.combinations(scores, k)])
            assert metrics.best_at_k(scores, k) == pytest.approx(brute, abs=1e-12)
    assert metrics.best_at_k(torch.tensor(scores), 3) == pytest.approx(metrics.best_at_k(scores, 3), abs=1e-12)
    mask = np.array([True, False, True, True, False, True, True])
    brute = np.mean([max(sub) for sub in itertools.combinations(np.where(mask, scores, 0.0), 3)])
    assert metrics.best_at_k(scores, 3, mask=mask) == pytest.approx(brute, abs=1e-12)


def test_best_at_k_multi_answer_against_rollout_enumeration():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 5, (6, 3)) / 4                 # 6 rollouts of m = 3 answers
    mask = rng.random((6, 3)) > 0.3
    mask[2] = False
    per_rollout = [max([s for s, ok in zip(row, oks) if ok], default=0.0) for row, oks in zip(scores, mask)]
    for k in (3, 6, 9, 18):
        brute = np.mean([max(sub) for sub in itertools.combinations(per_rollout, k // 3)])
        assert metrics.best_at_k(scores, k, m=3, mask=mask) == pytest.approx(brute, abs=1e-12)
        assert metrics.best_at_k(scores, k, mask=mask) == pytest.approx(brute, abs=1e-12)   # m inferred
    for k, m, arg in [(4, 3, "k"), (21, 3, "k"), (0, 3, "k"), (3, 2, "m")]:
        with pytest.raises(ValueError, match=arg):
            metrics.best_at_k(scores, k, m=m)
    with pytest.raises(ValueError, match="k"):
        metrics.best_at_k([0.1, 0.2], 3)


def pooled_brute(scores, mask, k):
    """Average over every k-subset of the pool of all answers (masked ones scoring 0) of its best score."""
    pool = np.where(mask, scores, 0.0).reshape(-1)
    return np.mean([max(sub) for sub in itertools.combinations(pool, k)])


def test_best_at_k_pooled_against_subset_enumeration():
    rng = np.random.default_rng(4)
    scores = rng.integers(0, 4, (4, 3)) / 4                 # 4 rollouts of m = 3 answers, many ties
    mask = rng.random((4, 3)) > 0.3
    mask[1] = False
    for k in range(1, 13):                                  # any k, not only multiples of m
        assert metrics.best_at_k(scores, k, mask=mask, pooled=True) == pytest.approx(pooled_brute(scores, mask, k),
                                                                                 abs=1e-12)
    assert metrics.best_at_k(scores, 12, mask=mask, pooled=True) == pytest.approx(
        metrics.best_at_k(scores, 12, mask=mask), abs=1e-12)    # the whole pool: both definitions agree
    single = scores[:, :1]                                  # m = 1: a rollout is an answer
    for k in range(1, 5):
        assert metrics.best_at_k(single, k, pooled=True) == pytest.approx(metrics.best_at_k(single, k), abs=1e-12)
        assert metrics.best_at_k(single[:, 0], k, pooled=True) == pytest.approx(metrics.best_at_k(single, k), abs=1e-12)
    for k in (0, 13):
        with pytest.raises(ValueError, match="k"):
            metrics.best_at_k(scores, k, pooled=True)


def test_best_at_k_pooled_vs_whole_rollouts_by_hand():
    # rollouts (1, 1) and (0, 0), k = 2: one whole rollout wins half the time; two pooled answers miss both 1s
    # only when they are the two 0s, 1 - 1/C(4, 2) = 5/6
    assert metrics.best_at_k([[1.0, 1.0], [0.0, 0.0]], 2) == pytest.approx(0.5)
    assert metrics.best_at_k([[1.0, 1.0], [0.0, 0.0]], 2, pooled=True) == pytest.approx(5 / 6)
    # rollouts (1, 0) and (1, 0): every whole rollout holds a 1; two pooled answers can be the two 0s
    assert metrics.best_at_k([[1.0, 0.0], [1.0, 0.0]], 2) == pytest.approx(1.0)
    assert metrics.best_at_k([[1.0, 0.0], [1.0, 0.0]], 2, pooled=True) == pytest.approx(5 / 6)
    # a masked answer keeps its slot and scores 0: k = 1 draws the valid 1 or the masked 9 with equal chance
    assert metrics.best_at_k([[1.0, 9.0]], 1, mask=[[True, False]], pooled=True) == pytest.approx(0.5)


def test_expected_best_at_k_pooled_against_brute_force():
    rng = np.random.default_rng(5)
    r = rng.integers(0, 3, (3, 2, 3)) / 2                   # 3 rollouts, m = 2, D = 3
    mask = rng.random((3, 2)) > 0.3
    w = vpo.sample_weights(1, 5, 3, generator=gen(5))[0].double().numpy()
    for k in range(1, 7):
        brute = np.mean([pooled_brute(r @ wn, mask, k) for wn in w])
        got = metrics.expected_best_at_k(r, k, w, mask=mask, pooled=True)
        assert got == pytest.approx(brute, abs=1e-12)
    with pytest.raises(ValueError, match="k"):
        metrics.expected_best_at_k(r, 7, w, pooled=True)


def pareto_brute(pool):
    """Flags of the Pareto-optimal answers by loops: nobody >= everywhere and > somewhere."""
    return [not any(all(b >= a for a, b in zip(yi, yj)) and any(b > a for a, b in zip(yi, yj))
                    for j, yj in enumerate(pool) if j != i) for i, yi in enumerate(pool)]


def test_pareto_metrics_hand_made_pools():
    pool = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.4, 0.4], [1.0, 0.0]])   # (0.4, 0.4) is dominated
    got = metrics.pareto_metrics(pool)
    assert got["pareto_frac"] == pytest.approx(4 / 5)       # both copies of (1, 0) are on the front
    assert got["pareto_distinct"] == 3 and got["dim_mean"] == pytest.approx([0.58, 0.38])
    assert metrics.pareto_metrics(np.array([[0.2, 0.7]])) == {"pareto_frac": 1.0, "pareto_distinct": 1,
                                                          "dim_mean": pytest.approx([0.2, 0.7])}
    one_wins = np.array([[1.0, 1.0], [0.0, 0.0], [0.5, 1.0], [1.0, 0.2], [0.5, 1.0]])   # weak dominance counts
    assert metrics.pareto_metrics(one_wins)["pareto_frac"] == pytest.approx(1 / 5)
    assert metrics.pareto_metrics(one_wins)["pareto_distinct"] == 1
    alike = metrics.pareto_metrics(np.full((3, 2), 0.3))        # duplicates do not dominate one another
    assert alike["pareto_frac"] == 1.0 and alike["pareto_distinct"] == 1


def test_pareto_metrics_masks_and_brute_force():
    rewards = np.array([[[1.0, 0.0], [9.0, 9.0]], [[0.0, 1.0], [0.0, 0.5]]])       # (n_rollouts, m, D)
    mask = np.array([[True, False], [True, True]])          # the masked (9, 9) would dominate everything
    got = metrics.pareto_metrics(rewards, mask)
    assert got["pareto_frac"] == pytest.approx(2 / 3) and got["pareto_distinct"] == 2
    assert got["dim_mean"] == pytest.approx([1 / 3, 0.5])
    assert metrics.pareto_metrics(torch.tensor(rewards), torch.tensor(mask)) == got
    empty = metrics.pareto_metrics(rewards, np.zeros((2, 2), dtype=bool))
    assert empty == {"pareto_frac": 0.0, "pareto_distinct": 0, "dim_mean": [0.0, 0.0]}
    rng = np.random.default_rng(6)
    for _ in range(20):
        r = rng.integers(0, 3, (5, 3, 3)) / 2               # coarse grid: ties and duplicates
        keep = rng.random((5, 3)) > 0.2
        pool = r[keep]
        flags = pareto_brute(pool.tolist())
        got = metrics.pareto_metrics(r, keep)
        assert got["pareto_frac"] == pytest.approx(np.mean(flags) if len(pool) else 0.0)
        assert got["pareto_distinct"] == len({tuple(y) for y, f in zip(pool.tolist(), flags) if f})
        assert got["dim_mean"] == pytest.approx(pool.mean(0).tolist() if len(pool) else [0.0] * 3)
    with pytest.raises(ValueError, match="mask"):
        metrics.pareto_metrics(rewards, mask[:, :1])


def test_expected_best_at_k_against_brute_force():
    rng = np.random.default_rng(2)
    r = rng.random((5, 2, 3))                               # 5 rollouts, m = 2, D = 3
    mask = rng.random((5, 2)) > 0.25
    w = vpo.sample_weights(1, 6, 3, generator=gen(2))[0].double().numpy()
    for k in (2, 4, 10):
        brute = []
        for wn in w:
            per_rollout = [max([wn @ y for y, ok in zip(ys, oks) if ok], default=0.0) for ys, oks in zip(r, mask)]
            brute.append(np.mean([max(sub) for sub in itertools.combinations(per_rollout, k // 2)]))
        got = metrics.expected_best_at_k(torch.tensor(r), k, torch.tensor(w), mask=torch.tensor(mask))
        assert got == pytest.approx(np.mean(brute), abs=1e-12)
    with pytest.raises(ValueError, match="k"):
        metrics.expected_best_at_k(r, 3, w)


def test_diversity_against_brute_force():
    rng = np.random.default_rng(3)
    r = rng.random((4, 3, 2))
    mask = rng.random((4, 3)) > 0.3
    pool = r[mask]
    pairs = list(itertools.combinations(range(len(pool)), 2))
    brute = np.mean([np.abs(pool[i] - pool[j]).sum() for i, j in pairs])
    assert metrics.diversity(r, mask) == pytest.approx(brute, abs=1e-12)
    assert metrics.diversity(torch.tensor(pool)) == pytest.approx(brute, abs=1e-12)
    assert metrics.diversity(np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])) == pytest.approx(4 / 3)
    assert metrics.diversity(np.ones((1, 2))) == 0.0 and metrics.diversity(np.ones((0, 2))) == 0.0
    with pytest.raises(ValueError, match="mask"):
        metrics.diversity(r, mask[:, :2])


# --- the authors' smallest demonstration, on a tabular policy -----------------------------------------------------

ANSWERS = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])     # two corners and the compromise
DEPLOY = torch.tensor([0.5, 0.5])
u = (torch.arange(20000, dtype=torch.float64) + 0.5) / 20000
DIR11 = torch.stack([u, 1 - u], dim=-1)                  # midpoint rule for w = (u, 1-u) ~ Dir(1, 1)


def tabular_demo(method, m=3, steps=200, B=4, G=8, lr=0.1, seed=0):
    """A tabular softmax policy trained with this project's estimators and policy_loss (examples/toy.py): GRPO one
    categorical over the 3 answers (m = 1), VPO m independent categoricals, one per answer slot. -> probs (m, 3)."""
    return train_table(method, m, steps, B, G, lr, seed)


def set_objective(probs):
    """E over the policy's sets of E_w max_{y in set} w^T r(y), w ~ Dir(1, 1), by enumerating all sets."""
    m = probs.shape[0]
    total = 0.0
    for picks in itertools.product(range(3), repeat=m):
        p = float(probs[torch.arange(m), torch.tensor(picks)].prod())
        total += p * expected_best(ANSWERS[sorted(set(picks))], DIR11)
    return total


def test_demo_analytic_values():
    # w = (u, 1-u), u ~ U(0, 1): E max(u, 1-u) = 2 int_{1/2}^1 u du = 3/4;
    # E max(u, 1-u, 0.6) = 2 int_{0.6}^1 u du + 0.2 * 0.6 = 0.64 + 0.12 = 0.76 (0.6 wins for u in [0.4, 0.6])
    corners = 2 * (Fraction(1, 2) - Fraction(1, 8))
    all_three = 2 * (Fraction(1, 2) - Fraction(9, 50)) + Fraction(1, 5) * Fraction(3, 5)
    assert corners == Fraction(3, 4) and all_three == Fraction(19, 25)
    assert expected_best(ANSWERS[:2], DIR11) == pytest.approx(0.75, abs=1e-8)
    assert expected_best(ANSWERS, DIR11) == pytest.approx(0.76, abs=1e-8)
    assert expected_best(ANSWERS[2:], DIR11) == pytest.approx(0.6, abs=1e-7)
    sobol = vpo.sample_weights(1, 4096, 2, sampler="sobol", generator=gen())[0]
    assert expected_best(ANSWERS, sobol) == pytest.approx(0.76, abs=1e-3)


@pytest.fixture
def one_thread():
    """Tiny tensors: one intra-op thread is much faster, above all when other processes share the CPUs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_demo_grpo_takes_the_compromise_vpo_learns_both_corners(one_thread):
    grpo = tabular_demo("grpo")
    assert float(grpo[0] @ (ANSWERS @ DEPLOY)) == pytest.approx(0.6, abs=0.005)     # deployment score -> 0.6
    assert set_objective(grpo) == pytest.approx(0.6, abs=0.005)
    for m, optimum in [(3, 0.76), (2, 0.75)]:
        probs = tabular_demo("vpo", m=m)
        greedy = set(probs.argmax(-1).tolist())                                     # the set it has learned
        assert greedy == ({0, 1, 2} if m == 3 else {0, 1})                          # both corners (+ compromise)
        assert set_objective(probs) == pytest.approx(optimum, abs=0.005)


def test_within_covariance_pools_deviations_from_each_problems_mean():
    """Two problems: {(0, 0), (2, 2)} (mean (1, 1)) and {(5, 1), (5, 3), (5, 5)} (mean (5, 3)), one answer alone
    adds nothing. Deviations (-1, -1), (1, 1), (0, -2), (0, 0), (0, 2): S = [[2, 2], [2, 10]], dof 1 + 2 = 3."""
    pools = [np.array([[0, 0], [2, 2]]), np.array([[5, 1], [5, 3], [5, 5]]), np.array([[9, 9]])]
    cov, dof = metrics.within_covariance(pools)
    assert dof == 3 and np.allclose(cov, np.array([[2, 2], [2, 10]]) / 3)
    # brute force: numpy's covariance of the problem-centred answers, rescaled to the pooled degrees of freedom
    dev = np.concatenate([p - p.mean(0) for p in pools[:2]])
    assert np.allclose(cov, np.cov(dev.T, ddof=0) * len(dev) / dof)


def test_dimension_geometry_by_hand():
    g = metrics.dimension_geometry(np.eye(3))                                   # uncorrelated
    assert g == {"dim_corr": 0.0, "eff_rank": 3.0, "varying": 3}
    g = metrics.dimension_geometry(np.ones((3, 3)) * 4)                         # collinear
    assert g["dim_corr"] == pytest.approx(1.0) and g["eff_rank"] == pytest.approx(1.0)
    c = 0.5                                                                     # two dims, correlation c
    g = metrics.dimension_geometry(np.array([[4.0, c * 2 * 3], [c * 2 * 3, 9.0]]))
    assert g["dim_corr"] == pytest.approx(c) and g["eff_rank"] == pytest.approx(4 / (2 + 2 * c * c))
    eig = np.linalg.eigvalsh(np.array([[1, c], [c, 1]]))                        # the participation ratio itself
    assert g["eff_rank"] == pytest.approx(eig.sum() ** 2 / (eig ** 2).sum())
    g = metrics.dimension_geometry(np.diag([1.0, 0.0, 2.0]))                    # a constant dimension is left out
    assert g["varying"] == 2 and g["eff_rank"] == pytest.approx(2.0)
    assert metrics.dimension_geometry(np.zeros((2, 2))) == {"dim_corr": None, "eff_rank": 0.0, "varying": 0}
    assert metrics.dimension_geometry(np.diag([0.0, 3.0]))["dim_corr"] is None       # one varying dimension


def test_best_vector_at_k_against_every_subset():
    """Brute force: every k-subset of the pool equally likely, its best score's answers sharing the pick."""
    g = torch.Generator().manual_seed(0)
    for n, k, D in [(5, 1, 2), (6, 3, 3), (7, 7, 2), (8, 2, 4)]:
        scores = torch.randint(0, 3, (n,), generator=g).double()                  # many ties
        vectors = torch.rand((n, D), generator=g, dtype=torch.float64)
        want = np.zeros(D)
        subsets = list(itertools.combinations(range(n), k))
        for sub in subsets:
            top = max(scores[list(sub)])
            best = [i for i in sub if scores[i] == top]
            want += vectors[best].mean(0).numpy() / len(subsets)
        got = metrics.best_vector_at_k(scores, vectors, k)
        assert np.allclose(got, want), (n, k)
        w = torch.rand(D, generator=g, dtype=torch.float64)            # scored by w^T r, its w-sum is best@k
        best = metrics.best_vector_at_k(vectors @ w, vectors, k)
        assert best @ w.numpy() == pytest.approx(metrics.best_at_k(vectors @ w, k, pooled=True))


def test_best_vector_at_k_masks_like_the_pooled_best():
    """A masked slot keeps its place with score 0 and the zero vector: by hand, pool {(1, 0) score 1, masked},
    k = 1: half the time the masked slot is drawn -> (0.5, 0)."""
    scores, vectors = torch.tensor([[1.0, 5.0]]), torch.tensor([[[1.0, 0.0], [9.0, 9.0]]])
    mask = torch.tensor([[True, False]])
    assert np.allclose(metrics.best_vector_at_k(scores, vectors, 1, mask=mask), [0.5, 0.0])
    assert np.allclose(metrics.best_vector_at_k(scores, vectors, 2, mask=mask), [1.0, 0.0])

"""
Evaluation metrics of a set of answers: numpy arrays or torch tensors in, Python numbers out (exact expectations,
no resampling). The advantage estimators and the policy loss live in vpo.py.

Paper: Bahlous-Boldi et al., "Vector Policy Optimization: Training for Diversity Improves Test-Time Search",
arXiv 2605.22817 (2026). Notation: m answers per rollout, D reward dimensions, N weight draws; r(x, y) in [0, 1]^D
is the reward vector of answer y.

  best@k          E[max of k answers' scores], k drawn as whole rollouts (ours)     best_at_k
                  or from one pool of all answers (the authors', pooled=True)
  pass@k          1 - C(n-c, k) / C(n, k); best_at_k on 0/1 scores is the same      pass_at_k
                  (which answers count as correct is the caller's: evaluate.py's pass@k counts those solved
                  by the reward, its pass_target@k those equal to the target)
  E_w[best@k]     (1/N) sum_n best@k under w_n^T r, the VPO objective               expected_best_at_k
  diversity       mean pairwise L1 distance between a pool's reward vectors         diversity
  Pareto          share of a pool's answers on its own Pareto front, distinct       pareto_metrics
                  front vectors, mean of each reward dimension
  hack rates      share of the written answers each of the task's hacks flags       hack_flags, hack_rates
                  (Task.hacks; code: fits_shown, pieces)

Invalid answers: an answer that is missing or repeats an earlier answer of the same rollout is masked out by
the caller (tasks.Task.score_rollouts does it: duplicates count once). Masked answers are left out of every max,
and a rollout without a valid answer scores 0; for rewards >= 0 that is the paper's "missing answers count as zero
vectors". An answer the task cannot read stays in, with the zero vector its score gives it. In a pooled best@k a masked answer keeps its slot and scores 0;
diversity and pareto_metrics describe the unmasked answers only (an unreadable one as its zero vector).
"""
import math

import numpy as np
import torch

from vpo import check_arg, masked_max  # one place for bad-input errors and the max over valid answers


def _f64(x):
    return torch.as_tensor(x, dtype=torch.float64).detach().cpu()


def _bool(mask, shape, arg="mask"):
    if mask is None:
        return None
    mask = torch.as_tensor(mask).detach().cpu().bool()
    check_arg(mask.shape == shape, arg, f"shape {tuple(shape)}", tuple(mask.shape))
    return mask


def pass_at_k(n, c, k):
    """Unbiased pass@k (Chen et al. 2021) over n answers, c correct: 1 - C(n-c, k) / C(n, k), computed stably as
    1 - prod_{i=n-c+1}^{n} (1 - k/i); 1 when n - c < k (every k-subset holds a correct answer)."""
    check_arg(0 <= c <= n, "c", f"in [0, n] (n = {n})", c)
    check_arg(1 <= k <= n, "k", f"in [1, n] (n = {n})", k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _log_comb(a, b):
    return torch.lgamma(a + 1) - math.lgamma(b + 1) - torch.lgamma(a - b + 1)


def _expected_max(values, k):
    """E[max of k of the n values drawn without replacement], over the last axis, exactly by order statistics:
    sum_i s_(i) C(i-1, k-1) / C(n, k) with s_(1) <= ... <= s_(n) (s_(i) is the max iff the k-1 others are below it).
    """
    n = values.shape[-1]
    i = torch.arange(1, n + 1, dtype=torch.float64)
    log_p = _log_comb(i.clamp_min(k) - 1, k - 1) - _log_comb(torch.tensor(float(n), dtype=i.dtype), k)
    p = torch.where(i >= k, log_p.exp(), 0.0)                                        # P(s_(i) is the max)
    return values.sort(dim=-1).values @ p


def _rollout_draws(k, m, n_rollouts):
    """k answers = k/m whole rollouts of m answers."""
    check_arg(k >= 1 and k % m == 0, "k", f"a positive multiple of m = {m}", k)
    check_arg(k // m <= n_rollouts, "k", f"at most m * n_rollouts = {m} * {n_rollouts}", k)
    return k // m


def _pool(scores, mask, k):
    """Every answer of scores (..., n_rollouts, m) one member of a pool (..., n_rollouts * m); masked ones score 0."""
    pool = (scores if mask is None else scores.masked_fill(~mask, 0.0)).flatten(-2)
    check_arg(1 <= k <= pool.shape[-1], "k", f"in [1, {pool.shape[-1]}] (the answers in the pool)", k)
    return pool


def best_at_k(scores, k, m=None, mask=None, pooled=False):
    """Exact E[best@k]: the expected max of k answers drawn without replacement from a pool of scored answers.

    scores (n,): one answer per rollout; E[max] = sum_i s_(i) C(i-1, k-1) / C(n, k) over the ascending scores.
    scores (n_rollouts, m), pooled=False (ours): each rollout scores the max of its valid answers (0 if none)
    and k/m whole rollouts are drawn, so k counts answers as for a single-answer model. k must be a multiple
    of m (m defaults to scores.shape[1]; if given it must match).
    pooled=True (the authors'): all n_rollouts * m answers form one pool, rollout boundaries ignored, and k answers
    are drawn from it, any 1 <= k <= n_rollouts * m. Equal to whole rollouts for m = 1 or k = n_rollouts * m;
    otherwise either is larger: whole rollouts win when a rollout's answers differ (VPO's sets), lose when they repeat.
    mask (same shape, bool) marks valid answers. A masked answer still takes its slot and scores 0 (the authors
    score a missing answer as the zero vector; k counts answer slots, so a wasted slot cannot be redrawn); in
    whole rollouts it is left out of the max, the same for scores >= 0. Scores are finite. k > pool: ValueError.
    """
    s = _f64(scores)
    mask = _bool(mask, s.shape)
    if s.dim() == 1:
        s, mask = s[:, None], None if mask is None else mask[:, None]
    check_arg(s.dim() == 2, "scores", "(n,) or (n_rollouts, m)", tuple(s.shape))
    check_arg(m is None or m == s.shape[1], "m", f"scores.shape[1] = {s.shape[1]}", m)
    if pooled:
        return float(_expected_max(_pool(s, mask, k), k))
    draws = _rollout_draws(k, s.shape[1], s.shape[0])
    return float(_expected_max(masked_max(s, mask), draws))


def expected_best_at_k(rewards, k, weights, mask=None, pooled=False):
    """E_w[best@k], the VPO set objective as an evaluation number: (1/N) sum_n best@k under the scalar w_n^T r.

    rewards (n_rollouts, m, D) (or (n, D) for single answers), weights (N, D), mask rewards.shape[:-1] bool. For each
    w_n a rollout scores max_{valid y} w_n^T r(y); then the exact best@k over rollouts with k/m draws (best_at_k).
    pooled=True: for each w_n the exact best@k of the pool of all answers, masked ones scoring 0 (best_at_k).
    """
    r, w = _f64(rewards), _f64(weights)
    mask = _bool(mask, r.shape[:-1])
    if r.dim() == 2:
        r, mask = r[:, None], None if mask is None else mask[:, None]
    check_arg(r.dim() == 3 and w.dim() == 2 and r.shape[2] == w.shape[1], "rewards/weights",
              "(n_rollouts, m, D) and (N, D)", (tuple(r.shape), tuple(w.shape)))
    scores = torch.einsum("gmd,nd->ngm", r, w)                                       # w_n^T r(y): (N, n_rollouts, m)
    if pooled:
        return float(_expected_max(_pool(scores, mask, k), k).mean())
    draws = _rollout_draws(k, r.shape[1], r.shape[0])
    return float(_expected_max(masked_max(scores, mask), draws).mean())             # per rollout: (N, n_rollouts)


def diversity(reward_vectors, mask=None):
    """Mean pairwise L1 distance of a pool, 2 / (n (n-1)) sum_{i<j} ||r_i - r_j||_1; 0 for fewer than 2 vectors.

    reward_vectors (n, D), or (n_rollouts, m, D) taken as one pool of answers; mask (same leading shape, bool)
    keeps the valid answers only.
    """
    r = _f64(reward_vectors)
    mask = _bool(mask, r.shape[:-1])
    r = r.reshape(-1, r.shape[-1]) if mask is None else r[mask]
    n = len(r)
    if n < 2:
        return 0.0
    return float((r[:, None] - r[None]).abs().sum() / (n * (n - 1)))                # each pair counted twice


def pareto_metrics(reward_vectors, mask=None):
    """The pool statistics the authors log: how much of a pool is on its own Pareto front, and the mean of each dim.

    reward_vectors (n, D), or (n_rollouts, m, D) taken as one pool of answers; mask (same leading shape, bool)
    keeps the valid answers only (to count missing answers as zero vectors, as the authors' pools do, pass the
    zero-filled rewards without a mask). Answer i is Pareto-optimal if no answer j has r_j >= r_i in every
    dimension and r_j > r_i in one; an exact duplicate does not dominate, so every copy of a front vector counts.
    -> {"pareto_frac": (# Pareto-optimal answers) / n, "pareto_distinct": # distinct Pareto-optimal vectors (int),
        "dim_mean": [mean of r_d over the pool for d = 1..D]}. An empty pool gives 0.0, 0 and zeros.
    """
    r = _f64(reward_vectors)
    mask = _bool(mask, r.shape[:-1])
    r = r.reshape(-1, r.shape[-1]) if mask is None else r[mask]                      # (n, D)
    if len(r) == 0:
        return {"pareto_frac": 0.0, "pareto_distinct": 0, "dim_mean": [0.0] * r.shape[-1]}
    covers = (r[:, None] >= r[None]).all(-1) & (r[:, None] > r[None]).any(-1)       # [j, i]: j dominates i
    front = ~covers.any(dim=0)                                                       # (n,) bool
    return {"pareto_frac": float(front.double().mean()), "pareto_distinct": len(torch.unique(r[front], dim=0)),
            "dim_mean": r.mean(dim=0).tolist()}


def hack_flags(hacks, problem, answers):
    """The flags of one problem's written answers: hacks(problem, y) (a task's Task.hacks) for each answer y, ''
    (a missing answer) left out, each distinct answer checked once. -> one {name: True, False or None} per written
    answer, in order; [] where hacks returns None (a task that names no hacks)."""
    cache = {}
    for y in answers:
        if y and y not in cache:
            cache[y] = hacks(problem, y)
    return [cache[y] for y in answers if y and cache[y] is not None]


def hack_rates(flags):
    """The hack rates of a pool of answers: for each name, the share of the flags that are True among those that
    are not None (None where every one is None). flags: hack_flags' lists of every problem, joined. -> {name:
    share or None}; {} for a task that names no hacks."""
    rates = {}
    for name in dict.fromkeys(n for f in flags for n in f):
        counted = [bool(f[name]) for f in flags if f.get(name) is not None]
        rates[name] = sum(counted) / len(counted) if counted else None
    return rates


def within_covariance(pools):
    """The reward dimensions' covariance within problems, pooled: C = sum_p sum_i (r_i - rbar_p)(r_i - rbar_p)^T /
    sum_p (n_p - 1), over the pools of answers of each problem (a problem's difficulty moves every answer of it
    alike, and VPO's advantage is normalized within a prompt's group). pools: one (n_p, D) array per problem
    (pools of fewer than 2 answers add nothing). -> (C (D, D) float64 numpy, degrees of freedom)."""
    pools = [np.asarray(p, dtype=np.float64) for p in pools]
    D = next((p.shape[-1] for p in pools if p.ndim == 2), 0)
    S, dof = np.zeros((D, D)), 0
    for p in pools:
        if len(p) >= 2:
            dev = p - p.mean(0)
            S += dev.T @ dev
            dof += len(p) - 1
    return (S / dof if dof else S), dof


def dimension_geometry(cov, eps=1e-12):
    """How many directions the reward dimensions span, from their covariance (within_covariance): over the
    dimensions that vary (variance > eps), the correlation matrix R (k, k) ->
      dim_corr   mean pairwise correlation, the mean of R_ij over i < j (None for fewer than 2 varying dims)
      eff_rank   participation ratio of R's eigenvalues, (sum λ)^2 / sum λ^2 = k^2 / sum_ij R_ij^2: k for
                 uncorrelated dimensions, 1 for collinear ones
      varying    k"""
    cov = np.asarray(cov, dtype=np.float64)
    keep = np.diag(cov) > eps
    k = int(keep.sum())
    if k == 0:
        return {"dim_corr": None, "eff_rank": 0.0, "varying": 0}
    c = cov[np.ix_(keep, keep)]
    sd = np.sqrt(np.diag(c))
    R = c / np.outer(sd, sd)
    off = R[np.triu_indices(k, 1)]
    return {"dim_corr": float(off.mean()) if k >= 2 else None, "eff_rank": float(k * k / (R ** 2).sum()),
            "varying": k}


def best_vector_at_k(scores, vectors, k, mask=None):
    """What the best of k answers is made of: E[r(y*)] with y* the answer of highest score among k drawn without
    replacement from the pool (the authors' pooled draw; ties between equal scores broken uniformly at random).
    By order statistics: P(the i-th lowest score is the max) = C(i-1, k-1) / C(n, k), shared evenly within a group of
    equal scores. scores (n,) or (n_rollouts, m) (pooled), vectors (same leading shape, D), mask: valid answers; a
    masked slot stays in the pool with score 0 and the zero vector. -> (D,) float64 numpy; its w*-weighted sum is
    pooled best@k when the scores are w*ᵀr."""
    s, v = _f64(scores).reshape(-1), _f64(vectors).reshape(-1, _f64(vectors).shape[-1])
    mask = _bool(mask, _f64(scores).shape)
    if mask is not None:
        mask = mask.reshape(-1)
        s, v = s.masked_fill(~mask, 0.0), v.masked_fill(~mask[:, None], 0.0)
    n = len(s)
    check_arg(1 <= k <= n, "k", f"in [1, {n}] (the answers in the pool)", k)
    order = torch.argsort(s, stable=True)
    s, v = s[order], v[order]
    i = torch.arange(1, n + 1, dtype=torch.float64)
    log_p = _log_comb(i.clamp_min(k) - 1, k - 1) - _log_comb(torch.tensor(float(n), dtype=i.dtype), k)
    p = torch.where(i >= k, log_p.exp(), 0.0)
    _, group = torch.unique_consecutive(s, return_inverse=True)                     # tie groups along the order
    mass = torch.zeros(int(group.max()) + 1, dtype=torch.float64).index_add_(0, group, p)
    size = torch.bincount(group).double()
    return ((mass / size)[group] @ v).numpy()

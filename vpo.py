"""
Vector Policy Optimization: the advantage estimators and the policy loss.

Paper: Bahlous-Boldi et al., "Vector Policy Optimization: Training for Diversity Improves Test-Time Search",
arXiv 2605.22817 (2026). Notation: B prompts in a batch, G rollouts per prompt, m answers per rollout,
D reward dimensions, N weight draws; r(x, y) in [0, 1]^D is the reward vector of answer y.

The estimator, step by step (docs/paper.md, "The estimator"), and where each step lives:
  1. w_1..w_N ~ Dir(alpha 1_D) per prompt, shared by all G rollouts of that prompt   sample_weights
  2. R_g = (1/N) sum_n max_{y in rollout g} w_n^T r(x, y)                               set_rewards
  3. A_g = (R_g - mean_group R) / (std_group R + 1e-6), A = 0 if std < 1e-6              group_normalize
     steps 1-3 in one call                                                              vpo_advantages
  4. A_g applies to every response token of rollout g                                   policy_loss (A broadcast)
  5. PPO clipped surrogate, dual clip 3, k3 KL to the reference, token-mean             policy_loss
Max inside, mean outside: E_w[max_y w^T r(y)] rewards a set whose answers win different regions of weight space.

Baselines share the interface: each returns (advantages (B, G), scores (B, G)), scores being the per-rollout
scalar that was normalized (docs/paper.md, "Baselines"):
  GRPO            s_g = w*^T r(y_g), A = group_normalize(s)                         grpo_advantages
  Multi-RLVR      s_g = sum over rollout g's valid answers of w*^T r(y)             multi_rlvr_advantages
  Multi-RLVR max  s_g = max over rollout g's valid answers of w*^T r(y), 0 if none  multi_rlvr_advantages(reduce="max")
  random weights  s_g = w_b^T r(y_g), one w_b ~ Dir(alpha 1_D) per group            random_weight_advantages
  GDPO            S_g = sum_d w*_d z_group(r_d)_g, A = S whitened over the batch    gdpo_advantages
  Max@k           s_i = (1/C(G,k)) sum_{k-subsets S with i} max_{j in S} w*^T r_j   max_at_k_advantages
  MaxRL           A_g = (s_g - mean_group s) / (mean_group s + eps)                 maxrl_advantages

Multi-RLVR with the max (--algo multi_rlvr_max) is the scalar counterpart of VPO's set reward. It scores the same
m-answer rollout by its best answer under the fixed w*. Under --reward_geometry collinear=rho, VPO's R_g lies within
(1 - rho) of that score (tasks/geometry.py). Run beside VPO, it separates what the set buys from what the vector buys.

METHODS, at the end, is the one table of methods: for each --algo its answers per rollout, the weights it draws,
how its estimator is called and which of train.py's options it reads; train.py and runs/ (the command-line
checks, the answers per rollout a checkpoint is evaluated with) ask it.
The evaluation metrics (best@k, pass@k, E_w[best@k], diversity, Pareto) live in metrics.py.

Invalid answers: an answer that is missing or repeats an earlier answer of the same rollout is masked out by
the caller (tasks.Task.score_rollouts does it: duplicates count once). Masked answers are left out of every max,
and a rollout without a valid answer scores 0; for rewards >= 0 that is the paper's "missing answers count as zero
vectors". An answer the task cannot read stays in, with the zero vector its score gives it.
"""
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch

SCALES = ("group", "batch", "none")
AGGS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def check_arg(ok, arg, expected, got):
    """The one place bad input is reported: ValueError('<arg> must be <expected>, got <got>')."""
    if not ok:
        raise ValueError(f"{arg} must be {expected}, got {got}")


def masked_max(x, mask):
    """max over the last axis of the entries where mask is True; 0 where a row has no True entry."""
    if mask is None:
        return x.amax(-1)
    best = x.masked_fill(~mask, float("-inf")).amax(-1)
    return best.masked_fill(~mask.any(-1), 0.0)


# --- Step 1: weights on the simplex -------------------------------------------------------------------------------

def sample_weights(num_groups, num_weights, dim, alpha=1.0, generator=None, sampler="iid"):
    """N weight vectors per group, w_{b,n} ~ Dir(alpha 1_D): (B, N, D) float32, rows on the simplex.

    sampler="iid":   independent draws from numpy's Generator.dirichlet, seeded by one draw from `generator`
                     (train.py checkpoints torch generator states). numpy switches to stick-breaking with Beta
                     draws when alpha < 0.1, so tiny alpha gives corners, not NaN (numpy PR #14924, numpy >= 1.18).
    sampler="sobol": per group the first N points u of a scrambled Sobol sequence in [0, 1)^(D-1), mapped to the
                     simplex by sorted-uniform spacings, w = diff(0, sort(u), 1). For uniform u this is exactly
                     Dir(1), so only alpha = 1 is supported (ValueError otherwise); the N points cover the simplex
                     more evenly than N i.i.d. draws, which lowers the variance of the average over w.
    All randomness comes from `generator` (scrambling seeds included): the same seed gives the same weights.
    """
    check_arg(num_groups >= 0, "num_groups", ">= 0", num_groups)
    check_arg(num_weights >= 1, "num_weights", ">= 1", num_weights)
    check_arg(dim >= 1, "dim", ">= 1", dim)
    check_arg(0 < alpha < math.inf, "alpha", "finite and > 0", alpha)
    check_arg(sampler in ("iid", "sobol"), "sampler", "'iid' or 'sobol'", repr(sampler))
    check_arg(sampler == "iid" or alpha == 1.0, "alpha", "1.0 with sampler='sobol'", alpha)
    B, N, D = num_groups, num_weights, dim
    if D == 1:
        return torch.ones(B, N, 1)
    if sampler == "iid":
        seed = int(torch.randint(2**62, (1,), generator=generator))
        w = np.random.default_rng(seed).dirichlet(np.full(D, float(alpha)), size=(B, N))   # (B, N, D)
        return torch.from_numpy(w).float()
    seeds = torch.randint(2**62, (B,), generator=generator).tolist()
    u = torch.stack([torch.quasirandom.SobolEngine(D - 1, scramble=True, seed=s).draw(N, dtype=torch.float64)
                     for s in seeds]).sort(dim=-1).values                           # (B, N, D-1), sorted
    edges = torch.cat([torch.zeros(B, N, 1, dtype=u.dtype), u, torch.ones(B, N, 1, dtype=u.dtype)], dim=-1)
    return edges.diff(dim=-1).float()                                               # spacings: (B, N, D)


# --- Steps 2-3: set rewards and group normalization ---------------------------------------------------------------

def _answers(rewards, answer_mask):
    """Checked multi-answer rollouts as tensors: rewards (B, G, m, D), answer_mask (B, G, m) bool."""
    rewards, answer_mask = torch.as_tensor(rewards), torch.as_tensor(answer_mask)
    check_arg(rewards.dim() == 4, "rewards", "of shape (B, G, m, D)", tuple(rewards.shape))
    check_arg(answer_mask.dtype == torch.bool and answer_mask.shape == rewards.shape[:3], "answer_mask",
              f"bool of shape (B, G, m) = {tuple(rewards.shape[:3])}",
              f"{answer_mask.dtype} {tuple(answer_mask.shape)}")
    return rewards, answer_mask


def set_rewards(rewards, answer_mask, weights):
    """R_g = (1/N) sum_n max_{valid y in rollout g} w_n^T r(y): the set reward of every rollout, (B, G).

    rewards (B, G, m, D), answer_mask (B, G, m) bool, weights (B, N, D). Prompt b's N weights score all of its
    G rollouts (common random numbers). A rollout with no valid answer scores 0.
    """
    rewards, answer_mask = _answers(rewards, answer_mask)
    check_arg(weights.dim() == 3 and weights.shape[0] == rewards.shape[0] and weights.shape[2] == rewards.shape[3],
              "weights", f"(B, N, D) with B, D = {rewards.shape[0]}, {rewards.shape[3]}", tuple(weights.shape))
    scores = torch.einsum("bgmd,bnd->bgnm", rewards, weights.to(rewards))           # w_n^T r(y): (B, G, N, m)
    best = masked_max(scores, answer_mask[:, :, None, :])                          # max_y: (B, G, N)
    return best.mean(dim=-1)                                                        # (1/N) sum_n: (B, G)


def group_normalize(scores, scale="group", eps=1e-6):
    """A_g = (s_g - mean_group s) / (std + eps), std the population std (ddof = 0): (B, G) -> (B, G).

    scale="group": the std of each group (GRPO, VPO). "batch": one std over all B*G scores, centring still per
    group. "none": A_g = s_g - mean_group s (Dr. GRPO). In every mode a group whose own std is below eps gets
    exact zeros: its rollouts scored alike (up to float residue), so it carries no signal.
    """
    check_arg(scores.dim() == 2, "scores", "a (B, G) tensor", tuple(scores.shape))
    check_arg(scale in SCALES, "scale", f"one of {SCALES}", repr(scale))
    centred = scores - scores.mean(dim=1, keepdim=True)                             # s_g - mean_group s
    group_std = scores.std(dim=1, correction=0, keepdim=True)                       # (B, 1)
    if scale == "group":
        centred = centred / (group_std + eps)
    elif scale == "batch":
        centred = centred / (scores.std(correction=0) + eps)
    return centred.masked_fill(group_std < eps, 0.0)


# --- VPO and the baselines: each returns (advantages (B, G), scores (B, G)) ---------------------------------------

def vpo_advantages(rewards, answer_mask, num_weights=100, alpha=1.0, generator=None, weights=None, sampler="iid",
                   scale="group"):
    """VPO: A = group_normalize(R), R_g = (1/N) sum_n max_{y in rollout g} w_n^T r(y), w_n ~ Dir(alpha 1_D).

    rewards (B, G, m, D), answer_mask (B, G, m) -> (advantages (B, G), set rewards R (B, G)). Passing weights
    (B, N, D) fixes the draws (num_weights, alpha, generator and sampler are then unused).
    """
    rewards, answer_mask = _answers(rewards, answer_mask)
    if weights is None:
        weights = sample_weights(rewards.shape[0], num_weights, rewards.shape[3], alpha, generator, sampler)
    R = set_rewards(rewards, answer_mask, weights)
    return group_normalize(R, scale), R


def _single_answer(rewards):
    """Checked single-answer rollouts as a tensor: (B, G, D) or (B, G, 1, D) -> (B, G, D)."""
    rewards = torch.as_tensor(rewards)
    rewards = rewards[:, :, 0] if rewards.dim() == 4 and rewards.shape[2] == 1 else rewards
    check_arg(rewards.dim() == 3, "rewards", "of shape (B, G, D) or (B, G, 1, D) (one answer per rollout)",
              tuple(rewards.shape))
    return rewards


def _scalarize(rewards, deploy_weights):
    """w*^T r over the last axis."""
    w = torch.as_tensor(deploy_weights, dtype=rewards.dtype, device=rewards.device)
    check_arg(w.shape == rewards.shape[-1:], "deploy_weights", f"shape ({rewards.shape[-1]},) to match rewards "
              f"{tuple(rewards.shape)}", tuple(w.shape))
    return rewards @ w


def grpo_advantages(rewards, deploy_weights, scale="group"):
    """GRPO: one answer per rollout, s_g = w*^T r(y_g), A = group_normalize(s). rewards (B, G, D) or (B, G, 1, D)."""
    s = _scalarize(_single_answer(rewards), deploy_weights)                          # (B, G)
    return group_normalize(s, scale), s


def multi_rlvr_advantages(rewards, answer_mask, deploy_weights, reduce="sum", scale="group"):
    """Multi-RLVR: VPO's multi-answer rollouts (B, G, m, D) scored with the fixed scalar w* instead of random w.

    reduce="sum": s_g = sum_{valid y in rollout g} w*^T r(y) (the authors' code: masked answers are zero-padded;
                  --algo multi_rlvr).
    reduce="max": s_g = max_{valid y in rollout g} w*^T r(y) (0 without a valid answer; --algo multi_rlvr_max).
    A = group_normalize(s).
    """
    rewards, answer_mask = _answers(rewards, answer_mask)
    check_arg(reduce in ("sum", "max"), "reduce", "'sum' or 'max'", repr(reduce))
    per_answer = _scalarize(rewards, deploy_weights)                                 # w*^T r(y): (B, G, m)
    if reduce == "sum":
        s = per_answer.masked_fill(~answer_mask, 0.0).sum(dim=-1)
    else:
        s = masked_max(per_answer, answer_mask)
    return group_normalize(s, scale), s


def random_weight_advantages(rewards, alpha=1.0, generator=None, scale="group", weights=None):
    """Random-weighting GRPO: s_g = w_b^T r(y_g), one w_b ~ Dir(alpha 1_D) per group shared by its G rollouts.

    weights (B, D) fixes the w_b: goal-conditioned GRPO draws them itself and writes them into the prompts."""
    rewards = _single_answer(rewards)                                                # (B, G, D)
    if weights is None:
        w = sample_weights(rewards.shape[0], 1, rewards.shape[2], alpha, generator).to(rewards)   # (B, 1, D)
    else:
        w = torch.as_tensor(weights).to(rewards)[:, None]
        check_arg(w.shape == (rewards.shape[0], 1, rewards.shape[2]), "weights", f"shape (B, D) = "
                  f"{(rewards.shape[0], rewards.shape[2])}", tuple(w.shape[::2]))
    s = (rewards * w).sum(dim=-1)                                                    # (B, G)
    return group_normalize(s, scale), s


def gdpo_advantages(rewards, deploy_weights, scale="group", token_counts=None, eps=1e-6):
    """GDPO as the authors run it: per-dimension group z-scores, summed with the task weights, whitened over the batch.

    A_{g,d} = group_normalize(r_{.,d})_g for each reward dimension d on its own      (B, G, D)
    S_g     = sum_d w*_d A_{g,d}                                                    (B, G), returned as scores
    A_g     = (S_g - mean S) / (std S + eps), mean and std over all B*G rollouts of the batch.
    The std is the sample std (ddof = 1), as veRL's masked_whiten computes it. token_counts (B, G), if given,
    weights each rollout by its number of response tokens, as the authors' whitening over tokens does (ddof = 1
    then counts tokens). Scaling w* or the per-dimension std (ddof 0 or 1) does not change A: whitening undoes it.
    Each group's z-scores sum to 0, so with rollouts counted alike mean S = 0 up to rounding: whitening only
    rescales, and a group whose rewards are all alike (S = 0) keeps A = 0 up to rounding. With token_counts the
    mean moves and, taken literally as the authors run it, such a group gets A = -mean S / std S, not 0.
    A batch whose S has std < eps gets A = 0. One answer per rollout: (B, G, D) or (B, G, 1, D).
    """
    r = _single_answer(rewards)                                                      # (B, G, D)
    w = torch.as_tensor(deploy_weights, dtype=r.dtype)
    check_arg(w.shape == r.shape[2:], "deploy_weights", f"shape ({r.shape[2]},)", tuple(w.shape))
    per_dim = torch.stack([group_normalize(r[..., d], scale) for d in range(r.shape[2])], dim=-1)   # A_{g,d}
    S = per_dim @ w                                                                  # (B, G)
    n = torch.ones_like(S) if token_counts is None else torch.as_tensor(token_counts).to(S)
    check_arg(n.shape == S.shape and (n >= 0).all() and n.sum() > 0, "token_counts",
              f"of shape {tuple(S.shape)}, >= 0 and not all 0", tuple(n.shape))
    mean = (n * S).sum() / n.sum()
    std = ((n * (S - mean) ** 2).sum() / (n.sum() - 1).clamp_min(1)).sqrt()
    if std < eps:
        return torch.zeros_like(S), S
    return (S - mean) / (std + eps), S


def max_at_k_scores(s, k):
    """Max@k per-rollout rewards of a group of n scalar rewards s (B, n) -> (B, n), float64.

    s_i = (1 / C(n, k)) sum_{k-subsets S of the group, S containing i} max_{j in S} s_j, computed from the ascending
    order s_(1) <= ... <= s_(n) as s_(i) -> [C(i-1, k-1) s_(i) + sum_{j>i} C(j-2, k-2) s_(j)] / C(n, k)
    (i is the max of C(i-1, k-1) of its subsets, and j > i the max of C(j-2, k-2)). sum_i s_i = k E[max of k].
    The formula is exact for any order of tied values; tied rollouts are then given the value computed at the top
    of their run, so equal rewards get bit-equal scores.
    """
    B, n = s.shape
    top = math.comb(n, k)
    own = torch.tensor([math.comb(i - 1, k - 1) / top for i in range(1, n + 1)], dtype=torch.float64)
    above = torch.tensor([math.comb(j - 2, k - 2) / top if j >= 2 and k >= 2 else 0.0 for j in range(1, n + 1)],
                         dtype=torch.float64)
    r, order = s.double().sort(dim=1)                                                # r_(1) <= ... <= r_(n)
    suffix = (above * r).flip(1).cumsum(1).flip(1)                                   # sum_{j >= i} C(j-2, k-2) r_(j)
    sorted_scores = own * r + torch.cat([suffix[:, 1:], torch.zeros(B, 1, dtype=r.dtype)], dim=1)   # j > i only
    run_top = torch.searchsorted(r, r, right=True) - 1                               # last position of each tie run
    sorted_scores = sorted_scores.gather(1, run_top)
    return torch.empty_like(sorted_scores).scatter_(1, order, sorted_scores)        # back to rollout order


def max_at_k_advantages(rewards, deploy_weights, k=None, scale="group"):
    """Max@k: A = group_normalize(s), s_i the Max@k reward of rollout i for the scalar w*^T r (max_at_k_scores).

    sum_g s_g grad log pi(y_g) is an unbiased estimate of grad E[max of k samples of w*^T r] (docs/paper.md, "Baselines";
    arXiv 2510.23393); the group normalization follows, as for GRPO. One answer per rollout: rewards (B, G, D) or
    (B, G, 1, D). k defaults to max(2, G // 2) (the authors'); 1 <= k <= G - 1: k = 1 is plain GRPO
    (s_i = r_i / G), and k = G gives every rollout the group max (no signal), so it is refused.
    """
    r = _scalarize(_single_answer(rewards), deploy_weights)                         # w*^T r: (B, G)
    G = r.shape[1]
    k = max(2, G // 2) if k is None else k
    check_arg(isinstance(k, int) and 1 <= k < G, "k", f"an integer in [1, G - 1] with G = {G} rollouts per group", k)
    s = max_at_k_scores(r, k).to(r.dtype)
    return group_normalize(s, scale), s


def maxrl_advantages(rewards, deploy_weights, eps=1e-6):
    """MaxRL: A_g = (s_g - mean_group s) / (mean_group s + eps), s_g = w*^T r(y_g) >= 0.

    A group with mean < eps (nothing earned reward) or std < eps (all alike) gets A = 0.
    """
    s = _scalarize(_single_answer(rewards), deploy_weights)                          # (B, G)
    mean = s.mean(dim=1, keepdim=True)
    adv = (s - mean) / (mean + eps)
    flat = (mean < eps) | (s.std(dim=1, correction=0, keepdim=True) < eps)
    return adv.masked_fill(flat, 0.0), s


# --- Steps 4-5: the policy loss -----------------------------------------------------------------------------------

def _aggregate(x, mask, agg):
    """Per-token x (R, T) -> scalar over the valid tokens (mask float, masked entries of x already 0).

    token-mean:              sum_{r,t} x / sum_{r,t} mask
    seq-mean-token-mean:     mean over rows with a valid token of (sum_t x / sum_t mask)
    seq-mean-token-sum-norm: mean over all R rows of (sum_t x / T), T = mask.shape[1] (Dr. GRPO: no length bias)
    """
    if agg == "token-mean":
        return x.sum() / mask.sum().clamp_min(1)
    per_row, tokens = x.sum(dim=-1), mask.sum(dim=-1)
    if agg == "seq-mean-token-mean":
        return (per_row / tokens.clamp_min(1)).sum() / (tokens > 0).sum().clamp_min(1)
    return per_row.mean() / mask.shape[1]


def policy_loss(logprobs, old_logprobs, advantages, mask, clip_low=0.2, clip_high=0.2, dual_clip=3.0,
                ref_logprobs=None, kl_coef=0.0, agg="token-mean"):
    """PPO clipped surrogate with dual clip and a k3 KL penalty, per token, as stock veRL computes it.

    rho = exp(clamp(logp - logp_old, -20, 20)); A (R,) is rollout g's advantage on each of its tokens (step 4)
    l = max(-A rho, -A clip(rho, 1 - clip_low, 1 + clip_high));   if A < 0: l = min(l, -A dual_clip)
    kl = exp(ref - logp) - (ref - logp) - 1, clamped to [-10, 10] (k3, veRL's low_var_kl)
    loss = agg(l) + kl_coef * agg(kl). logprobs, old_logprobs, ref_logprobs, mask: (R, T).
    Returns (loss, stats): stats holds Python floats (token means over valid tokens): pg_loss, clip_frac
    (clipped branch active), dual_clip_frac, ratio, kl, entropy (the proxy mean -logp), loss.
    """
    R, T = logprobs.shape
    check_arg(old_logprobs.shape == (R, T) and mask.shape == (R, T), "old_logprobs/mask",
              f"shape {(R, T)} like logprobs", (tuple(old_logprobs.shape), tuple(mask.shape)))
    check_arg(advantages.shape == (R,), "advantages", f"shape ({R},)", tuple(advantages.shape))
    check_arg(ref_logprobs is None or ref_logprobs.shape == (R, T), "ref_logprobs", f"shape {(R, T)}",
              None if ref_logprobs is None else tuple(ref_logprobs.shape))
    check_arg(agg in AGGS, "agg", f"one of {AGGS}", repr(agg))
    check_arg(dual_clip is None or dual_clip > 1, "dual_clip", "None or > 1", dual_clip)
    valid = mask.bool()
    m = valid.to(logprobs.dtype)
    logp = logprobs.masked_fill(~valid, 0.0)             # padding may hold anything; keep it out of the graph
    old = old_logprobs.detach().masked_fill(~valid, 0.0)
    A = advantages.detach().to(logprobs.dtype)[:, None]  # (R, 1): one advantage per rollout
    ratio = (logp - old).clamp(-20.0, 20.0).exp()                                    # rho
    pg1 = -A * ratio
    pg2 = -A * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    pg, dual = torch.maximum(pg1, pg2), torch.zeros_like(valid)
    if dual_clip is not None:                                                        # A < 0: l = min(l, -A c)
        dual = (A < 0) & (pg > -A * dual_clip)
        pg = torch.where(dual, -A * dual_clip, pg)
    pg_loss = _aggregate(pg * m, m, agg)
    kl = torch.zeros_like(logp)
    if ref_logprobs is not None:
        delta = (ref_logprobs.detach().masked_fill(~valid, 0.0) - logp).clamp(-20.0, 20.0)   # ref - logp
        kl = (delta.exp() - delta - 1.0).clamp(-10.0, 10.0)
    loss = pg_loss + kl_coef * _aggregate(kl * m, m, agg)

    def mean(x):                                                                     # token mean for the logs
        return _aggregate(x.detach().to(m) * m, m, "token-mean").item()
    stats = {"loss": loss.item(), "pg_loss": pg_loss.item(), "clip_frac": mean(pg2 > pg1),
             "dual_clip_frac": mean(dual), "ratio": mean(ratio), "kl": mean(kl), "entropy": mean(-logp)}
    return loss, stats


# --- The methods: what each --algo is ----------------------------------------------------------------------------

# train.py's flags that shape a method's weights and advantages; each method says which of them it reads, and
# train.py refuses the others (one line, exit 2) instead of ignoring them
OPTIONS = ("scale", "num_weights", "alpha", "weight_sampler", "max_at_k", "match_budget", "reward_geometry")


@dataclass(frozen=True)
class Method:
    """One training method, the one place that says what it is (train.py and runs/ ask):
    multi_answer  m answers per rollout (the set methods) or one
    weights       what it draws per prompt: None; "N" (N weight vectors w ~ Dir(alpha), VPO's set reward);
                  "1" (one w ~ Dir(alpha), in the reward only); "prompt" (one w ~ Dir(alpha), written into the
                  prompt too: goal-conditioned; evaluated with w* written in)
    advantages    (rewards (B,G,m,D), mask (B,G,m), w* (D,), w (drawn weights or None), opts) -> (A (B,G), s (B,G));
                  opts has .scale and .max_at_k
    options       the OPTIONS it reads: scale (its group_normalize), num_weights / alpha / weight_sampler (how
                  its weights are drawn), max_at_k, match_budget (single-answer methods: m x G rollouts),
                  reward_geometry (the methods whose advantage reads the vector beyond w*ᵀr: tasks.geometry)"""
    multi_answer: bool
    weights: Optional[str]
    advantages: Callable
    options: frozenset


SINGLE, DRAWN = {"scale", "match_budget"}, {"alpha", "weight_sampler"}
METHODS = {
    "grpo":          Method(False, None, lambda r, a, ws, w, o: grpo_advantages(r, ws, scale=o.scale),
                            frozenset(SINGLE)),
    "vpo":           Method(True, "N", lambda r, a, ws, w, o: vpo_advantages(r, a, weights=w, scale=o.scale),
                            frozenset({"scale", "num_weights", "reward_geometry"} | DRAWN)),
    "multi_rlvr":    Method(True, None, lambda r, a, ws, w, o: multi_rlvr_advantages(r, a, ws, scale=o.scale),
                            frozenset({"scale"})),
    "multi_rlvr_max": Method(True, None,                                        # best answer: VPO on collinear r
                             lambda r, a, ws, w, o: multi_rlvr_advantages(r, a, ws, reduce="max", scale=o.scale),
                             frozenset({"scale"})),
    "random_weight": Method(False, "1", lambda r, a, ws, w, o: random_weight_advantages(r, scale=o.scale, weights=w),
                            frozenset(SINGLE | DRAWN | {"reward_geometry"})),
    "goal_cond":     Method(False, "prompt",
                            lambda r, a, ws, w, o: random_weight_advantages(r, scale=o.scale, weights=w),
                            frozenset(SINGLE | DRAWN)),
    "max_at_k":      Method(False, None, lambda r, a, ws, w, o: max_at_k_advantages(r, ws, k=o.max_at_k,
                                                                                    scale=o.scale),
                            frozenset(SINGLE | {"max_at_k"})),
    "gdpo":          Method(False, None, lambda r, a, ws, w, o: gdpo_advantages(r, ws, scale=o.scale),
                            frozenset(SINGLE | {"reward_geometry"})),
    "maxrl":         Method(False, None, lambda r, a, ws, w, o: maxrl_advantages(r, ws),   # (s - mean) / mean
                            frozenset({"match_budget"})),
}


def rollouts_per_prompt(algo, group_size, num_answers, match_budget=False):
    """G of a method: group_size, or m x group_size for a single-answer method with match_budget (the same answers
    per prompt as a multi-answer method: the paper's "GRPO with 3x rollouts")."""
    single = not METHODS[algo].multi_answer
    return group_size * (num_answers if single and match_budget else 1)

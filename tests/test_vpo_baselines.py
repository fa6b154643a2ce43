"""
Tests for the baselines the authors report next to VPO: Max@k (against the average over every k-subset) and GDPO
as the authors run it (against hand-computed values). And Multi-RLVR with the max, VPO's set objective on the
scalar (against a loop over rollouts).

    python -m pytest -q tests/test_vpo_baselines.py
"""
import itertools
import math
from types import SimpleNamespace

import pytest
import torch

import metrics
import vpo


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- Max@k --------------------------------------------------------------------------------------------------------

def max_at_k_brute(s, k):
    """s_i = (1 / C(n, k)) sum over the k-subsets S containing i of max_{j in S} s_j, by enumeration: (B, n)."""
    B, n = s.shape
    out = torch.zeros(B, n, dtype=torch.float64)
    for b in range(B):
        for subset in itertools.combinations(range(n), k):
            best = max(float(s[b, j]) for j in subset)
            for i in subset:
                out[b, i] += best
    return out / math.comb(n, k)


def tied_rewards(B, G, seed):
    """(B, G, 2) rewards on a coarse grid, so that the scalars w*^T r tie often."""
    return torch.randint(0, 3, (B, G, 2), generator=gen(seed)).double() / 2


@pytest.mark.parametrize("G", [2, 3, 5, 8])
def test_max_at_k_scores_equal_the_subset_average(G):
    w = [0.5, 0.5]
    for k in range(1, G):
        rewards = tied_rewards(6, G, seed=G * 10 + k)
        s = rewards @ torch.tensor(w, dtype=torch.float64)
        assert len(set(s.flatten().tolist())) < s.numel()                           # ties are really there
        adv, scores = vpo.max_at_k_advantages(rewards, w, k=k)
        assert scores.shape == (6, G) and scores.dtype == torch.float64
        assert torch.allclose(scores, max_at_k_brute(s, k), atol=1e-12)
        assert torch.equal(adv, vpo.group_normalize(scores))
        # sum_i s_i = k E[max of k], the unbiased max@k of the group
        expected = torch.tensor([metrics.best_at_k(row, k) for row in s], dtype=torch.float64)
        assert torch.allclose(scores.sum(1), k * expected, atol=1e-12)


def test_max_at_k_ties_get_bit_equal_scores():
    r = torch.tensor([[0.1, 0.2, 0.3, 0.2, 0.2, 0.3, 0.0, 0.3]], dtype=torch.float32)[..., None]   # D = 1
    for k in range(1, 8):
        _, s = vpo.max_at_k_advantages(r, [1.0], k=k)
        assert s.dtype == torch.float32
        assert s[0, 1] == s[0, 3] == s[0, 4] and s[0, 2] == s[0, 5] == s[0, 7]
    # without equalizing ties these float64 groups give tied rollouts scores one ulp apart
    for group, k, tied in [([0.9, 0.7, 0.9, 0.3], 2, [0, 2]), ([0.7, 0.3, 0.9, 0.9, 0.9], 2, [2, 3, 4])]:
        r = torch.tensor([group], dtype=torch.float32).double()[..., None]
        _, s = vpo.max_at_k_advantages(r, [1.0], k=k)
        assert len(set(s[0, tied].tolist())) == 1
    flat = torch.full((2, 6, 1, 3), 0.7)                                            # (B, G, 1, D), all alike
    adv, s = vpo.max_at_k_advantages(flat, [0.2, 0.3, 0.5])
    assert (s == s[0, 0]).all() and torch.equal(adv, torch.zeros(2, 6))


def test_max_at_k_defaults_k1_invariances_and_groups():
    rewards = torch.rand(4, 8, 3, generator=gen(1))
    w = [0.2, 0.3, 0.5]
    s = rewards @ torch.tensor(w)
    _, default = vpo.max_at_k_advantages(rewards, w)
    assert torch.equal(default, vpo.max_at_k_advantages(rewards, w, k=4)[1])       # k = max(2, G // 2) = 4
    adv1, s1 = vpo.max_at_k_advantages(rewards, w, k=1)                             # k = 1: s_i = r_i / G, GRPO
    assert torch.allclose(s1, s / 8)                                                 # eps acts on std / 8:
    assert torch.allclose(adv1, vpo.grpo_advantages(rewards, w)[0], rtol=1e-3)     # equal up to it
    perm = torch.tensor([3, 0, 7, 1, 6, 2, 5, 4])                                   # order of rollouts in a group
    assert torch.allclose(vpo.max_at_k_advantages(rewards[:, perm], w, k=3)[1], vpo.max_at_k_advantages(
        rewards, w, k=3)[1][:, perm])
    per_group = torch.cat([vpo.max_at_k_advantages(rewards[b:b + 1], w, k=3)[1] for b in range(4)])
    assert torch.equal(per_group, vpo.max_at_k_advantages(rewards, w, k=3)[1])    # groups do not mix
    big = torch.rand(1, 48, 1, generator=gen(2))                                    # C(48, 24) ~ 3e13: no overflow
    assert torch.allclose(vpo.max_at_k_advantages(big, [1.0], k=24)[1].sum(),
                          24 * torch.tensor(metrics.best_at_k(big[0, :, 0], 24), dtype=torch.float32))


def test_max_at_k_bad_input():
    rewards = torch.rand(2, 4, 2, generator=gen(3))
    for k in (0, 4, 5, 2.0):
        with pytest.raises(ValueError, match="k"):
            vpo.max_at_k_advantages(rewards, [0.5, 0.5], k=k)
    with pytest.raises(ValueError, match="k"):                                      # G = 2: default k = 2 = G
        vpo.max_at_k_advantages(rewards[:, :2], [0.5, 0.5])
    with pytest.raises(ValueError, match="rewards"):
        vpo.max_at_k_advantages(torch.rand(2, 4, 3, 2), [0.5, 0.5])                 # m = 3
    with pytest.raises(ValueError, match="deploy_weights"):
        vpo.max_at_k_advantages(rewards, [1.0])


# --- GDPO ---------------------------------------------------------------------------------------------------------

C = 0.5 / (0.5 + 1e-6)                    # a pair that differs by 1, group z-normalized (population std 0.5): +-C
GDPO_REWARDS = torch.tensor([[[1.0, 0.0], [0.0, 1.0]],      # the dims disagree: A_0 = (C, -C), A_1 = (-C, C)
                             [[1.0, 1.0], [1.0, 0.0]],      # dim 0 flat: A_0 = (0, 0), A_1 = (C, -C)
                             [[0.5, 0.5], [0.5, 0.5]]])     # all alike: A = 0 in every dim


def test_gdpo_hand_example():
    adv, S = vpo.gdpo_advantages(GDPO_REWARDS, [0.75, 0.25])
    # S_g = sum_d w*_d A_{g,d}: group 0 0.75 (C, -C) + 0.25 (-C, C), group 1 0.25 (C, -C), group 2 zeros
    expected_S = torch.tensor([[0.5, -0.5], [0.25, -0.25], [0.0, 0.0]]) * C
    assert torch.allclose(S, expected_S)
    # batch mean 0; sample std over the 6 rollouts: sqrt(C^2 (2 * 0.25 + 2 * 0.0625) / 5) = C sqrt(0.125)
    std = C * math.sqrt(0.125)
    assert torch.allclose(adv, expected_S / (std + 1e-6))
    assert adv[0, 0] == pytest.approx(0.5 / math.sqrt(0.125), abs=1e-5)              # 1.414, not GDPO's old 0.5
    adv3, _ = vpo.gdpo_advantages(GDPO_REWARDS, [3.0, 1.0])                         # the scale of w* drops out
    assert torch.allclose(adv3, adv, atol=1e-5)
    adv4, _ = vpo.gdpo_advantages(GDPO_REWARDS[:, :, None], [0.75, 0.25])           # (B, G, 1, D) too
    assert torch.equal(adv4, adv)


def test_gdpo_token_weighted_whitening_shifts_flat_groups():
    n = torch.tensor([[3.0, 1.0], [1.0, 1.0], [2.0, 2.0]])                          # response tokens per rollout
    adv, S = vpo.gdpo_advantages(GDPO_REWARDS, [0.75, 0.25], token_counts=n)
    # token-weighted mean: (3 * 0.5 - 0.5 + 0.25 - 0.25) C / 10 = 0.1 C
    # var: (3 * 0.4^2 + 0.6^2 + 0.15^2 + 0.35^2 + 4 * 0.1^2) C^2 / (10 - 1) = 1.025 C^2 / 9
    mean, std = 0.1 * C, C * math.sqrt(1.025 / 9)
    assert torch.allclose(adv, (S - mean) / (std + 1e-6))
    assert adv[2, 0] == adv[2, 1] < 0                                                # the flat group moves too
    assert torch.allclose(vpo.gdpo_advantages(GDPO_REWARDS, [0.75, 0.25], token_counts=torch.ones(3, 2))[0],
                          vpo.gdpo_advantages(GDPO_REWARDS, [0.75, 0.25])[0])


def test_gdpo_flat_batch_and_bad_input():
    flat = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.3, 0.3], [0.3, 0.3]]])
    adv, S = vpo.gdpo_advantages(flat, [0.5, 0.5])
    assert torch.equal(adv, torch.zeros(2, 2)) and torch.equal(S, torch.zeros(2, 2))
    with pytest.raises(ValueError, match="deploy_weights"):
        vpo.gdpo_advantages(GDPO_REWARDS, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="token_counts"):
        vpo.gdpo_advantages(GDPO_REWARDS, [0.5, 0.5], token_counts=torch.ones(3, 3))
    with pytest.raises(ValueError, match="token_counts"):
        vpo.gdpo_advantages(GDPO_REWARDS, [0.5, 0.5], token_counts=torch.zeros(3, 2))


# --- Multi-RLVR with the max (--algo multi_rlvr_max) --------------------------------------------------------------

def group_z_brute(scores, eps=1e-6):
    """Per group, (s - mean) / (population std + eps) by hand; a group whose std is below eps gets zeros."""
    out = []
    for group in scores:
        mean = sum(group) / len(group)
        std = math.sqrt(sum((s - mean) ** 2 for s in group) / len(group))
        out.append([0.0 if std < eps else (s - mean) / (std + eps) for s in group])
    return torch.tensor(out, dtype=torch.float64)


def written_answers(B, G, m, D, seed):
    """A random batch of multi-answer rollouts: which answer each slot wrote, and what the caller makes of it.

    Prompt b has a pool of 4 answers with reward vectors in [0, 1]^D; slot j of rollout g writes one of them (its
    id) or nothing (-1), so rollouts repeat answers and some write none. Prompt 0's rollouts write nothing at all,
    and every rollout of prompt 1 writes its answer 0, which beats the rest of its pool: both groups are flat.
    Returns ids (B, G, m), pools (B, 4, D), and the method's input as Task.score_rollouts builds it: the mask is
    True on the first writing of each answer, and masked slots hold garbage (5 + noise) no method may read."""
    g = gen(seed)
    pools = torch.rand((B, 4, D), generator=g, dtype=torch.float64)
    pools[1, 0] = 1.0
    ids = torch.randint(-1, 4, (B, G, m), generator=g)
    ids[0] = -1
    ids[1, :, 0] = 0
    rewards = 5 + torch.rand((B, G, m, D), generator=g, dtype=torch.float64)
    mask = torch.zeros((B, G, m), dtype=torch.bool)
    for b, g_, j in itertools.product(range(B), range(G), range(m)):
        a = int(ids[b, g_, j])
        if a >= 0 and a not in ids[b, g_, :j].tolist():
            rewards[b, g_, j], mask[b, g_, j] = pools[b, a], True
    return ids, pools, rewards, mask


def multi_rlvr_max_brute(ids, pools, w):
    """s_g = max over the distinct answers rollout g wrote of w*^T r(y), 0 if it wrote none; A = group_z_brute(s)."""
    scores = []
    for b, group in enumerate(ids.tolist()):
        row = []
        for answers in group:
            distinct = {a for a in answers if a >= 0}
            row.append(max((sum(wd * float(rd) for wd, rd in zip(w, pools[b, a])) for a in distinct), default=0.0))
        scores.append(row)
    return group_z_brute(scores), torch.tensor(scores, dtype=torch.float64)


def test_multi_rlvr_max_equals_a_loop_over_rollouts():
    """--algo multi_rlvr_max (vpo.METHODS, as train.rl_step calls it) against the loop: each rollout scored by its
    best distinct valid answer under w*, 0 without one, then group z-normalized with the population std."""
    method, opts, w = vpo.METHODS["multi_rlvr_max"], SimpleNamespace(scale="group", max_at_k=None), [0.2, 0.3, 0.5]
    assert method.multi_answer and method.weights is None and method.options == {"scale"}
    for seed in range(3):
        ids, pools, rewards, mask = written_answers(6, 8, 3, 3, seed)
        written = ids >= 0
        assert (written.sum(-1) > mask.sum(-1)).any() and (~written.any(-1)).any()   # repeats and empty rollouts
        adv, scores = method.advantages(rewards, mask, w, None, opts)
        want_adv, want_scores = multi_rlvr_max_brute(ids, pools, w)
        assert torch.allclose(scores, want_scores, rtol=0, atol=1e-12)
        assert torch.allclose(adv, want_adv, rtol=0, atol=1e-9)
        assert torch.equal(adv[:2], torch.zeros(2, 8)) and (adv[2:] != 0).all(1).any()  # the flat groups: zeros
        # the loop tells the max from the sum (the authors' Multi-RLVR) on this batch
        assert not torch.allclose(vpo.METHODS["multi_rlvr"].advantages(rewards, mask, w, None, opts)[1], want_scores)

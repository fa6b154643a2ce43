"""
Tests for vpo.py's estimators and loss: against brute-force loops or hand-computed values, the invariances
the paper relies on, the loss's clipping and gradients. GDPO and Max@k are in test_vpo_baselines.py, the metrics
and the authors' smallest demonstration in test_vpo_metrics.py.

    python -m pytest -q tests/test_vpo.py
"""
import itertools
import math

import numpy as np
import pytest
import torch

import vpo


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --- sample_weights -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sampler,alpha", [("iid", 1.0), ("iid", 0.3), ("iid", 2.5), ("sobol", 1.0)])
def test_sample_weights_on_simplex_and_reproducible(sampler, alpha):
    w = vpo.sample_weights(5, 64, 4, alpha=alpha, generator=gen(1), sampler=sampler)
    assert w.shape == (5, 64, 4) and w.dtype == torch.float32
    assert (w >= 0).all() and torch.allclose(w.sum(-1), torch.ones(5, 64), atol=1e-6)
    assert torch.equal(w, vpo.sample_weights(5, 64, 4, alpha=alpha, generator=gen(1), sampler=sampler))
    assert not torch.equal(w, vpo.sample_weights(5, 64, 4, alpha=alpha, generator=gen(2), sampler=sampler))
    for b in range(1, 5):                                   # every group gets its own draws
        assert not torch.allclose(w[0], w[b])


@pytest.mark.parametrize("sampler,alpha,tol", [("iid", 1.0, 0.04), ("iid", 0.3, 0.05), ("iid", 2.5, 0.04),
                                               ("iid", 0.05, 0.05), ("sobol", 1.0, 0.01)])
def test_sample_weights_dirichlet_moments(sampler, alpha, tol):
    D = 4
    w = vpo.sample_weights(16, 1024, D, alpha=alpha, generator=gen(3), sampler=sampler).double().reshape(-1, D)
    # Dir(alpha 1_D): E w_d = 1/D, Var w_d = (D-1) / (D^2 (D alpha + 1)); alpha = 1: (D-1) / (D^2 (D+1))
    var = (D - 1) / (D**2 * (D * alpha + 1))
    assert torch.allclose(w.mean(0), torch.full((D,), 1 / D, dtype=torch.float64), atol=0.01)
    assert torch.allclose(w.var(0), torch.full((D,), var, dtype=torch.float64), rtol=tol)


def test_sample_weights_sobol_is_spacings_of_scrambled_sobol_points():
    B, N, D = 2, 5, 3
    w = vpo.sample_weights(B, N, D, sampler="sobol", generator=gen(4))
    seeds = torch.randint(2**62, (B,), generator=gen(4)).tolist()                   # one scrambling seed per group
    for b, seed in enumerate(seeds):
        u = torch.quasirandom.SobolEngine(D - 1, scramble=True, seed=seed).draw(N, dtype=torch.float64)
        edges = torch.cat([torch.zeros(N, 1), u.sort(-1).values, torch.ones(N, 1)], -1)
        assert torch.equal(w[b], edges.diff(dim=-1).float())


def test_sample_weights_edge_cases_and_bad_input():
    assert torch.equal(vpo.sample_weights(2, 3, 1, generator=gen()), torch.ones(2, 3, 1))
    assert torch.equal(vpo.sample_weights(2, 3, 1, sampler="sobol", generator=gen()), torch.ones(2, 3, 1))
    w = vpo.sample_weights(2, 5000, 3, alpha=1e-3, generator=gen())     # tiny alpha: mass on corners, no NaN
    assert torch.isfinite(w).all() and (w.max(-1).values > 0.99).float().mean() > 0.9
    for kwargs, arg in [({"alpha": 0.0}, "alpha"), ({"alpha": -1.0}, "alpha"), ({"alpha": math.inf}, "alpha"),
                        ({"alpha": math.nan}, "alpha"), ({"num_weights": 0}, "num_weights"),
                        ({"sampler": "halton"}, "sampler"), ({"sampler": "sobol", "alpha": 0.5}, "alpha")]:
        args = {"num_groups": 2, "num_weights": 4, "dim": 3, **kwargs}
        with pytest.raises(ValueError, match=arg):
            vpo.sample_weights(**args)


# --- set_rewards and vpo_advantages -------------------------------------------------------------------------------

def random_rollouts(B=3, G=5, m=3, D=4, seed=0):
    g = gen(seed)
    rewards = torch.rand(B, G, m, D, generator=g)
    mask = torch.rand(B, G, m, generator=g) > 0.3
    mask[0, 1] = False                                      # one rollout without a valid answer
    return rewards, mask


def set_rewards_loops(rewards, mask, weights):
    B, G, m, D = rewards.shape
    out = torch.zeros(B, G, dtype=torch.float64)
    for b, g in itertools.product(range(B), range(G)):
        total = 0.0
        for w in weights[b]:
            vals = [float(w.double() @ rewards[b, g, j].double()) for j in range(m) if mask[b, g, j]]
            total += max(vals) if vals else 0.0
        out[b, g] = total / len(weights[b])
    return out


def test_set_rewards_matches_loops():
    rewards, mask = random_rollouts()
    weights = vpo.sample_weights(3, 7, 4, generator=gen(1))
    R = vpo.set_rewards(rewards, mask, weights)
    assert R.shape == (3, 5) and R[0, 1] == 0
    assert torch.allclose(R.double(), set_rewards_loops(rewards, mask, weights), atol=1e-6)


def test_set_rewards_invariances():
    rewards, mask = random_rollouts()
    weights = vpo.sample_weights(3, 7, 4, generator=gen(1))
    R = vpo.set_rewards(rewards, mask, weights)
    answers = torch.tensor([2, 0, 1])                       # order of answers inside a rollout
    assert torch.allclose(vpo.set_rewards(rewards[:, :, answers], mask[:, :, answers], weights), R)
    rollouts = torch.tensor([4, 2, 0, 1, 3])                # order of rollouts inside a group
    assert torch.allclose(vpo.set_rewards(rewards[:, rollouts], mask[:, rollouts], weights), R[:, rollouts])
    groups = torch.tensor([2, 0, 1])                        # order of groups, their weights moving with them
    assert torch.allclose(vpo.set_rewards(rewards[groups], mask[groups], weights[groups]), R[groups])
    changed = torch.where(mask[..., None], rewards, torch.full_like(rewards, 5.0))   # masked answers ignored
    assert torch.equal(vpo.set_rewards(changed, mask, weights), R)


def test_group_shares_its_weights():
    # identical rollouts of one group must get identical set rewards, hence exactly zero advantage
    r = torch.rand(1, 1, 3, 4, generator=gen(5)).expand(2, 8, 3, 4).clone()
    mask = torch.ones(2, 8, 3, dtype=torch.bool)
    adv, R = vpo.vpo_advantages(r, mask, num_weights=7, generator=gen(6))
    assert torch.equal(adv, torch.zeros(2, 8))
    assert (R[0] == R[0, 0]).all() and (R[1] == R[1, 0]).all() and R[0, 0] != R[1, 0]   # groups differ


def test_vpo_advantages_hand_example():
    # rollout 0 holds both corners, rollout 1 only the compromise; weights e1, e2: R = (1, 0.6)
    rewards = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[0.6, 0.6], [0.0, 0.0]]]])
    mask = torch.tensor([[[True, True], [True, False]]])
    weights = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    adv, R = vpo.vpo_advantages(rewards, mask, weights=weights)
    assert torch.allclose(R, torch.tensor([[1.0, 0.6]]))
    assert torch.allclose(adv, torch.tensor([[1.0, -1.0]]) * 0.2 / (0.2 + 1e-6))
    adv_np, _ = vpo.vpo_advantages(rewards.numpy(), mask.numpy(), weights=weights)    # numpy from tasks works too
    assert torch.equal(adv_np, adv)
    a1, _ = vpo.vpo_advantages(rewards, mask, generator=gen(3))
    a2, _ = vpo.vpo_advantages(rewards, mask, generator=gen(3))
    assert torch.equal(a1, a2)


def test_set_reward_prefers_the_covering_set():
    # max inside, mean outside: two corners beat two copies of the compromise (0.75 > 0.6); the swapped order,
    # max_y of (1/N) sum_n w_n^T r(y), would rank them the other way (0.5 < 0.6)
    rewards = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[0.6, 0.6], [0.6, 0.6]]]])
    mask = torch.tensor([[[True, True], [True, False]]])   # the repeated compromise counts once
    adv, R = vpo.vpo_advantages(rewards, mask, num_weights=4096, sampler="sobol", generator=gen())
    assert R[0, 0] == pytest.approx(0.75, abs=1e-3) and R[0, 1] == pytest.approx(0.6, abs=1e-6)
    assert adv[0, 0] > 0 > adv[0, 1]


def test_set_rewards_no_valid_answer_scores_zero():
    rewards = torch.ones(1, 2, 3, 2)
    mask = torch.tensor([[[False] * 3, [False, True, False]]])
    R = vpo.set_rewards(rewards, mask, torch.tensor([[[0.3, 0.7]]]))
    assert torch.equal(R, torch.tensor([[0.0, 1.0]]))


def test_set_rewards_bad_shapes():
    rewards, mask = random_rollouts()
    with pytest.raises(ValueError, match="answer_mask"):
        vpo.set_rewards(rewards, mask[:, :, :2], vpo.sample_weights(3, 2, 4))
    with pytest.raises(ValueError, match="answer_mask"):
        vpo.set_rewards(rewards, mask.float(), vpo.sample_weights(3, 2, 4))
    with pytest.raises(ValueError, match="weights"):
        vpo.set_rewards(rewards, mask, vpo.sample_weights(3, 2, 5))
    with pytest.raises(ValueError, match="rewards"):
        vpo.set_rewards(rewards[0], mask[0], vpo.sample_weights(3, 2, 4))


# --- group_normalize ----------------------------------------------------------------------------------------------

def test_group_normalize_hand_values():
    s = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]])
    std = math.sqrt(1.25)                                   # population std of 1..4
    expected = torch.tensor([[-1.5, -0.5, 0.5, 1.5], [0.0] * 4]) / (std + 1e-6)
    assert torch.allclose(vpo.group_normalize(s), expected)
    assert torch.equal(vpo.group_normalize(s)[1], torch.zeros(4))
    batch_std = float(s.std(correction=0))                  # one std over all 8 scores, centring per group
    assert torch.allclose(vpo.group_normalize(s, "batch"), expected * (std + 1e-6) / (batch_std + 1e-6))
    assert torch.allclose(vpo.group_normalize(s, "none"), expected * (std + 1e-6))
    with pytest.raises(ValueError, match="scale"):
        vpo.group_normalize(s, "rank")


def test_group_normalize_float32_residue_gives_exact_zeros():
    a, b, c = (torch.tensor(v, dtype=torch.float32) for v in (0.1, 0.2, 0.7))
    orders = [a + b, b + a, (a + c) + b - c, (c + b) + a - c, a * 3 - a + b - a, (b + c) - c + a, a + b, b + a]
    s = torch.stack(orders)[None].repeat(3, 1)              # eight copies of 0.1 + 0.2, three groups
    assert len(set(s[0].tolist())) > 1                      # the residue is really there
    for scale in vpo.SCALES:
        out = vpo.group_normalize(s, scale)
        assert torch.equal(out, torch.zeros_like(s)) and not out.isnan().any()
    assert torch.equal(vpo.group_normalize(torch.zeros(2, 1)), torch.zeros(2, 1))     # G = 1


# --- baselines ----------------------------------------------------------------------------------------------------

SCALE = 0.25 / (0.25 + 1e-6)                                # +-1 after normalizing a pair that differs by 0.5


def test_grpo_advantages_hand_example():
    rewards = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])     # (1, 2, 2)
    adv, s = vpo.grpo_advantages(rewards, np.array([0.75, 0.25]))
    assert torch.allclose(s, torch.tensor([[0.75, 0.25]])) and torch.allclose(adv, torch.tensor([[SCALE, -SCALE]]))
    adv4, _ = vpo.grpo_advantages(rewards[:, :, None], [0.75, 0.25])    # (B, G, 1, D) too
    assert torch.equal(adv4, adv)
    with pytest.raises(ValueError, match="deploy_weights"):
        vpo.grpo_advantages(rewards, [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="rewards"):
        vpo.grpo_advantages(torch.zeros(1, 2, 3, 2), [0.5, 0.5])       # m = 3 is not single-answer


def test_multi_rlvr_advantages_sum_and_max():
    rewards = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [9.0, 9.0]]]])   # (1, 2, 2, 2)
    mask = torch.tensor([[[True, True], [True, False]]])   # the 9s are masked
    adv, s = vpo.multi_rlvr_advantages(rewards, mask, [0.5, 0.5])
    assert torch.allclose(s, torch.tensor([[1.0, 1.0]])) and torch.equal(adv, torch.zeros(1, 2))
    adv, s = vpo.multi_rlvr_advantages(rewards, mask, [0.5, 0.5], reduce="max")
    assert torch.allclose(s, torch.tensor([[0.5, 1.0]])) and torch.allclose(adv, torch.tensor([[-SCALE, SCALE]]))
    with pytest.raises(ValueError, match="reduce"):
        vpo.multi_rlvr_advantages(rewards, mask, [0.5, 0.5], reduce="mean")


def test_random_weight_advantages_one_draw_per_group():
    rewards = torch.rand(3, 4, 2, generator=gen(7))
    adv, s = vpo.random_weight_advantages(rewards, generator=gen(8))
    w = vpo.sample_weights(3, 1, 2, generator=gen(8))[:, 0]           # the same draws: (B, D)
    assert torch.allclose(s, torch.einsum("bgd,bd->bg", rewards, w))
    assert torch.allclose(adv, vpo.group_normalize(s))


def test_maxrl_advantages_hand_example():
    a, b = torch.tensor(0.1), torch.tensor(0.2)
    residue = torch.stack([a + b, a + b, (a + b) * 7 - (a + b) * 6, b + a])             # 0.3 up to float residue
    assert len(set(residue.tolist())) > 1
    tiny = torch.tensor([3e-5, 0.0, 0.0, 0.0])             # mean 7.5e-6 < eps < std 1.3e-5: no signal either
    rewards = torch.stack([torch.tensor([1.0, 0.0, 0.0, 0.0]), torch.zeros(4), residue, tiny])[..., None]  # D = 1
    adv, s = vpo.maxrl_advantages(rewards, [1.0], eps=1e-5)
    assert torch.allclose(adv[0], torch.tensor([3.0, -1.0, -1.0, -1.0]) * 0.25 / (0.25 + 1e-5))
    assert torch.equal(adv[1:], torch.zeros(3, 4)) and torch.equal(s, rewards[..., 0])


# --- policy_loss --------------------------------------------------------------------------------------------------

def loss_inputs(R=4, T=6, seed=0, dtype=torch.float32):
    g = gen(seed)
    old = -torch.rand(R, T, generator=g, dtype=dtype) * 3
    logp = old + 0.4 * torch.randn(R, T, generator=g, dtype=dtype)
    mask = torch.zeros(R, T, dtype=torch.bool)
    for r, n in enumerate([6, 2, 4, 1, 0][:R]):             # uneven lengths, the fifth row empty
        mask[r, :n] = True
    adv = torch.randn(R, generator=g, dtype=dtype)
    return logp, old, adv, mask


def test_policy_loss_at_ratio_one_is_minus_mean_advantage():
    _, old, adv, mask = loss_inputs()
    loss, stats = vpo.policy_loss(old.clone(), old, adv, mask)
    per_token_mean = -(adv[:, None] * mask).sum() / mask.sum()
    assert torch.allclose(loss, per_token_mean) and stats["ratio"] == pytest.approx(1.0)
    assert stats["clip_frac"] == 0.0 and stats["kl"] == 0.0 and isinstance(stats["pg_loss"], float)


def one_token(log_ratio, a, **kwargs):
    """Loss and gradient of one token with log-ratio log_ratio and advantage a."""
    logp = torch.tensor([[log_ratio]], dtype=torch.float64, requires_grad=True)
    old, adv = torch.zeros(1, 1, dtype=torch.float64), torch.tensor([a], dtype=torch.float64)
    loss, stats = vpo.policy_loss(logp, old, adv, torch.ones(1, 1, dtype=torch.bool), **kwargs)
    loss.backward()
    return loss.item(), logp.grad.item(), stats


def test_policy_loss_clips_exactly_at_the_bounds():
    for ratio, a, value, clipped in [(1.5, 2.0, -2.0 * 1.2, True),       # A > 0: capped at 1 + clip_high
                                     (1.1, 2.0, -2.0 * 1.1, False),
                                     (0.5, -1.0, 0.8, True),             # A < 0: capped at 1 - clip_low
                                     (0.9, -1.0, 0.9, False),
                                     (1.5, -1.0, 1.5, False),            # A < 0, ratio up: never clipped (pessimism)
                                     (0.5, 2.0, -2.0 * 0.5, False)]:     # A > 0, ratio down: never clipped
        loss, grad, stats = one_token(math.log(ratio), a)
        assert loss == pytest.approx(value, rel=1e-12)
        assert (grad == 0.0) == clipped and stats["clip_frac"] == float(clipped)
        if not clipped:
            assert grad == pytest.approx(-a * ratio, rel=1e-12)           # d(-A rho)/d logp = -A rho
    loss, grad, _ = one_token(math.log(1.3), 1.0, clip_low=0.1, clip_high=0.28)   # asymmetric bounds
    assert loss == pytest.approx(-1.28) and grad == 0.0


def test_policy_loss_dual_clip():
    loss, grad, stats = one_token(8.0, -0.5)                # huge ratio and A < 0: capped at -A * 3 per token
    assert loss == pytest.approx(1.5) and grad == 0.0 and stats["dual_clip_frac"] == 1.0
    loss, _, _ = one_token(8.0, -0.5, dual_clip=None)
    assert loss == pytest.approx(0.5 * math.exp(8.0))
    loss, _, _ = one_token(40.0, -0.5, dual_clip=None)      # log-ratio clamped to 20 before exp
    assert loss == pytest.approx(0.5 * math.exp(20.0))


def test_policy_loss_aggregations_by_hand():
    logp, old, adv, mask = loss_inputs(R=5)
    rho = (logp - old).exp()
    a = adv[:, None]
    per_token = torch.maximum(-a * rho, -a * rho.clamp(0.8, 1.2))
    per_token = torch.where(a < 0, torch.minimum(per_token, -a * 3.0), per_token)
    rows = [per_token[r, mask[r]] for r in range(5)]       # the last one is empty
    expected = {"token-mean": torch.cat(rows).mean(),
                "seq-mean-token-mean": torch.stack([x.mean() for x in rows[:4]]).mean(),   # rows with tokens
                "seq-mean-token-sum-norm": torch.stack([x.sum() / 6 for x in rows]).mean()}  # constant T = 6
    for agg, value in expected.items():
        loss, stats = vpo.policy_loss(logp, old, adv, mask, agg=agg)
        assert torch.allclose(loss, value) and stats["pg_loss"] == pytest.approx(float(value), rel=1e-5)
    with pytest.raises(ValueError, match="agg"):
        vpo.policy_loss(logp, old, adv, mask, agg="sum")


def test_policy_loss_kl():
    logp, old, adv, mask = loss_inputs()
    ref = old - 0.3 * torch.randn(old.shape, generator=gen(4))
    base, _ = vpo.policy_loss(logp, old, adv, mask)
    loss, stats = vpo.policy_loss(logp, old, adv, mask, ref_logprobs=ref, kl_coef=0.5)
    d = ref - logp
    kl = (d.exp() - d - 1)[mask].mean()                     # k3, token mean
    assert stats["kl"] >= 0 and stats["kl"] == pytest.approx(float(kl), rel=1e-5)
    assert torch.allclose(loss, base + 0.5 * kl)
    _, stats = vpo.policy_loss(logp, old, adv, mask, ref_logprobs=logp.clone(), kl_coef=0.5)
    assert stats["kl"] == 0.0
    _, stats = vpo.policy_loss(logp, old, adv, mask, ref_logprobs=logp + 30, kl_coef=1.0)
    assert stats["kl"] == pytest.approx(10.0)              # clamped like veRL's low_var_kl


@pytest.mark.parametrize("agg", vpo.AGGS)
def test_policy_loss_gradient_matches_finite_differences(agg):
    logp, old, adv, mask = loss_inputs(dtype=torch.float64)
    ref = old + 0.2 * torch.randn(old.shape, generator=gen(9), dtype=torch.float64)
    logp.requires_grad_(True)

    def loss(lp):
        return vpo.policy_loss(lp, old, adv, mask, ref_logprobs=ref, kl_coef=0.1, agg=agg)[0]
    assert torch.autograd.gradcheck(loss, (logp,))


def test_policy_loss_empty_rows_and_padding_stay_finite():
    logp, old, adv, mask = loss_inputs()
    mask[1] = False
    logp = logp.masked_fill(~mask, float("-inf")).requires_grad_(True)   # padding may hold anything
    for agg in vpo.AGGS:
        loss, stats = vpo.policy_loss(logp, old, adv, mask, ref_logprobs=old, kl_coef=0.1, agg=agg)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(logp.grad).all() and (logp.grad[~mask] == 0).all()
        assert all(math.isfinite(v) for v in stats.values())
        logp.grad = None
    loss, _ = vpo.policy_loss(logp, old, adv, torch.zeros_like(mask))
    assert loss.item() == 0.0


def test_policy_loss_bad_shapes():
    logp, old, adv, mask = loss_inputs()
    with pytest.raises(ValueError, match="advantages"):
        vpo.policy_loss(logp, old, adv[:2], mask)
    with pytest.raises(ValueError, match="mask"):
        vpo.policy_loss(logp, old, adv, mask[:, :3])

"""--reward_geometry (tasks/geometry.py): the vector the vector methods see is reshaped, the deployment scalar w*ᵀr is
not, on every task; by hand, on random vectors, and in a whole run (none and collinear=0 are the same run)."""
import numpy as np
import pytest
import torch

import train
import vpo
from tasks import get_task
from tasks.geometry import parse_geometry

W4 = np.full(4, 0.25)
MAZE = ["exit", "gold", "diamonds", "no_lava"]


def test_the_three_reshapings_by_hand():
    r = torch.tensor([[1.0, 0.5, 0.0, 1.0]])
    # merge gold+diamonds: one item dimension (0.25 * 0.5 + 0.25 * 0) / 0.5 = 0.25, weight 0.5, at gold's place
    seen, w = parse_geometry("merge=gold+diamonds", MAZE, W4).apply(r, W4)
    assert seen.tolist() == [[1.0, 0.25, 1.0]] and w.tolist() == [0.25, 0.5, 0.25]
    # repeat exit: exit's copy last, both copies at half exit's weight
    seen, w = parse_geometry("repeat=exit", MAZE, W4).apply(r, W4)
    assert seen.tolist() == [[1.0, 0.5, 0.0, 1.0, 1.0]] and w.tolist() == [0.125, 0.25, 0.25, 0.25, 0.125]
    # collinear 0.5: w*ᵀr = 0.625; r_rho = 0.5 r + 0.5 * 0.625
    seen, w = parse_geometry("collinear=0.5", MAZE, W4).apply(r, W4)
    assert seen.tolist() == [[0.8125, 0.5625, 0.3125, 0.8125]] and w.tolist() == W4.tolist()
    # two merged groups, unequal weights: (0.1 * 1 + 0.3 * 0.5) / 0.4 and (0.2 * 0 + 0.4 * 1) / 0.6
    w_star = np.array([0.1, 0.3, 0.2, 0.4])
    geometry = parse_geometry("merge=exit+gold,diamonds+no_lava", MAZE, w_star)
    seen, w = geometry.apply(r, w_star)
    assert geometry.dim(4) == 2 and np.allclose(w, [0.4, 0.6])
    assert torch.allclose(seen, torch.tensor([[0.625, 0.4 / 0.6]]))


def test_none_and_rho_zero_are_the_vector_itself():
    r = torch.rand(2, 3, 1, 4)
    for spec in ("", "collinear=0", "collinear=0.0"):
        geometry = parse_geometry(spec, MAZE, W4)
        assert geometry.identity and geometry.dim(4) == 4
        seen, w = geometry.apply(r, W4)
        assert seen is r and w is W4


@pytest.mark.parametrize("name", ["toy", "maze", "code"])
def test_the_deployment_scalar_is_unchanged_on_every_task(name):
    task = get_task(name)
    names, w_star = task.objectives, task.deploy_weights
    specs = ["collinear=0.5", "collinear=0.95", f"repeat={names[0]}", f"repeat={names[-1]}"]
    if len(names) >= 3:
        specs += [f"merge={names[1]}+{names[2]}", f"merge={names[0]}+{names[-1]}"]
    if len(names) >= 8:   # code: the tests grouped in fours, and in pairs
        specs += ["merge=" + ",".join("+".join(names[i:i + 4]) for i in (0, 4)),
                  "merge=" + ",".join("+".join(names[i:i + 2]) for i in range(0, 8, 2))]
    r = torch.rand((5, 4, 3, len(names)), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    scalar = r @ torch.as_tensor(w_star, dtype=torch.float64)
    for spec in specs:
        geometry = parse_geometry(spec, names, w_star)
        seen, w = geometry.apply(r, w_star)
        assert seen.shape == r.shape[:-1] + (geometry.dim(len(names)),), spec
        assert torch.allclose(seen @ torch.as_tensor(w, dtype=torch.float64), scalar), spec
        assert abs(w.sum() - w_star.sum()) < 1e-12, spec


@pytest.mark.parametrize("spec,says", [
    ("collinear=1", "[0, 1)"), ("collinear=-0.1", "[0, 1)"), ("collinear=x", "a number"),
    ("merge=gold+rubies", "no reward dimension 'rubies'"), ("merge=gold", "two or more"),
    ("merge=gold+diamonds,diamonds+exit", "none in two groups"), ("merge=exit+gold+diamonds+no_lava", "fewer than two"),
    ("repeat=lava", "no reward dimension 'lava'"), ("rotate=1", "expected collinear"), ("collinear", "expected")])
def test_bad_geometry_is_one_line_and_exit_2(tmp_path, capsys, spec, says):
    argv = ["--task", "maze", "--algo", "vpo", "--reward_geometry", spec, "--out_dir", str(tmp_path / "out"), "--quiet"]
    assert train.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --reward_geometry") and "\n" not in err and says in err, err
    assert not (tmp_path / "out").exists()                                # nothing written


TINY = ["--task", "toy", "--algo", "vpo", "--sft_steps", "4", "--steps", "2", "--eval_every", "0", "--n_layer", "1",
        "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4", "--sft_batch_size", "8",
        "--eval_problems", "2", "--eval_answers", "48", "--no_base_eval", "--quiet"]


def weights_after(tmp_path, name, *extra):
    assert train.main(TINY + ["--out_dir", str(tmp_path), "--run_name", name, *extra]) == 0
    return torch.load(tmp_path / name / "ckpt.pt", weights_only=True)["model"]


def test_a_run_with_rho_zero_is_the_run_without_the_option(tmp_path):
    plain = weights_after(tmp_path, "plain")
    zero = weights_after(tmp_path, "zero", "--reward_geometry", "collinear=0")
    assert all(torch.equal(plain[k], zero[k]) for k in plain)


def test_the_evaluation_describes_the_vector_the_run_saw():
    """dimensions: the task's vector; dimensions_seen (with a reshaping): the reshaped one, by hand on two
    problems of answers whose dims are uncorrelated: collinear 0.95 makes them nearly collinear."""
    import evaluate
    from metrics import dimension_geometry, within_covariance
    task = get_task("maze")
    pools = [np.array([[1, 0, 0, 1], [1, 1, 0, 0.5], [1, 0, 1, 1], [1, 1, 1, 0.5]], float)] * 2
    geometry = parse_geometry("collinear=0.95", MAZE, task.deploy_weights)
    seen = [geometry.apply(torch.as_tensor(p), task.deploy_weights)[0].numpy() for p in pools]
    plain, reshaped = (dimension_geometry(within_covariance(x)[0]) for x in (pools, seen))
    assert plain["varying"] == 3 and reshaped["varying"] == 4 and reshaped["dim_corr"] > 0.9 > plain["dim_corr"]
    # evaluate reports both for a reshaping, only the task's without one (a tiny random model on the toy task)
    from model import GPT, GPTConfig
    toy = get_task("toy")
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=32, vocab_size=train.model_config(
        train.get_parser().parse_args([])).vocab_size, block_size=256))
    repeat = parse_geometry("repeat=left", toy.objectives, toy.deploy_weights)
    problems = toy.problems("test", 2, seed=0)
    with_geometry, _ = evaluate.evaluate(model, toy, problems, 3, [3], 6, geometry=repeat)
    without, _ = evaluate.evaluate(model, toy, problems, 3, [3], 6)
    assert "dimensions_seen" in with_geometry and "dimensions_seen" not in without
    assert with_geometry["dimensions"] == without["dimensions"]


def test_the_step_gives_the_method_the_reshaped_vector_and_draws_weights_over_it(tmp_path, monkeypatch):
    """rl_step hands the method Geometry.apply of the task's rewards and w ~ Dir over D' dimensions (the tiny
    run's rewards are all zero, so a whole-run comparison could not tell; this records what the method gets)."""
    import dataclasses
    seen = []
    method = vpo.METHODS["vpo"]

    def record(r, a, ws, w, o):
        seen.append((r.clone(), np.array(ws), w.shape))
        return method.advantages(r, a, ws, w, o)
    monkeypatch.setitem(vpo.METHODS, "vpo", dataclasses.replace(method, advantages=record))
    weights_after(tmp_path, "plain")
    weights_after(tmp_path, "repeat", "--reward_geometry", "repeat=left")
    (r0, ws0, wshape0), (r1, ws1, wshape1) = seen[0], seen[2]          # step 0 of each run
    assert r0.shape[-1] == 2 and wshape0[-1] == 2 and ws0.tolist() == [0.5, 0.5]
    assert r1.shape[-1] == 3 and wshape1[-1] == 3 and ws1.tolist() == [0.25, 0.5, 0.25]
    assert torch.equal(r1[..., :2], r0) and torch.equal(r1[..., 2], r0[..., 0])   # same rollouts, left repeated


def test_near_collinear_vpo_scores_a_set_by_its_best_scalar():
    """docs/when_vpo_helps.md: with Σw = 1, wᵀr_ρ = (1 − ρ) wᵀr + ρ w*ᵀr, so VPO's set reward under collinear=ρ is within
    (1 − ρ) of max_j w*ᵀr(y_j) (rewards in [0, 1]): toward ρ = 1, VPO is Multi-RLVR with the max, not scalar RL."""
    g = torch.Generator().manual_seed(0)
    r = torch.rand((4, 6, 3, 4), generator=g, dtype=torch.float64)
    mask = torch.rand((4, 6, 3), generator=g) < 0.8
    w = vpo.sample_weights(4, 50, 4, generator=g).to(torch.float64)
    best_scalar = vpo.masked_max(r @ torch.as_tensor(W4), mask)
    for rho in (0.0, 0.5, 0.95):
        seen, _ = parse_geometry(f"collinear={rho}", MAZE, W4).apply(r, W4)
        gap = (vpo.set_rewards(seen, mask, w) - best_scalar).abs().max().item()
        assert gap <= 1 - rho + 1e-12, rho
    assert gap > 0 and (vpo.set_rewards(r, mask, w) - best_scalar).abs().max().item() > 0.05   # ρ = 0 is not the max


def test_near_collinear_vpo_scores_what_multi_rlvr_max_scores():
    """The same bound through the methods, as train.rl_step calls them (Geometry.apply, then vpo.METHODS[algo]): under
    collinear=ρ, VPO's set reward of every rollout is within (1 − ρ) of --algo multi_rlvr_max's score, and the gap
    closes as ρ nears 1. The max method sees w*ᵀr, which the geometry leaves unchanged."""
    g = torch.Generator().manual_seed(1)
    r = torch.rand((4, 6, 3, 4), generator=g, dtype=torch.float64)
    mask = torch.rand((4, 6, 3), generator=g) < 0.8
    w = vpo.sample_weights(4, 50, 4, generator=g).to(torch.float64)
    opts, gaps = train.RLConfig(), []
    for rho in (0.0, 0.5, 0.9, 0.99):
        seen, w_seen = parse_geometry(f"collinear={rho}", MAZE, W4).apply(r, W4)
        _, R = vpo.METHODS["vpo"].advantages(seen, mask, w_seen, w, opts)
        _, s = vpo.METHODS["multi_rlvr_max"].advantages(seen, mask, w_seen, None, opts)
        gaps.append((R - s).abs().max().item())
        assert gaps[-1] <= 1 - rho + 1e-12, rho
    assert gaps[0] > 0.05 and gaps[-1] > 0 and gaps == sorted(gaps, reverse=True)   # ρ = 0: not the max

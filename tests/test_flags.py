"""Every flag that shapes weights and advantages does what it says for every method, or is refused: a table over
vpo.METHODS x vpo.OPTIONS. And the library's defaults are the command line's."""
import dataclasses
import inspect

import pytest
import torch

import evaluate
import search
import train
import vpo
from runs.seeding import prompt_weights
from sft import SFTConfig
from tasks.geometry import parse_geometry

# a value other than the default for each option (sobol draws Dir(1) only, so alpha's value is tested with iid)
OTHER = {"scale": "batch", "num_weights": 7, "alpha": 0.3, "weight_sampler": "sobol", "max_at_k": 3,
         "match_budget": True, "reward_geometry": "collinear=0.5"}
ARGV = {"scale": ["--scale", "batch"], "num_weights": ["--num_weights", "7"], "alpha": ["--alpha", "0.3"],
        "weight_sampler": ["--weight_sampler", "sobol"], "max_at_k": ["--max_at_k", "3"],
        "match_budget": ["--match_budget"], "reward_geometry": ["--reward_geometry", "collinear=0.5"]}
READ = [(algo, opt) for algo, method in vpo.METHODS.items() for opt in vpo.OPTIONS if opt in method.options]
UNREAD = [(algo, opt) for algo in ("sft",) + tuple(vpo.METHODS) for opt in vpo.OPTIONS
          if (algo, opt) not in READ]


def test_the_tables_cover_every_option():
    assert set(OTHER) == set(ARGV) == set(vpo.OPTIONS)
    defaults = train.RLConfig()
    assert all(getattr(defaults, opt) != OTHER[opt] for opt in vpo.OPTIONS)
    for algo, method in vpo.METHODS.items():
        assert method.options <= set(vpo.OPTIONS), algo
        # match_budget is exactly the single-answer methods' (vpo.rollouts_per_prompt)
        assert ("match_budget" in method.options) == (not method.multi_answer), algo
        # a method reads the weight flags exactly when it draws weights
        assert ({"alpha", "weight_sampler"} <= method.options) == (method.weights is not None), algo
        assert ("num_weights" in method.options) == (method.weights == "N"), algo


def what_the_method_computes(algo, cfg):
    """Rollouts per prompt, and the advantages of fixed rewards (4 prompts x G rollouts x m answers x D = 3),
    through the same calls as train.rl_step: method_weights, then METHODS[algo].advantages."""
    method = vpo.METHODS[algo]
    G = vpo.rollouts_per_prompt(algo, 8, 3, cfg.match_budget)
    m = 3 if method.multi_answer else 1
    g = torch.Generator().manual_seed(0)
    rewards = torch.rand((4, 8, m, 3), generator=g).round(decimals=1)
    mask = torch.rand((4, 8, m), generator=g) > 0.2
    w_star = torch.full((3,), 1 / 3).numpy()
    geometry = parse_geometry(cfg.reward_geometry, ["a", "b", "c"], w_star)
    w = train.method_weights(method.weights, cfg, 5, geometry.dim(3))
    seen, w_seen = geometry.apply(rewards, w_star)
    adv, _ = method.advantages(seen, mask, w_seen, w, cfg)
    return G, adv


@pytest.mark.parametrize("algo,opt", READ)
def test_an_option_a_method_reads_changes_what_it_computes(algo, opt):
    base = train.RLConfig(algo=algo, batch_size=4)
    G0, adv0 = what_the_method_computes(algo, base)
    G1, adv1 = what_the_method_computes(algo, dataclasses.replace(base, **{opt: OTHER[opt]}))
    if opt == "match_budget":
        assert (G0, G1) == (8, 24)
    else:
        assert G0 == G1 and not torch.allclose(adv0, adv1), f"--{opt} changes nothing for --algo {algo}"


def run_cli(tmp_path, *argv):
    return train.main(["--task", "toy", "--out_dir", str(tmp_path / "out"), "--quiet", *argv])


@pytest.mark.parametrize("algo,opt", UNREAD)
def test_an_option_a_method_does_not_read_is_refused(tmp_path, capsys, algo, opt):
    assert run_cli(tmp_path, "--algo", algo, *ARGV[opt]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "\n" not in err, err
    assert f"--{opt} is not used by --algo {algo}" in err, err
    assert not (tmp_path / "out").exists()  # nothing written


def test_sobol_weights_need_alpha_one(tmp_path, capsys):
    assert run_cli(tmp_path, "--weight_sampler", "sobol", "--alpha", "0.5") == 2
    assert "--alpha must be 1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_goal_conditioned_weights_follow_alpha():
    """goal_cond writes w ~ Dir(alpha) into its prompts: a small alpha puts the weights near the corners."""
    cfg = train.RLConfig(algo="goal_cond", batch_size=64, alpha=0.05)
    w = train.method_weights("prompt", cfg, 0, 2)
    assert w.shape == (64, 2) and torch.allclose(w.sum(1), torch.ones(64))
    assert (w.max(1).values > 0.95).float().mean() > 0.8
    assert torch.equal(train.method_weights("prompt", train.RLConfig(), 0, 2)[:8],
                       prompt_weights(0, 6, 0, 8, 1, 2)[:, 0])  # the default: Dir(1), the goal stream 6


def parser_defaults(parser):
    return {a.dest: a.default for a in parser._actions}


def test_library_defaults_are_the_command_lines():
    from runs.cli import MODEL_DEFAULTS
    flags = parser_defaults(train.get_parser())
    flags.update({name: ours for name, ours, _ in MODEL_DEFAULTS})   # a GPT trained from scratch: these
    for field in dataclasses.fields(train.RLConfig):
        assert flags[field.name] == field.default, field.name
    assert (flags["sft_lr"], flags["sft_batch_size"], flags["sft_group"]) == (SFTConfig.lr, SFTConfig.batch_size,
                                                                              SFTConfig.group)
    for fn in (search.evolve, search.sample_until_solved, search.Population):
        assert inspect.signature(fn).parameters["unit"].default == "answers"
    assert parser_defaults(search.get_parser())["unit"] == "answers"
    ev, flags = inspect.signature(evaluate.evaluate).parameters, parser_defaults(evaluate.get_parser())
    assert (ev["answers_per_problem"].default, ev["temperature"].default, ev["seed"].default) == \
        (flags["answers"], flags["temperature"], flags["seed"]) == (96, 0.7, 0)
    assert parser_defaults(train.get_parser())["eval_temperature"] == flags["temperature"]

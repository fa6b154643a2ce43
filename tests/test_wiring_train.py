"""The wiring of train.py's RL step and resume, on a tiny toy run whose rewards differ within groups.

The toy task scored honestly gives a barely-trained model all-zero rewards (no advantage, no update), and a test
on such a run cannot tell a correct step from a broken one. So the toy task's verifier is scripted here: every
answer string gets a fixed pseudo-random reward vector in {0, 1/2, 1}^2, and the tiny base has learned just
enough of the answer format to end some completions with <|end|> before the token budget runs out.
"""
import hashlib
import inspect
import json

import numpy as np
import pytest
import torch


import train
import vpo
from model import load_checkpoint
from runs.seeding import step_seed  # noqa: F401
from tasks import tokenizer as tok
from tasks.toy import ToyTask

MODEL = ["--task", "toy", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--block_size", "96", "--quiet"]
RL = ["--batch_size", "2", "--group_size", "4", "--eval_every", "0", "--eval_problems", "2", "--eval_answers", "48"]
ESTIMATORS = {"vpo": "vpo_advantages", "multi_rlvr": "multi_rlvr_advantages", "grpo": "grpo_advantages",
              "multi_rlvr_max": "multi_rlvr_advantages",
              "random_weight": "random_weight_advantages", "gdpo": "gdpo_advantages", "maxrl": "maxrl_advantages",
              "goal_cond": "random_weight_advantages", "max_at_k": "max_at_k_advantages"}


def scripted_score(self, problem, answer):
    """r(y): a stable hash of the answer string -> a vector in {0, 1/2, 1}^2."""
    h = hashlib.blake2b(answer.encode(), digest_size=2).digest()
    return np.array([h[0] % 3 / 2, h[1] % 3 / 2], dtype=np.float32)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A base that has seen 30 supervised steps: it writes answer-like words and sometimes <|end|>."""
    out = tmp_path_factory.mktemp("wiring")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(train, "finish", lambda *a, **k: None)  # no final evaluation, plots or table
        assert train.main(MODEL + ["--algo", "sft", "--sft_steps", "30", "--sft_batch_size", "8", "--sft_lr", "3e-2",
                                   "--out_dir", str(out), "--run_name", "base0"]) == 0
    return out / "base0" / "ckpt.pt"


@pytest.fixture
def rl(base, tmp_path, monkeypatch):
    """train.main for RL runs from the base, with the scripted verifier and no final evaluation."""
    monkeypatch.setattr(ToyTask, "score", scripted_score)
    monkeypatch.setattr(train, "finish", lambda *a, **k: None)
    return lambda *extra: train.main(MODEL + RL + ["--init", str(base), "--out_dir", str(tmp_path), *extra])


def read_log(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


# --------------------------------------------------------------------------------------------- the RL step
def expected_loss_mask(tokens, m=1, room=None):
    """From the tokens alone, one row at a time: True on every sampled token up to and including the row's first
    <|end|> (all of it if none), except the separators the sampler forced: with m answers of `room` tokens each,
    the token after a non-final answer's room-th is forced; the final answer's room-th token ends the row."""
    want = torch.zeros(tokens.shape, dtype=torch.bool)
    for r, row in enumerate(tokens.tolist()):
        slot = used = 0
        for t, x in enumerate(row):
            if room is not None and slot < m - 1 and used == room:
                assert x == tok.SEP_ID, "a full answer is closed by a separator"
                slot, used = slot + 1, 0
                continue
            want[r, t] = True
            if x == tok.END_ID:
                break
            if x == tok.SEP_ID and slot < m - 1:
                slot, used = slot + 1, 0
            else:
                used += 1
            if room is not None and slot == m - 1 and used == room:
                break
    return want


@pytest.mark.parametrize("algo,extra", [("vpo", []), ("multi_rlvr", []), ("multi_rlvr_max", []), ("grpo", []),
                                        ("grpo", ["--match_budget"]),
                                        ("random_weight", []), ("gdpo", []), ("maxrl", []), ("goal_cond", []),
                                        ("max_at_k", [])])
def test_rl_step_feeds_the_loss_what_the_sampler_drew(rl, tmp_path, monkeypatch, algo, extra):
    """One RL step at T = 0.7 in 2 minibatches, with everything that reaches vpo.policy_loss captured:
    the estimator --algo names ran (once), row b*G+g carries group b's rollout g advantage, the loss mask ends
    at each row's <|end|>, and before the first update the training, old and reference log-probs all equal the
    log-probs the sampler drew the tokens with (at T = 0.7, not 1)."""
    rollouts, estimates, losses, goal_weights = [], [], [], []
    real_rollout = train.rollout
    monkeypatch.setattr(train, "rollout", lambda *a, **k: rollouts.append(real_rollout(*a, **k)) or rollouts[-1])
    for name in sorted(set(ESTIMATORS.values())):
        def record(*a, _name=name, _f=getattr(vpo, name), **k):
            goal_weights.append(k.get("weights"))
            estimates.append((_name, a, _f(*a, **k)))
            return estimates[-1][2]
        monkeypatch.setattr(vpo, name, record)
    real_loss = vpo.policy_loss
    signature = inspect.signature(real_loss)
    monkeypatch.setattr(vpo, "policy_loss", lambda *a, **k: losses.append(
        {n: v.detach().clone() if torch.is_tensor(v) else v for n, v in signature.bind(*a, **k).arguments.items()})
        or real_loss(*a, **k))

    assert rl("--algo", algo, *extra, "--steps", "1", "--temperature", "0.7", "--minibatches", "2") == 0

    assert len(rollouts) == 1 and len(losses) == 2
    gen, _, _, rewards, answer_mask = rollouts[0]
    B, G = 2, 4 * (3 if extra else 1)
    assert rewards.shape[:2] == (B, G) and gen.tokens.shape[0] == B * G
    # (a) the estimator --algo names, on the rollouts' rewards
    assert [e[0] for e in estimates] == [ESTIMATORS[algo]]
    _, args, (adv, scores) = estimates[0]
    assert torch.equal(args[0], rewards)
    if vpo.METHODS[algo].multi_answer:
        assert torch.equal(args[1], answer_mask)
    if algo == "multi_rlvr_max":  # each rollout's best valid answer under w* = (1/2, 1/2), 0 without one
        best = [[max([float(r.mean()) for r, ok in zip(rewards[b, g], answer_mask[b, g]) if ok], default=0.0)
                 for g in range(G)] for b in range(B)]
        assert torch.allclose(scores, torch.tensor(best, dtype=scores.dtype))
    assert adv.shape == (B, G) and (adv != 0).any(), "a run without advantages cannot show the wiring"
    prompts = [tok.decode(p) for p in rollouts[0][1]]
    if algo == "goal_cond":  # the weights the reward used are the ones written into that prompt
        w = goal_weights[0]
        assert w.shape == (B, 2) and torch.allclose(w.sum(1), torch.ones(B))
        for b in range(B):
            assert prompts[b].endswith(f"weights {w[b, 0]:.2f} {w[b, 1]:.2f}\n"), prompts[b]
    else:  # vpo and random_weight pass their own per-prompt draws, never written into a prompt
        assert (goal_weights[0] is None) == (algo not in ("vpo", "random_weight"))
        assert not any("weights" in p for p in prompts)
    # (b) row r = b*G + g of the loss gets group b's rollout g advantage
    fed = torch.cat([c["advantages"] for c in losses])
    assert torch.equal(fed.cpu(), adv.reshape(-1).to(fed.dtype).cpu())
    # (c) the loss mask: every sampled token up to and including <|end|>, nothing after it, no forced separator
    mask = torch.cat([c["mask"] for c in losses]).bool()
    m = 3 if vpo.METHODS[algo].multi_answer else 1
    want = expected_loss_mask(gen.tokens, m, ToyTask().answer_tokens)
    assert torch.equal(mask, want)
    finished = (gen.tokens == tok.END_ID).any(1)
    assert finished.any() and (~want[finished]).any(), "need completions that end before the last column"
    # (d, e) log-probs before the first update: the sampler's, at the rollout temperature
    half = B * G // 2
    m1, m2 = want[:half], want[half:]
    torch.testing.assert_close(losses[0]["logprobs"][m1], gen.logprobs[:half][m1], atol=1e-5, rtol=0)
    for c, rows, mk in ((losses[0], slice(0, half), m1), (losses[1], slice(half, None), m2)):
        torch.testing.assert_close(c["old_logprobs"][mk], gen.logprobs[rows][mk], atol=1e-5, rtol=0)
        torch.testing.assert_close(c["ref_logprobs"][mk], gen.logprobs[rows][mk], atol=1e-5, rtol=0)
    # the run: one logged step that saw a nonzero advantage, a loadable checkpoint of that step
    run = tmp_path / f"{algo}-toy-s0"
    rows = read_log(run / "log.jsonl")
    assert [r["step"] for r in rows] == [1] and rows[0]["zero_var_frac"] < 1
    _, state = load_checkpoint(str(run / "ckpt.pt"))
    assert state["step"] == 1 and state["args"]["algo"] == algo and state["args"]["temperature"] == 0.7


# ------------------------------------------------------------------------------------------------ resume
def resume_variant(rl, tmp_path, name, spoil):
    """Run 2 of 4 steps, spoil one saved state in the checkpoint (as a missing restore would), resume to 4."""
    assert rl("--algo", "vpo", "--steps", "2", "--lr", "1e-3", "--run_name", name) == 0
    path = tmp_path / name / "ckpt.pt"
    state = torch.load(path, weights_only=True)
    spoil(state)
    torch.save(state, path)
    assert rl("--algo", "vpo", "--steps", "4", "--lr", "1e-3", "--run_name", name, "--resume") == 0
    return load_checkpoint(str(path))[0].state_dict()


def test_resume_equals_an_uninterrupted_run_that_learns(rl, base, tmp_path, capsys):
    """4 steps straight == 2 steps, stop, --resume to 4: every tensor bit for bit, every logged value too. The
    run learns (nonzero advantages, weights move off the base), and the test has teeth: resuming with the
    optimizer state reset to fresh ends elsewhere. (No RNG state is saved: every draw is seeded by (seed, step,
    index), and resuming at the right step is what this equality checks; test_the_step_seeds_every_draw checks
    that the draws do depend on the step.)"""
    common = ["--algo", "vpo", "--steps", "4", "--lr", "1e-3"]
    assert rl(*common, "--run_name", "straight") == 0
    assert rl("--algo", "vpo", "--steps", "2", "--lr", "1e-3", "--run_name", "stopped") == 0
    capsys.readouterr()
    assert rl(*common, "--run_name", "stopped", "--resume") == 0
    assert f"resuming {tmp_path / 'stopped'} from its checkpoint at step 2 of 4" in capsys.readouterr().out

    straight = load_checkpoint(str(tmp_path / "straight" / "ckpt.pt"))[0].state_dict()
    resumed = load_checkpoint(str(tmp_path / "stopped" / "ckpt.pt"))[0].state_dict()
    for k in straight:
        assert torch.equal(straight[k], resumed[k]), k
    start = load_checkpoint(str(base))[0].state_dict()
    assert not all(torch.equal(start[k], straight[k]) for k in start), "the run never moved off its base"

    timing = ("tokens_per_s", "step_seconds", "seconds")
    a, b = read_log(tmp_path / "straight" / "log.jsonl"), read_log(tmp_path / "stopped" / "log.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    assert [{k: v for k, v in r.items() if k not in timing} for r in a] == \
           [{k: v for k, v in r.items() if k not in timing} for r in b]
    assert max(r["zero_var_frac"] for r in a) < 1 and any(r["loss"] != 0 for r in a)

    spoilers = {"optimizer state": lambda s: s["optimizer"].__setitem__("state", {})}
    for i, (what, spoil) in enumerate(spoilers.items()):
        other = resume_variant(rl, tmp_path, f"spoiled{i}", spoil)
        assert not all(torch.equal(straight[k], other[k]) for k in straight), f"{what} not restored: same weights"


def test_the_step_seeds_every_draw(rl, monkeypatch):
    """Nothing random is carried from step to step (no RNG state is saved), so every draw must be seeded by the
    step and the prompt: two steps, and two prompts of a step, never share a sampling stream or VPO weights, and
    two steps draw different problems."""
    seeds, weights, problems = [], [], []
    real_rollout, real_vpo = train.rollout, vpo.vpo_advantages
    monkeypatch.setattr(train, "rollout", lambda *a, **k: seeds.append(k["seeds"]) or problems.append(a[2])
                        or real_rollout(*a, **k))
    monkeypatch.setattr(vpo, "vpo_advantages", lambda *a, **k: weights.append(k["weights"]) or real_vpo(*a, **k))
    assert rl("--algo", "vpo", "--steps", "2") == 0
    assert len(seeds) == 2 and len({s for step in seeds for s in step}) == 4      # 2 steps x 2 prompts
    assert problems[0] != problems[1]
    assert weights[0].shape == (2, 100, 2)
    assert not torch.equal(weights[0], weights[1]) and not torch.equal(weights[0][0], weights[0][1])

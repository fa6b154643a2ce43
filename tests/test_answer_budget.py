"""Every answer its own room (sample.AnswerBudget): one answer of an m-answer completion can never take another's
tokens, on the cached and the naive sampler alike, and a single-answer completion is sampled exactly as before."""
import copy

import pytest
import torch

import train
import vpo
from model import GPT, GPTConfig
from sample import AnswerBudget, answer_budget, completion_texts, generate, prompt_ids, rollout
from tasks import get_task
from tasks import tokenizer as tok
from tests.reference import generate_naive

CFG = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=2, n_embd=32)


def biased_model(favour, cfg=CFG, strength=8.0, seed=0, extra=None):
    """A random GPT whose head strongly favours the tokens `favour` (equally): a policy that never stops on its
    own. extra: {token: bias} added on top (e.g. a separator that is sometimes sampled)."""
    torch.manual_seed(seed)
    model = GPT(cfg).eval()
    model.lm_head = torch.nn.Linear(cfg.n_embd, cfg.vocab_size)
    with torch.no_grad():
        model.lm_head.weight.copy_(model.wte.weight)
        model.lm_head.bias.zero_()
        model.lm_head.bias[list(favour)] = strength
        for t, b in (extra or {}).items():
            model.lm_head.bias[t] = b
    return model


def random_prompts(n, seed, lo=1, hi=10):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (int(L),), generator=g).tolist() for L in torch.randint(lo, hi + 1, (n,), generator=g)]


def test_budget_rule_by_hand():
    """A policy that never writes a separator: answers of exactly `tokens` tokens, each non-final one closed by a
    forced separator (log-prob 0, outside gen.sampled), the final one ending the completion."""
    model = biased_model([ord("a")], strength=14.0)   # log p('a') ~ -2e-4: below 0, above a stray draw's odds
    budget = AnswerBudget(3, 4, tok.SEP_ID)
    gen = generate(model, [[tok.BOS_ID]], 40, num_samples=2, stop_token=tok.END_ID, budget=budget,
                   generator=torch.Generator().manual_seed(0))
    a, s = ord("a"), tok.SEP_ID
    assert gen.tokens.tolist() == [[a] * 4 + [s] + [a] * 4 + [s] + [a] * 4] * 2
    assert gen.mask.all() and gen.tokens.shape[1] == 3 * 4 + 2
    assert gen.forced[0].nonzero().flatten().tolist() == [4, 9]
    assert (gen.logprobs[gen.forced] == 0).all() and (gen.logprobs[gen.sampled] < 0).all()
    assert torch.equal(gen.sampled, gen.mask & ~gen.forced) and int(gen.sampled.sum()) == 2 * 12
    naive = generate_naive(model, [[tok.BOS_ID]], 40, num_samples=2, stop_token=tok.END_ID, budget=budget,
                           generator=torch.Generator().manual_seed(0))
    assert torch.equal(naive.tokens, gen.tokens) and torch.equal(naive.forced, gen.forced)


def test_sampled_separators_reset_the_room_and_end_still_ends():
    """A separator the policy samples closes its answer early and opens the next with a fresh room; <|end|> ends
    the row wherever it comes; a separator sampled in the final answer opens nothing (it shares the final room).
    The rows are scripted: a head favouring 'a', <|end|> and <|sep|> about equally, and uniforms choosing."""
    a, s, e = ord("a"), tok.SEP_ID, tok.END_ID
    model = biased_model([a, s, e], strength=30.0)
    order = sorted([a, s, e])                  # inverse-CDF sampling: the i-th favoured id for u near (i + 1/2) / 3
    pick = {t: (order.index(t) + 0.5) / 3 for t in (a, s, e)}
    rows = [[a, s, a, a, a, e, e, e, e, e],    # an early separator: the final answer gets its 3 tokens, then ends
            [a, a, a, a, a, a, a, e, e, e],    # 3 tokens, a forced separator (the 4th draw unused), 3 tokens: ends
            [s, a, s, a, a, a, a, a, a, a],    # a SEP in the final answer opens nothing: it counts, ends
            [e, a, a, a, a, a, a, a, a, a]]    # ends at once
    u = torch.tensor([[pick[t] for t in r] for r in rows])
    budget = AnswerBudget(2, 3, s)
    out = generate(model, [[tok.BOS_ID]], 10, num_samples=4, stop_token=e, budget=budget, uniforms=u)
    got = [out.tokens[r][out.mask[r]].tolist() for r in range(4)]
    assert got == [[a, s, a, a, a], [a, a, a, s, a, a, a], [s, a, s, a], [e]]
    assert out.forced.nonzero().tolist() == [[1, 3]]
    naive = generate_naive(model, [[tok.BOS_ID]], 10, num_samples=4, stop_token=e, budget=budget, uniforms=u)
    assert torch.equal(naive.tokens, out.tokens) and torch.equal(naive.mask, out.mask)
    assert torch.equal(naive.forced, out.forced)


@pytest.mark.parametrize("static", [False, True])
def test_cached_sampler_equals_naive_with_budget_at_temperature_zero(static):
    """Greedy rows of a random model with a likely separator: some answers close themselves, others are closed
    by the budget; tokens, masks, forced separators and trimming agree with the reference sampler."""
    model = biased_model(range(97, 123), strength=2.0, seed=3, extra={tok.SEP_ID: 3.0, tok.END_ID: 1.0})
    prompts = random_prompts(6, seed=3)
    budget = AnswerBudget(3, 5, tok.SEP_ID)
    a = generate(model, prompts, 17, num_samples=2, temperature=0, stop_token=tok.END_ID, budget=budget,
                 static=static)
    b = generate_naive(model, prompts, 17, num_samples=2, temperature=0, stop_token=tok.END_ID, budget=budget)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask) and torch.equal(a.forced, b.forced)


def test_cached_sampler_equals_naive_with_budget_when_sampling():
    """The same uniforms give the same tokens on both samplers, forced separators included, with some rows
    closing answers themselves and others filling them."""
    model = biased_model(range(97, 123), strength=2.0, seed=4, extra={tok.SEP_ID: 2.5, tok.END_ID: 0.5})
    prompts = random_prompts(4, seed=4)
    budget = AnswerBudget(3, 6, tok.SEP_ID)
    u = torch.rand((4 * 5, 20), generator=torch.Generator().manual_seed(0))
    a = generate(model, prompts, 20, num_samples=5, stop_token=tok.END_ID, budget=budget, uniforms=u)
    b = generate_naive(model, prompts, 20, num_samples=5, stop_token=tok.END_ID, budget=budget, uniforms=u)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask) and torch.equal(a.forced, b.forced)
    torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-5, rtol=1e-5)
    assert a.forced.any() and (a.tokens[a.sampled] == tok.SEP_ID).any()     # both kinds of closing happened


def test_a_single_answer_is_sampled_exactly_as_without_a_budget():
    """m = 1: the budget is the completion's whole budget, so nothing is forced and every token, log-prob and mask
    is the same, separators sampled mid-answer included (what keeps GRPO runs unchanged)."""
    model = biased_model(range(97, 123), strength=2.0, seed=5, extra={tok.SEP_ID: 2.5, tok.END_ID: 1.0})
    prompts = random_prompts(5, seed=5)
    for fn in (generate, generate_naive):
        run = lambda **kw: fn(model, prompts, 12, num_samples=4, stop_token=tok.END_ID,
                              generator=torch.Generator().manual_seed(1), **kw)
        a, b = run(), run(budget=AnswerBudget(1, 12, tok.SEP_ID))
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask) and torch.equal(a.logprobs, b.logprobs)
        assert not b.forced.any() and (a.tokens[a.mask] == tok.SEP_ID).any()


def test_written_prefix_counts_in_the_first_answers_room():
    """Evolutionary search continues a parent's prefix: those tokens are the first answer's start."""
    model = biased_model([ord("a")], strength=30.0)
    gen = generate(model, [[tok.BOS_ID, ord("a"), ord("a")]], 20, stop_token=tok.END_ID,
                   budget=AnswerBudget(2, 4, tok.SEP_ID), written=[2])
    assert gen.tokens[0].tolist() == [ord("a")] * 2 + [tok.SEP_ID] + [ord("a")] * 4


@pytest.mark.parametrize("name,letters", [("maze", "UDLR"), ("code", "x+-*12")])
def test_an_over_long_first_answer_leaves_room_for_the_others(name, letters):
    """A policy that would keep writing its first answer (it never samples a separator or <|end|>) still writes
    m answers on the task's real prompts, each in its own room of answer_tokens tokens, all scored."""
    task, m = get_task(name), 3
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=256, n_layer=1, n_head=2, n_embd=32)
    model = biased_model([ord(c) for c in letters], cfg=cfg, strength=30.0)
    problems = task.problems("test", 2, seed=0)
    gen, _, texts, rewards, mask = rollout(model, task, problems, m, 4, 1.0, torch.Generator().manual_seed(0))
    for text in texts:
        answers = task.parse(text, m)
        assert [len(a) for a in answers] == [task.answer_tokens] * m and text.count(tok.SEP) == m - 1
    assert mask.all() and gen.forced.sum(1).tolist() == [m - 1] * len(texts)
    assert (gen.sampled.sum(1) == m * task.answer_tokens).all()
    assert task.max_new_tokens(m) == gen.tokens.shape[1]
    # without the room, the first answer took every token (what the fix is about)
    old = generate(model, [prompt_ids(task, problems[0], m)], task.max_new_tokens(m), 4,
                   stop_token=tok.END_ID, generator=torch.Generator().manual_seed(0))
    assert all(task.parse(t, m)[1:] == ["", ""] for t in completion_texts(old, task))
    assert answer_budget(task, m) == AnswerBudget(m, task.answer_tokens, tok.SEP_ID)


def test_the_rl_loss_leaves_forced_separators_out(monkeypatch):
    """rl_step trains on gen.sampled: the policy loss sees no forced separator, and the logged tokens per rollout
    count only sampled ones."""
    task = get_task("toy")
    args = train.get_parser().parse_args(["--task", "toy", "--algo", "vpo", "--batch_size", "2", "--group_size",
                                          "4", "--kl_coef", "0", "--minibatches", "1"])
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=96, n_layer=1, n_head=2, n_embd=32)
    model = biased_model([ord(c) for c in "lefrigh"], cfg=cfg, strength=30.0)
    opt = model.configure_optimizer(1e-4)
    seen = {}
    real_loss, real_rollout = vpo.policy_loss, train.rollout

    def spy_rollout(*a, **k):
        out = real_rollout(*a, **k)
        seen["gen"] = out[0]
        return out

    def spy_loss(logp, old, adv, mask, *a, **k):
        seen["mask"] = mask.clone()
        return real_loss(logp, old, adv, mask, *a, **k)
    monkeypatch.setattr(train, "rollout", spy_rollout)
    monkeypatch.setattr(vpo, "policy_loss", spy_loss)
    log_weights = vpo.sample_weights(1, 10, task.dim, generator=torch.Generator().manual_seed(0))
    row = train.rl_step(model, model, copy.deepcopy(model), opt, task, train.RLConfig.from_args(args), 0, log_weights,
                        torch.device("cpu"))
    gen = seen["gen"]
    assert gen.forced.any()
    assert torch.equal(seen["mask"], gen.sampled) and not (seen["mask"] & gen.forced).any()
    assert row["completion_tokens"] == pytest.approx(3 * task.answer_tokens)
    assert row["written_rate"] == 1.0 and row["answer_tokens"] == task.answer_tokens and row["forced_rate"] == 1.0


def test_an_answer_room_below_a_demonstration_is_a_usage_error(tmp_path, capsys):
    """--task_opt answer_tokens below what a demonstration answer needs: one line, exit 2, nothing written."""
    code = train.main(["--task", "maze", "--task_opt", "answer_tokens=10", "--out_dir", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "answer_tokens" in err[0]
    assert list(tmp_path.iterdir()) == []
    assert train.main(["--task", "toy", "--task_opt", "answer_tokens=1", "--out_dir", str(tmp_path)]) == 2
    assert get_task("maze", answer_tokens=40).max_new_tokens(3) == 3 * 40 + 2

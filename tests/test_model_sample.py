"""The small GPT, its KV cache, the batched sampler and the tokenizer (CPU, seconds)."""
import os

import pytest
import torch

from model import GPT, CheckpointError, GPTConfig, load_checkpoint, pack_shared, save_checkpoint, shared_token_logprobs
from kv_cache import KVCache
from sample import draw, generate, sampling_logprobs
from tasks import tokenizer as tok
from tests.reference import generate_naive, pack, token_logprobs

CFG = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=2, n_embd=32)


def make_model(seed=0, cfg=CFG):
    torch.manual_seed(seed)
    model = GPT(cfg)
    with torch.no_grad():  # larger weights than the default init, so random-model logits are far from ties
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(4.0)
    return model.eval()


def random_prompts(n, seed, lo=1, hi=12):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(lo, hi + 1, (n,), generator=g).tolist()
    return [torch.randint(0, 256, (L,), generator=g).tolist() for L in lens]


# ------------------------------------------------------------------------------------------------- model
def test_forward_shapes_and_block_size():
    model = make_model()
    x = torch.randint(0, 256, (3, 10))
    assert model(x).shape == (3, 10, tok.vocab_size)
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, CFG.block_size + 1, dtype=torch.long))


def test_incremental_decoding_matches_full_forward():
    """Prefill left-padded prompts once, continue each with S=2 rows of its own tokens (one and then two at a
    time): the logits equal a full, uncached forward of each row's whole sequence."""
    check_incremental_decoding(make_model(1), CFG)


def check_incremental_decoding(model, cfg):
    """The test above on any model of the GPT's interface (tests/test_llama.py: a Llama); -> the cache."""
    P, S = 4, 2
    prompts = random_prompts(P, seed=1, lo=2, hi=9)
    extra = torch.randint(0, 256, (P * S, 5), generator=torch.Generator().manual_seed(2))
    Tp = max(map(len, prompts))
    idx = torch.zeros(P, Tp, dtype=torch.long)
    for i, p in enumerate(prompts):
        idx[i, Tp - len(p):] = torch.tensor(p)
    cache = KVCache(cfg, P, Tp, 6, num_samples=S, start=[Tp - len(p) for p in prompts])
    with torch.no_grad():
        first = model(idx, kv_cache=cache)[:, -1].repeat_interleave(S, 0)          # (R, V)
        steps = [first, model(extra[:, 0:1], kv_cache=cache)[:, -1]]
        steps += model(extra[:, 1:3], kv_cache=cache).unbind(1)                     # two tokens in one call
        steps += [model(extra[:, 3:4], kv_cache=cache)[:, -1]]
        assert cache.length == 4
        for r in range(P * S):
            p = prompts[r // S]
            full = model(torch.tensor([p + extra[r, :4].tolist()]))[0]
            got = torch.stack([s[r] for s in steps])
            torch.testing.assert_close(got, full[len(p) - 1:], atol=1e-4, rtol=1e-4)
    return cache


def test_kv_cache_overflow_raises():
    model = make_model()
    cache = KVCache(CFG, 1, 3, 4)
    with pytest.raises(ValueError, match="prefill"):
        model(torch.zeros(1, 5, dtype=torch.long), kv_cache=cache)
    model(torch.zeros(1, 3, dtype=torch.long), kv_cache=cache)
    with pytest.raises(ValueError, match="overflow"):
        model(torch.zeros(1, 5, dtype=torch.long), kv_cache=cache)
    with pytest.raises(ValueError, match="block_size"):
        KVCache(CFG, 1, 60, 5)


def test_weight_decay_groups_cover_every_parameter_once():
    model = make_model()
    opt = model.configure_optimizer(lr=1e-3, weight_decay=0.1)
    decay, no_decay = opt.param_groups
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
    ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(set(ids)) == len(ids)
    # tied weights are one tensor: counted once
    c = CFG
    expect = c.vocab_size * c.n_embd + c.n_layer * (12 * c.n_embd ** 2 + 2 * c.n_embd) + c.n_embd  # + LayerNorms
    assert model.num_params() == expect


def test_checkpoint_round_trip_and_errors(tmp_path):
    model = make_model(3)
    path = str(tmp_path / "ckpt.pt")
    save_checkpoint(path, model, step=7, args={"algo": "vpo", "lr": 1e-3}, rng=torch.get_rng_state())
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # no temp file left behind
    loaded, state = load_checkpoint(path)
    assert state["step"] == 7 and state["args"]["algo"] == "vpo"
    for (k, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), k
    x = torch.randint(0, 256, (2, 9))
    torch.testing.assert_close(model(x), loaded.eval()(x))
    with pytest.raises(CheckpointError, match="not found"):
        load_checkpoint(str(tmp_path / "missing.pt"))
    (tmp_path / "corrupt.pt").write_bytes(open(path, "rb").read()[:200])
    with pytest.raises(CheckpointError, match="cannot load"):
        load_checkpoint(str(tmp_path / "corrupt.pt"))


def test_checkpoint_of_compiled_style_state_dict_loads(tmp_path):
    """A state_dict saved with torch.compile's `_orig_mod.` prefixes still loads."""
    model = make_model(4)
    sd = {"_orig_mod." + k: v for k, v in model.state_dict().items()}
    path = str(tmp_path / "c.pt")
    torch.save({"config": vars(CFG) | {}, "model": sd}, path)
    loaded, _ = load_checkpoint(path)
    assert torch.equal(loaded.wte.weight, model.wte.weight)


# ------------------------------------------------------------------------------- scoring completions
def _scored(model, prompts, G, Tc, seed):
    """Random completions (G per prompt, some ending early) and loss weights that zero the tokens after the end."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 256, (len(prompts) * G, Tc), generator=g)
    ends = torch.randint(1, Tc + 1, (len(tokens),), generator=g)
    ends[0] = Tc                                                             # one row runs to the end
    mask = torch.arange(Tc)[None] < ends[:, None]
    weights = torch.randn(tokens.shape, generator=g) * mask                 # a loss that reads masked-in tokens
    return tokens, mask, weights


def _value_and_grads(model, logprobs_fn, weights):
    model.zero_grad(set_to_none=True)
    logp = logprobs_fn()
    (logp * weights).sum().backward()
    return logp.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("lens", [(1, 4, 9, 13), (1, 1, 1)])
def test_shared_prefix_logprobs_and_gradients_equal_the_packed_forward(lens):
    """One forward over the prompts and one over the completions (attending to the prompt's keys and values)
    gives the packed forward's log-probs and parameter gradients, on prompts of different lengths (a 1-token
    prompt has an all-pad prefix; all-1-token prompts have none), G = 3 completions each, some ending early."""
    model = make_model(11).train()
    G, Tc = 3, 7
    g = torch.Generator().manual_seed(11)
    prompts = [torch.randint(0, 256, (L,), generator=g).tolist() for L in lens]
    tokens, mask, weights = _scored(model, prompts, G, Tc, seed=12)
    idx, pos = pack([p for p in prompts for _ in range(G)], tokens, tok.PAD_ID)
    ref, ref_grads = _value_and_grads(model, lambda: token_logprobs(model, idx, pos, tokens, 0.7), weights)
    batch = pack_shared(prompts, tokens, G, tok.PAD_ID)
    got, grads = _value_and_grads(model, lambda: shared_token_logprobs(model, batch, 0.7), weights)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    for name in ref_grads:
        torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-5, rtol=1e-4, msg=name)
    assert any(g.abs().max() > 0 for g in grads.values())


def test_shared_prefix_minibatch_of_rows_equals_those_rows():
    """A minibatch that splits a prompt's G rows (SharedBatch.select) scores exactly those rows."""
    model = make_model(13)
    prompts = random_prompts(3, seed=13, lo=2, hi=10)
    tokens, _, _ = _scored(model, prompts, 4, 6, seed=14)
    batch = pack_shared(prompts, tokens, 4, tok.PAD_ID)
    with torch.no_grad():
        full = shared_token_logprobs(model, batch)
        for rows in torch.arange(12).chunk(3) + (torch.tensor([1, 9, 2]),):
            part = shared_token_logprobs(model, batch.select(rows))
            torch.testing.assert_close(part, full[rows], atol=1e-5, rtol=1e-5)


def test_pack_places_prompts_and_completions():
    tokens = torch.tensor([[7, 8, 9], [5, 6, 4]])
    idx, pos = pack([[1, 2], [3]], tokens, pad_id=0)
    assert idx.tolist() == [[1, 2, 7, 8], [3, 5, 6, 0]] and pos.tolist() == [[1, 2, 3], [0, 1, 2]]
    batch = pack_shared([[1, 2], [3]], torch.tensor([[7, 8, 9], [5, 6, 4], [1, 1, 1], [2, 2, 2]]), 2, pad_id=0)
    assert batch.prefix.tolist() == [[1], [0]] and batch.start.tolist() == [0, 1]
    assert batch.owner.tolist() == [0, 0, 1, 1] and batch.inputs[:, 0].tolist() == [2, 2, 3, 3]


# ----------------------------------------------------------------------------------------------- sampler
@pytest.mark.parametrize("static", [False, True])
def test_cached_sampler_equals_naive_at_temperature_zero(static):
    model = make_model(5)
    prompts = random_prompts(6, seed=5, lo=1, hi=15)
    a = generate(model, prompts, 20, num_samples=2, temperature=0, static=static)
    b = generate_naive(model, prompts, 20, num_samples=2, temperature=0)
    assert a.tokens.shape == (12, 20)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)


@pytest.mark.parametrize("static", [False, True])
def test_cached_sampler_pads_ragged_prompts_of_a_small_vocabulary(static):
    """A GPT of vocab_size=64 has no tokenizer.PAD_ID (259). Its prompts of different lengths are still padded
    with an id it has (the padded slots are hidden), and greedy sampling equals the uncached reference."""
    model = make_model(13, GPTConfig(vocab_size=64, block_size=48, n_layer=2, n_head=2, n_embd=32))
    g = torch.Generator().manual_seed(13)
    prompts = [torch.randint(0, 64, (n,), generator=g).tolist() for n in (1, 7, 3, 12)]
    a = generate(model, prompts, 16, num_samples=2, temperature=0, static=static)
    b = generate_naive(model, prompts, 16, num_samples=2, temperature=0)
    assert a.tokens.shape == (8, 16) and bool((a.tokens < 64).all())
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)


@pytest.mark.parametrize("static,check_every", [(False, 1), (False, 5), (True, 1), (True, 7)])
def test_cached_sampler_equals_naive_with_stop_token(static, check_every):
    """Greedy rows of different prompts stop at different steps; tokens, masks and trimming agree, whether the
    all-stopped check runs every token or every few, on the eager and on the fixed-shape (static) decode."""
    model = make_model(6)
    prompts = random_prompts(8, seed=6)
    greedy = generate(model, prompts, 24, temperature=0).tokens
    stop = int(greedy[0, 3])  # a token row 0 emits at step 3: some rows stop early, others not at all
    a = generate(model, prompts, 24, temperature=0, stop_token=stop, static=static, check_every=check_every)
    b = generate_naive(model, prompts, 24, temperature=0, stop_token=stop)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)
    assert a.lengths[0] <= 4 and len(set(a.lengths.tolist())) > 1


def test_logprobs_are_those_of_a_full_forward():
    """Each sampled token's log-prob equals the one a full, uncached forward over the sampled sequence gives."""
    model = make_model(7)
    prompts = random_prompts(3, seed=7)
    out = generate(model, prompts, 10, num_samples=3, generator=torch.Generator().manual_seed(0))
    for r in range(9):
        p = prompts[r // 3]
        seq = torch.tensor([p + out.tokens[r].tolist()])
        with torch.no_grad():
            logp = model(seq)[0, len(p) - 1:-1].log_softmax(-1)
        ref = logp.gather(1, out.tokens[r][:, None]).squeeze(1)
        torch.testing.assert_close(out.logprobs[r], ref, atol=1e-4, rtol=1e-4)


def test_static_decode_equals_eager_when_sampling():
    """Seeded sampling until every row has stopped (at different steps): the fixed-shape decode draws the same
    tokens with the same log-probs as the eager one, and a late all-stopped check (every 8 tokens) changes no
    output: the result still ends at the last row's stop."""
    model = GPT(CFG).eval()
    model.lm_head = torch.nn.Linear(CFG.n_embd, CFG.vocab_size)  # untied, with a bias making <|end|> likely
    with torch.no_grad():
        model.lm_head.weight.copy_(model.wte.weight)
        model.lm_head.bias.zero_()[tok.END_ID] = 4.0                # about 1 in 6 per step
    prompts = random_prompts(5, seed=12, lo=1, hi=10)
    run = lambda **kw: generate(model, prompts, 40, num_samples=3, stop_token=tok.END_ID,
                                generator=torch.Generator().manual_seed(3), **kw)
    a = run()
    assert a.tokens.shape[1] < 40 and len(set(a.lengths.tolist())) > 1
    for other in (run(check_every=8), run(static=True), run(static=True, check_every=8)):
        assert torch.equal(a.tokens, other.tokens) and torch.equal(a.mask, other.mask)
        torch.testing.assert_close(a.logprobs, other.logprobs, atol=1e-5, rtol=1e-5)


def test_rows_of_one_prompt_sample_their_own_first_token():
    model = GPT(CFG).eval()  # default init: a near-uniform next-token distribution
    out = generate(model, [[tok.BOS_ID]], 4, num_samples=16, generator=torch.Generator().manual_seed(0))
    assert len(set(out.tokens[:, 0].tolist())) > 8


def test_same_seed_same_samples_different_seed_different():
    model = make_model(8)
    prompts = random_prompts(4, seed=8)
    run = lambda s: generate(model, prompts, 12, num_samples=4, generator=torch.Generator().manual_seed(s))
    a, b, c = run(0), run(0), run(1)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.logprobs, b.logprobs)
    assert not torch.equal(a.tokens, c.tokens)


def test_stop_and_mask_per_row():
    """Each row stops on its own; the mask is True through the first stop and False after it."""
    model = GPT(CFG).eval()  # near-uniform: P(stop within 40 steps) ~ 14% per row
    stop = 7
    out = generate(model, [[1, 2, 3], [4]], 40, num_samples=32, stop_token=stop,
                   generator=torch.Generator().manual_seed(1))
    stopped = 0
    for r in range(out.tokens.shape[0]):
        row, m = out.tokens[r], out.mask[r]
        hits = (row == stop).nonzero().flatten()
        if m.all() and not (row == stop).any():
            continue  # never stopped: every generated token kept
        first = int(hits[0])
        assert m[:first + 1].all() and not m[first + 1:].any()
        assert (out.logprobs[r][~m] == 0).all()
        stopped += 1
    assert 0 < stopped < out.tokens.shape[0]
    assert out.tokens.shape[1] == 40  # some row ran to the end


def test_mask_is_built_from_positions_not_ids():
    """A row that never emits the stop token keeps every token, even ones equal to the fill value 0."""
    model = make_model(9)
    out = generate(model, [[1, 2]], 8, num_samples=1, temperature=0, stop_token=tok.END_ID)
    assert out.mask.all()
    gen = generate(model, [[1, 2]], 8, temperature=0, stop_token=int(out.tokens[0, 0]))
    assert gen.mask[0].tolist() == [True] + [False] * (gen.tokens.shape[1] - 1)


@pytest.mark.parametrize("top_k,top_p", [(3, None), (None, 0.5), (5, 0.8)])
def test_top_k_top_p_never_sample_outside_their_set(top_k, top_p):
    model = make_model(10)
    prompts = [[1, 2, 3]]
    out = generate(model, prompts, 1, num_samples=400, top_k=top_k, top_p=top_p,
                   generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits = model(torch.tensor(prompts))[0, -1]
    allowed = torch.isfinite(sampling_logprobs(logits, 1.0, top_k, top_p))
    assert allowed[out.tokens[:, 0]].all()
    if top_k is not None:
        assert allowed.sum() <= top_k
    if top_p is not None:  # the kept set is the smallest prefix of the sorted distribution with mass >= top_p
        probs = logits.softmax(-1)
        kept = probs[allowed].sort(descending=True).values
        assert kept.sum() >= top_p - 1e-6 or top_k is not None
        assert kept[:-1].sum() < top_p


def test_sampling_logprobs_hand_computed():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    p = torch.tensor([2.0, 1.0, 0.0, -1.0]).softmax(-1)  # [0.644, 0.237, 0.087, 0.032]
    lp = sampling_logprobs(logits, 1.0, top_p=0.7)[0]     # keeps the two largest: 0.644 < 0.7 <= 0.881
    torch.testing.assert_close(lp[:2].exp(), p[:2] / p[:2].sum())
    assert torch.isinf(lp[2:]).all()
    lp = sampling_logprobs(logits, 0.5, top_k=1)[0]
    assert lp[0] == 0 and torch.isinf(lp[1:]).all()


@pytest.mark.parametrize("kwargs,arg", [
    (dict(prompts=[]), "prompts"),
    (dict(prompts=[[]]), "prompts"),
    (dict(prompts=[[1] * 65]), "prompts"),
    (dict(max_new_tokens=60), "max_new_tokens"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(temperature=-0.1), "temperature"),
    (dict(top_p=0.0), "top_p"),
    (dict(top_p=1.5), "top_p"),
    (dict(top_k=0), "top_k"),
    (dict(num_samples=0), "num_samples"),
])
def test_bad_arguments_raise_value_error_naming_them(kwargs, arg):
    model = make_model()
    call = dict(prompts=[[1, 2, 3, 4, 5]], max_new_tokens=8) | kwargs
    with pytest.raises(ValueError, match=arg):
        generate(model, **call)


# --------------------------------------------------------------------------------------------- tokenizer
def test_tokenizer_is_byte_level_and_decodes_any_ids():
    """Text encodes to its UTF-8 bytes; any byte ids (model output: untrusted, often invalid UTF-8) decode as
    Python's own replacing decoder does."""
    g = torch.Generator().manual_seed(0)
    for n in [0, 1, 7, 100, 1000]:
        ids = torch.randint(0, 256, (n,), generator=g).tolist()
        assert tok.decode(ids) == bytes(ids).decode("utf-8", errors="replace")
    text = "maze 3x3 #S..E\n\tunicode: é ☃ 🙂 <|sep|> <|end|>"
    assert tok.encode(text) == list(text.encode("utf-8")) and tok.decode(tok.encode(text)) == text
    assert len(tok.encode("é")) == 2  # byte level


def test_special_tokens_only_from_trusted_text():
    plain = tok.encode("a<|sep|>b<|end|>")
    assert all(i < 256 for i in plain)  # plain text never yields special ids
    special = tok.encode_special("a<|sep|>b<|end|>")
    assert special == [ord("a"), tok.SEP_ID, ord("b"), tok.END_ID]
    ids = [tok.BOS_ID, 104, 105, tok.SEP_ID, tok.PAD_ID, tok.END_ID]
    assert tok.decode(ids) == "<|bos|>hi<|sep|><|pad|><|end|>"
    assert tok.encode_special(tok.decode(ids)) == ids
    assert tok.vocab_size == 260


def test_draw_matches_the_distribution():
    """The inverse-CDF draw reproduces the probabilities (20,000 draws, 4-sigma bounds) and never picks a
    zero-probability token."""
    probs = torch.tensor([0.5, 0.0, 0.3, 0.15, 0.05, 0.0])
    n = 20000
    ids = draw(probs.repeat(n, 1), torch.Generator().manual_seed(0))
    freq = torch.bincount(ids, minlength=6).float() / n
    assert freq[1] == 0 and freq[5] == 0
    sigma = (probs * (1 - probs) / n).sqrt()
    assert ((freq - probs).abs() <= 4 * sigma + 1e-9).all(), freq

"""The Llama-family model (llama.py) on the GPT's machinery: its KV cache, shared-prefix scoring, greedy sampling
and checkpoints, on tiny random models (CPU, seconds). Against transformers' own Llama and Qwen2, and SmolLM2's
real weights: tests/test_trl_smollm2_model.py."""
import pytest
import torch

from llama import Llama, LlamaConfig, rope, rotate
from model import GPT, CheckpointError, GPTConfig, load_checkpoint, pack_shared, save_checkpoint, shared_token_logprobs
from sample import generate
from tasks import tokenizer as tok
from tests.reference import generate_naive, pack, token_logprobs
from tests.test_model_sample import check_incremental_decoding, random_prompts

BASE = dict(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_embd=64, intermediate_size=96, rope_theta=500.0)
CFGS = {  # grouped-query (2 queries a key/value head), one key/value head, plain multi-head; tied and untied; biases
    "gqa": LlamaConfig(**BASE, n_head=4, n_kv_head=2),
    "mqa-untied-bias": LlamaConfig(**BASE, n_head=4, n_kv_head=1, tie_embeddings=False, qkv_bias=True),
    "mha-bias": LlamaConfig(**BASE, n_head=4, n_kv_head=4, qkv_bias=True),
}


def make_model(seed=0, cfg=CFGS["gqa"]):
    torch.manual_seed(seed)
    model = Llama(cfg)
    with torch.no_grad():  # larger weights than the default init, so random-model logits are far from ties; random
        for name, p in model.named_parameters():           # biases and norm gains, so that both are exercised
            if p.dim() >= 2:
                p.mul_(4.0)
            else:
                p.copy_(1.0 + 0.5 * torch.randn_like(p) if name.endswith("norm.weight") else 0.5 * torch.randn_like(p))
    return model.eval()


# ------------------------------------------------------------------------------------------------- model
def test_parameter_names_are_hugging_faces():
    """Hugging Face's LlamaForCausalLM / Qwen2ForCausalLM names without "model.": a converted checkpoint loads."""
    layer = ["self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
             "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "input_layernorm.weight",
             "post_attention_layernorm.weight"]
    names = {"embed_tokens.weight", "norm.weight"} | {f"layers.{i}.{n}" for i in range(2) for n in layer}
    assert set(make_model(cfg=CFGS["gqa"]).state_dict()) == names
    bias = {f"layers.{i}.self_attn.{x}_proj.bias" for i in range(2) for x in "qkv"}
    assert set(make_model(cfg=CFGS["mqa-untied-bias"]).state_dict()) == names | bias | {"lm_head.weight"}
    c = CFGS["mqa-untied-bias"]
    assert make_model(cfg=c).layers[0].self_attn.k_proj.weight.shape == (c.n_embd // c.n_head * c.n_kv_head, c.n_embd)


def test_forward_shapes_block_size_and_config_checks():
    model = make_model()
    assert model(torch.randint(0, 256, (3, 10))).shape == (3, 10, tok.vocab_size)
    assert model(torch.randint(0, 256, (3, 10)), head=False).shape == (3, 10, 64)
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 65, dtype=torch.long))
    with pytest.raises(ValueError, match="n_kv_head"):
        LlamaConfig(n_head=4, n_kv_head=3)


def test_rotary_embedding_pairs_the_two_halves_of_a_head():
    """RoPE in Hugging Face's layout, on a hand-made vector: dimensions i and i + hd/2 turn together by the angle
    pos * theta^(-2i/hd), like a complex number; so a query-key product depends only on their distance."""
    hd, theta = 8, 100.0
    x = torch.randn(1, 1, 1, hd, dtype=torch.float64)
    cos, sin = rope(torch.tensor([[5]]), hd, theta)
    got = rotate(x.float(), cos, sin)
    z = torch.complex(x[..., :hd // 2], x[..., hd // 2:])                     # pair i as x_i + i x_{i + hd/2}
    angle = 5 * theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    z = z * torch.exp(1j * angle)
    torch.testing.assert_close(got, torch.cat([z.real, z.imag], dim=-1).float())
    q, k = torch.randn(2, 1, 1, 1, hd)
    at = lambda x, pos: rotate(x, *rope(torch.tensor([[pos]]), hd, theta))
    torch.testing.assert_close((at(q, 7) * at(k, 3)).sum(), (at(q, 24) * at(k, 20)).sum())


def test_grouped_query_attention_equals_multi_head_with_repeated_keys_and_values():
    """n_kv_head = 2 of 4 query heads equals plain multi-head attention whose key/value heads repeat each of the two:
    query heads 0 and 1 read kv head 0, heads 2 and 3 read kv head 1 (Hugging Face's repeat_kv order)."""
    gqa = make_model(1, CFGS["gqa"])
    mha = Llama(LlamaConfig(**BASE, n_head=4, n_kv_head=4)).eval()
    sd = gqa.state_dict()
    for name, w in list(sd.items()):
        if name.endswith(("k_proj.weight", "v_proj.weight")):                # (Hkv * hd, C) -> (H * hd, C)
            sd[name] = w.view(2, 16, 64).repeat_interleave(2, dim=0).reshape(64, 64)
    mha.load_state_dict(sd)
    x = torch.randint(0, 256, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(gqa(x), mha(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", list(CFGS))
def test_incremental_decoding_matches_full_forward(name):
    """The GPT's test (tests/test_model_sample.py): prefilled left-padded prompts continued one and two tokens at a
    time give the full forward's logits; the cache stores only the key/value heads."""
    cache = check_incremental_decoding(make_model(1, CFGS[name]), CFGS[name])
    assert cache.k.shape[2] == CFGS[name].n_kv_head


def test_counts_and_weight_decay_groups():
    """Every parameter in one optimizer group; an untied embedding is a lookup, left out of the FLOP count."""
    for cfg in CFGS.values():
        model = make_model(cfg=cfg)
        decay, no_decay = model.configure_optimizer(lr=1e-3, weight_decay=0.1).param_groups
        ids = [id(p) for p in decay["params"] + no_decay["params"]]
        assert sorted(ids) == sorted(id(p) for p in model.parameters()) and len(set(ids)) == len(ids)
        assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in no_decay["params"])
        embed = cfg.vocab_size * cfg.n_embd
        assert model.num_params(non_embedding=False) - model.num_params() == (0 if cfg.tie_embeddings else embed)
        assert model.flops_per_token(10) == 2 * model.num_params() + 4 * cfg.n_layer * cfg.n_embd * 10


# ------------------------------------------------------------------------------- scoring completions
@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("lens", [(1, 4, 9, 13), (1, 1, 1)])
def test_shared_prefix_logprobs_and_gradients_equal_the_packed_forward(name, lens):
    """One forward over the prompts and one over the completions (attending to the prompt's key/value heads) gives
    the packed forward's log-probs and parameter gradients, on prompts of different lengths, G = 3 each."""
    model = make_model(11, CFGS[name]).train()
    G, Tc = 3, 7
    g = torch.Generator().manual_seed(11)
    prompts = [torch.randint(0, 256, (L,), generator=g).tolist() for L in lens]
    tokens = torch.randint(0, 256, (len(prompts) * G, Tc), generator=g)
    weights = torch.randn(tokens.shape, generator=g)
    grads = []
    for logprobs in (lambda: token_logprobs(model, *pack([p for p in prompts for _ in range(G)], tokens, tok.PAD_ID),
                                            tokens, 0.7),
                     lambda: shared_token_logprobs(model, pack_shared(prompts, tokens, G, tok.PAD_ID), 0.7)):
        model.zero_grad(set_to_none=True)
        logp = logprobs()
        (logp * weights).sum().backward()
        grads.append((logp.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
    (ref, ref_grads), (got, got_grads) = grads
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    for n in ref_grads:
        torch.testing.assert_close(got_grads[n], ref_grads[n], atol=1e-5, rtol=1e-4, msg=n)
    assert all(g.abs().max() > 0 for g in got_grads.values())


# ----------------------------------------------------------------------------------------------- sampler
@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("static", [False, True])
def test_cached_sampler_equals_naive_at_temperature_zero(name, static):
    model = make_model(5, CFGS[name])
    prompts = random_prompts(6, seed=5, lo=1, hi=15)
    a = generate(model, prompts, 20, num_samples=2, temperature=0, static=static)
    b = generate_naive(model, prompts, 20, num_samples=2, temperature=0)
    assert a.tokens.shape == (12, 20)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.mask, b.mask)


def test_logprobs_are_those_of_a_full_forward():
    """Each sampled token's log-prob equals the one a full, uncached forward over the sampled sequence gives."""
    model = make_model(7, CFGS["mqa-untied-bias"])
    prompts = random_prompts(3, seed=7)
    out = generate(model, prompts, 10, num_samples=3, generator=torch.Generator().manual_seed(0))
    for r in range(9):
        p = prompts[r // 3]
        with torch.no_grad():
            logp = model(torch.tensor([p + out.tokens[r].tolist()]))[0, len(p) - 1:-1].log_softmax(-1)
        torch.testing.assert_close(out.logprobs[r], logp.gather(1, out.tokens[r][:, None]).squeeze(1),
                                   atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("name", ["gqa", "mqa-untied-bias"])
def test_checkpoint_round_trip(tmp_path, name):
    model = make_model(3, CFGS[name])
    path = str(tmp_path / "ckpt.pt")
    save_checkpoint(path, model, step=7)
    loaded, state = load_checkpoint(path)
    assert isinstance(loaded, Llama) and state["arch"] == "llama" and loaded.config == model.config
    assert state["step"] == 7 and set(loaded.state_dict()) == set(model.state_dict())
    x = torch.randint(0, 256, (2, 9))
    assert torch.equal(model(x), loaded.eval()(x))


def test_a_gpt_checkpoint_still_loads_as_a_gpt(tmp_path):
    """A GPT checkpoint, new (arch "gpt") or written before llama.py (no "arch"), loads as a GPT; an unknown
    architecture, or a Llama's weights labelled GPT, is a CheckpointError."""
    cfg = GPTConfig(vocab_size=tok.vocab_size, block_size=64, n_layer=2, n_head=2, n_embd=32)
    torch.manual_seed(0)
    gpt = GPT(cfg).eval()
    save_checkpoint(str(tmp_path / "new.pt"), gpt)
    torch.save({"config": vars(cfg) | {}, "model": gpt.state_dict()}, str(tmp_path / "old.pt"))
    x = torch.randint(0, 256, (2, 9))
    for f in ("new.pt", "old.pt"):
        loaded, _ = load_checkpoint(str(tmp_path / f))
        assert isinstance(loaded, GPT) and torch.equal(loaded.eval()(x), gpt(x))
    state = torch.load(str(tmp_path / "new.pt"), weights_only=True)
    torch.save(state | {"arch": "mamba"}, str(tmp_path / "unknown.pt"))
    with pytest.raises(CheckpointError, match="mamba"):
        load_checkpoint(str(tmp_path / "unknown.pt"))
    save_checkpoint(str(tmp_path / "llama.pt"), make_model())
    state = torch.load(str(tmp_path / "llama.pt"), weights_only=True)
    torch.save({k: v for k, v in state.items() if k != "arch"}, str(tmp_path / "unlabelled.pt"))
    with pytest.raises(CheckpointError, match="cannot load"):
        load_checkpoint(str(tmp_path / "unlabelled.pt"))

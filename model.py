"""
A small GPT: token + learned position embeddings, pre-norm transformer blocks, tied output head.

One forward path serves training, scoring and sampling:

    logits = model(idx)                    # (B, T, vocab): training and log-prob scoring, causal attention
    logits = model(idx, kv_cache=cache)    # incremental decoding: appends T tokens to the cache
    x = model(idx, head=False)             # (B, T, n_embd): the last block's output, before ln_f and the head

Shared prompt blocks. A prompt with G continuations is encoded once and its keys and values are shared by the
G rows, both when sampling (kv_cache.KVCache, no gradients) and when scoring completions for training
(SharedPrefix, gradients flow into the prompt's part). Prompts of different lengths are left-padded to a common length and
positions are explicit per row, so pad slots shift nothing and are never attended to.

Log-probs that feed a loss are taken in fp32: the final norm and the output head run outside bf16 autocast
(head_logprobs). On CPU autocast is off anyway, so this changes nothing there.

Checkpoints are plain dicts of tensors and Python values ({"config": ..., "arch": "gpt", "model": state_dict, ...})
written atomically and read with torch.load(weights_only=True), so loading one never runs pickled code. They hold a
GPT or a Llama-family model (llama.py, the same interface); "arch" says which (a checkpoint without it is a GPT).
"""
import math
import os
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from llama import Llama, LlamaConfig


@dataclass
class GPTConfig:
    vocab_size: int = 260     # 256 bytes + 4 special tokens (tasks/tokenizer.py)
    block_size: int = 256     # longest sequence (prompt + completion) the model sees
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False        # biases in Linear and LayerNorm


def prefill_mask(start, T):
    """Attention mask (True = may attend) of T left-padded prompt slots, (P, 1, T, T): causal, pad keys hidden;
    a pad query sees itself, so no row is all-masked (which would give NaN). start[p] = first real slot."""
    slots = torch.arange(T, device=start.device)
    causal = slots[None, :] <= slots[:, None]                                           # (T, T)
    real = slots[None, :] >= start[:, None]                                             # (P, T)
    return ((causal[None] & real[:, None, :]) | torch.eye(T, dtype=torch.bool, device=start.device))[:, None]


def prefill_positions(start, T):
    """Position of each left-padded prompt slot: slot s of prompt p sits at s - start[p] (pads at 0). (P, T)"""
    return (torch.arange(T, device=start.device)[None] - start[:, None]).clamp(min=0)


class SharedPrefix:
    """The training-time shared prompt block: the prompts are encoded once (P rows), and every completion row
    attends to its prompt's keys and values, which keep their autograd graph, so gradients of all G rows flow
    into the one prompt encoding. Use: model(prefix, kv_cache=sp); x = model(inputs, kv_cache=sp).
        prompt part: (P, Hkv, Tp, hd) per layer, left-padded, start[p] = first real slot (Hkv key/value heads: H for
                     a GPT, fewer for a Llama with grouped-query attention, query head h reading kv head h // (H/Hkv))
        row r continues prompt owner[r]; its t-th input sits at position Tp - start[owner[r]] + t.
    """

    def __init__(self, start, owner, prompt_len):
        self.start, self.owner, self.prompt_len = start, owner, prompt_len                # (P,), (R,)
        self.keys, self.values, self.prefilled, self.mask = [], [], prompt_len == 0, None

    def positions(self, T):
        if not self.prefilled:
            self.mask = prefill_mask(self.start, T)
            return prefill_positions(self.start, T)
        Tp, start = self.prompt_len, self.start[self.owner]                              # (R,)
        R, device = len(self.owner), start.device
        seen = (torch.arange(Tp, device=device)[None] >= start[:, None])[:, None].expand(R, T, Tp)
        causal = torch.ones(T, T, dtype=torch.bool, device=device).tril().expand(R, T, T)
        self.mask = torch.cat([seen, causal], dim=-1)[:, None]                          # (R, 1, T, Tp + T)
        return (Tp - start)[:, None] + torch.arange(T, device=device)[None]

    def advance(self, T):
        self.prefilled = True

    def attend(self, layer, q, k, v, dropout_p=0.0):
        if not self.prefilled:
            self.keys.append(k)
            self.values.append(v)
        elif self.prompt_len:  # the prompt's keys, gathered per row (backward sums the G rows' gradients)
            k = torch.cat([self.keys[layer][self.owner], k], dim=2)                       # (R, Hkv, Tp + T, hd)
            v = torch.cat([self.values[layer][self.owner], v], dim=2)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, dropout_p=dropout_p,
                                              enable_gqa=k.shape[1] < q.shape[1])


class CausalSelfAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head, self.layer_idx = config.n_head, layer_idx
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = config.dropout

    def forward(self, x, kv_cache=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        drop = self.dropout if self.training else 0.0
        if kv_cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)
        else:
            y = kv_cache.attend(self.layer_idx, q, k, v, drop)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config, layer_idx)
        self.ln2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x, kv_cache=None):
        x = x + self.attn(self.ln1(x), kv_cache)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config, i) for i in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying (Press & Wolf 2017)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # residual projections scaled by 1/sqrt(2 n_layer) (GPT-2)
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def num_params(self, non_embedding=True):
        """Parameter count; the position table is left out by default (it costs no FLOPs)."""
        n = sum(p.numel() for p in self.parameters())
        return n - self.wpe.weight.numel() if non_embedding else n

    def forward(self, idx, kv_cache=None, head=True):
        """idx (B, T) -> logits (B, T, vocab), or with head=False the last block's output (B, T, n_embd).
        With kv_cache (a KVCache or SharedPrefix), the T tokens follow what the cache holds."""
        B, T = idx.shape
        if kv_cache is None:
            if T > self.config.block_size:
                raise ValueError(f"sequence length {T} exceeds block_size={self.config.block_size}")
            pos = torch.arange(T, device=idx.device)[None]
        else:
            pos = kv_cache.positions(T)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x, kv_cache)
        if kv_cache is not None:
            kv_cache.advance(T)
        return self.lm_head(self.ln_f(x)) if head else x

    def logits_fp32(self, x):
        """ln_f and the output head in fp32, outside any autocast: x (..., n_embd) -> logits (..., vocab)."""
        with torch.autocast(x.device.type, enabled=False):
            return self.lm_head(self.ln_f(x.float()))

    def flops_per_token(self, context_len):
        """Forward FLOPs for one token attending to context_len keys: 2 per weight multiply-add, plus
        QK^T and AV (2 * 2 * n_embd * context_len per layer)."""
        c = self.config
        return 2 * self.num_params() + 4 * c.n_layer * c.n_embd * context_len

    def configure_optimizer(self, lr, weight_decay=0.0, betas=(0.9, 0.95), device_type="cpu"):
        """AdamW with weight decay on matrices and embeddings only (not on norms or biases)."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        fused = device_type == "cuda"
        return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=fused)


def autocast(device_type, enabled=True):
    """bf16 autocast on CUDA; a no-op elsewhere (fp32 on CPU and MPS) or when not enabled."""
    if device_type == "cuda" and enabled:
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return torch.autocast(device_type=device_type, enabled=False)


# ----------------------------------------------------------------------------- scoring completions (training)
def left_pad(prompts, pad_id, device="cpu"):
    """Prompts (lists of ids) left-padded with pad_id to the longest, without a loop over rows (one tensor of all
    ids and one scatter): -> idx (P, Tp), start (P,) = first real slot of each."""
    lens = torch.tensor([len(p) for p in prompts], device=device)
    Tp = int(lens.max())
    flat = torch.tensor([t for p in prompts for t in p], dtype=torch.long, device=device)
    row = torch.arange(len(prompts), device=device).repeat_interleave(lens)
    col = torch.arange(len(flat), device=device) - (lens.cumsum(0) - lens)[row]         # index within its prompt
    idx = torch.full((len(prompts), Tp), pad_id, dtype=torch.long, device=device)
    idx[row, col + Tp - lens[row]] = flat
    return idx, Tp - lens


def head_logprobs(model, x, tokens, temperature=1.0):
    """log softmax(logits / temperature) at the given tokens, with ln_f and the head in fp32 (outside autocast):
    x (R, Tc, n_embd), tokens (R, Tc) -> (R, Tc) float32. The logits are divided by the sampling temperature, as
    the rollouts were drawn (veRL does the same)."""
    logits = model.logits_fp32(x) / temperature                                        # (R, Tc, V) fp32
    return logits.log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)


@dataclass
class SharedBatch:
    """Completions grouped under their prompts, for one forward over the prompts and one over the completions.
    The prompt part holds each prompt without its last token; the last token is the first input of every row."""
    prefix: torch.Tensor   # (P, Tp) prompts but their last token, left-padded
    start: torch.Tensor    # (P,) first real slot of each prefix
    owner: torch.Tensor    # (R,) the prompt of each row
    inputs: torch.Tensor   # (R, Tc) last prompt token, then the completion but its last token
    tokens: torch.Tensor   # (R, Tc) the completion tokens (the targets)

    def select(self, rows):
        """The sub-batch of these rows (a minibatch), with only the prompts they use."""
        used, owner = torch.unique(self.owner[rows], return_inverse=True)
        return SharedBatch(self.prefix[used], self.start[used], owner, self.inputs[rows], self.tokens[rows])


def pack_shared(prompts, tokens, num_samples, pad_id):
    """prompts: P lists of ids; tokens (P * num_samples, Tc), prompt-major (row r continues prompt
    r // num_samples), as sample.generate returns them -> SharedBatch."""
    R, Tc = tokens.shape
    device = tokens.device
    idx, start = left_pad(prompts, pad_id, device)                                     # (P, Tp + 1)
    owner = torch.arange(len(prompts), device=device).repeat_interleave(num_samples)   # (R,)
    inputs = torch.cat([idx[owner, -1:], tokens[:, :-1]], dim=1)                       # (R, Tc)
    return SharedBatch(idx[:, :-1], start, owner, inputs, tokens)  # a 1-token prompt: start = Tp, all pads


def shared_token_logprobs(model, batch, temperature=1.0, amp=True):
    """log pi(y_t | x, y_<t) of each completion token, (R, Tc): the prompts' forward once (P rows), then one
    forward over the completions (R rows) attending to their prompt's keys and values (SharedPrefix). Equals
    the plain forward over prompt + completion (tests/reference.py: pack, token_logprobs) to float tolerance,
    values and gradients (tests/test_model_sample.py)."""
    Tp, Tc = batch.prefix.shape[1], batch.inputs.shape[1]
    if Tp + Tc > model.config.block_size:
        raise ValueError(f"prompt + completion = {Tp + Tc} tokens exceeds block_size={model.config.block_size}")
    cache = SharedPrefix(batch.start, batch.owner, Tp)
    with autocast(batch.inputs.device.type, amp):
        if Tp:
            model(batch.prefix, kv_cache=cache, head=False)
        x = model(batch.inputs, kv_cache=cache, head=False)                           # (R, Tc, C)
    return head_logprobs(model, x, batch.tokens, temperature)


# --------------------------------------------------------------------------------------------- checkpoints
class CheckpointError(Exception):
    """A checkpoint that is missing, truncated or not one of ours."""


ARCHS = {"gpt": (GPTConfig, GPT), "llama": (LlamaConfig, Llama)}  # a checkpoint's "arch": its config and model


def save_checkpoint(path, model, **extra):
    """Write {"config", "arch", "model", **extra} to path atomically: a temp file in the same directory, then
    rename."""
    model = getattr(model, "_orig_mod", model)  # a torch.compile'd model saves its plain state_dict
    arch = "llama" if isinstance(model, Llama) else "gpt"
    state = {"config": asdict(model.config), "arch": arch, "model": model.state_dict(), **extra}
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def load_checkpoint(path, device="cpu"):
    """Read a checkpoint written by save_checkpoint (weights_only=True: no code runs). -> (model, state)."""
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location=device, weights_only=True)
        arch = state.get("arch", "gpt")                                   # written before llama.py: a GPT
        if arch not in ARCHS:
            raise ValueError(f"unknown architecture {arch!r}")
        config_cls, model_cls = ARCHS[arch]
        sd = {k.removeprefix("_orig_mod."): v for k, v in state["model"].items()}
        model = model_cls(config_cls(**state["config"])).to(device)
        model.load_state_dict(sd)
    except Exception as e:  # truncated zip, foreign pickle, missing keys, wrong shapes
        raise CheckpointError(f"cannot load checkpoint {path}: {type(e).__name__}: {e}") from None
    bad = [k for k, v in sd.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise CheckpointError(f"checkpoint {path} has non-finite weights ({bad[0]}{' and more' if len(bad) > 1 else ''})")
    return model, state

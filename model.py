"""
A small GPT: token + learned position embeddings, pre-norm transformer blocks, tied output head.

One forward path serves training, scoring and sampling:

    logits = model(idx)                    # (B, T, vocab): training and log-prob scoring, causal attention
    logits = model(idx, kv_cache=cache)    # incremental decoding: appends T tokens to the cache

The KV cache (used by sample.py) is preallocated for P prompts with S continuations each. Prompts of
different lengths are left-padded to a common length and positions are explicit per row, so pad slots shift
nothing and are never attended to. The prompt's keys and values are stored once and shared by its S rows.

Checkpoints are plain dicts of tensors and Python values ({"config": ..., "model": state_dict, ...}) written
atomically and read with torch.load(weights_only=True), so loading one never runs pickled code.
"""
import math
import os
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 260     # 256 bytes + 4 special tokens (tasks/tokenizer.py)
    block_size: int = 256     # longest sequence (prompt + completion) the model sees
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = False        # biases in Linear and LayerNorm


class KVCache:
    """Keys and values for sampling S continuations of each of P prompts, preallocated.

    The prompts are stored once, the continuations once per row, and attention reads the prompt part as one
    shared block per prompt (a shared-prefix, or "cascade", attention), so the S rollouts of a prompt do not
    each carry a copy of it:
        prompt part: prefix_k, prefix_v (n_layer, P, H, Tp, hd); prompts left-padded, start[p] = first real slot
        own part:    k, v               (n_layer, P*S, H, max_new_tokens, hd); row r continues prompt r // S
    The position of prompt slot s is s - start[p]; row r's i-th generated token sits at Tp - start[p] + i.
    """

    def __init__(self, config, num_prompts, prompt_len, max_new_tokens, num_samples=1, start=None,
                 device="cpu", dtype=torch.float32):
        if prompt_len + max_new_tokens > config.block_size:
            raise ValueError(f"prompt_len + max_new_tokens = {prompt_len + max_new_tokens} exceeds "
                             f"block_size={config.block_size}")
        L, H, hd = config.n_layer, config.n_head, config.n_embd // config.n_head
        P, S = num_prompts, num_samples
        self.prefix_k = torch.empty((L, P, H, prompt_len, hd), device=device, dtype=dtype)
        self.prefix_v = torch.empty_like(self.prefix_k)
        self.k = torch.empty((L, P * S, H, max_new_tokens, hd), device=device, dtype=dtype)
        self.v = torch.empty_like(self.k)
        self.start = (torch.zeros(P, dtype=torch.long, device=device) if start is None
                      else torch.as_tensor(start, dtype=torch.long, device=device))
        self.num_prompts, self.num_samples, self.prompt_len = P, S, prompt_len
        self.prefilled, self.length, self.max_new_tokens = False, 0, max_new_tokens

    def positions_and_mask(self, T):
        """Positions of the next T tokens and the boolean attention mask (True = may attend) for them.
        Prefill: (P, T) and (P, 1, T, T): causal, pad keys hidden (a pad query sees itself, so no row is
        all-masked, which would give NaN). Decode: (R, T) and (T, length + T): causal over the own part."""
        device, Tp = self.start.device, self.prompt_len
        if not self.prefilled:
            if T != Tp:
                raise ValueError(f"prefill takes the padded prompts, length {Tp}; got {T} tokens")
            slots = torch.arange(T, device=device)
            causal = slots[None, :] <= slots[:, None]                                   # (T, T)
            real = slots[None, :] >= self.start[:, None]                                # (P, T)
            mask = (causal[None] & real[:, None, :]) | torch.eye(T, dtype=torch.bool, device=device)
            return (slots[None] - self.start[:, None]).clamp(min=0), mask[:, None]
        if self.length + T > self.max_new_tokens:
            raise ValueError(f"KV cache overflow: {self.length} + {T} > max_new_tokens={self.max_new_tokens}")
        steps = torch.arange(self.length, self.length + T, device=device)               # (T,)
        pos = (Tp - self.start).repeat_interleave(self.num_samples)[:, None] + steps[None]  # (R, T)
        mask = torch.arange(self.length + T, device=device)[None, :] <= steps[:, None]  # (T, length + T)
        return pos, mask

    def attend(self, layer, q, k, v, mask):
        """Attention of T new tokens per row over its prompt (shared) and its own earlier tokens.
        q, k, v: (R, H, T, hd) with R = P * S. softmax over [prompt keys, own keys] jointly."""
        P, S, Tp = self.num_prompts, self.num_samples, self.prompt_len
        R, H, T, hd = q.shape
        e = self.length + T
        self.k[layer, :, :, self.length:e], self.v[layer, :, :, self.length:e] = k, v
        ks, vs = self.k[layer, :, :, :e].to(q.dtype), self.v[layer, :, :, :e].to(q.dtype)   # (R, H, e, hd)
        kp, vp = self.prefix_k[layer].to(q.dtype), self.prefix_v[layer].to(q.dtype)      # (P, H, Tp, hd)
        # the S rows of a prompt query its keys together: one (S*T, Tp) score matrix per prompt and head
        qg = q.view(P, S, H, T, hd).transpose(1, 2).reshape(P, H, S * T, hd)
        sp = (qg @ kp.transpose(-1, -2)) * hd ** -0.5                                  # (P, H, S*T, Tp)
        sp = sp.masked_fill((torch.arange(Tp, device=q.device) < self.start[:, None])[:, None, None], -math.inf)
        sp = sp.view(P, H, S, T, Tp).transpose(1, 2).reshape(R, H, T, Tp)
        so = (q @ ks.transpose(-1, -2)) * hd ** -0.5                                    # (R, H, T, e)
        if T > 1:  # one new token sees all of its row's earlier tokens: nothing to mask
            so = so.masked_fill(~mask, -math.inf)
        a = torch.cat([sp, so], dim=-1).softmax(dim=-1).to(q.dtype)
        ap, ao = a.split([Tp, e], dim=-1)
        ap = ap.view(P, S, H, T, Tp).transpose(1, 2).reshape(P, H, S * T, Tp)
        yp = (ap @ vp).view(P, H, S, T, hd).transpose(1, 2).reshape(R, H, T, hd)
        return yp + ao @ vs


class CausalSelfAttention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head, self.layer_idx = config.n_head, layer_idx
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = config.dropout

    def forward(self, x, kv_cache=None, mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        drop = self.dropout if self.training else 0.0
        if kv_cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=drop)
        elif not kv_cache.prefilled:  # the prompts: attend among themselves, keep their keys and values
            kv_cache.prefix_k[self.layer_idx], kv_cache.prefix_v[self.layer_idx] = k, v
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=drop)
        else:
            y = kv_cache.attend(self.layer_idx, q, k, v, mask)
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

    def forward(self, x, kv_cache=None, mask=None):
        x = x + self.attn(self.ln1(x), kv_cache, mask)
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

    def forward(self, idx, kv_cache=None):
        """idx (B, T) -> logits (B, T, vocab). With kv_cache, the T tokens follow what the cache holds."""
        B, T = idx.shape
        if kv_cache is None:
            if T > self.config.block_size:
                raise ValueError(f"sequence length {T} exceeds block_size={self.config.block_size}")
            pos, mask = torch.arange(T, device=idx.device)[None], None
        else:
            pos, mask = kv_cache.positions_and_mask(T)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x, kv_cache, mask)
        if kv_cache is not None:
            kv_cache.length += T if kv_cache.prefilled else 0
            kv_cache.prefilled = True
        return self.lm_head(self.ln_f(x))

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
def pack(prompts, tokens, pad_id=0):
    """Prompt + completion per row, right-padded: -> idx (R, L) for one causal forward, and pos (R, Tc): the
    position whose logits predict completion token t of row r, len(prompts[r]) - 1 + t."""
    R, Tc = tokens.shape
    lens = torch.tensor([len(p) for p in prompts])
    idx = torch.full((R, int(lens.max()) + Tc - 1), pad_id, dtype=torch.long)
    for r, p in enumerate(prompts):
        row = p + tokens[r].tolist()
        idx[r, :len(row) - 1] = torch.tensor(row[:-1])
    pos = lens[:, None] - 1 + torch.arange(Tc)[None, :]
    return idx.to(tokens.device), pos.to(tokens.device)


def token_logprobs(model, idx, pos, tokens, temperature=1.0, amp=True):
    """log pi(y_t | x, y_<t) of each completion token, (R, Tc), from one causal forward over pack's idx. The
    logits are divided by the sampling temperature, as the rollouts were drawn (veRL does the same).
    amp=False keeps CUDA in fp32 (train.py --dtype float32)."""
    with autocast(idx.device.type, amp):
        logits = model(idx)                                                         # (R, L, V)
    logits = logits.gather(1, pos[..., None].expand(-1, -1, logits.shape[-1]))     # (R, Tc, V)
    return (logits.float() / temperature).log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)


# --------------------------------------------------------------------------------------------- checkpoints
class CheckpointError(Exception):
    """A checkpoint that is missing, truncated or not one of ours."""


def save_checkpoint(path, model, **extra):
    """Write {"config", "model", **extra} to path atomically: a temp file in the same directory, then rename."""
    model = getattr(model, "_orig_mod", model)  # a torch.compile'd model saves its plain state_dict
    state = {"config": asdict(model.config), "model": model.state_dict(), **extra}
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
        config = GPTConfig(**state["config"])
        sd = {k.removeprefix("_orig_mod."): v for k, v in state["model"].items()}
        model = GPT(config).to(device)
        model.load_state_dict(sd)
    except Exception as e:  # truncated zip, foreign pickle, missing keys, wrong shapes
        raise CheckpointError(f"cannot load checkpoint {path}: {type(e).__name__}: {e}") from None
    bad = [k for k, v in sd.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise CheckpointError(f"checkpoint {path} has non-finite weights ({bad[0]}{' and more' if len(bad) > 1 else ''})")
    return model, state

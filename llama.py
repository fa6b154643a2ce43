"""
A Llama-family decoder (Llama, SmolLM2, Qwen2) in plain PyTorch, served by the same machinery as model.GPT: the
sampler's KV cache (kv_cache.KVCache), the shared-prompt training forward (model.SharedPrefix), the checkpoints.

    x = embed(idx); per layer: x += attn(rmsnorm(x)), x += mlp(rmsnorm(x)); logits = head(rmsnorm(x))

    attention  rotary positions (RoPE) on queries and keys; grouped-query: n_kv_head key/value heads, each read by
               n_head / n_kv_head query heads (query head h reads key/value head h // (n_head / n_kv_head))
    mlp        SwiGLU: down(silu(gate(x)) * up(x))
    head       the token embedding itself (tie_embeddings) or a separate lm_head

The interface is the GPT's: forward(idx, kv_cache=None, head=True), logits_fp32, num_params, flops_per_token,
configure_optimizer, .config with vocab_size and block_size. Positions come from the cache (kv_cache.positions(T),
one row of positions per sequence), so a left-padded prompt rotates its tokens by their real positions.

Parameter names are Hugging Face's (LlamaForCausalLM, Qwen2ForCausalLM) without the leading "model.", so a
converted checkpoint loads with load_state_dict; with tied embeddings there is no lm_head.weight. RoPE follows
Hugging Face's layout: dimension i of a head is paired with dimension i + hd/2 (rotate_half), not with its
neighbour (llama.cpp's GGUF files permute the q and k rows for the latter; pretrained.py undoes it).
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaConfig:
    vocab_size: int = 260
    block_size: int = 256            # context length
    n_layer: int = 4
    n_head: int = 4                  # query heads
    n_kv_head: int = 2               # key/value heads (grouped-query attention; n_head: plain multi-head)
    n_embd: int = 128
    intermediate_size: int = 352     # SwiGLU hidden width
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_embeddings: bool = True      # the output head is the token embedding
    qkv_bias: bool = False           # biases on q, k and v (Qwen2)

    def __post_init__(self):
        if self.n_embd % self.n_head or self.n_head % self.n_kv_head:
            raise ValueError(f"n_embd={self.n_embd} must be divisible by n_head={self.n_head}, and n_head by "
                             f"n_kv_head={self.n_kv_head}")


def rope(positions, head_dim, theta):
    """cos and sin of the rotary angles at these positions (B, T) -> each (B, 1, T, hd): dimensions i and i + hd/2
    of a head turn together by the angle pos * theta^(-2i/hd)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float) / head_dim)
    angles = positions[..., None].float() * inv_freq                                  # (B, T, hd/2)
    angles = torch.cat([angles, angles], dim=-1)[:, None]                             # (B, 1, T, hd)
    return angles.cos(), angles.sin()


def rotate(x, cos, sin):
    """Rotate each pair (x_i, x_{i+hd/2}) of x (B, H, T, hd): (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos.to(x.dtype) + torch.cat([-x2, x1], dim=-1) * sin.to(x.dtype)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        """x / sqrt(mean(x^2) + eps) * weight, the mean taken in fp32."""
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        c = config
        self.n_head, self.n_kv_head, self.head_dim = c.n_head, c.n_kv_head, c.n_embd // c.n_head
        self.layer_idx = layer_idx
        self.q_proj = nn.Linear(c.n_embd, c.n_head * self.head_dim, bias=c.qkv_bias)
        self.k_proj = nn.Linear(c.n_embd, c.n_kv_head * self.head_dim, bias=c.qkv_bias)
        self.v_proj = nn.Linear(c.n_embd, c.n_kv_head * self.head_dim, bias=c.qkv_bias)
        self.o_proj = nn.Linear(c.n_head * self.head_dim, c.n_embd, bias=False)

    def forward(self, x, cos, sin, kv_cache=None):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)       # (B, H, T, hd)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)    # (B, Hkv, T, hd)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)    # (B, Hkv, T, hd)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if kv_cache is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.n_kv_head < self.n_head)
        else:
            y = kv_cache.attend(self.layer_idx, q, k, v)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.n_head * self.head_dim))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.n_embd, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.n_embd, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))           # SwiGLU


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.input_layernorm = RMSNorm(config.n_embd, config.rms_norm_eps)
        self.self_attn = Attention(config, layer_idx)
        self.post_attention_layernorm = RMSNorm(config.n_embd, config.rms_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, kv_cache=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, kv_cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.n_embd)
        self.layers = nn.ModuleList(DecoderLayer(config, i) for i in range(config.n_layer))
        self.norm = RMSNorm(config.n_embd, config.rms_norm_eps)
        if not config.tie_embeddings:
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        for name, p in self.named_parameters():  # N(0, 0.02); residual projections 0.02 / sqrt(2 n_layer) (GPT-2)
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                residual = name.endswith(("o_proj.weight", "down_proj.weight"))
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer) if residual else 0.02)

    def output(self, x):
        """The head: x (..., n_embd) -> logits (..., vocab), through the token embedding when tied."""
        return F.linear(x, self.embed_tokens.weight) if self.config.tie_embeddings else self.lm_head(x)

    def num_params(self, non_embedding=True):
        """Parameter count; an untied token embedding is left out by default (a lookup costs no FLOPs; tied, it is
        the head and counts)."""
        n = sum(p.numel() for p in self.parameters())
        untied = non_embedding and not self.config.tie_embeddings
        return n - self.embed_tokens.weight.numel() if untied else n

    def forward(self, idx, kv_cache=None, head=True):
        """idx (B, T) -> logits (B, T, vocab), or with head=False the last layer's output (B, T, n_embd).
        With kv_cache (a KVCache or SharedPrefix), the T tokens follow what the cache holds, at its positions."""
        B, T = idx.shape
        if kv_cache is None:
            if T > self.config.block_size:
                raise ValueError(f"sequence length {T} exceeds block_size={self.config.block_size}")
            pos = torch.arange(T, device=idx.device)[None]                              # (1, T)
        else:
            pos = kv_cache.positions(T)                                                 # (B, T)
        cos, sin = rope(pos, self.config.n_embd // self.config.n_head, self.config.rope_theta)
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x, cos, sin, kv_cache)
        if kv_cache is not None:
            kv_cache.advance(T)
        return self.output(self.norm(x)) if head else x

    def logits_fp32(self, x):
        """The final norm and the head in fp32, outside any autocast: x (..., n_embd) -> logits (..., vocab)."""
        with torch.autocast(x.device.type, enabled=False):
            return self.output(self.norm(x.float()))

    def flops_per_token(self, context_len):
        """Forward FLOPs for one token attending to context_len keys: 2 per weight multiply-add, plus QK^T and AV
        over the n_head query heads (2 * 2 * n_embd * context_len per layer)."""
        c = self.config
        return 2 * self.num_params() + 4 * c.n_layer * c.n_embd * context_len

    def configure_optimizer(self, lr, weight_decay=0.0, betas=(0.9, 0.95), device_type="cpu"):
        """AdamW with weight decay on matrices and embeddings only (not on norms or biases), as the GPT's."""
        params = [p for p in self.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas, fused=device_type == "cuda")

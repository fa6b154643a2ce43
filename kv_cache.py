"""
The sampler's KV cache: keys and values for sampling S continuations of each of P prompts, the prompts stored
once and shared by their rows (sample.generate uses it; model.GPT.forward and llama.Llama.forward take it as kv_cache).
"""
import math

import torch
import torch.nn.functional as F

from model import prefill_mask, prefill_positions


class KVCache:
    """Keys and values for sampling S continuations of each of P prompts, preallocated.

    The prompts are stored once, the continuations once per row, and attention reads the prompt part as one
    shared block per prompt (a shared-prefix, or "cascade", attention), so the S rollouts of a prompt do not
    each carry a copy of it:
        prompt part: prefix_k, prefix_v (n_layer, P, Hkv, Tp, hd); prompts left-padded, start[p] = first real slot
        own part:    k, v               (n_layer, P, Hkv, S, max_new_tokens, hd); row r = p*S + s continues prompt p
    The position of prompt slot s is s - start[p]; row r's i-th generated token sits at Tp - start[p] + i.
    Both parts are laid out prompt-major with the S rows of a prompt side by side, so the prompt scores
    (P, Hkv, g*S*T, Tp) and the own scores (P, Hkv, g, S, T, e) of a step share one layout and one softmax, no copies.

    Grouped-query attention (a Llama config's n_kv_head < n_head): only the Hkv key/value heads are stored, and the
    g = H / Hkv query heads that read one key/value head are folded into its queries, (P, Hkv, g, S, T, hd), so
    nothing is copied g times. Query head h reads key/value head h // g (Hugging Face's order). A GPT has g = 1.

    static=True: every decode step has the same shapes (for torch.compile / CUDA graphs): attention reads the
    whole own buffer with a mask from the step counter `step` (a device tensor), and new keys are written at
    that index, instead of slicing the first `length` slots.
    """

    def __init__(self, config, num_prompts, prompt_len, max_new_tokens, num_samples=1, start=None,
                 device="cpu", dtype=torch.float32, static=False):
        if prompt_len + max_new_tokens > config.block_size:
            raise ValueError(f"prompt_len + max_new_tokens = {prompt_len + max_new_tokens} exceeds "
                             f"block_size={config.block_size}")
        L, hd = config.n_layer, config.n_embd // config.n_head
        Hkv = getattr(config, "n_kv_head", config.n_head)                                # key/value heads
        P, S = num_prompts, num_samples
        self.prefix_k = torch.zeros((L, P, Hkv, prompt_len, hd), device=device, dtype=dtype)
        self.prefix_v = torch.zeros_like(self.prefix_k)
        self.k = torch.zeros((L, P, Hkv, S, max_new_tokens, hd), device=device, dtype=dtype)  # zeros: a masked
        self.v = torch.zeros_like(self.k)                          # slot must hold no NaN (0 * NaN = NaN)
        self.start = (torch.zeros(P, dtype=torch.long, device=device) if start is None
                      else torch.as_tensor(start, dtype=torch.long, device=device))
        self.num_prompts, self.num_samples, self.prompt_len = P, S, prompt_len
        self.prefilled, self.length, self.max_new_tokens, self.static = False, 0, max_new_tokens, static
        # computed once per generate call, not per layer or step:
        self.first_pos = (prompt_len - self.start).repeat_interleave(S)[:, None]           # (R, 1)
        hidden = (torch.arange(prompt_len, device=device) < self.start[:, None])[:, None, None, None, None]  # pads
        self.prefix_hidden = hidden if bool(hidden.any()) else None                     # None: prompts of one length
        self.step = torch.zeros((), dtype=torch.long, device=device)  # static: tokens decoded so far
        self.slots = torch.arange(max_new_tokens, device=device)
        self.mask = None

    def positions(self, T):
        """Positions of the next T tokens, (P, T) at prefill and (R, T) after; sets the mask of this call."""
        if not self.prefilled:
            if T != self.prompt_len:
                raise ValueError(f"prefill takes the padded prompts, length {self.prompt_len}; got {T} tokens")
            self.mask = prefill_mask(self.start, T)
            return prefill_positions(self.start, T)
        if self.static:
            if T != 1:
                raise ValueError(f"a static cache decodes one token per row per call, got {T}")
            self.mask = self.slots > self.step                     # (max_new_tokens,): True = not yet written
            return self.first_pos + self.step
        if self.length + T > self.max_new_tokens:
            raise ValueError(f"KV cache overflow: {self.length} + {T} > max_new_tokens={self.max_new_tokens}")
        if T == 1:  # one new token sees all of its row's earlier tokens: no mask
            self.mask = None
            return self.first_pos + self.length
        steps = torch.arange(self.length, self.length + T, device=self.start.device)    # (T,)
        self.mask = torch.arange(self.length + T, device=steps.device)[None, :] > steps[:, None]  # True = hidden
        return self.first_pos + steps[None]

    def advance(self, T):
        if self.prefilled and self.static:
            self.step += T      # a device tensor: no Python value that changes from step to step
        elif self.prefilled:
            self.length += T
        self.prefilled = True

    def attend(self, layer, q, k, v, dropout_p=0.0):
        """Attention of T new tokens per row over its prompt (shared) and its own earlier tokens.
        q: (R, H, T, hd) with R = P * S, or (P, H, Tp, hd) at prefill; k, v the same with Hkv heads."""
        if not self.prefilled:  # the prompts: attend among themselves, keep their keys and values
            self.prefix_k[layer], self.prefix_v[layer] = k, v
            return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, enable_gqa=k.shape[1] < q.shape[1])
        P, S, Tp = self.num_prompts, self.num_samples, self.prompt_len
        R, H, T, hd = q.shape
        Hkv = k.shape[1]
        g = H // Hkv                                                                     # query heads per kv head
        q = q.view(P, S, Hkv, g, T, hd).permute(0, 2, 3, 1, 4, 5)                      # (P, Hkv, g, S, T, hd)
        k, v = (t.view(P, S, Hkv, T, hd).transpose(1, 2) for t in (k, v))                # (P, Hkv, S, T, hd)
        if self.static:
            self.k[layer].index_copy_(3, self.step.view(1), k)
            self.v[layer].index_copy_(3, self.step.view(1), v)
            ks, vs = self.k[layer], self.v[layer]                                        # (P, Hkv, S, Tmax, hd)
        else:
            e = self.length + T
            self.k[layer, :, :, :, self.length:e], self.v[layer, :, :, :, self.length:e] = k, v
            ks, vs = self.k[layer, :, :, :, :e], self.v[layer, :, :, :, :e]              # (P, Hkv, S, e, hd)
        ks, vs = ks.to(q.dtype)[:, :, None], vs.to(q.dtype)[:, :, None]                 # (P, Hkv, 1, S, e, hd)
        kp, vp = self.prefix_k[layer].to(q.dtype), self.prefix_v[layer].to(q.dtype)     # (P, Hkv, Tp, hd)
        q = q * hd ** -0.5
        # softmax over [prompt keys, own keys] jointly; the g heads and S rows of a prompt query its keys together
        sp = (q.reshape(P, Hkv, g * S * T, hd) @ kp.transpose(-1, -2)).view(P, Hkv, g, S, T, Tp)
        if self.prefix_hidden is not None:
            sp = sp.masked_fill(self.prefix_hidden, -math.inf)
        so = q @ ks.transpose(-1, -2)                                                    # (P, Hkv, g, S, T, e)
        if self.mask is not None:
            so = so.masked_fill(self.mask, -math.inf)
        a = torch.cat([sp, so], dim=-1).softmax(dim=-1).to(q.dtype)
        ap, ao = a[..., :Tp], a[..., Tp:]
        y = (ap.reshape(P, Hkv, g * S * T, Tp) @ vp).view(P, Hkv, g, S, T, hd) + ao @ vs  # (P, Hkv, g, S, T, hd)
        return y.permute(0, 3, 1, 2, 4, 5).reshape(R, H, T, hd)

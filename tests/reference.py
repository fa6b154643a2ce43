"""
Plain references the fast code is tested against (and bench/bench.py times against): written for clarity, not
speed, and independent of the code they check wherever that is possible.

    generate_naive   the sampler without a cache or batching: a full forward of the whole sequence for every new
                     token, one prompt at a time, the answer-room rule (sample.AnswerBudget) applied row by row
    pack             prompt + completion per row, right-padded, for one causal forward (token_logprobs)
    token_logprobs   log pi(y_t | x, y_<t) from that forward: what model.shared_token_logprobs must equal
    expected_best    E_w max_y w^T r(y) of one pool, the VPO set objective, by its definition
"""
import numpy as np
import torch

from model import autocast, head_logprobs
from sample import Generation, draw, sampling_logprobs
from tasks import tokenizer as tok


@torch.no_grad()
def generate_naive(model, prompts, max_new_tokens, num_samples=1, temperature=1.0, top_k=None, top_p=None,
                   stop_token=None, generator=None, uniforms=None, amp=True, budget=None, written=None):
    """sample.generate's contract, computed the slow way. The rule for a row (sample.AnswerBudget): a non-final
    answer that has written budget.tokens tokens is closed by a forced separator (log-prob 0); a sampled
    separator opens the next answer; the row ends at stop_token or when its final answer fills its room.
    Tokens after a row's end are PAD_ID and masked out; the width is the longest row (max_new_tokens if some
    row never ended). uniforms (R, >= max_new_tokens): the rows' draws, else one per row from generator."""
    device = next(model.parameters()).device
    S, rows = num_samples, []                                    # rows: (tokens, log-probs, forced, end) per row
    with autocast(device.type, amp):
        for i, p in enumerate(prompts):
            x = torch.tensor(p, dtype=torch.long, device=device).repeat(S, 1)      # (S, len(p))
            slot, used = [0] * S, [0 if written is None else int(written[i])] * S
            end, lps, forced = [None] * S, [], []
            for t in range(max_new_tokens):
                logits = model(x)[:, -1]                                            # (S, V): a full forward
                if temperature == 0:
                    ids, lp = logits.argmax(dim=-1), torch.zeros(S, device=device)
                else:
                    logp = sampling_logprobs(logits, temperature, top_k, top_p)
                    u = None if uniforms is None else uniforms[i * S:(i + 1) * S, t]
                    ids = draw(logp.exp(), generator, u)
                    lp = logp.gather(1, ids[:, None]).squeeze(1)
                ids, f = ids.tolist(), [False] * S
                for s in range(S):
                    if budget is not None and used[s] >= budget.tokens and slot[s] < budget.num_answers - 1:
                        ids[s], lp[s], f[s] = budget.sep, 0.0, True                 # the answer's room is full
                    ended = stop_token is not None and ids[s] == stop_token
                    if budget is not None:
                        if ids[s] == budget.sep and slot[s] < budget.num_answers - 1:
                            slot[s], used[s] = slot[s] + 1, 0
                        else:
                            used[s] += 1
                        ended = ended or (slot[s] == budget.num_answers - 1 and used[s] >= budget.tokens)
                    if ended and end[s] is None:
                        end[s] = t
                x = torch.cat([x, torch.tensor(ids, device=device)[:, None]], dim=1)
                lps.append(lp)
                forced.append(f)
                if all(e is not None for e in end):
                    break
            lps, forced = torch.stack(lps, dim=1), torch.tensor(forced, device=device).T    # (S, steps)
            rows += [(x[s, len(p):], lps[s], forced[s], end[s]) for s in range(S)]
    T = max(len(r[0]) for r in rows)
    out = Generation(torch.full((len(rows), T), tok.PAD_ID, dtype=torch.long, device=device),
                     torch.zeros((len(rows), T), dtype=torch.bool, device=device),
                     torch.zeros((len(rows), T), device=device), torch.zeros((len(rows), T), dtype=torch.bool,
                                                                              device=device))
    for r, (ids, lp, f, e) in enumerate(rows):
        n = T if e is None else e + 1                                # the completion: up to and including its end
        out.tokens[r, :n], out.mask[r, :n], out.logprobs[r, :n], out.forced[r, :n] = ids[:n], True, lp[:n], f[:n]
    return out


def pack(prompts, tokens, pad_id):
    """Prompt + completion per row, right-padded: -> idx (R, L) for one causal forward, and pos (R, Tc): the
    position whose logits predict completion token t of row r, len(prompts[r]) - 1 + t."""
    R, Tc = tokens.shape
    idx = torch.full((R, max(len(p) for p in prompts) + Tc - 1), pad_id, dtype=torch.long)
    pos = torch.zeros((R, Tc), dtype=torch.long)
    for r, p in enumerate(prompts):
        seq = list(p) + tokens[r, :-1].tolist()                     # the last token is a target, never an input
        idx[r, :len(seq)] = torch.tensor(seq)
        pos[r] = torch.arange(len(p) - 1, len(p) - 1 + Tc)
    return idx.to(tokens.device), pos.to(tokens.device)


def token_logprobs(model, idx, pos, tokens, temperature=1.0, amp=True):
    """log pi(y_t | x, y_<t) of each completion token, (R, Tc), from one causal forward over pack's idx."""
    with autocast(idx.device.type, amp):
        x = model(idx, head=False)                                                     # (R, L, C)
    x = x.gather(1, pos[..., None].expand(-1, -1, x.shape[-1]))                        # (R, Tc, C)
    return head_logprobs(model, x, tokens, temperature)


def expected_best(reward_vectors, weights):
    """E_w max_y w^T r(y) of one pool: (n, D) reward vectors, (N, D) weights -> float; 0 for an empty pool."""
    r, w = np.asarray(reward_vectors, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    return 0.0 if len(r) == 0 else float((w @ r.T).max(axis=1).mean())      # (1/N) sum_n max_y w_n^T r(y)

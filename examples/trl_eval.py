"""
The evaluation of examples/trl_vpo.py: completions of held-out problems sampled with transformers' generate and
mapped to the task's format, for evaluate.evaluate_texts (evaluate.py's table); and on the toy the sets the policy
writes most often, with E_w[max over the set of w^T r] under the evaluation's weights and w*^T r of the best answer
(docs/trl.md, "On a pretrained model").
"""
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # trl_tasks, beside this file
import torch  # noqa: E402

import vpo  # noqa: E402
from runs.seeding import step_seed  # noqa: E402
from trl_tasks import prompt_ids  # noqa: E402

EVAL_ROWS = 256    # completions generated at once in the evaluation


def sample_completions(model, tk, prompts, budget, samples, temperature, seed, banned=None, chat_template_kwargs=None):
    """`samples` completions of each prompt with transformers' generate at `temperature` (0: greedy), at most
    `budget` new tokens, never emitting the `banned` token ids, decoded as TRL decodes them.
    -> (texts (P*K,), prompt-major; the share of completions cut by the budget, TRL's clipped ratio)"""
    K, T = samples, temperature
    device = next(model.parameters()).device
    eos = model.generation_config.eos_token_id
    eos = [tk.eos_token_id] + [e for e in ([eos] if isinstance(eos, int) else eos or []) if e != tk.eos_token_id]
    torch.manual_seed(step_seed(seed, 8))  # HF generate samples from torch's global generator
    texts, clipped, chunk = [], 0, max(1, EVAL_ROWS // K)
    for start in range(0, len(prompts), chunk):
        ids = [prompt_ids(tk, p, chat_template_kwargs) for p in prompts[start:start + chunk]]
        width = max(map(len, ids))
        x = torch.tensor([[tk.pad_token_id] * (width - len(i)) + i for i in ids], device=device)   # left-padded
        mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids], device=device)
        with torch.no_grad():
            out = model.generate(input_ids=x, attention_mask=mask, do_sample=T > 0, temperature=T if T > 0 else None,
                                 top_k=0, top_p=1.0, min_p=None, repetition_penalty=1.0,
                                 max_new_tokens=budget, num_return_sequences=K if T > 0 else 1,
                                 suppress_tokens=banned, pad_token_id=tk.pad_token_id, eos_token_id=eos)
        if T == 0:  # greedy: every sample of a prompt is the same completion
            out = out.repeat_interleave(K, dim=0)
        new = out[:, width:]
        clipped += int((~torch.isin(new, torch.tensor(eos, device=device)).any(-1)).sum())
        texts += tk.batch_decode(new, skip_special_tokens=True)
    return texts, clipped / max(1, len(texts))


def describe(task, answers):
    """A set of answers in words, the corners and compromise named: 'left (1, 0), right (0, 1)'."""
    return ", ".join(f"{a} ({', '.join(f'{x:g}' for x in task.score(None, a).tolist())})" for a in answers) or "nothing"


def toy_sets(task, problems, texts, m, weights):
    """The toy's sets: -> (the distinct valid answers of each completion (sorted tuples), E_w max under the weights
    (N, D) (n,), w*ᵀr of the best answer (n,))"""
    K = len(texts) // len(problems)
    sets, values, best = [], [], []
    for b, problem in enumerate(problems):
        r, mask = task.score_rollouts(problem, texts[b * K:(b + 1) * K], m)                    # (K, m, D), (K, m)
        r, mask = torch.from_numpy(r), torch.from_numpy(mask)
        values.append(vpo.set_rewards(r[None], mask[None], weights[None].to(r.dtype))[0])     # E_w max_y w^T r(y)
        w_star = torch.as_tensor(task.deploy_weights, dtype=r.dtype)
        best.append(vpo.masked_max(r @ w_star, mask))                                         # max_y w*^T r(y)
        for k in range(K):
            sets.append(tuple(sorted({a for a, ok in zip(task.parse(texts[b * K + k], m), mask[k]) if ok})))
    return sets, torch.cat(values), torch.cat(best)


def print_toy_sets(task, problems, texts, m, name, weights):
    sets, values, best = toy_sets(task, problems, texts, m, weights)
    print("their sets:")
    counts = Counter(sets)
    for s, c in counts.most_common(5):
        idx = sets.index(s)
        print(f"  {c:3d}/{len(sets)}  {'{' + ', '.join(s) + '}':<24s} E_w max {values[idx]:.2f}   "
              f"w*ᵀr of best {best[idx]:.2f}")
    idx = sets.index(counts.most_common(1)[0][0])
    print(f"{name:4s} m={m}: learns {describe(task, sets[idx]):<46s} w*ᵀr of its best answer {best[idx]:.2f}   "
          f"E_w[max over its answers] {values[idx]:.2f}   (mean over samples {best.mean():.2f}, {values.mean():.2f})")

"""
The supervised warm start: RL sharpens what a model already proposes, so every RL run starts from a base
trained on the task's demonstrations (train.py --algo sft, or the cached base train.py builds by itself).

A batch holds demonstrations written with 1 answer and with num_answers answers, so one base serves both
single-answer methods (GRPO and its relatives) and multi-answer ones (VPO, Multi-RLVR). The loss is the mean
negative log-likelihood of the completion tokens, <|end|> included; the prompt is not trained on.
"""
import math

import numpy as np
import torch

from evaluate import prompt_ids
from model import pack_shared, shared_token_logprobs
from tasks import tokenizer as tok


def step_seed(*parts):
    """A deterministic 32-bit seed for one step of one phase: nothing to save, nothing to drift on resume."""
    return int(np.random.SeedSequence([abs(int(p)) for p in parts]).generate_state(1)[0])


def demonstration_batch(task, args, step, device):
    """sft_batch_size demonstrations, each an answer set of 1 or num_answers answers, as (prompts, tokens, mask)."""
    problems = task.problems("train", args.sft_batch_size, seed=step_seed(args.base_seed, 1, step))
    rng = np.random.default_rng(step_seed(args.base_seed, 2, step))
    prompts, rows = [], []
    for p in problems:
        m = int(rng.choice([1, args.num_answers]))
        # half the prompts carry a goal-conditioned weights line (w ~ Dir(1)) that the demonstration ignores, so
        # every base reads such prompts (goal_cond) without having been shown how to use them
        w = rng.dirichlet(np.ones(task.dim)) if task.dim > 1 and rng.random() < 0.5 else None
        prompts.append(prompt_ids(task, p, m, w))
        rows.append(tok.encode_special(task.demonstration(p, m, rng, style=args.warm_start)) + [tok.END_ID])
    T = max(map(len, rows))
    tokens = torch.tensor([r + [tok.END_ID] * (T - len(r)) for r in rows], device=device)
    mask = torch.tensor([[t < len(r) for t in range(T)] for r in rows], device=device)
    return prompts, tokens, mask


def sft_step(model, train_model, opt, task, args, step, device):
    """One supervised step; learning rate: linear warmup over 20 steps, then cosine from sft_lr to sft_lr / 10."""
    lr = args.sft_lr * (min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.sft_steps))))
    for group in opt.param_groups:
        group["lr"] = lr
    prompts, tokens, mask = demonstration_batch(task, args, step, device)
    # one demonstration per prompt (G = 1): the shared-prefix forward measured 10% faster than the packed one here
    # (64 maze demonstrations, fwd + bwd, 1 thread: 1.31-1.38 s vs 1.46-1.51 s), and it is the one RL uses
    logp = shared_token_logprobs(train_model, pack_shared(prompts, tokens, 1, tok.PAD_ID), 1.0, args.dtype != "float32")
    loss = -(logp * mask).sum() / mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
    opt.step()
    return {"loss": loss.item(), "lr": lr, "tokens": int(mask.sum())}

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
    """sft_batch_size demonstrations as (prompts, tokens, mask): sft_batch_size / sft_group problems, each asked
    for 1 or num_answers answers, with sft_group independent demonstrations of it (rows prompt-major, as the
    sampler's), so each prompt is encoded once for its sft_group completions (model.pack_shared)."""
    g = args.sft_group
    problems = task.problems("train", args.sft_batch_size // g, seed=step_seed(args.base_seed, 1, step))
    rng = np.random.default_rng(step_seed(args.base_seed, 2, step))
    prompts, rows = [], []
    for p in problems:
        m = int(rng.choice([1, args.num_answers]))
        # half the prompts carry a goal-conditioned weights line (w ~ Dir(1)) that the demonstrations ignore, so
        # every base reads such prompts (goal_cond) without having been shown how to use them
        w = rng.dirichlet(np.ones(task.dim)) if task.dim > 1 and rng.random() < 0.5 else None
        prompts.append(prompt_ids(task, p, m, w))
        rows += [tok.encode_special(task.demonstration(p, m, rng, style=args.warm_start)) + [tok.END_ID]
                 for _ in range(g)]
    lens = torch.tensor([len(r) for r in rows])
    tokens = torch.tensor([r + [tok.END_ID] * (int(lens.max()) - len(r)) for r in rows])
    mask = torch.arange(tokens.shape[1])[None, :] < lens[:, None]                  # (B, T): each row's own tokens
    return prompts, tokens.to(device), mask.to(device)


def sft_step(model, train_model, opt, task, args, step, device):
    """One supervised step; learning rate: linear warmup over 20 steps, then cosine from sft_lr to sft_lr / 10."""
    lr = args.sft_lr * (min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.sft_steps))))
    for group in opt.param_groups:
        group["lr"] = lr
    prompts, tokens, mask = demonstration_batch(task, args, step, device)
    # sft_group demonstrations per prompt share its keys and values: the prompt (117 tokens on the maze, longer
    # than its answers) is encoded once per group, not once per demonstration
    batch = pack_shared(prompts, tokens, args.sft_group, tok.PAD_ID)
    logp = shared_token_logprobs(train_model, batch, 1.0, args.dtype != "float32")
    loss = -(logp * mask).sum() / mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
    opt.step()
    return {"loss": loss.item(), "lr": lr, "tokens": int(mask.sum())}

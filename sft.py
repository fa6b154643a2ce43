"""
The supervised warm start: RL sharpens what a model already proposes, so every RL run starts from a base
trained on the task's demonstrations (train.py --algo sft, or the cached base train.py builds by itself).

A batch holds demonstrations written with 1 answer and with num_answers answers, so one base serves both
single-answer methods (GRPO and its relatives) and multi-answer ones (VPO, Multi-RLVR). The loss is the mean
negative log-likelihood of the completion tokens, <|end|> included; the prompt is not trained on.
"""
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

import dist
from evaluate import prompt_ids
from model import pack_shared, shared_token_logprobs
from sample import step_seed  # noqa: F401 (also imported from here)
from tasks import tokenizer as tok


def demonstration_batch(task, args, step, device="cpu", indices=None):
    """The step's demonstrations as (prompts, tokens, mask): sft_batch_size / sft_group problems (indices: which
    of them; default all), each asked for 1 or num_answers answers, with sft_group independent demonstrations of
    it (rows prompt-major, as the sampler's), so each prompt is encoded once for its sft_group completions
    (model.pack_shared). Problem i draws from its own seed (base_seed, step, i): the same whichever process
    builds it."""
    g = args.sft_group
    problems = task.problems("train", args.sft_batch_size // g, seed=step_seed(args.base_seed, 1, step))
    prompts, rows = [], []
    for i in range(args.sft_batch_size // g) if indices is None else indices:
        p, rng = problems[i], np.random.default_rng(step_seed(args.base_seed, 2, step, i))
        m = int(rng.choice([1, args.num_answers]))
        # goal_cond's base: every prompt carries a weights line (w ~ Dir(1)) that the demonstrations ignore, so
        # the base reads such prompts without having been shown how to use them
        w = rng.dirichlet(np.ones(task.dim)) if getattr(args, "goal_prompts", False) else None
        prompts.append(prompt_ids(task, p, m, w))
        rows += [tok.encode_special(task.demonstration(p, m, rng, style=args.warm_start)) + [tok.END_ID]
                 for _ in range(g)]
    lens = torch.tensor([len(r) for r in rows])
    tokens = torch.tensor([r + [tok.END_ID] * (int(lens.max()) - len(r)) for r in rows])
    mask = torch.arange(tokens.shape[1])[None, :] < lens[:, None]                  # (B, T): each row's own tokens
    return prompts, tokens.to(device), mask.to(device)


class Prefetch:
    """make(step) for steps start..stop-1, each built in a background thread while the step before it trains.
    A batch depends on its step alone, so the result does not depend on the timing."""

    def __init__(self, make, start, stop):
        self.make, self.stop, self.pool = make, stop, ThreadPoolExecutor(max_workers=1)
        self.next = (start, self.pool.submit(make, start)) if start < stop else None

    def get(self, step):
        assert self.next is not None and self.next[0] == step, f"steps are taken in order, asked for {step}"
        batch = self.next[1].result()
        self.next = (step + 1, self.pool.submit(self.make, step + 1)) if step + 1 < self.stop else None
        return batch

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


def sft_step(model, train_model, opt, task, args, step, device, batch=None):
    """One supervised step on batch = demonstration_batch(...) (default: built now; this process's share under
    torchrun); learning rate: linear warmup over 20 steps, then cosine from sft_lr to sft_lr / 10. The loss is the
    mean NLL over the tokens of every process: sum over this process's tokens / all processes' token count,
    gradients summed."""
    lr = args.sft_lr * (min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.sft_steps))))
    for group in opt.param_groups:
        group["lr"] = lr
    prompts, tokens, mask = batch or demonstration_batch(task, args, step, device,
                                                         dist.shard(args.sft_batch_size // args.sft_group))
    tokens, mask = tokens.to(device, non_blocking=True), mask.to(device, non_blocking=True)
    # sft_group demonstrations per prompt share its keys and values: the prompt (117 tokens on the maze, longer
    # than its answers) is encoded once per group, not once per demonstration
    batch = pack_shared(prompts, tokens, args.sft_group, tok.PAD_ID)
    logp = shared_token_logprobs(train_model, batch, 1.0, args.dtype != "float32")
    count = dist.all_sum(mask.sum())                                                 # tokens of every process
    loss = -(logp * mask).sum() / count
    opt.zero_grad(set_to_none=True)
    loss.backward()
    dist.sum_gradients(model)
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
    opt.step()
    return {"loss": float(dist.all_sum(loss.detach())), "lr": lr, "tokens": int(count)}

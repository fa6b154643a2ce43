"""
The supervised warm start: RL sharpens what a model already proposes, so every RL run starts from a base
trained on the task's demonstrations (train.py builds and caches it by itself; train.py --algo sft is a run of it).

A batch holds demonstrations written with 1 answer and with num_answers answers, so one base serves both
single-answer methods (GRPO and its relatives) and multi-answer ones (VPO, Multi-RLVR). The loss is the mean
negative log-likelihood of the completion tokens, <|end|> included; the prompt is not trained on. AdamW
(0.9, 0.95), no weight decay; learning rate: linear warmup over 20 steps, then cosine from lr to lr / 10.

    cfg = SFTConfig(steps=300, batch_size=64, lr=2e-3, style="routes")
    seconds = train_base(model, task, cfg, "out/base/maze-KEY", device)
"""
import contextlib
import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch
from tqdm import tqdm

from model import GPT, pack_shared, shared_token_logprobs
from runs import dist
from runs.cli import load_model
from runs.dirs import base_dir, exclusive, save_run_checkpoint, truncate_logs
from runs.seeding import step_seed
from sample import prompt_ids
from tasks import tokenizer as tok


@dataclass(frozen=True)
class SFTConfig:
    steps: int = 300            # supervised steps
    batch_size: int = 64        # demonstrations per step (all processes)
    lr: float = 2e-3
    group: int = 1              # demonstrations per problem in a batch (its prompt encoded once for them)
    base_seed: int = 0          # the problems and demonstrations of step s: seeded by (base_seed, s, i)
    num_answers: int = 3        # a demonstration shows 1 or num_answers answers
    style: str = "diverse"      # Task.demonstration style
    grad_clip: float = 1.0
    goal_prompts: bool = False  # goal_cond's base: a weights line in every prompt
    amp: bool = True            # bf16 autocast on CUDA

    @classmethod
    def from_args(cls, args, goal_prompts=False):
        """From train.py's flags (sft_steps -> steps, ..., warm_start -> style)."""
        return cls(args.sft_steps, args.sft_batch_size, args.sft_lr, args.sft_group, args.base_seed,
                   args.num_answers, args.warm_start, args.grad_clip, goal_prompts, args.dtype != "float32")


def demonstration_batch(task, cfg, step, device="cpu", indices=None):
    """The step's demonstrations as (prompts, tokens, mask): batch_size / group problems (indices: which of them;
    default all), each asked for 1 or num_answers answers, with `group` independent demonstrations of it (rows
    prompt-major, as the sampler's), so each prompt is encoded once for its group of completions
    (model.pack_shared). Problem i draws from its own seed (base_seed, step, i): the same whichever process
    builds it."""
    g = cfg.group
    problems = task.problems("train", cfg.batch_size // g, seed=step_seed(cfg.base_seed, 1, step))
    prompts, rows = [], []
    for i in range(cfg.batch_size // g) if indices is None else indices:
        p, rng = problems[i], np.random.default_rng(step_seed(cfg.base_seed, 2, step, i))
        m = int(rng.choice([1, cfg.num_answers]))
        # goal_cond's base: every prompt carries a weights line (w ~ Dir(1)) that the demonstrations ignore, so
        # the base reads such prompts without having been shown how to use them
        w = rng.dirichlet(np.ones(task.dim)) if cfg.goal_prompts else None
        prompts.append(prompt_ids(task, p, m, w))
        rows += [task.demonstration_ids(p, m, rng, style=cfg.style) for _ in range(g)]   # closed by the stop token
    lens = torch.tensor([len(r) for r in rows])
    tokens = torch.tensor([r + [task.stop_id] * (int(lens.max()) - len(r)) for r in rows])
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


def sft_step(model, train_model, opt, task, cfg, step, device, batch=None):
    """One supervised step on batch = demonstration_batch(...) (default: built now; this process's share under
    torchrun). The loss is the mean NLL over the tokens of every process: sum over this process's tokens / all
    processes' token count, gradients summed."""
    lr = cfg.lr * (min(1.0, (step + 1) / 20) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / cfg.steps))))
    for group in opt.param_groups:
        group["lr"] = lr
    prompts, tokens, mask = batch or demonstration_batch(task, cfg, step, device, dist.shard(cfg.batch_size // cfg.group))
    tokens, mask = tokens.to(device, non_blocking=True), mask.to(device, non_blocking=True)
    # `group` demonstrations per prompt share its keys and values: the prompt (117 tokens on the maze, longer
    # than its answers) is encoded once per group, not once per demonstration
    batch = pack_shared(prompts, tokens, cfg.group, tok.PAD_ID)
    logp = shared_token_logprobs(train_model, batch, 1.0, cfg.amp)
    count = dist.all_sum(mask.sum())                                                 # tokens of every process
    loss = -(logp * mask).sum() / count
    opt.zero_grad(set_to_none=True)
    loss.backward()
    dist.sum_gradients(model)
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    return {"loss": float(dist.all_sum(loss.detach())), "lr": lr, "tokens": int(count)}


def train_base(model, task, cfg, directory, device, state=None, quiet=True, ckpt_name="ckpt.pt", meta=None,
               ckpt_every=25, compile=False, on_eval=None, eval_every=0):
    """The warm-start loop: cfg.steps supervised steps in directory (log.jsonl), checkpointing to
    directory/ckpt_name every ckpt_every steps and at the end (meta: what else the checkpoint holds, e.g. the run's
    arguments). state: a checkpoint to resume from. on_eval(step): called every eval_every steps (--algo sft runs
    evaluate there). -> seconds."""
    opt = model.configure_optimizer(cfg.lr, 0.0, (0.9, 0.95), device_type=device.type)
    start = 0 if state is None else state["step"]  # no RNG state to restore: every draw is seeded by its step
    if state is not None:
        opt.load_state_dict(state["optimizer"])
    train_model = torch.compile(model) if compile else model
    main = dist.is_main()
    if main:
        truncate_logs(directory, start)
    t_start = time.perf_counter() - (state or {}).get("seconds", 0.0)
    # the next step's demonstrations are built in a background thread while this step trains
    demos = Prefetch(lambda s: demonstration_batch(task, cfg, s, "cpu", dist.shard(cfg.batch_size // cfg.group)),
                     start, cfg.steps)

    def checkpoint(step):
        save_run_checkpoint(os.path.join(directory, ckpt_name), model, opt, step, meta or {}, device,
                            time.perf_counter() - t_start)

    model.train()
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc=f"sft {task.name}",
               disable=quiet or not main, dynamic_ncols=True)
    try:
        for step in bar:
            row = {"step": step + 1, **sft_step(model, train_model, opt, task, cfg, step, device, demos.get(step))}
            bar.set_postfix(loss=f"{row['loss']:.3f}")
            row["seconds"] = time.perf_counter() - t_start
            if main:
                with open(os.path.join(directory, "log.jsonl"), "a") as f:
                    f.write(json.dumps(row) + "\n")
            if step + 1 == cfg.steps:
                break
            if on_eval and eval_every and (step + 1) % eval_every == 0:
                on_eval(step + 1)
                checkpoint(step + 1)
            elif ckpt_every and (step + 1) % ckpt_every == 0:
                checkpoint(step + 1)
    finally:
        demos.close()
    bar.close()
    checkpoint(cfg.steps)
    return time.perf_counter() - t_start


def new_model(config, base_seed, device):
    """A fresh GPT: the initialization seeded by base_seed (everything later uses explicit generators)."""
    torch.manual_seed(base_seed)
    return GPT(config).to(device)


def warm_start(task_name, task, task_opt, config, cfg, out_dir, device, quiet=True, compile=False, meta=None,
               ckpt_every=25, start=None, source=None):
    """The cached base for this task, model and warm start, BASE/ckpt.pt (BASE = runs.dirs.base_dir), trained
    here if missing, from a fresh GPT of config, or from `start`, a pretrained model whose weights have the digest
    `source` (runs.dirs.state_digest; part of the cache key). The run holding BASE/.lock trains it, checkpointing
    to BASE/partial.pt (a killed warm start resumes from there); ckpt.pt appears by an atomic rename when complete.
    A concurrent run waits for the lock, then uses it. Under torchrun rank 0 alone looks, takes the lock and writes;
    every rank trains its share."""
    directory = base_dir(out_dir, task_name, task_opt, config, cfg, device, source)
    path, partial = os.path.join(directory, "ckpt.pt"), os.path.join(directory, "partial.pt")
    main = dist.is_main()
    if dist.broadcast(os.path.isfile(path) if main else None):
        return path
    with contextlib.ExitStack() as lock:
        if main:
            lock.enter_context(exclusive(directory, on_wait=lambda: print(f"warm start: another run is training "
                                                                          f"{directory}; waiting")))
        if dist.broadcast(os.path.isfile(path) if main else None):  # the run we waited for trained it
            return path
        model, state = (new_model(config, cfg.base_seed, device) if start is None else start), None
        if dist.broadcast(os.path.isfile(partial) if main else None):
            saved, state = load_model(partial, device, need=("step", "optimizer"))
            if state.get("device", device.type) == device.type:  # else its optimizer is another device's: start over
                model = saved
            else:
                state = None
        done = state["step"] if state else 0
        if main:
            print(f"warm start: no cached base at {path}; training it ({cfg.steps} supervised steps"
                  f"{f', resuming at step {done}' if done else ''}, {dist.world()} process(es))")
        seconds = train_base(model, task, cfg, directory, device, state, quiet, "partial.pt", meta, ckpt_every,
                             compile=compile)
        if main:
            os.replace(partial, path)
        dist.barrier()
    if main:
        print(f"warm start: {cfg.steps} steps in {seconds:.0f} s -> {path}")
    return path

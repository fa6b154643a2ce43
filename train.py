"""
Train a small GPT with VPO, GRPO or one of the paper's baselines on a vector-reward task, then evaluate it.

    python train.py --algo vpo                            # the default run (maze), warm start included
    python train.py --algo grpo --match_budget            # GRPO from the same cached base, same answer budget
    python train.py --algo vpo --task toy --steps 60      # the authors' toy example through the real GPT

1. Warm start (sft.py): RL sharpens what a model already proposes, so every RL run starts from a base trained
   on the task's demonstrations, cached in out_dir/base/ so that GRPO and VPO runs share it.
2. RL (rl_step below): --batch_size train problems, G rollouts each (m answers per rollout for the set
   methods), rewards from the task, one advantage per rollout (vpo.METHODS), one PPO epoch of vpo.policy_loss.
3. Evaluation on held-out problems (evaluate.py): best@k, pass@k, E_w[best@k], diversity, at T = 0.7.
Output in out_dir/run_name: ckpt.pt, log.jsonl, eval.jsonl, summary.json and three figures. Every draw is
seeded by (seed, step, prompt index) (runs/seeding.py), so --resume continues a run bit for bit. The checks of
the command line, run directories, torchrun and the statistics of each step's log row: runs/.
"""
import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, fields
from typing import Optional

import torch
from tqdm import tqdm

import vpo
from evaluate import evaluate, report
from model import GPTConfig, pack_shared, save_checkpoint, shared_token_logprobs
from runs import dist
from runs.checks import prepare
from runs.cli import COUNT, PROBLEMS, SEED, TrainParser, UsageError, add_device_flags, answers_per_rollout, \
    eval_weights, geometry_of, is_pretrained, load_model, load_pretrained_model, number, set_deterministic, task_name
from runs.dirs import (base_dir, commit, create_run_dir, machine, pretrained_key, save_run_checkpoint, state_digest,
                       truncate_logs, weights_digest)
from runs.seeding import prompt_weights, step_seed
from runs.steplog import step_log
from sample import rollout
from sft import SFTConfig, new_model, train_base, warm_start
from tasks import TASKS
from tasks import tokenizer as tok
from tasks.geometry import parse_geometry

ALGOS = ("sft",) + tuple(vpo.METHODS)
WARM_STARTS = ("diverse", "routes")  # demonstration styles (tasks.Task.demonstration); routes: maze only
K_FACTORS = (1, 2, 4, 8, 16)  # best@k at k = num_answers * these
# what --resume may change
RESUMABLE = ("steps", "device", "quiet", "no_figures", "ckpt_every", "eval_every", "deterministic")
POSITIVE, NONNEGATIVE = number(float, above=0), number(float, 0)
LOG_WEIGHTS = 100  # N of the logged set_reward: fixed Dir(1) draws, the same for every method and run


def readers(option):
    """The methods that read a flag of vpo.OPTIONS (the others refuse it: runs/checks.py)."""
    return "read by " + ", ".join(a for a, method in vpo.METHODS.items() if option in method.options)


def get_parser():
    p = TrainParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument_group("run")
    a.add_argument("--algo", default="vpo", choices=ALGOS, help="training method (vpo.METHODS, or sft alone)")
    a.add_argument("--task", default="maze", type=task_name,
                   help=f"vector-reward task: {', '.join(TASKS)}, or MODULE:CLASS (a tasks.Task subclass defined "
                        "elsewhere, importable from the Python path)")
    a.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE",
                   help="task option, e.g. num_tests=6 for code or answer_tokens=40 for any task (repeatable)")
    a.add_argument("--seed", type=SEED, default=0, help="seed of the RL run (problems, sampling, weights)")
    a.add_argument("--out_dir", default="out", help="root of run directories and of the cached warm starts")
    a.add_argument("--run_name", default=None, help="run directory name (default: ALGO-TASK-sSEED)")
    a.add_argument("--init", default=None,
                   help="start RL from this checkpoint instead of the cached warm start; or a pretrained model "
                        "(smollm2, FILE.gguf or a Hugging Face folder: docs/pretrained.md), warm-started on the "
                        "task's demonstrations first")
    a.add_argument("--warm_start_digest", default=None, metavar="HEX", help="refuse to start unless the warm start's "
                   "weights have this digest (summary.json's \"warm_start\"; results.compare sets it from a seed's "
                   "committed runs)")
    a.add_argument("--resume", action="store_true", help=f"continue the run with its saved settings; only "
                   f"{', '.join('--' + k for k in RESUMABLE)} may change (--steps not below the checkpoint's)")
    a.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    a.add_argument("--ckpt_every", type=number(int, 0), default=25, help="also checkpoint every N steps, warm start too")
    add_device_flags(a, "auto: bf16 autocast on CUDA, fp32 elsewhere")
    a.add_argument("--compile", action="store_true", help="torch.compile the training forward (opt-in)")
    a.add_argument("--deterministic", action="store_true", help="CUDA: deterministic kernels (slower)")
    a = p.add_argument_group("model (used when training a base from scratch)")
    a.add_argument("--n_layer", type=COUNT, default=4, help="transformer blocks")
    a.add_argument("--n_head", type=COUNT, default=4, help="attention heads")
    a.add_argument("--n_embd", type=COUNT, default=128, help="model width")
    a.add_argument("--block_size", type=COUNT, default=256, help="longest prompt + completion, in tokens")
    a = p.add_argument_group("warm start (supervised on demonstrations, sft.py)")
    a.add_argument("--sft_steps", type=COUNT, default=None,
                   help="supervised steps (default: the task's warm_start_steps, 300, code 1500; 30 from a pretrained "
                        "--init)")
    a.add_argument("--sft_batch_size", type=COUNT, default=None,
                   help="demonstrations per step (default 64; 8 from a pretrained --init)")
    a.add_argument("--sft_lr", type=number(float, high=1, above=0), default=None,
                   help="peak lr, cosine to 10%% (default 2e-3; 1e-4 from a pretrained --init)")
    a.add_argument("--sft_group", type=COUNT, default=None,
                   help="demonstrations per problem in a batch (default 1; 4 from a pretrained --init)")
    a.add_argument("--base_seed", type=SEED, default=0, help="seed of the warm start (shared by all RL seeds)")
    a.add_argument("--warm_start", default="auto", choices=("auto",) + WARM_STARTS,
                   help="diverse (answers that cover the trade-offs) or routes (maze: routes chosen without looking "
                        "at the items); auto: routes where the task has them, else diverse")
    a = p.add_argument_group("RL (a flag the chosen method does not read is refused: vpo.METHODS[algo].options)")
    a.add_argument("--steps", type=COUNT, default=150, help="RL steps")
    a.add_argument("--batch_size", type=COUNT, default=8, help="prompts per step")
    a.add_argument("--group_size", type=number(int, 2), default=8, help="G: rollouts per prompt (>= 2)")
    a.add_argument("--num_answers", type=COUNT, default=3, help="m: answers per rollout of the set methods")
    a.add_argument("--match_budget", action="store_true",
                   help=f"single-answer methods get m x G rollouts ({readers('match_budget')})")
    a.add_argument("--reward_geometry", default="", metavar="KIND=VALUE",
                   help="the reward vector the vector methods see, w*ᵀr unchanged: collinear=RHO (0 <= RHO < 1), "
                        f"merge=A+B[,C+D], repeat=A, with the task's dimension names ({readers('reward_geometry')})")
    a.add_argument("--num_weights", type=COUNT, default=100,
                   help=f"N: weight draws per prompt of the set reward ({readers('num_weights')}); the logged "
                        f"set_reward uses the same {LOG_WEIGHTS} fixed Dir(1) draws for every run")
    a.add_argument("--alpha", type=POSITIVE, default=1.0,
                   help=f"Dirichlet concentration of the drawn weights ({readers('alpha')})")
    a.add_argument("--weight_sampler", default="iid", choices=("iid", "sobol"),
                   help=f"how the weights are drawn: iid, or sobol (alpha = 1 only) ({readers('weight_sampler')})")
    a.add_argument("--max_at_k", type=int, default=None,
                   help=f"k of Max@k (default max(2, G // 2), < G) ({readers('max_at_k')})")
    a.add_argument("--scale", default="group", choices=vpo.SCALES,
                   help=f"advantage std: group, batch or none ({readers('scale')})")
    a.add_argument("--lr", type=number(float, high=1, above=0), default=None,
                   help="AdamW learning rate, constant (default 3e-5; 1e-5 from a pretrained --init)")
    a.add_argument("--warmup_steps", type=number(int, 0), default=0, help="linear learning-rate warmup, in steps")
    a.add_argument("--beta2", type=number(float, high=1, above=0), default=0.999, help="AdamW beta2 (the authors')")
    a.add_argument("--weight_decay", type=NONNEGATIVE, default=0.01, help="AdamW weight decay (the authors')")
    a.add_argument("--temperature", type=number(float, 0.01), default=1.0,
                   help="rollout sampling temperature, at least 0.01 (the loss divides the logits by it too)")
    a.add_argument("--kl_coef", type=NONNEGATIVE, default=1e-3, help="k3 KL to the frozen base, as a loss term")
    a.add_argument("--clip", type=POSITIVE, default=0.2, help="PPO clip range (low and high)")
    a.add_argument("--dual_clip", type=number(float, above=1), default=3.0, help="dual clip c > 1 (A < 0)")
    a.add_argument("--agg", default="token-mean", choices=vpo.AGGS, help="loss aggregation over tokens")
    a.add_argument("--minibatches", type=COUNT, default=2, help="updates per step (one PPO epoch)")
    a.add_argument("--grad_clip", type=POSITIVE, default=1.0, help="gradient-norm clip (warm start too)")
    a = p.add_argument_group("evaluation")
    a.add_argument("--eval_every", type=number(int, 0), default=50, help="evaluate every N steps (0: at the end)")
    a.add_argument("--eval_problems", type=PROBLEMS, default=64, help="held-out test problems")
    a.add_argument("--eval_answers", type=COUNT, default=96, help="answers sampled per test problem")
    a.add_argument("--eval_temperature", type=NONNEGATIVE, default=0.7, help="sampling temperature at evaluation")
    a.add_argument("--keep_eval_ckpts", action="store_true", help="keep the weights of every mid-run evaluation")
    a.add_argument("--eval_at_start", action="store_true",
                   help="with --eval_every N: evaluate the starting weights too, as step 0 (an early stop's candidate)")
    a.add_argument("--no_base_eval", action="store_true", help="skip the final evaluation of the starting model")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    a.add_argument("--no_figures", action="store_true",
                   help="skip the run's figures (over a third of a tiny run's time; for sweeps drawing their own)")
    return p


@dataclass(frozen=True)
class RLConfig:
    """What one RL step reads: the RL flags of train.py, same names and defaults."""
    algo: str = "vpo"
    seed: int = 0
    batch_size: int = 8                        # B prompts per step
    group_size: int = 8                        # G rollouts per prompt (x m with match_budget, single-answer)
    num_answers: int = 3                       # m answers per rollout of the set methods
    match_budget: bool = False
    reward_geometry: str = ""                  # tasks.geometry.parse_geometry's spec ("": the task's vector)
    num_weights: int = 100                     # N weight draws per prompt (VPO)
    alpha: float = 1.0                         # Dirichlet concentration
    weight_sampler: str = "iid"
    max_at_k: Optional[int] = None
    scale: str = "group"                       # the advantage's std: group, batch or none
    lr: float = 3e-5
    warmup_steps: int = 0
    temperature: float = 1.0                   # rollouts, and the log-probs of the loss
    kl_coef: float = 1e-3
    clip: float = 0.2
    dual_clip: float = 3.0
    agg: str = "token-mean"
    minibatches: int = 2                       # one PPO epoch in this many updates
    grad_clip: float = 1.0
    dtype: str = "auto"                        # float32: no bf16 autocast on CUDA

    @classmethod
    def from_args(cls, args):
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})


def rl_step(model, train_model, ref_model, opt, task, cfg, step, log_weights, device):
    """One RL step: sample, score, one advantage per rollout, one PPO epoch in cfg.minibatches updates. -> a log
    dict (runs/steplog.py: step_log). Under torchrun this process samples its share of the prompt groups
    (dist.shard_groups), the rewards are gathered so that every process computes the whole batch's advantages,
    and gradients are summed."""
    t0 = time.perf_counter()
    method, B, M, amp = vpo.METHODS[cfg.algo], cfg.batch_size, cfg.minibatches, cfg.dtype != "float32"
    m = cfg.num_answers if method.multi_answer else 1                               # answers per rollout
    G = vpo.rollouts_per_prompt(cfg.algo, cfg.group_size, cfg.num_answers, cfg.match_budget)
    for group in opt.param_groups:  # constant (the authors'), after an optional linear warmup
        group["lr"] = cfg.lr * min(1.0, (step + 1) / max(cfg.warmup_steps, 1))
    # 1. rollout: G completions of m answers for each of this process's prompts, every answer in its own room
    mine = dist.shard_groups(B, M)                                                   # all B in one process
    problems = task.problems("train", B, seed=step_seed(cfg.seed, 3, step))
    problems = [problems[b] for b in mine]
    geometry = parse_geometry(cfg.reward_geometry, task.objectives, task.deploy_weights)   # checked up front
    w = method_weights(method.weights, cfg, step, geometry.dim(task.dim))  # VPO's N per prompt, one, or None
    seeds = [step_seed(cfg.seed, 4, step, b) for b in mine]                          # prompt b's sampling stream
    model.eval()
    gen, prompts, texts, rewards, mask = rollout(model, task, problems, m, G, cfg.temperature, seeds=seeds, amp=amp,
                                                 weights=w[mine] if method.weights == "prompt" else None)
    model.train()
    # 2. rewards r(y) (B, G, m, D) and the valid answers (B, G, m), of the whole batch
    all_rewards, all_mask = dist.gather_groups(rewards, B, M), dist.gather_groups(mask, B, M)
    # 3. the advantage: one scalar per rollout, A (B, G), from the score s (B, G) the method normalizes, on the
    #    vector the method sees (with --reward_geometry reshaped, w*ᵀr unchanged; the logs keep the task's)
    seen, w_star = geometry.apply(all_rewards, task.deploy_weights)
    adv, scores = method.advantages(seen, all_mask, w_star, w, cfg)
    adv = adv[mine].to(device).reshape(-1)                                           # this process's rows (R,)
    # 4. one PPO epoch of vpo.policy_loss over the tokens the policy sampled (not the separators the sampler
    #    forced), each prompt encoded once (pack_shared); rows are prompt-major, so a minibatch holds whole prompts
    #    when M divides B (the default; else a prompt split over two minibatches is encoded in each)
    batch, tmask = pack_shared(prompts, gen.tokens, G, tok.PAD_ID), gen.sampled                # tmask (R, Tc)
    chunks = torch.arange(len(adv), device=device).chunk(M)  # minibatch k of every process = one's minibatch k
    with torch.no_grad():  # the frozen base's log-probs (the KL term), and the old policy's for minibatches 1..
        ref = shared_token_logprobs(ref_model, batch, cfg.temperature, amp) if cfg.kl_coef else None
        later = torch.cat(chunks[1:]) if len(chunks) > 1 else None     # (minibatch 0 is scored before any update)
        old = None if later is None else shared_token_logprobs(model, batch.select(later), cfg.temperature, amp)
    losses = []
    for i, rows in enumerate(chunks):
        logp = shared_token_logprobs(train_model, batch.select(rows), cfg.temperature, amp)
        old_rows = logp.detach() if i == 0 else old[rows - len(chunks[0])]
        loss, stats = vpo.policy_loss(logp, old_rows, adv[rows], tmask[rows], cfg.clip, cfg.clip, cfg.dual_clip,
                                      None if ref is None else ref[rows], cfg.kl_coef, cfg.agg)
        share = dist.loss_share(tmask[rows], cfg.agg)                                # 1 in one process
        opt.zero_grad(set_to_none=True)
        (loss * share).backward()
        dist.sum_gradients(model)                                                    # the whole minibatch's gradient
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        losses.append((stats, share))
    return step_log(step, cfg, task, problems, gen, texts, m, rewards, mask, all_rewards, all_mask, scores, losses,
                    log_weights, t0)


def method_weights(kind, cfg, step, D):
    """The weights a method draws for a step's B prompts (vpo.Method.weights), prompt b's from its own seed:
    "N": VPO's N draws w ~ Dir(alpha) (B, N, D); "1": one w_b (B, D), in the reward only; "prompt": one w_b (B, D),
    written into the prompt too (goal-conditioned); None: nothing."""
    if kind == "N":
        return prompt_weights(cfg.seed, 5, step, cfg.batch_size, cfg.num_weights, D, cfg.alpha, cfg.weight_sampler)
    if kind in ("1", "prompt"):
        stream = 5 if kind == "1" else 6
        return prompt_weights(cfg.seed, stream, step, cfg.batch_size, 1, D, cfg.alpha, cfg.weight_sampler)[:, 0]
    return None


def train(args, task, model, directory, device, state=None, quiet=False):
    """The RL loop of one run, in directory. state: a loaded checkpoint to resume from. Checkpoints every
    --ckpt_every steps, at evaluations and at the end. -> seconds."""
    cfg = RLConfig.from_args(args)
    # the authors' AdamW (0.9, 0.999), weight decay 0.01, constant learning rate
    opt = model.configure_optimizer(args.lr, args.weight_decay, (0.9, args.beta2), device_type=device.type)
    start = 0  # no RNG state to restore: every draw is seeded by (seed, step, index)
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        if dist.is_main():
            print(f"resuming {directory} from its checkpoint at step {start} of {args.steps}", flush=True)
    ref_model = load_model(args.init_path, device)[0].eval().requires_grad_(False) if args.kl_coef else None
    train_model = torch.compile(model) if args.compile else model
    log_weights = vpo.sample_weights(1, LOG_WEIGHTS, task.dim, generator=torch.Generator().manual_seed(0))  # (1, N, D)
    main = dist.is_main()  # rank 0 alone writes; the others wait for it at the checkpoints
    if main:
        truncate_logs(directory, start)
    ks, eval_problems = [args.num_answers * f for f in K_FACTORS], task.problems("test", args.eval_problems, seed=0)
    t_start = time.perf_counter() - (state or {}).get("seconds", 0.0)

    def checkpoint(step):
        save_run_checkpoint(os.path.join(directory, "ckpt.pt"), model, opt, step, {"args": vars(args)}, device,
                            time.perf_counter() - t_start)

    if args.eval_at_start and args.eval_every and start == 0:   # the warm start itself, as step 0
        evaluate_during(args, task, model, directory, device, eval_problems, ks, 0)
    model.train()
    bar = tqdm(range(start, args.steps), initial=start, total=args.steps, desc=f"{args.algo} {args.task}",
               disable=quiet or not main, dynamic_ncols=True)
    for step in bar:
        row = rl_step(model, train_model, ref_model, opt, task, cfg, step, log_weights, device)
        bar.set_postfix(reward=f"{row['deploy_reward']:.3f}", set=f"{row['set_reward']:.3f}",
                        div=f"{row['diversity']:.3f}", kl=f"{row['kl']:.4f}")
        row["seconds"] = time.perf_counter() - t_start
        if main:
            with open(os.path.join(directory, "log.jsonl"), "a") as f:
                f.write(json.dumps(row) + "\n")
        if step + 1 == args.steps:
            break
        if args.eval_every and (step + 1) % args.eval_every == 0:
            evaluate_during(args, task, model, directory, device, eval_problems, ks, step + 1)
            checkpoint(step + 1)
        elif args.ckpt_every and (step + 1) % args.ckpt_every == 0:
            checkpoint(step + 1)
    bar.close()
    checkpoint(args.steps)
    return time.perf_counter() - t_start


def evaluate_during(args, task, model, directory, device, problems, ks, step):
    """A mid-run evaluation on the held-out problems -> eval.jsonl (and, with --keep_eval_ckpts, the weights)."""
    m = answers_per_rollout(args.algo, args.num_answers)
    metrics, _ = evaluate(model, task, problems, m, ks, args.eval_answers, args.eval_temperature,
                          weights=eval_weights(args, task), amp=args.dtype != "float32", geometry=geometry_of(args, task))
    if dist.is_main():
        with open(os.path.join(directory, "eval.jsonl"), "a") as f:
            f.write(json.dumps({"step": step, **metrics}) + "\n")
        if args.keep_eval_ckpts:
            save_checkpoint(os.path.join(directory, f"ckpt-step{step}.pt"), model, step=step, args=vars(args),
                            device=device.type)


def finish(args, task, model, directory, seconds, device):
    """Final evaluation of the run and of the model it started from, then summary.json, plots and the table."""
    ks, m = [args.num_answers * f for f in K_FACTORS], answers_per_rollout(args.algo, args.num_answers)
    problems = task.problems("test", args.eval_problems, seed=0)
    t0 = time.perf_counter()
    label = f"{args.algo}{' (matched budget)' if args.match_budget and m == 1 and args.algo != 'sft' else ''}"
    goal, amp, geometry = eval_weights(args, task), args.dtype != "float32", geometry_of(args, task)
    results = {label: evaluate(model, task, problems, m, ks, args.eval_answers, args.eval_temperature, weights=goal,
                               amp=amp, geometry=geometry)}
    pretrained = is_pretrained(args.init_path)   # an sft run from a pretrained model's own weights
    if args.init_path and not args.no_base_eval:  # the same evaluation of the starting point: what did RL change?
        start = (load_pretrained_model if pretrained else load_model)(args.init_path, device)[0]
        results["base"] = evaluate(start, task, problems, m, ks, args.eval_answers, args.eval_temperature,
                                   weights=goal, amp=amp, geometry=geometry)
    extra = {"algo": args.algo, "task": args.task, "seed": args.seed, "train_seconds": round(seconds, 1),
             "eval_seconds": round(time.perf_counter() - t0, 1), "params": model.num_params(), "init": args.init_path,
             "args": vars(args), "processes": dist.world(), "machine": machine(), "commit": commit(),
             "warm_start": weights_digest(args.init_path) if args.init_path and not pretrained else None}
    return (report(directory, task, ks, results, label, extra, figures=not args.no_figures) if dist.is_main()
            else None)


def check_warm_start(path, digest):
    """--warm_start_digest: the run refuses a warm start other than its seed's committed runs' (trained on another
    kind of machine, say), before its run directory exists."""
    if digest and is_pretrained(path):
        raise UsageError(f"--warm_start_digest checks a warm start's checkpoint; --init {path} is a pretrained model")
    if digest and weights_digest(path) != digest:
        raise UsageError(f"the warm start {path} has weights digest {weights_digest(path)}, not {digest} "
                         f"(--warm_start_digest): it is not the one this seed's other runs started from")


def model_config(args):
    return GPTConfig(vocab_size=tok.vocab_size, block_size=args.block_size, n_layer=args.n_layer, n_head=args.n_head,
                     n_embd=args.n_embd)


def base_path(args, device):
    """Where the cached base of this run's warm start is (or will be)."""
    sft = SFTConfig.from_args(args, goal_prompts=args.algo == "goal_cond")
    config, source = pretrained_key(args.init) if is_pretrained(args.init) else (model_config(args), None)
    return os.path.join(base_dir(args.out_dir, args.task, args.task_opt, config, sft, device, source), "ckpt.pt")


def main(argv=None):
    try:
        args, task, model, directory, device, state = prepare(argv, get_parser, RESUMABLE,
                                                              lambda a: [a.num_answers * f for f in K_FACTORS])
        if args.deterministic:
            set_deterministic()
        device = dist.setup(device)  # under torchrun: join the process group (this process's GPU on CUDA)
        model = None if model is None else model.to(device)
        dist.barrier()  # every rank has checked the command line before rank 0 creates anything
        config, sft = model_config(args), SFTConfig.from_args(args, goal_prompts=args.algo == "goal_cond")
        if state is None:
            if args.algo == "sft":
                args.init_path = args.init
                model = model or new_model(config, args.base_seed, device)
            else:  # the cached base (its checkpoint records the arguments of an sft run)
                meta = {"args": {**vars(args), "algo": "sft", "eval_every": 0, "init_path": None,
                                 "goal_prompts": sft.goal_prompts}}
                pretrained = is_pretrained(args.init)   # warm-started from its weights, like the GPT from its init
                start, source = (model, state_digest(model.state_dict())) if pretrained else (None, None)
                args.init_path = (args.init if args.init and not pretrained else
                                  warm_start(args.task, task, args.task_opt, model.config if pretrained else config,
                                             sft, args.out_dir, device, args.quiet, args.compile, meta,
                                             args.ckpt_every, start=start, source=source))
                model = load_model(args.init_path, device)[0] if pretrained or model is None else model
            check_warm_start(args.init_path, args.warm_start_digest)
            if dist.is_main():
                create_run_dir(directory, args.overwrite)  # refuses a directory that appeared meanwhile
            dist.barrier()
        if dist.is_main():
            print(f"{args.algo} on {args.task}: {model.num_params() / 1e6:.2f}M params, device {device}"
                  f"{f' x {dist.world()} processes' if dist.world() > 1 else ''}, run dir {directory}\n"
                  f"args: {json.dumps(vars(args))}")
        if args.algo == "sft":  # the warm start as a run of its own
            ks = [args.num_answers * f for f in K_FACTORS]
            problems = task.problems("test", args.eval_problems, seed=0)
            seconds = train_base(model, task, sft, directory, device, state, args.quiet, meta={"args": vars(args)},
                                 ckpt_every=args.ckpt_every, compile=args.compile, eval_every=args.eval_every,
                                 on_eval=lambda s: evaluate_during(args, task, model, directory, device, problems,
                                                                   ks, s))
        else:
            seconds = train(args, task, model, directory, device, state, args.quiet)
        finish(args, task, model, directory, seconds, device)
    except UsageError as e:
        if os.environ.get("RANK", "0") == "0":  # under torchrun, once (every process found the same mistake)
            print(f"error: {e}", file=sys.stderr)
        dist.teardown()  # every process found it: they all get here
        return 2
    except BaseException:
        dist.teardown(wait=False)
        raise
    dist.teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())

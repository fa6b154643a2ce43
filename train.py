"""
Train a small GPT with VPO, GRPO or one of the paper's baselines on a vector-reward task, then evaluate it.

    python train.py --algo vpo                            # the default run (maze), warm start included
    python train.py --algo grpo --match_budget            # GRPO from the same cached base, same answer budget
    python train.py --algo vpo --task toy --steps 60      # the authors' toy example through the real GPT
    python train.py --algo vpo --device cuda --n_layer 8 --n_head 8 --n_embd 512 --sft_steps 5000 \\
        --sft_batch_size 256 --batch_size 64 --steps 1000 --lr 1e-5 --eval_problems 512   # GPU-sized (bf16)

1. Warm start. RL sharpens what a model already proposes, so every RL run starts from a base trained by
   supervised learning on the task's demonstrations (answer sets of 1 and of --num_answers answers). Without
   --init, the base for this task and model is trained once and cached in out_dir/base/, so GRPO and VPO
   runs share it. --algo sft is that warm start as a run of its own.
2. RL. Each step: --batch_size train problems, --group_size rollouts each (m answers per rollout for vpo and
   multi_rlvr, one otherwise; --match_budget gives single-answer methods m x the rollouts), rewards from the
   task, one advantage per rollout from vpo.py, then one PPO epoch of vpo.policy_loss (clip, dual clip, k3 KL
   to the frozen base, token-mean) in --minibatches updates.
3. Evaluation on held-out test problems (evaluate.py): best@k, pass@k, E_w[best@k], diversity, at T = 0.7.
Output in out_dir/run_name: ckpt.pt (atomic, every --ckpt_every steps; model, optimizer, step, args, device),
log.jsonl (a line per step), eval.jsonl, summary.json, curves.png, best_at_k.png, scatter.png. No RNG state:
every draw is seeded by (seed, step, prompt index), so --resume continues a stopped run bit for bit. Run
directories, the cache's lock and the checks: runs.py. More than one device: torchrun (dist.py, README).
"""
import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np
import torch
from tqdm import tqdm

import dist
import vpo
from evaluate import evaluate, prompt_ids, report
from model import GPT, GPTConfig, save_checkpoint
from rl import eval_weights, group_size, rl_step
from runs import (COUNT, PROBLEMS, SEED, Parser, UsageError, all_finite, answers_per_rollout, base_dir,
                  check_out_dir, check_overwritable, check_run_name, create_run_dir, exclusive, given_flags,
                  check_resume_device, load_model, make_task, number, goal_prompts, pick_device, resumed_args,
                  set_deterministic, truncate_logs)
from sft import Prefetch, demonstration_batch, sft_step
from tasks import TASKS
from tasks import tokenizer as tok

ALGOS = ("sft", "grpo", "vpo", "multi_rlvr", "random_weight", "goal_cond", "max_at_k", "gdpo", "maxrl")
WARM_STARTS = ("diverse", "routes")  # demonstration styles (tasks.Task.demonstration); routes: maze only
K_FACTORS = (1, 2, 4, 8, 16)  # best@k at k = num_answers * these
RESUMABLE = ("steps", "device", "quiet", "ckpt_every", "eval_every", "deterministic")  # what --resume may change
POSITIVE, NONNEGATIVE = number(float, above=0), number(float, 0)


def get_parser():
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument_group("run")
    a.add_argument("--algo", default="vpo", choices=ALGOS, help="training method")
    a.add_argument("--task", default="maze", choices=TASKS, help="vector-reward task")
    a.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE",
                   help="task constructor option, e.g. size=9 for maze or num_tests=16 for code (repeatable)")
    a.add_argument("--seed", type=SEED, default=0, help="seed of the RL run (problems, sampling, weights)")
    a.add_argument("--out_dir", default="out", help="root of run directories and of the cached warm starts")
    a.add_argument("--run_name", default=None, help="run directory name (default: ALGO-TASK-sSEED)")
    a.add_argument("--init", default=None, help="start from this checkpoint instead of the cached warm start")
    a.add_argument("--resume", action="store_true",
                   help=f"continue the run in its directory with its saved settings; only "
                        f"{', '.join('--' + k for k in RESUMABLE)} may change (--steps not below the checkpoint's)")
    a.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    a.add_argument("--ckpt_every", type=number(int, 0), default=25,
                   help="also checkpoint every this many steps, warm start included (0: at evaluations only)")
    a.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    a.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16"),
                   help="auto: bf16 autocast on CUDA, fp32 elsewhere")
    a.add_argument("--compile", action="store_true", help="torch.compile the training forward (opt-in)")
    a.add_argument("--deterministic", action="store_true",
                   help="CUDA: deterministic kernels (torch.use_deterministic_algorithms, CUBLAS_WORKSPACE_CONFIG); "
                        "slower. On CPU runs are deterministic without it")
    a = p.add_argument_group("model (used when training a base from scratch)")
    a.add_argument("--n_layer", type=COUNT, default=4, help="transformer blocks")
    a.add_argument("--n_head", type=COUNT, default=4, help="attention heads")
    a.add_argument("--n_embd", type=COUNT, default=128, help="model width")
    a.add_argument("--block_size", type=COUNT, default=256, help="longest prompt + completion, in tokens")
    a = p.add_argument_group("warm start (supervised on demonstrations)")
    a.add_argument("--sft_steps", type=COUNT, default=300, help="supervised steps")
    a.add_argument("--sft_batch_size", type=COUNT, default=64, help="demonstrations per step")
    a.add_argument("--sft_lr", type=number(float, high=1, above=0), default=2e-3,
                   help="peak learning rate (warmup, cosine to 10%%)")
    a.add_argument("--sft_group", type=COUNT, default=1,
                   help="demonstrations per problem in a batch (its prompt is encoded once for them)")
    a.add_argument("--base_seed", type=SEED, default=0, help="seed of the warm start (shared by all RL seeds)")
    a.add_argument("--warm_start", default="auto", choices=("auto",) + WARM_STARTS,
                   help="demonstrations: diverse (answers that cover the trade-offs) or routes (maze: valid routes "
                        "chosen without looking at the items, so the base is never shown which routes score well); "
                        "auto: routes where the task has them (the paper's regime), else diverse")
    a = p.add_argument_group("RL")
    a.add_argument("--steps", type=COUNT, default=150, help="RL steps")
    a.add_argument("--batch_size", type=COUNT, default=8, help="prompts per step")
    a.add_argument("--group_size", type=number(int, 2), default=8,
                   help="G: rollouts per prompt (>= 2: advantages compare rollouts)")
    a.add_argument("--num_answers", type=COUNT, default=3, help="m: answers per rollout for vpo and multi_rlvr")
    a.add_argument("--match_budget", action="store_true",
                   help="single-answer methods get m x group_size rollouts: the same answers per prompt as VPO")
    a.add_argument("--num_weights", type=COUNT, default=100, help="N: weight draws per prompt (VPO)")
    a.add_argument("--alpha", type=POSITIVE, default=1.0, help="Dirichlet concentration of the weights")
    a.add_argument("--weight_sampler", default="iid", choices=("iid", "sobol"), help="how VPO draws its weights")
    a.add_argument("--max_at_k", type=int, default=None, help="k of --algo max_at_k (default max(2, G // 2), < G)")
    a.add_argument("--scale", default="group", choices=vpo.SCALES, help="advantage std: group, batch or none")
    a.add_argument("--lr", type=number(float, high=1, above=0), default=3e-5,
                   help="AdamW learning rate of RL (constant after --warmup_steps, as the authors')")
    a.add_argument("--warmup_steps", type=number(int, 0), default=0, help="linear learning-rate warmup of RL, in steps")
    a.add_argument("--beta2", type=number(float, high=1, above=0), default=0.999,
                   help="AdamW beta2 of RL (the authors' 0.999; the warm start uses 0.95)")
    a.add_argument("--weight_decay", type=NONNEGATIVE, default=0.01,
                   help="AdamW weight decay of RL (the authors' 0.01; the warm start uses none)")
    a.add_argument("--temperature", type=POSITIVE, default=1.0, help="rollout sampling temperature")
    a.add_argument("--kl_coef", type=NONNEGATIVE, default=1e-3, help="k3 KL to the frozen base, as a loss term")
    a.add_argument("--clip", type=POSITIVE, default=0.2, help="PPO clip range (low and high)")
    a.add_argument("--dual_clip", type=number(float, above=1), default=3.0,
                   help="dual-clip constant c > 1 for negative advantages")
    a.add_argument("--agg", default="token-mean", choices=vpo.AGGS, help="loss aggregation over tokens")
    a.add_argument("--minibatches", type=COUNT, default=2, help="updates per step (one PPO epoch)")
    a.add_argument("--grad_clip", type=POSITIVE, default=1.0, help="gradient-norm clip (warm start too)")
    a = p.add_argument_group("evaluation")
    a.add_argument("--eval_every", type=number(int, 0), default=50,
                   help="evaluate (and checkpoint) every this many steps (0: at the end)")
    a.add_argument("--eval_problems", type=PROBLEMS, default=64, help="held-out test problems")
    a.add_argument("--eval_answers", type=COUNT, default=96, help="answers sampled per test problem")
    a.add_argument("--eval_temperature", type=NONNEGATIVE, default=0.7, help="sampling temperature at evaluation")
    a.add_argument("--keep_eval_ckpts", action="store_true",
                   help="also keep the weights of every mid-run evaluation (ckpt-step<N>.pt, no optimizer)")
    a.add_argument("--no_base_eval", action="store_true",
                   help="skip the final evaluation of the starting checkpoint (reproduce.py evaluates each base once)")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def check_args(args):
    """What the flags' own ranges cannot say, checked before anything is written."""
    if args.n_embd % args.n_head:
        raise UsageError(f"--n_embd ({args.n_embd}) must be divisible by --n_head ({args.n_head})")
    if args.eval_answers < args.num_answers * K_FACTORS[-1]:
        raise UsageError(f"--eval_answers ({args.eval_answers}) must be >= the largest k = "
                         f"{args.num_answers * K_FACTORS[-1]} (16 x --num_answers)")
    if args.sft_batch_size % args.sft_group:
        raise UsageError(f"--sft_group ({args.sft_group}) must divide --sft_batch_size ({args.sft_batch_size})")
    rollouts = args.batch_size * group_size(args)
    if rollouts % args.minibatches:
        raise UsageError(f"--minibatches ({args.minibatches}) must divide the {rollouts} rollouts of a step")
    world = dist.env_world_size()
    if world > 1 and args.batch_size % (world * args.minibatches):
        raise UsageError(f"--batch_size ({args.batch_size}, prompts per step for all processes) must be divisible "
                         f"by {world} processes x {args.minibatches} --minibatches")
    if world > 1 and (args.sft_batch_size // args.sft_group) % world:
        raise UsageError(f"--sft_batch_size / --sft_group ({args.sft_batch_size // args.sft_group} problems) must be "
                         f"divisible by {world} processes")


def check_fits(task, m, block_size, label="--num_answers", style="diverse"):
    """The longest prompt (with a goal-conditioned weights line, which the warm start shows too) plus m answers
    must fit the model's block; demonstrations for m must exist, each answer within the answer's room."""
    probe = task.problems("train", 32, seed=0) + task.problems("test", 32, seed=0)
    longest = max(len(prompt_ids(task, p, m, task.deploy_weights)) for p in probe)
    need = longest + task.max_new_tokens(m)
    if need > block_size:
        raise UsageError(f"{label} {m}: prompts of up to {longest} tokens plus {task.max_new_tokens(m)} answer "
                         f"tokens exceed the block size {block_size}")
    try:
        task.demonstration(probe[0], m, np.random.default_rng(0), style=style)
    except ValueError as e:
        raise UsageError(f"{label} {m}: {e}") from None
    rng = np.random.default_rng(0)
    try:  # every demonstration answer must fit the room each answer gets (Task.answer_tokens)
        for p in probe:
            task.check_demonstration(task.demonstration(p, m, rng, style=style), m)
    except ValueError as e:
        raise UsageError(f"--task_opt answer_tokens: {e}") from None


def check_method(args, task):
    """What the method needs of the task: weights to draw (D >= 2), a k below the group size, a warm-start style."""
    if args.warm_start == "auto":
        args.warm_start = "routes" if "routes" in task.demo_styles else "diverse"
    if args.warm_start not in task.demo_styles:
        raise UsageError(f"--warm_start {args.warm_start}: task {args.task} has {', '.join(task.demo_styles)}")
    if args.algo in ("goal_cond", "random_weight", "vpo") and task.dim < 2:
        raise UsageError(f"--algo {args.algo} draws weight vectors over the reward dimensions; task {args.task} "
                         f"has only {task.dim}")
    G = group_size(args)
    k = max(2, G // 2) if args.max_at_k is None else args.max_at_k  # the authors' default
    if args.algo == "max_at_k" and not 1 <= k < G:
        raise UsageError(f"--max_at_k must be in [1, G) with G = {G} rollouts per prompt, got {k}")


# ------------------------------------------------------------------------------------------ run management
def run_dir(args):
    return os.path.join(args.out_dir, args.run_name or f"{args.algo}-{args.task}-s{args.seed}")


def new_model(args, device):
    config = GPTConfig(vocab_size=tok.vocab_size, block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd)
    torch.manual_seed(args.base_seed)  # the initialization only; everything later uses explicit generators
    return GPT(config).to(device)


def load_init(path, device):
    return load_model(path, device)[0]


def train(args, task, model, directory, device, state=None, quiet=False, ckpt_name="ckpt.pt"):
    """The training loop of one run (SFT or RL), in directory. state: a loaded checkpoint to resume from.
    Checkpoints (directory/ckpt_name) every --ckpt_every steps, at evaluations and at the end."""
    sft = args.algo == "sft"
    total = args.sft_steps if sft else args.steps
    if sft:  # the warm start: AdamW (0.9, 0.95), no weight decay, warmup + cosine (sft.py)
        opt = model.configure_optimizer(args.sft_lr, 0.0, (0.9, 0.95), device_type=device.type)
    else:    # RL: the authors' AdamW (0.9, 0.999), weight decay 0.01, constant learning rate
        opt = model.configure_optimizer(args.lr, args.weight_decay, (0.9, args.beta2), device_type=device.type)
    start = 0  # no RNG state to restore: every draw is seeded by (seed, step, index)
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
    ref_model = None
    if not sft and args.kl_coef:
        ref_model = load_init(args.init_path, device).eval().requires_grad_(False)
    train_model = torch.compile(model) if args.compile else model
    log_weights = vpo.sample_weights(1, 100, task.dim, generator=torch.Generator().manual_seed(0))  # (1, N, D)
    main = dist.is_main()  # rank 0 alone writes; the others wait for it at the checkpoints
    if main:
        truncate_logs(directory, start)
    ks = [args.num_answers * f for f in K_FACTORS]
    eval_problems = task.problems("test", args.eval_problems, seed=0)
    m_eval = answers_per_rollout(args)
    bar = tqdm(range(start, total), initial=start, total=total, desc=f"{args.algo} {args.task}",
               disable=quiet or not main, dynamic_ncols=True)
    t_start = time.perf_counter() - (state or {}).get("seconds", 0.0)
    # the next step's demonstrations are built in a background thread while this step trains
    problems = args.sft_batch_size // args.sft_group                                  # per step, all processes
    demos = Prefetch(lambda s: demonstration_batch(task, args, s, "cpu", dist.shard(problems)), start,
                     total) if sft else None

    def checkpoint(step):
        if not all_finite(model):  # keep the last good checkpoint rather than overwrite it with NaNs
            raise UsageError(f"the weights are no longer finite at step {step} (lower the learning rate?); "
                             f"{os.path.join(directory, ckpt_name)} keeps the last finite ones")
        if main:
            save_checkpoint(os.path.join(directory, ckpt_name), model, optimizer=opt.state_dict(), step=step,
                            args=vars(args), device=device.type, world=dist.world(),
                            seconds=time.perf_counter() - t_start)
        dist.barrier()

    model.train()
    try:
        for step in bar:
            if sft:
                row = {"step": step + 1, **sft_step(model, train_model, opt, task, args, step, device, demos.get(step))}
                bar.set_postfix(loss=f"{row['loss']:.3f}")
            else:
                row = rl_step(model, train_model, ref_model, opt, task, args, step, log_weights, device)
                bar.set_postfix(reward=f"{row['deploy_reward']:.3f}", set=f"{row['set_reward']:.3f}",
                                div=f"{row['diversity']:.3f}", kl=f"{row['kl']:.4f}")
            row["seconds"] = time.perf_counter() - t_start
            if main:
                with open(os.path.join(directory, "log.jsonl"), "a") as f:
                    f.write(json.dumps(row) + "\n")
            if step + 1 == total:
                break
            if args.eval_every and (step + 1) % args.eval_every == 0:
                metrics, _ = evaluate(model, task, eval_problems, m_eval, ks, args.eval_answers, args.eval_temperature,
                                      weights=eval_weights(args, task), amp=args.dtype != "float32")
                if main:
                    with open(os.path.join(directory, "eval.jsonl"), "a") as f:
                        f.write(json.dumps({"step": step + 1, **metrics}) + "\n")
                    if args.keep_eval_ckpts:
                        save_checkpoint(os.path.join(directory, f"ckpt-step{step + 1}.pt"), model, step=step + 1,
                                        args=vars(args), device=device.type)
                checkpoint(step + 1)
            elif args.ckpt_every and (step + 1) % args.ckpt_every == 0:
                checkpoint(step + 1)
    finally:
        if demos is not None:
            demos.close()
    bar.close()
    checkpoint(total)
    return time.perf_counter() - t_start


def finish(args, task, model, directory, seconds, device):
    """Final evaluation of the run and of the model it started from, then summary.json, plots and the table."""
    ks = [args.num_answers * f for f in K_FACTORS]
    m = answers_per_rollout(args)
    problems = task.problems("test", args.eval_problems, seed=0)
    t0 = time.perf_counter()
    label = f"{args.algo}{' (matched budget)' if args.match_budget and m == 1 and args.algo != 'sft' else ''}"
    goal, amp = eval_weights(args, task), args.dtype != "float32"
    results = {label: evaluate(model, task, problems, m, ks, args.eval_answers, args.eval_temperature, weights=goal,
                               amp=amp)}
    if args.init_path and not args.no_base_eval:  # the same evaluation of the starting point: what did RL change?
        results["base"] = evaluate(load_init(args.init_path, device), task, problems, m, ks, args.eval_answers,
                                   args.eval_temperature, weights=goal, amp=amp)
    extra = {"algo": args.algo, "task": args.task, "seed": args.seed, "train_seconds": round(seconds, 1),
             "eval_seconds": round(time.perf_counter() - t0, 1), "params": model.num_params(), "init": args.init_path,
             "args": vars(args), "processes": dist.world()}
    return report(directory, task, ks, results, label, extra) if dist.is_main() else None


def resume_state(argv, args, directory):
    """--resume: the run's checkpoint, and its saved arguments updated by what may change (RESUMABLE)."""
    if args.overwrite:  # checked on the command line, before the saved arguments replace it
        raise UsageError("--resume and --overwrite exclude each other")
    path = os.path.join(directory, "ckpt.pt")
    if not os.path.isfile(path):
        raise UsageError(f"--resume: no checkpoint at {path}")
    model, state = load_model(path, need=("args", "step", "optimizer"))
    given = given_flags(get_parser(), argv)
    for where in ("out_dir", "run_name", "resume"):  # they locate the run
        given.pop(where, None)
    args = resumed_args(state["args"], given, get_parser().parse_args([]), state["step"], RESUMABLE)
    args.resume = True
    if state.get("world", 1) != dist.env_world_size():  # the same global batch, but another split of its sums
        raise UsageError(f"--resume: the run was started with {state.get('world', 1)} processes; resume it with as "
                         f"many (here {dist.env_world_size()})")
    return model, state, args



def prepare(argv):
    """Parse and check the command line; nothing is written. -> (args, task, model, directory, device, state)."""
    args = get_parser().parse_args(argv)
    if args.run_name is not None:
        check_run_name(args.run_name)
    check_out_dir(args.out_dir)
    directory = run_dir(args)
    model = state = None
    if args.resume:
        model, state, args = resume_state(argv, args, directory)
    probe = (("train", 1), ("train", max(args.batch_size, args.sft_batch_size)), ("test", args.eval_problems))
    task = make_task(args.task, args.task_opt, probe)
    check_args(args)
    device = pick_device(args.device)
    if args.resume:
        check_resume_device(state, device)
    if args.dtype == "bfloat16" and device.type != "cuda":
        raise UsageError("--dtype bfloat16 needs a CUDA device (fp32 elsewhere)")
    if not args.resume and args.init is not None:
        model = load_init(args.init, device)
    if model is not None:  # the block size is the model's
        args.block_size = model.config.block_size
    check_method(args, task)
    check_fits(task, 1, args.block_size, "--block_size", args.warm_start)
    check_fits(task, args.num_answers, args.block_size, style=args.warm_start)
    if args.resume:
        return args, task, model.to(device), directory, device, state
    if os.path.lexists(directory):
        if not args.overwrite:
            raise UsageError(f"run directory {directory} exists: pass --resume to continue it or --overwrite")
        check_overwritable(directory)
    return args, task, model, directory, device, state


def warm_start(args, task, device, quiet):
    """The cached base for this task and model, BASE/ckpt.pt (BASE = base_dir), trained here if missing.
    The run holding BASE/.lock trains it, checkpointing to BASE/partial.pt (a killed warm start resumes from
    there); ckpt.pt appears by an atomic rename when complete. A concurrent run waits for the lock, then uses it.
    Under torchrun rank 0 alone looks, takes the lock and writes; every rank trains its share (data parallel)."""
    directory = base_dir(args, device)
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
        base_args = argparse.Namespace(**{**vars(args), "algo": "sft", "eval_every": 0, "init_path": None,
                                          "goal_prompts": goal_prompts(args)})
        model, state = new_model(args, device), None
        if dist.broadcast(os.path.isfile(partial) if main else None):
            saved, state = load_model(partial, device, need=("step", "optimizer"))
            if state.get("device", device.type) == device.type:  # else its optimizer is another device's: start over
                model = saved
            else:
                state = None
        done = state["step"] if state else 0
        if main:
            print(f"warm start: no cached base at {path}; training it ({args.sft_steps} supervised steps"
                  f"{f', resuming at step {done}' if done else ''}, {dist.world()} process(es))")
        seconds = train(base_args, task, model, directory, device, state, quiet, ckpt_name="partial.pt")
        if main:
            os.replace(partial, path)
        dist.barrier()
    if main:
        print(f"warm start: {args.sft_steps} steps in {seconds:.0f} s -> {path}")
    return path


def main(argv=None):
    try:
        args, task, model, directory, device, state = prepare(argv)
        if args.deterministic:
            set_deterministic()
        device = dist.setup(device)  # under torchrun: join the process group (this process's GPU on CUDA)
        model = None if model is None else model.to(device)
        dist.barrier()  # every rank has checked the command line before rank 0 creates anything
        quiet, main = args.quiet, dist.is_main()
        if state is None:
            if args.algo == "sft":
                args.init_path = args.init
                model = model or new_model(args, device)
            else:
                args.init_path = args.init or warm_start(args, task, device, quiet)
                model = model or load_init(args.init_path, device)
            if main:
                create_run_dir(directory, args.overwrite)  # refuses a directory that appeared meanwhile
            dist.barrier()
        if main:
            print(f"{args.algo} on {args.task}: {model.num_params() / 1e6:.2f}M params, device {device}"
                  f"{f' x {dist.world()} processes' if dist.world() > 1 else ''}, run dir {directory}\n"
                  f"args: {json.dumps(vars(args))}")
        seconds = train(args, task, model, directory, device, state, quiet)
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

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
Output in out_dir/run_name: ckpt.pt (atomic; model, optimizer, RNG states, step, args), log.jsonl (a line per
step), eval.jsonl, summary.json, curves.png, best_at_k.png, scatter.png. --resume continues a stopped run.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import time

import numpy as np
import torch
from tqdm import tqdm

import vpo
from evaluate import evaluate, prompt_ids, report, rollout, slot_rewards
from model import GPT, CheckpointError, GPTConfig, load_checkpoint, pack_shared, save_checkpoint, shared_token_logprobs
from sft import sft_step, step_seed
from tasks import TASKS, get_task
from tasks import tokenizer as tok

ALGOS = ("sft", "grpo", "vpo", "multi_rlvr", "random_weight", "gdpo", "maxrl")
MULTI_ANSWER = ("vpo", "multi_rlvr")
K_FACTORS = (1, 2, 4, 8, 16)  # best@k at k = num_answers * these


class UsageError(Exception):
    """A mistake in the command line: reported in one line, exit code 2, nothing on disk touched."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def get_parser():
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument_group("run")
    a.add_argument("--algo", default="vpo", choices=ALGOS, help="training method")
    a.add_argument("--task", default="maze", choices=TASKS, help="vector-reward task")
    a.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE",
                   help="task constructor option, e.g. size=9 for maze or num_tests=16 for code (repeatable)")
    a.add_argument("--seed", type=int, default=0, help="seed of the RL run (problems, sampling, weights)")
    a.add_argument("--out_dir", default="out", help="root of run directories and of the cached warm starts")
    a.add_argument("--run_name", default=None, help="run directory name (default: ALGO-TASK-sSEED)")
    a.add_argument("--init", default=None, help="start from this checkpoint instead of the cached warm start")
    a.add_argument("--resume", action="store_true", help="continue the run in its directory (--steps may grow)")
    a.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    a.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    a.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16"),
                   help="auto: bf16 autocast on CUDA, fp32 elsewhere")
    a.add_argument("--compile", action="store_true", help="torch.compile the training forward (opt-in)")
    a = p.add_argument_group("model (used when training a base from scratch)")
    a.add_argument("--n_layer", type=int, default=4, help="transformer blocks")
    a.add_argument("--n_head", type=int, default=4, help="attention heads")
    a.add_argument("--n_embd", type=int, default=128, help="model width")
    a.add_argument("--block_size", type=int, default=256, help="longest prompt + completion, in tokens")
    a = p.add_argument_group("warm start (supervised on demonstrations)")
    a.add_argument("--sft_steps", type=int, default=500, help="supervised steps")
    a.add_argument("--sft_batch_size", type=int, default=64, help="demonstrations per step")
    a.add_argument("--sft_lr", type=float, default=2e-3, help="peak learning rate (warmup, cosine to 10%%)")
    a.add_argument("--base_seed", type=int, default=0, help="seed of the warm start (shared by all RL seeds)")
    a = p.add_argument_group("RL")
    a.add_argument("--steps", type=int, default=150, help="RL steps")
    a.add_argument("--batch_size", type=int, default=8, help="prompts per step")
    a.add_argument("--group_size", type=int, default=8, help="G: rollouts per prompt")
    a.add_argument("--num_answers", type=int, default=3, help="m: answers per rollout for vpo and multi_rlvr")
    a.add_argument("--match_budget", action="store_true",
                   help="single-answer methods get m x group_size rollouts: the same answers per prompt as VPO")
    a.add_argument("--num_weights", type=int, default=100, help="N: weight draws per prompt (VPO)")
    a.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration of the weights")
    a.add_argument("--weight_sampler", default="iid", choices=("iid", "sobol"), help="how VPO draws its weights")
    a.add_argument("--scale", default="group", choices=vpo.SCALES, help="advantage std: group, batch or none")
    a.add_argument("--lr", type=float, default=3e-5, help="AdamW learning rate (constant after 10 warmup steps)")
    a.add_argument("--weight_decay", type=float, default=0.0, help="AdamW weight decay")
    a.add_argument("--temperature", type=float, default=1.0, help="rollout sampling temperature")
    a.add_argument("--kl_coef", type=float, default=1e-3, help="k3 KL to the frozen base, as a loss term")
    a.add_argument("--clip", type=float, default=0.2, help="PPO clip range (low and high)")
    a.add_argument("--dual_clip", type=float, default=3.0, help="dual-clip constant c for negative advantages")
    a.add_argument("--agg", default="token-mean", choices=vpo.AGGS, help="loss aggregation over tokens")
    a.add_argument("--minibatches", type=int, default=2, help="updates per step (one PPO epoch)")
    a.add_argument("--grad_clip", type=float, default=1.0, help="gradient-norm clip")
    a = p.add_argument_group("evaluation")
    a.add_argument("--eval_every", type=int, default=50, help="evaluate every this many steps (0: at the end)")
    a.add_argument("--eval_problems", type=int, default=64, help="held-out test problems")
    a.add_argument("--eval_answers", type=int, default=96, help="answers sampled per test problem")
    a.add_argument("--eval_temperature", type=float, default=0.7, help="sampling temperature at evaluation")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def parse_task_options(items):
    """["size=9", "n_gold=2"] -> {"size": 9, "n_gold": 2}; values read as int, then float, else string."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--task_opt must be KEY=VALUE, got {item!r}")
        for cast in (int, float, str):
            try:
                options[key] = cast(value)
                break
            except ValueError:
                pass
    return options


def pick_device(name):
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    if name not in ("cpu", "cuda", "mps") or (name == "cuda" and not torch.cuda.is_available()) \
            or (name == "mps" and not torch.backends.mps.is_available()):
        raise UsageError(f"--device {name!r} is not available here (choose auto, cpu, cuda or mps)")
    return torch.device(name)


def check_args(args):
    """Everything a user can get wrong, checked before anything is written."""
    for name in ("n_layer", "n_head", "n_embd", "block_size", "sft_steps", "sft_batch_size", "steps", "batch_size",
                 "num_answers", "num_weights", "minibatches", "eval_problems", "eval_answers"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be a positive integer, got {getattr(args, name)}")
    for name in ("lr", "sft_lr", "grad_clip"):
        if not getattr(args, name) > 0:
            raise UsageError(f"--{name} must be > 0, got {getattr(args, name)}")
    checks = [(args.alpha > 0, f"--alpha must be > 0, got {args.alpha}"),
              (args.group_size >= 2, f"--group_size must be >= 2 (advantages compare rollouts), got {args.group_size}"),
              (args.eval_every >= 0, f"--eval_every must be >= 0, got {args.eval_every}"),
              (args.temperature > 0, f"--temperature must be > 0, got {args.temperature}"),
              (args.eval_temperature >= 0, f"--eval_temperature must be >= 0, got {args.eval_temperature}"),
              (args.kl_coef >= 0 and args.clip > 0 and args.dual_clip > 1, "--kl_coef >= 0, --clip > 0 and "
               f"--dual_clip > 1 required, got {args.kl_coef}, {args.clip}, {args.dual_clip}"),
              (args.n_embd % args.n_head == 0, f"--n_embd ({args.n_embd}) must be divisible by --n_head "
               f"({args.n_head})"),
              (not (args.resume and args.overwrite), "--resume and --overwrite exclude each other")]
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    if args.eval_answers < args.num_answers * K_FACTORS[-1]:
        raise UsageError(f"--eval_answers ({args.eval_answers}) must be >= the largest k = "
                         f"{args.num_answers * K_FACTORS[-1]} (16 x --num_answers)")
    rollouts = args.batch_size * group_size(args)
    if rollouts % args.minibatches:
        raise UsageError(f"--minibatches ({args.minibatches}) must divide the {rollouts} rollouts of a step")


def check_fits(task, m, block_size, label="--num_answers"):
    """The longest prompt plus m answers must fit the model's block; demonstrations for m must exist."""
    probe = task.problems("train", 32, seed=0) + task.problems("test", 32, seed=0)
    longest = max(len(prompt_ids(task, p, m)) for p in probe)
    need = longest + task.max_new_tokens(m)
    if need > block_size:
        raise UsageError(f"{label} {m}: prompts of up to {longest} tokens plus {task.max_new_tokens(m)} answer "
                         f"tokens exceed the block size {block_size}")
    try:
        task.demonstration(probe[0], m, np.random.default_rng(0))
    except ValueError as e:
        raise UsageError(f"{label} {m}: {e}") from None


def answers_per_rollout(args):
    """m: answers per rollout (a warm-start base is evaluated as a multi-answer model)."""
    return args.num_answers if args.algo in MULTI_ANSWER + ("sft",) else 1


def group_size(args):
    single = args.algo not in MULTI_ANSWER
    return args.group_size * (args.num_answers if single and args.match_budget else 1)


# ---------------------------------------------------------------------------------------------------- RL
def advantages(args, task, rewards, mask, generator):
    """One scalar advantage per rollout (B, G) and the per-rollout score it normalized, by method."""
    w_star = task.deploy_weights
    if args.algo == "vpo":
        return vpo.vpo_advantages(rewards, mask, args.num_weights, args.alpha, generator,
                                  sampler=args.weight_sampler, scale=args.scale)
    if args.algo == "multi_rlvr":
        return vpo.multi_rlvr_advantages(rewards, mask, w_star, scale=args.scale)
    if args.algo == "grpo":
        return vpo.grpo_advantages(rewards, w_star, scale=args.scale)
    if args.algo == "random_weight":
        return vpo.random_weight_advantages(rewards, args.alpha, generator, scale=args.scale)
    if args.algo == "gdpo":
        return vpo.gdpo_advantages(rewards, w_star, scale=args.scale)
    return vpo.maxrl_advantages(rewards, w_star)


def rl_step(model, train_model, ref_model, opt, task, args, step, generators, log_weights, device):
    """Sample, score, estimate advantages, and one PPO epoch over the step's rollouts. -> a log dict."""
    t0 = time.perf_counter()
    m, G = answers_per_rollout(args), group_size(args)
    for group in opt.param_groups:
        group["lr"] = args.lr * min(1.0, (step + 1) / 10)
    problems = task.problems("train", args.batch_size, seed=step_seed(args.seed, 3, step))
    model.eval()
    gen, prompts, texts, rewards, mask = rollout(model, task, problems, m, G, args.temperature, generators["sample"])
    model.train()
    adv, _ = advantages(args, task, rewards, mask, generators["weights"])           # (B, G)
    adv = adv.to(device).reshape(-1)                                                 # one per rollout (R,)
    amp = args.dtype != "float32"                                                    # bf16 autocast on CUDA
    tokens, tmask = gen.tokens, gen.mask                                             # (R, Tc)
    batch = pack_shared(prompts, tokens, G, tok.PAD_ID)                              # each prompt encoded once
    with torch.no_grad():
        ref = shared_token_logprobs(ref_model, batch, args.temperature, amp) if args.kl_coef else None
        old = shared_token_logprobs(model, batch, args.temperature, amp) if args.minibatches > 1 else None
    stats = []
    # rows are prompt-major, so a minibatch holds whole prompts when --minibatches divides B (the default); else
    # a prompt's rows may fall in two minibatches, and its prompt is encoded in each (batch.select)
    for rows in torch.arange(len(adv), device=device).chunk(args.minibatches):
        logp = shared_token_logprobs(train_model, batch.select(rows), args.temperature, amp)
        loss, s = vpo.policy_loss(logp, logp.detach() if old is None else old[rows], adv[rows], tmask[rows],
                                  args.clip, args.clip, args.dual_clip, None if ref is None else ref[rows],
                                  args.kl_coef, args.agg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        stats.append(s)
    w_star = torch.as_tensor(task.deploy_weights, dtype=torch.float32)
    answers = [task.parse(t, m) for t in texts]
    per_slot = torch.cat([slot_rewards(rewards[b], mask[b], answers[b * G:(b + 1) * G]) for b in range(len(problems))])
    deploy = (per_slot @ w_star).mean()                                             # missing answers count 0
    set_r = vpo.set_rewards(rewards, mask, log_weights.expand(rewards.shape[0], -1, -1))
    seconds = time.perf_counter() - t0
    return {"step": step + 1, "deploy_reward": float(deploy), "set_reward": float(set_r.mean()),
            "diversity": float(np.mean([vpo.diversity(rewards[b], mask=mask[b]) for b in range(len(problems))])),
            **{k: float(np.mean([s[k] for s in stats])) for k in ("entropy", "kl", "clip_frac", "ratio", "loss")},
            "zero_var_frac": float((adv.view(-1, G) == 0).all(dim=1).float().mean()),
            "valid_rate": float(mask.float().mean()), "completion_tokens": float(tmask.sum(1).float().mean()),
            "tokens_per_s": float(tmask.sum()) / seconds, "step_seconds": seconds}


# ------------------------------------------------------------------------------------------ run management
def base_path(args):
    """Where the warm start for this task and model lives: one per (task, options, model, SFT settings)."""
    keys = ("task", "task_opt", "n_layer", "n_head", "n_embd", "block_size", "sft_steps", "sft_batch_size",
            "sft_lr", "base_seed", "num_answers")
    digest = hashlib.sha1(json.dumps({k: getattr(args, k) for k in keys}, sort_keys=True).encode()).hexdigest()
    return os.path.join(args.out_dir, "base", f"{args.task}-{digest[:10]}", "ckpt.pt")


def run_dir(args):
    return os.path.join(args.out_dir, args.run_name or f"{args.algo}-{args.task}-s{args.seed}")


def new_model(args, device):
    config = GPTConfig(vocab_size=tok.vocab_size, block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd)
    torch.manual_seed(args.base_seed)  # the initialization only; everything later uses explicit generators
    return GPT(config).to(device)


def load_init(path, device):
    try:
        return load_checkpoint(path, device)[0]
    except CheckpointError as e:
        raise UsageError(str(e)) from None


def train(args, task, model, directory, device, state=None, quiet=False):
    """The training loop of one run (SFT or RL), in directory. state: a loaded checkpoint to resume from."""
    sft = args.algo == "sft"
    total = args.sft_steps if sft else args.steps
    opt = model.configure_optimizer(args.sft_lr if sft else args.lr, args.weight_decay, device_type=device.type)
    generators = {"sample": torch.Generator(device=device).manual_seed(step_seed(args.seed, 4)),
                  "weights": torch.Generator().manual_seed(step_seed(args.seed, 5))}
    start = 0
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        for name, g in generators.items():
            g.set_state(state["rng"][name])
        start = state["step"]
    ref_model = None
    if not sft and args.kl_coef:
        ref_model = load_init(args.init_path, device).eval().requires_grad_(False)
    train_model = torch.compile(model) if args.compile else model
    log_weights = vpo.sample_weights(1, 100, task.dim, generator=torch.Generator().manual_seed(0))  # (1, N, D)
    log_path = os.path.join(directory, "log.jsonl")
    _truncate_log(log_path, start)
    ks = [args.num_answers * f for f in K_FACTORS]
    eval_problems = task.problems("test", args.eval_problems, seed=0)
    m_eval = answers_per_rollout(args)
    bar = tqdm(range(start, total), initial=start, total=total, desc=f"{args.algo} {args.task}",
               disable=quiet, dynamic_ncols=True)
    t_start = time.perf_counter() - (state or {}).get("seconds", 0.0)

    def checkpoint(step):
        rng = {name: g.get_state().cpu() for name, g in generators.items()}
        save_checkpoint(os.path.join(directory, "ckpt.pt"), model, optimizer=opt.state_dict(), step=step,
                        args=vars(args), rng=rng, seconds=time.perf_counter() - t_start)

    model.train()
    for step in bar:
        if sft:
            row = {"step": step + 1, **sft_step(model, train_model, opt, task, args, step, device)}
            bar.set_postfix(loss=f"{row['loss']:.3f}")
        else:
            row = rl_step(model, train_model, ref_model, opt, task, args, step, generators, log_weights, device)
            bar.set_postfix(reward=f"{row['deploy_reward']:.3f}", set=f"{row['set_reward']:.3f}",
                            div=f"{row['diversity']:.3f}", kl=f"{row['kl']:.4f}")
        row["seconds"] = time.perf_counter() - t_start
        with open(log_path, "a") as f:
            f.write(json.dumps(row) + "\n")
        last = step + 1 == total
        if args.eval_every and (step + 1) % args.eval_every == 0 and not last:
            metrics, _ = evaluate(model, task, eval_problems, m_eval, ks, args.eval_answers, args.eval_temperature)
            with open(os.path.join(directory, "eval.jsonl"), "a") as f:
                f.write(json.dumps({"step": step + 1, **metrics}) + "\n")
            checkpoint(step + 1)
    bar.close()
    checkpoint(total)
    return time.perf_counter() - t_start


def _truncate_log(path, step):
    """On resume, drop log lines past the checkpoint's step (they will be written again)."""
    for name in (path, os.path.join(os.path.dirname(path), "eval.jsonl")):
        if os.path.exists(name):
            with open(name) as f:
                rows = [line for line in f if line.strip() and json.loads(line)["step"] <= step]
            with open(name, "w") as f:
                f.writelines(rows)


def finish(args, task, model, directory, seconds, device):
    """Final evaluation of the run and of the model it started from, then summary.json, plots and the table."""
    ks = [args.num_answers * f for f in K_FACTORS]
    m = answers_per_rollout(args)
    problems = task.problems("test", args.eval_problems, seed=0)
    t0 = time.perf_counter()
    label = f"{args.algo}{' (matched budget)' if args.match_budget and m == 1 and args.algo != 'sft' else ''}"
    results = {label: evaluate(model, task, problems, m, ks, args.eval_answers, args.eval_temperature)}
    if args.init_path:  # the same evaluation of the starting point: what did RL change?
        results["base"] = evaluate(load_init(args.init_path, device), task, problems, m, ks, args.eval_answers,
                                   args.eval_temperature)
    extra = {"algo": args.algo, "task": args.task, "seed": args.seed, "train_seconds": round(seconds, 1),
             "eval_seconds": round(time.perf_counter() - t0, 1), "params": model.num_params(), "init": args.init_path,
             "args": vars(args)}
    return report(directory, task, ks, results, label, extra)


def prepare(argv):
    """Parse and check the command line, set up the run directory. -> (args, task, model, directory, state)."""
    args = get_parser().parse_args(argv)
    directory = run_dir(args)
    state = None
    if args.resume:
        path = os.path.join(directory, "ckpt.pt")
        if not os.path.isfile(path):
            raise UsageError(f"--resume: no checkpoint at {path}")
        try:
            model, state = load_checkpoint(path)
        except CheckpointError as e:
            raise UsageError(str(e)) from None
        saved = state["args"]
        args = argparse.Namespace(**{**saved, "steps": args.steps, "device": args.device, "quiet": args.quiet,
                                     "resume": True})
    try:
        task = get_task(args.task, **parse_task_options(args.task_opt))
    except (TypeError, ValueError) as e:
        raise UsageError(f"--task {args.task} --task_opt {args.task_opt}: {e}") from None
    check_args(args)
    device = pick_device(args.device)
    if args.dtype == "bfloat16" and device.type != "cuda":
        raise UsageError("--dtype bfloat16 needs a CUDA device (fp32 elsewhere)")
    if not args.resume:
        model = None if args.init is None else load_init(args.init, device)
    if model is not None:  # the block size is the model's
        args.block_size = model.config.block_size
    check_fits(task, 1, args.block_size, "--block_size")
    check_fits(task, args.num_answers, args.block_size)
    if args.resume:
        return args, task, model.to(device), directory, device, state
    if os.path.exists(directory) and not args.overwrite:
        raise UsageError(f"run directory {directory} exists: pass --resume to continue it or --overwrite")
    return args, task, model, directory, device, state


def warm_start(args, task, device, quiet):
    """The cached base for this task and model: trained here (--algo sft in out_dir/base/...) if missing."""
    path = base_path(args)
    if os.path.isfile(path):
        return path
    print(f"warm start: no cached base at {path}; training it ({args.sft_steps} supervised steps)")
    base_args = argparse.Namespace(**{**vars(args), "algo": "sft", "eval_every": 0, "init_path": None})
    directory = os.path.dirname(path)
    shutil.rmtree(directory, ignore_errors=True)  # a half-written cache from an interrupted run
    os.makedirs(directory)
    model = new_model(args, device)
    seconds = train(base_args, task, model, directory, device, quiet=quiet)
    print(f"warm start: {args.sft_steps} steps in {seconds:.0f} s -> {path}")
    return path


def main(argv=None):
    try:
        args, task, model, directory, device, state = prepare(argv)
        quiet = args.quiet
        if state is None:
            if args.algo == "sft":
                args.init_path = args.init
                model = model or new_model(args, device)
            else:
                args.init_path = args.init or warm_start(args, task, device, quiet)
                model = model or load_init(args.init_path, device)
            if os.path.exists(directory):  # --overwrite
                shutil.rmtree(directory)
            os.makedirs(directory)
        print(f"{args.algo} on {args.task}: {model.num_params() / 1e6:.2f}M params, device {device}, "
              f"run dir {directory}\nargs: {json.dumps(vars(args))}")
        seconds = train(args, task, model, directory, device, state, quiet)
        finish(args, task, model, directory, seconds, device)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
train.py's command line, checked before anything is written: what the flags' own ranges cannot say, what the
method needs of the task, whether prompts and answers fit the model, and --resume (the saved arguments, what may
change). Every mistake is a UsageError: one line, exit code 2, nothing on disk touched.
"""
import os

import numpy as np

import vpo
from runs import dist
from runs.cli import (UsageError, chat_task, given_flags, is_pretrained, load_model, load_pretrained_model, make_task,
                      pick_device, source_of)
from runs.dirs import check_out_dir, check_overwritable, check_resume_device, check_run_name, resumed_args
from sample import prompt_ids
from tasks.geometry import parse_geometry



def check_args(args, ks):
    """Ranges that depend on several flags (ks: the k's the evaluation reports)."""
    if args.n_embd % args.n_head:
        raise UsageError(f"--n_embd ({args.n_embd}) must be divisible by --n_head ({args.n_head})")
    if args.eval_answers < max(ks):
        raise UsageError(f"--eval_answers ({args.eval_answers}) must be >= the largest k = "
                         f"{max(ks)} (16 x --num_answers)")
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


def group_size(args):
    """G of the run (an sft run counts as single-answer)."""
    algo = "grpo" if args.algo == "sft" else args.algo
    return vpo.rollouts_per_prompt(algo, args.group_size, args.num_answers, args.match_budget)


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


def check_options(algo, given, alpha, sampler):
    """Every flag that shapes weights or advantages (vpo.OPTIONS) given on the command line must be one the method
    reads (vpo.METHODS[algo].options; sft reads none): a flag is refused, never silently ignored."""
    uses = vpo.METHODS[algo].options if algo in vpo.METHODS else frozenset()
    for name in vpo.OPTIONS:
        if name in given and name not in uses:
            reads = ", ".join(f"--{o}" for o in vpo.OPTIONS if o in uses) or "none of them"
            raise UsageError(f"--{name} is not used by --algo {algo} (of {', '.join('--' + o for o in vpo.OPTIONS)} "
                             f"it reads {reads})")
    if sampler == "sobol" and alpha != 1.0:
        raise UsageError(f"--weight_sampler sobol draws from Dir(1) only: --alpha must be 1, got {alpha}")


def check_method(args, task):
    """What the method needs of the task (vpo.METHODS): weights to draw (D >= 2), a k below the group size, a
    warm-start style. Resolves --warm_start auto and the task's default --sft_steps."""
    if args.sft_steps is None:
        args.sft_steps = task.warm_start_steps
    if args.warm_start == "auto":
        args.warm_start = "routes" if "routes" in task.demo_styles else "diverse"
    if args.warm_start not in task.demo_styles:
        raise UsageError(f"--warm_start {args.warm_start}: task {args.task} has {', '.join(task.demo_styles)}")
    try:
        parse_geometry(args.reward_geometry, task.objectives, task.deploy_weights)
    except ValueError as e:
        raise UsageError(f"--reward_geometry {e}") from None
    method = vpo.METHODS.get(args.algo)
    if method is not None and method.weights is not None and task.dim < 2:
        raise UsageError(f"--algo {args.algo} draws weight vectors over the reward dimensions; task {args.task} "
                         f"has only {task.dim}")
    G = group_size(args)
    k = max(2, G // 2) if args.max_at_k is None else args.max_at_k  # the authors' default
    if args.algo == "max_at_k" and not 1 <= k < G:
        raise UsageError(f"--max_at_k must be in [1, G) with G = {G} rollouts per prompt, got {k}")


def run_dir(args):
    return os.path.join(args.out_dir, args.run_name or f"{args.algo}-{args.task}-s{args.seed}")


def resume_state(argv, args, directory, parser, may_change):
    """--resume: the run's checkpoint, and its saved arguments updated by what may change."""
    if args.overwrite:  # checked on the command line, before the saved arguments replace it
        raise UsageError("--resume and --overwrite exclude each other")
    path = os.path.join(directory, "ckpt.pt")
    if not os.path.isfile(path):
        raise UsageError(f"--resume: no checkpoint at {path}")
    model, state = load_model(path, need=("args", "step", "optimizer"))
    given = given_flags(parser(), argv)
    for where in ("out_dir", "run_name", "resume"):  # they locate the run
        given.pop(where, None)
    args = resumed_args(state["args"], given, parser().parse_args([]), state["step"], may_change)
    args.resume = True
    if state.get("world", 1) != dist.env_world_size():  # the same global batch, but another split of its sums
        raise UsageError(f"--resume: the run was started with {state.get('world', 1)} processes; resume it with as "
                         f"many (here {dist.env_world_size()})")
    return model, state, args


def prepare(argv, parser, may_change, ks_of):
    """Parse and check train.py's command line; nothing is written. parser: () -> the argparse parser;
    may_change: what --resume may change; ks_of(args): the evaluation's k's.
    -> (args, task, model or None, directory, device, state or None)."""
    args = parser().parse_args(argv)
    if args.run_name is not None:
        check_run_name(args.run_name)
    check_out_dir(args.out_dir)
    directory = run_dir(args)
    model = state = None
    if args.resume:
        model, state, args = resume_state(argv, args, directory, parser, may_change)
    else:  # a resumed run keeps its checked settings; --resume may change none of these
        check_options(args.algo, given_flags(parser(), argv), args.alpha, args.weight_sampler)
    probe = (("train", 1), ("train", max(args.batch_size, args.sft_batch_size)), ("test", args.eval_problems))
    task = make_task(args.task, args.task_opt, probe)
    check_args(args, ks_of(args))
    device = pick_device(args.device)
    if args.resume:
        check_resume_device(state, device)
    if args.dtype == "bfloat16" and device.type != "cuda":
        raise UsageError("--dtype bfloat16 needs a CUDA device (fp32 elsewhere)")
    if not args.resume:   # the pretrained model the tokens come from: --init's, or that of the checkpoint --init names
        args.pretrained = None
        if is_pretrained(args.init):
            model = load_pretrained_model(args.init, device)[0]   # recorded absolute: read again from anywhere
            args.pretrained = args.init if args.init == "smollm2" else os.path.abspath(args.init)
        elif args.init is not None:
            model, saved = load_model(args.init, device)
            args.pretrained = source_of(saved.get("args", {}))
            if saved.get("arch", "gpt") != "gpt" and not args.pretrained:
                raise UsageError(f"--init {args.init}: a {saved['arch']} checkpoint that names no pretrained model to "
                                 f"read its tokens with (its args' init)")
    if source_of(vars(args)):   # a chat model reads the task in its own tokens, and writes its answers in numbered tags
        task = chat_task(task, source_of(vars(args)), args.num_answers)
    if model is not None:  # the shape is the model's, so that the saved and printed arguments describe it
        args.block_size, args.n_layer, args.n_head, args.n_embd = (model.config.block_size, model.config.n_layer,
                                                                     model.config.n_head, model.config.n_embd)
    check_method(args, task)
    check_fits(task, 1, args.block_size, "--block_size", args.warm_start)
    check_fits(task, args.num_answers, args.block_size, style=args.warm_start)
    if args.resume:
        return args, task, model.to(device), directory, device, state
    if os.path.lexists(directory):
        if not args.overwrite:
            raise UsageError(f"run directory {directory} exists: pass --resume to continue it or --overwrite")
        check_overwritable(directory)
        if args.init is not None and inside(args.init, directory):
            raise UsageError(f"--init {args.init} lies in the run directory {directory}, which --overwrite would "
                             "delete: copy it elsewhere first")
    return args, task, model, directory, device, state


def inside(path, directory):
    """Whether path lies in directory (links resolved)."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory

"""
Run directories and their checkpoints, as the command lines see them: one-line errors for user mistakes, run
names, the warm-start cache's key and lock, resume checks, and loading a train.py run for evaluate.py, sample.py and
search.py. A library module: it imports model.py and tasks/, never a command.

    args = runs.Parser().parse_args(argv)         # a mistake raises UsageError: "error: ..." and exit code 2
    model, args, task, m = runs.load_run("out/vpo-maze-s0/ckpt.pt")

What may be deleted, and when (train.py): only a run directory, only with --overwrite, only if it holds nothing
but the files a run writes (RUN_FILES), and never a symbolic link. The warm-start cache (out_dir/base/KEY/) is
never deleted: the run holding KEY/.lock trains it, checkpointing to KEY/partial.pt, and KEY/ckpt.pt appears by
an atomic rename when it is complete; other runs wait for the lock, then use it.
"""
import argparse
import contextlib
import hashlib
import json
import math
import os
import re

import torch

from model import CheckpointError, load_checkpoint
from tasks import get_task

MULTI_ANSWER = ("vpo", "multi_rlvr")
MAX_PROBLEMS = 10_000        # the most problems a command draws at once (toy has 1222 test problems)
MAX_SEED = 2**32 - 1
NAME = re.compile(r"[A-Za-z0-9_.,+=@-]{1,100}")
RESERVED = (".", "..", "base")
RUN_FILES = ("ckpt.pt", "log.jsonl", "eval.jsonl", "summary.json", "curves.png", "best_at_k.png", "scatter.png")
CKPT_FILE = re.compile(r"ckpt(-step\d+)?\.pt(\.tmp\d+)?")  # ckpt.pt, --keep_eval_ckpts' ckpt-step<N>.pt, their temps


BASE_FORMAT = 3  # bump when the warm start's code changes what it trains (3: per-demonstration seeds)


class UsageError(Exception):
    """A mistake in the command line: reported in one line, exit code 2, nothing on disk touched."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line) instead of printing usage and exiting."""

    def error(self, message):
        raise UsageError(message)


def number(cast=float, low=-math.inf, high=math.inf, above=None):
    """An argparse type: a finite int or float in [low, high] (or > above). E.g. number(float, above=0) for a
    learning rate, number(int, 1) for a count. nan and inf are refused everywhere."""
    def parse(text):
        try:
            x = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if cast is int else 'a number'}, got {text!r}")
        bounds = [f"> {above}"] if above is not None else [f">= {low}"] if low > -math.inf else []
        bounds += [f"<= {high}"] if high < math.inf else []
        ok = math.isfinite(x) and low <= x <= high and (above is None or x > above)
        if not ok:
            raise argparse.ArgumentTypeError(f"must be a finite number {' and '.join(bounds)}, got {text}")
        return x
    parse.__name__ = cast.__name__
    return parse


COUNT = number(int, 1)                     # a positive integer
SEED = number(int, 0, MAX_SEED)
PROBLEMS = number(int, 1, MAX_PROBLEMS)


def parse_task_options(items):
    """["size=9", "n_gold=2"] -> {"size": 9, "n_gold": 2}; values read as int, then float, else string."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--task_opt must be KEY=VALUE, got {item!r}")
        if key in options:
            raise UsageError(f"--task_opt {key} is given twice")
        for cast in (int, float, str):
            try:
                options[key] = cast(value)
                break
            except ValueError:
                pass
    return options


def make_task(name, task_opt, probe=(("train", 1),)):
    """The task with the command line's options. probe: (split, n) draws made now (seed 0), so that options
    which cannot generate problems fail here in one line, not as a traceback hours later."""
    try:
        task = get_task(name, **parse_task_options(task_opt))
        for split, n in probe:
            task.problems(split, n, seed=0)
    except (TypeError, ValueError, RuntimeError) as e:  # the task refusing its options, or failing to draw
        raise UsageError(f"--task {name}{''.join(' --task_opt ' + o for o in task_opt)}: {e}") from None
    return task


def answers_per_rollout(args):
    """m: answers per rollout (a warm-start base is evaluated as a multi-answer model)."""
    return args.num_answers if args.algo in MULTI_ANSWER + ("sft",) else 1


def pick_device(name):
    """--device: auto (cuda, then mps, then cpu), cpu, cuda or mps; under torchrun, cuda is this process's GPU
    (cuda:LOCAL_RANK)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    if name not in ("cpu", "cuda", "mps") or (name == "cuda" and not torch.cuda.is_available()) \
            or (name == "mps" and not torch.backends.mps.is_available()):
        raise UsageError(f"--device {name!r} is not available here (choose auto, cpu, cuda or mps)")
    if name == "cuda" and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return torch.device(name)


def use_amp(dtype, run_dtype="auto"):
    """--dtype of a tool (auto: the run's own --dtype) -> whether to sample under bf16 autocast (CUDA only)."""
    return (run_dtype if dtype == "auto" else dtype) != "float32"


def set_deterministic():
    """--deterministic: PyTorch's deterministic kernels (a warning, not an error, for an op that has none) and the
    fixed cuBLAS workspace they need (set before cuBLAS is first used). Process-wide; CPU runs need neither."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)


def load_model(path, device="cpu", need=()):
    """load_checkpoint, its errors as UsageError; need: keys the checkpoint must hold (e.g. args, step, rng)."""
    try:
        model, state = load_checkpoint(path, device)
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    missing = [k for k in need if k not in state]
    if missing:
        raise UsageError(f"{path} is not a train.py run checkpoint (no {', '.join(missing)})")
    return model, state


def load_run(path, device="cpu", probe=(("test", 1),)):
    """A train.py checkpoint for the command-line tools: -> (model in eval mode, its args, its task, its m).
    Raises UsageError for a missing, corrupt or foreign checkpoint, or one whose task cannot be built."""
    model, state = load_model(path, device, need=("args",))
    try:
        args = argparse.Namespace(**state["args"])
        task_name, task_opt, m = args.task, list(args.task_opt), answers_per_rollout(args)
    except (AttributeError, TypeError):
        raise UsageError(f"{path} is not a train.py run checkpoint (its args lack task, task_opt or algo)") from None
    return model.eval(), args, make_task(task_name, task_opt, probe), m


def test_problems(task, n, flag="--problems"):
    """n held-out problems (seed 0, as every command draws them), or a UsageError naming the flag."""
    try:
        return task.problems("test", n, seed=0)
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"{flag} {n}: {e}") from None


# ----------------------------------------------------------------------------------------- run directories
def check_run_name(name):
    """A run name is a plain directory name: no separators, not . / .. / base (the warm-start cache)."""
    if not NAME.fullmatch(name) or name.lower() in RESERVED:
        raise UsageError(f"--run_name must be 1-100 letters, digits or _.,+=@- and not {', '.join(RESERVED)}; "
                         f"got {name[:40]!r}{'...' if len(name) > 40 else ''}")


def check_out_dir(path):
    """path is a directory we may write in, or one we can create: checked before anything is written."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"--out_dir {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"--out_dir {path}: {existing} is not writable")


def base_dir(args, device):
    """The warm-start cache entry for this task, model and every setting the supervised phase reads
    (precision as resolved on this device; not --compile or the device type, which change only rounding)."""
    keys = ("task", "n_layer", "n_head", "n_embd", "block_size", "sft_steps", "sft_batch_size", "sft_lr",
            "sft_group", "base_seed", "num_answers", "warm_start", "grad_clip")
    key = {k: getattr(args, k) for k in keys}
    key["goal_prompts"] = goal_prompts(args)
    key["format"] = BASE_FORMAT
    key["task_opt"] = parse_task_options(args.task_opt)
    key["bf16"] = device.type == "cuda" and args.dtype != "float32"
    digest = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return os.path.join(args.out_dir, "base", f"{args.task}-{digest[:10]}")


def goal_prompts(args):
    """goal_cond's warm start shows a weights line in every prompt (a base of its own): a line present in only
    some prompts shifts the grid's positions between them, and measurably slowed learning the maze."""
    return args.algo == "goal_cond" or getattr(args, "goal_prompts", False)


def check_overwritable(directory):
    """--overwrite deletes a run directory only: a real directory holding nothing but the files a run writes."""
    if os.path.islink(directory) or not os.path.isdir(directory):
        raise UsageError(f"--overwrite: {directory} is not a run directory (a link or a file); not deleting it")
    foreign = [f for f in os.listdir(directory) if not (f in RUN_FILES or CKPT_FILE.fullmatch(f))
               or not os.path.isfile(os.path.join(directory, f))]
    if foreign:
        raise UsageError(f"--overwrite: {directory} holds {foreign[0]!r}, which train.py does not write; "
                         "not deleting it")


def create_run_dir(directory, overwrite):
    """Make the run directory; with overwrite, first delete the run there (checked again: it may have appeared
    since the command line was checked). Without overwrite, a directory that appeared meanwhile is refused."""
    if overwrite and os.path.lexists(directory):
        check_overwritable(directory)
        for f in os.listdir(directory):
            os.remove(os.path.join(directory, f))
        os.rmdir(directory)
    try:
        os.makedirs(directory)
    except FileExistsError:
        raise UsageError(f"run directory {directory} exists: pass --resume to continue it or --overwrite") from None


@contextlib.contextmanager
def exclusive(directory, on_wait=None):
    """Hold directory/.lock (flock: the kernel releases it when the holder dies, kill -9 included; POSIX only).
    on_wait() is called once if another process holds it; then we wait for it."""
    import fcntl
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait:
                on_wait()
            fcntl.flock(f, fcntl.LOCK_EX)
        yield  # the lock goes with the file's closing


# -------------------------------------------------------------------------------------------------- resume
def given_flags(parser, argv):
    """{dest: value} of the flags argv sets explicitly (parsed again with no defaults)."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return vars(parser.parse_args(argv))


def resumed_args(saved, given, defaults, step, may_change):
    """The run's saved arguments, updated by the given flags in may_change. Any other flag given with a value
    that differs from the run's is refused, and so is --steps below the checkpoint's step."""
    for name, value in given.items():
        if name not in may_change and saved.get(name, getattr(defaults, name)) != value:
            raise UsageError(f"--resume: --{name} {value} conflicts with the run's "
                             f"{saved.get(name, getattr(defaults, name))} (a resumed run keeps its settings; "
                             f"{', '.join('--' + k for k in may_change)} may change)")
    args = argparse.Namespace(**{**vars(defaults), **saved, **{k: given[k] for k in may_change if k in given}})
    if args.algo != "sft" and args.steps < step:
        raise UsageError(f"--resume: --steps {args.steps} is below the checkpoint's step {step}")
    return args


def check_resume_device(state, device):
    """An optimizer state written on one device type (fused AdamW on CUDA) is not carried to another: refused.
    (Checkpoints written before the device was recorded are not checked.)"""
    saved = state.get("device", device.type)
    if saved != device.type:
        raise UsageError(f"--resume: the run was written on {saved} and cannot continue on {device.type} (its "
                         f"optimizer state is {saved}'s); resume it with --device {saved}, or start a new run "
                         f"from its weights with --init")

def truncate_logs(directory, step):
    """On resume, keep the log rows up to the checkpoint's step (later ones will be written again), and drop a
    partial last line (a write cut short by a kill or a full disk). Both files are read before either is
    rewritten (atomically), so a corrupt line leaves both as they were."""
    kept = {}
    for name in ("log.jsonl", "eval.jsonl"):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            lines = f.read().split("\n")
        kept[path] = []
        for i, line in enumerate(lines):
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                if i < len(lines) - 1:
                    raise UsageError(f"--resume: {path} line {i + 1} is corrupt; fix or remove it") from None
                row = None  # the partial last line
            if row is not None and row["step"] <= step:
                kept[path].append(line + "\n")
    for path, rows in kept.items():
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.writelines(rows)
        os.replace(tmp, path)


def all_finite(model):
    return all(bool(torch.isfinite(p).all()) for p in model.state_dict().values() if p.is_floating_point())

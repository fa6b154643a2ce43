"""
Run directories on disk: names, what --overwrite may delete, the warm-start cache (its key, lock and the cached
base), and resume (the saved arguments, the device, the logs). A library module: never imports a command.

What may be deleted, and when (train.py): only a run directory, only with --overwrite, only if it holds nothing
but the files a run writes (RUN_FILES), and never a symbolic link. The warm-start cache (out_dir/base/KEY/) is
never deleted: the run holding KEY/.lock trains it, checkpointing to KEY/partial.pt, and KEY/ckpt.pt appears by
an atomic rename when it is complete; other runs wait for the lock, then use it.
"""
import argparse
import contextlib
import functools
import hashlib
import json
import os
import re

import torch

from model import save_checkpoint
from runs import dist
from runs.cli import UsageError, load_pretrained_model, parse_task_options

NAME = re.compile(r"[A-Za-z0-9_.,+=@-]{1,100}")
RESERVED = (".", "..", "base")
RUN_FILES = ("ckpt.pt", "log.jsonl", "eval.jsonl", "summary.json", "curves.png", "best_at_k.png", "scatter.png")
CKPT_FILE = re.compile(r"ckpt(-step\d+)?\.pt(\.tmp\d+)?")  # ckpt.pt, --keep_eval_ckpts' ckpt-step<N>.pt, their temps


BASE_FORMAT = 5  # bump when the warm start changes what it trains (3: per-demonstration seeds; 4: the code task's
#                  default shown inputs became inputs=distinct, and the key holds the options given, not the defaults;
#                  5: the code task's default draws its shown and hidden tests together, reward=heldout)


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


@functools.lru_cache(maxsize=4)
def pretrained_key(spec):
    """(LlamaConfig, digest of its weights) of a pretrained model: what names its warm start's cache entry
    (base_dir), as train.py computes it from the loaded model."""
    model, _ = load_pretrained_model(spec)
    return model.config, state_digest(model.state_dict())


def base_dir(out_dir, task_name, task_opt, config, sft, device, source=None):
    """The warm-start cache entry for this task, model (GPTConfig, or a pretrained model's LlamaConfig with source,
    the digest of its weights) and every setting the supervised phase reads (sft: an sft.SFTConfig; precision as
    resolved on this device; not --compile or the device type, which change only rounding)."""
    key = {"task": task_name, "n_layer": config.n_layer, "n_head": config.n_head, "n_embd": config.n_embd,
           "block_size": config.block_size, "sft_steps": sft.steps, "sft_batch_size": sft.batch_size,
           "sft_lr": sft.lr, "sft_group": sft.group, "base_seed": sft.base_seed, "num_answers": sft.num_answers,
           "warm_start": sft.style, "grad_clip": sft.grad_clip, "goal_prompts": sft.goal_prompts,
           "format": BASE_FORMAT, "task_opt": parse_task_options(task_opt), "bf16": device.type == "cuda" and sft.amp,
           **({"pretrained": source} if source else {})}
    digest = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return os.path.join(out_dir, "base", f"{task_name}-{digest[:10]}")


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


def save_run_checkpoint(path, model, opt, step, meta, device, seconds):
    """A run's checkpoint (weights, optimizer, step, device, process count, seconds, and meta such as the run's
    arguments), written by rank 0 atomically; refused if the weights are no longer finite (the last good
    checkpoint is kept rather than overwritten with NaNs). Every process waits for it."""
    if not all_finite(model):
        raise UsageError(f"the weights are no longer finite at step {step} (lower the learning rate?); "
                         f"{path} keeps the last finite ones")
    if dist.is_main():
        save_checkpoint(path, model, optimizer=opt.state_dict(), step=step, **meta, device=device.type,
                        world=dist.world(), seconds=seconds)
    dist.barrier()


def machine():
    """The CPU model, cores and torch build of this process: what a run's floats depend on beyond its seed (the same
    seed trains the same weights on one machine, not across machines: docs/notes.md). Recorded in summary.json.
    A virtual machine may name its CPU only "AMD EPYC", so the CPU's family and model numbers and the kernels torch
    picks for it (AVX2, AVX512) follow the name: two such machines trained the warm start of record differently."""
    import platform
    model, info = platform.processor() or platform.machine(), {}
    if os.path.isfile("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                info.setdefault(key.strip(), val.strip())   # the first processor's values
        model = info.get("model name", model)
    detail = [f"family {info['cpu family']}, model {info['model']}"] if "cpu family" in info and "model" in info else []
    detail.append(torch.backends.cpu.get_cpu_capability())
    return f"{model} ({', '.join(detail)}), {os.cpu_count()} cores, torch {torch.__version__}"


def weights_digest(path):
    """The first 8 hex digits of the SHA-1 of a checkpoint's weights (every tensor of its model, by name): two runs
    started from the same warm start record the same digest. Recorded in summary.json as "warm_start"."""
    return state_digest(torch.load(path, map_location="cpu", weights_only=True)["model"])


def state_digest(state):
    """weights_digest of a state dict (name -> tensor)."""
    h = hashlib.sha1()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().to(torch.float32).contiguous().numpy().tobytes())
    return h.hexdigest()[:8]


def commit():
    """The repository's commit (short hash), with "+changes" where tracked files differ from it; None outside git.
    Recorded in summary.json, so that every run file says which code trained it."""
    import subprocess
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")

"""
The command lines' shared pieces: one-line errors for user mistakes (UsageError, Parser, the number types),
task options, devices, and loading a train.py run for evaluate.py, sample.py and search.py.

    args = Parser().parse_args(argv)              # a mistake raises UsageError: "error: ..." and exit code 2
    model, args, task, m = load_run("out/vpo-maze-s0/ckpt.pt")
    weights = eval_weights(args, task)            # w* for a goal-conditioned run, whose prompts carry it
    model, p = load_pretrained_model("smollm2")   # --init's pretrained model (pretrained.py) as a llama.Llama
"""
import argparse
import math
import os

import torch

import vpo
from model import CheckpointError, load_checkpoint
from tasks import TASKS, get_task, is_task_name
from tasks import tokenizer as tok
from tasks.geometry import parse_geometry

MAX_PROBLEMS = 10_000        # the most problems a command draws at once (toy has 1222 test problems)
MAX_SEED = 2**32 - 1

class UsageError(Exception):
    """A mistake in the command line: reported in one line, exit code 2, nothing on disk touched."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line) instead of printing usage and exiting."""

    def error(self, message):
        raise UsageError(message)


# train.py's defaults that differ with the model (flag, for a GPT trained from scratch, for a pretrained --init): a
# pretrained model needs a gentler rate, and far fewer demonstrations to learn a format (docs/pretrained.md; chosen,
# not tuned). None: the task's own (Task.warm_start_steps).
MODEL_DEFAULTS = (("sft_steps", None, 30), ("sft_batch_size", 64, 8), ("sft_group", 1, 4), ("sft_lr", 2e-3, 1e-4),
                  ("lr", 3e-5, 1e-5))


class TrainParser(Parser):
    """train.py's parser: the flags of MODEL_DEFAULTS not given take the default of the model --init names,
    wherever a command line is parsed."""

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        for name, ours, theirs in MODEL_DEFAULTS:
            if getattr(parsed, name, 0) is None:
                setattr(parsed, name, theirs if is_pretrained(parsed.init) else ours)
        return parsed


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


def task_name(text):
    """An argparse type for --task: a task of tasks.TASKS, or MODULE:CLASS for a tasks.Task subclass defined
    elsewhere (importable from the Python path; built, and so checked, by make_task)."""
    if not is_task_name(text):
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(TASKS)}, or MODULE:CLASS "
                                         f"for a tasks.Task subclass on the Python path)")
    return text


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


def is_pretrained(init):
    """Whether --init names a pretrained model (pretrained.py: "smollm2", a .gguf file or a Hugging Face folder)
    rather than one of our checkpoints."""
    return init is not None and (init == "smollm2" or init.endswith(".gguf") or os.path.isdir(init))


def source_of(run):
    """The pretrained model whose tokenizer a run (its args as a dict) reads and writes in: the one its warm start
    came from ("pretrained", recorded by train.py), or a pretrained "init"; None for the GPT's byte tokens."""
    init = run.get("init")
    return run.get("pretrained") or (init if is_pretrained(init) else None)


def load_pretrained_model(spec, device="cpu"):
    """A pretrained model (pretrained.load_pretrained) as a llama.Llama in fp32 -> (model, its Pretrained), its
    errors as UsageError."""
    from llama import Llama, LlamaConfig
    from pretrained import PretrainedError, load_pretrained
    try:
        p = load_pretrained(spec)
    except PretrainedError as e:
        raise UsageError(f"--init {spec}: {e}") from None
    try:   # tensors that do not fit the model the file's own metadata describes
        model = Llama(LlamaConfig(**p.config))
        model.load_state_dict(p.state_dict)
    except (RuntimeError, ValueError) as e:
        raise UsageError(f"--init {spec}: its tensors do not fit the model its metadata describes "
                         f"({str(e).strip().splitlines()[0]})") from None
    return model.to(device), p


def pretrained_tokenizer(spec):
    """The tokenizer of the pretrained model `spec` (pretrained.load_tokenizer), its errors as UsageError."""
    from pretrained import PretrainedError, load_tokenizer
    try:
        return load_tokenizer(spec)
    except PretrainedError as e:
        raise UsageError(f"--init {spec}: {e}") from None


def chat_task(task, spec, m, tokenizer=None):
    """The task as the pretrained model `spec` reads and writes it (tasks/chat.py), its room sized for m answers;
    tokenizer: the model's, if already read."""
    from tasks.chat import ChatTask
    try:
        return ChatTask(task, tokenizer or pretrained_tokenizer(spec), m)
    except ValueError as e:
        raise UsageError(f"--init {spec}: {e}") from None


def answers_per_rollout(algo, num_answers):
    """m: answers per rollout of a method (vpo.METHODS); a warm-start base (sft) is evaluated as a multi-answer
    model."""
    return num_answers if algo == "sft" or vpo.METHODS[algo].multi_answer else 1


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


def add_device_flags(parser, dtype_help="sampling precision on CUDA: bfloat16 (autocast, bf16 KV cache) or float32; "
                                          "auto: the run's"):
    """--device (pick_device) and --dtype (use_amp), as every command that runs the model takes them."""
    parser.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16"), help=dtype_help)


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
    if state.get("arch", "gpt") == "gpt" and model.config.vocab_size != tok.vocab_size:
        raise UsageError(f"{path}: a model of {model.config.vocab_size} tokens, not the tokenizer's {tok.vocab_size}")
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
        task_name, task_opt, m = args.task, list(args.task_opt), answers_per_rollout(args.algo, args.num_answers)
    except (AttributeError, TypeError, KeyError):
        raise UsageError(f"{path} is not a train.py run checkpoint (its args lack task, task_opt or algo)") from None
    task = make_task(task_name, task_opt, probe)
    if source_of(vars(args)):   # a pretrained model's run: its tokens and its tags
        task = chat_task(task, source_of(vars(args)), args.num_answers)
    return model.eval(), args, task, m


def eval_weights(run, task):
    """What a run's policy is prompted with outside training: the deployment weights w* for a goal-conditioned
    method (vpo.Method.weights == "prompt": it never saw a prompt without them), None for the others."""
    method = vpo.METHODS.get(run.algo)
    return task.deploy_weights if method is not None and method.weights == "prompt" else None


def geometry_of(run, task):
    """The run's --reward_geometry as a tasks.geometry.Geometry (the evaluation describes the vector it saw too)."""
    return parse_geometry(getattr(run, "reward_geometry", ""), task.objectives, task.deploy_weights)


def test_problems(task, n, flag="--problems"):
    """n held-out problems (seed 0, as every command draws them), or a UsageError naming the flag."""
    try:
        return task.problems("test", n, seed=0)
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"{flag} {n}: {e}") from None


def given_flags(parser, argv):
    """{dest: value} of the flags argv sets explicitly (parsed again with no defaults)."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS
    return vars(parser.parse_args(argv))

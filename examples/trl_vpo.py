"""
VPO inside Hugging Face TRL: the set reward as a reward function for `trl.GRPOTrainer`, on any causal language
model and any of the repository's tasks. It reads its command line as TRL's own scripts do (TrlParser over
VPOArguments, GRPOConfig and ModelConfig), so every GRPOConfig and ModelConfig option is a flag.

    pip install trl peft                          # trl brings transformers, datasets, tokenizers, accelerate
    OMP_NUM_THREADS=1 python examples/trl_vpo.py                            # VPO, m = 2, the toy (under a minute)
    python examples/trl_vpo.py --num_answers 3 --num_generations 8 --max_steps 1200       # m = 3 (2 min)
    python examples/trl_vpo.py --algo grpo                                  # GRPO, one answer scored by w*ᵀr
    python examples/trl_vpo.py --model_name_or_path Qwen/Qwen2.5-0.5B-Instruct --task maze --use_peft  # docs/trl.md
    accelerate launch --num_processes 2 examples/trl_vpo.py ...             # or torchrun --nproc_per_node 2
    python examples/trl_vpo.py --model_name_or_path out/trl-vpo --max_steps 0      # evaluate what a run saved

The command: it checks the arguments, builds the task's problems and prompts (trl_tasks.py) and the model (without
--model_name_or_path the tiny GPT-2 of trl_model.py, built once by the main process), and trains it with
GRPOTrainer and the set reward of trl_reward.py. The trained model, or its LoRA adapter, is saved to --output_dir.
Then the main process samples held-out problems and prints evaluate.py's table of them (trl_eval.py). A mistake is
one line, `error: ...`, and exit code 2, before any model is loaded. docs/trl.md has the details.
"""
import importlib.util
import json
import math
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # trl_tasks, trl_reward, trl_model, trl_eval, beside this file
import torch  # noqa: E402

import trl_tasks  # noqa: E402
from evaluate import Scoring, default_ks, evaluate_texts, format_table  # noqa: E402
from runs.cli import UsageError, make_task  # noqa: E402
from tasks import is_task_name  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402
from tasks.toy import ToyTask  # noqa: E402
from trl_eval import print_toy_sets, sample_completions  # noqa: E402
from trl_model import banned_ids, char_tokenizer, save_tiny_gpt2, word_tokenizer  # noqa: E402
from trl_reward import SetReward  # noqa: E402

PACKAGES = ("trl", "transformers", "datasets", "tokenizers", "accelerate")  # trl brings the other four
HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")  # e.g. Qwen/Qwen2.5-0.5B-Instruct, gpt2
MAX_PROBLEMS = 5000   # training problems drawn at most; TRL cycles through them when a run needs more


@dataclass
class VPOArguments:
    """VPO's options and the example's; the trainer's and the model's are GRPOConfig's and ModelConfig's."""
    task: str = field(default="toy", metadata={"help": "toy, maze, code, or MODULE:CLASS (a tasks.Task subclass "
                                                       "importable from the Python path)"})
    task_opt: list[str] = field(default_factory=list, metadata={
        "help": "task options KEY=VALUE, e.g. num_tests=6 for code or answer_tokens=40 for any task"})
    algo: str = field(default="vpo", metadata={"choices": ["vpo", "grpo"], "help": "vpo: m answers, set reward; "
                                                                                 "grpo: one answer, reward w*ᵀr(y)"})
    num_answers: int | None = field(default=None, metadata={"help": "m: answers per completion (vpo 2, grpo 1)"})
    num_weights: int = field(default=100, metadata={"help": "N: Dirichlet weight vectors per problem's group"})
    alpha: float = field(default=1.0, metadata={"help": "Dirichlet concentration of the weights, > 0"})
    eval_prompts: int = field(default=4, metadata={"help": "held-out problems sampled at the end (0: none)"})
    eval_samples: int = field(default=16, metadata={"help": "completions sampled per held-out problem"})
    eval_temperature: float = field(default=0.7, metadata={"help": "the evaluation's temperature (evaluate.py's "
                                                                   "0.7; 0 = greedy)"})
    eval_ks: str | None = field(default=None, metadata={
        "help": "K1,K2,...: the k's of the table, multiples of m (default: m, 2m, 4m, 8m, 16m that fit)"})
    n_layer: int = field(default=2, metadata={"help": "GPT-2 blocks of the model built without --model_name_or_path"})
    n_embd: int = field(default=64, metadata={"help": "its width, even (2 heads)"})


# Where the example's defaults differ from TRL's (GRPOConfig), and why. Each can be set on the command line.
EXAMPLE_DEFAULTS = {
    "output_dir": "out/trl-vpo",        # TRL: trainer_output/ in the working directory; out/ is git-ignored here
    "max_steps": 200,                   # TRL: -1 (epochs); 100 generation batches of the toy, 2 updates each
    "num_generations": 16,              # TRL: 8; at 8, 2 of 5 seeds of the toy at m = 2 stayed on {left, middle}
    "per_device_train_batch_size": 32,  # TRL: 8; 32 completions an update: 2 groups of 16
    "steps_per_generation": 2,          # TRL: gradient_accumulation_steps; train.py's 2 minibatches a batch
    "beta": 1e-3,                       # TRL: 0.0 (no reference model); the authors' k3 KL to the frozen base
    "use_bias_correction_kl": False,    # TRL: True (k3 times the ratio); train.py's k3 alone
    "loss_type": "bnpo",                # TRL: dapo; bnpo is train.py's token mean over the update's tokens
    "delta": 3.0,                       # TRL: None; the authors' dual clip at 3
    "lr_scheduler_type": "constant",    # TRL: linear decay; train.py's constant rate
    "weight_decay": 0.01,               # TRL: 0.0; train.py's
    "disable_dropout": True,            # TRL: False; train.py's models have no dropout
    "save_strategy": "no",              # TRL: a checkpoint every 500 steps; the example saves once, at the end
    "logging_steps": 40,                # TRL: 10; a line every 20 generation batches
}
# Without a GPU: TRL's bf16 default (True) would train the tiny model under CPU autocast, slower and not what
# docs/trl.md measured; use_cpu makes several CPU processes (torchrun, accelerate launch) one DDP run over gloo.
# The tiny model built in place learns at 1e-3, not at TRL's 1e-6 for a pretrained one.
CPU_DEFAULTS = {"bf16": False, "use_cpu": True}
IN_PLACE_DEFAULTS = {"learning_rate": 1e-3}


def get_parser():
    """TRL's parser over VPOArguments, GRPOConfig and ModelConfig, with the example's defaults; a mistake raises
    UsageError (one line). Imports trl."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    class Parser(TrlParser):
        def error(self, message):
            raise UsageError(message)

    parser = Parser((VPOArguments, GRPOConfig, ModelConfig), allow_abbrev=False,
                    description="VPO's set reward inside TRL's GRPOTrainer, on any causal LM and task (docs/trl.md)")
    parser.set_defaults(**EXAMPLE_DEFAULTS, **({} if torch.cuda.is_available() else CPU_DEFAULTS))
    return parser


def given(argv, name):
    """Whether argv sets the field `name` itself (--name, --name=..., --no_name, or with dashes)."""
    flags = {f"--{n}" for n in (name, name.replace("_", "-"), f"no_{name}", f"no-{name.replace('_', '-')}")}
    return any(a.split("=", 1)[0] in flags for a in argv)


def one_line(error):
    return " ".join(str(error).split())[:300] or type(error).__name__


def parse(argv):
    """argv -> (VPOArguments, GRPOConfig, ModelConfig), checked (check_args). UsageError for a mistake."""
    try:
        with warnings.catch_warnings():
            if not given(argv, "gradient_checkpointing"):  # TRL's own default sets the field transformers deprecates
                warnings.filterwarnings("ignore", "`gradient_checkpointing` is deprecated", FutureWarning)
            vpo_args, training_args, model_args = get_parser().parse_args_and_config(argv)
    except (ValueError, TypeError) as e:  # GRPOConfig's own checks, a flag no dataclass has
        raise UsageError(one_line(e)) from None
    if model_args.model_name_or_path is None:
        for name, value in IN_PLACE_DEFAULTS.items():
            if not given(argv, name):
                setattr(training_args, name, value)
    check_args(vpo_args, training_args, model_args)
    return vpo_args, training_args, model_args


def check_args(vpo_args, training_args, model_args):
    """Fill in m and refuse what cannot run: UsageError (one line). Builds the task (cheap: no model)."""
    a = vpo_args
    if not is_task_name(a.task):
        raise UsageError(f"--task {a.task}: not a task (choose toy, maze, code, or MODULE:CLASS for a tasks.Task "
                         f"subclass on the Python path)")
    if a.num_answers is None:
        a.num_answers = 2 if a.algo == "vpo" else 1
    finite = lambda x: math.isfinite(x)  # noqa: E731
    for flag, value, ok, what in (
            ("--num_answers", a.num_answers, a.num_answers >= 1, ">= 1"),
            ("--num_weights", a.num_weights, a.num_weights >= 1, ">= 1"),
            ("--alpha", a.alpha, finite(a.alpha) and a.alpha > 0, "> 0"),
            ("--eval_prompts", a.eval_prompts, 0 <= a.eval_prompts <= 1000, "in 0..1000"),
            ("--eval_samples", a.eval_samples, a.eval_samples >= 1, ">= 1"),
            ("--eval_temperature", a.eval_temperature, finite(a.eval_temperature) and a.eval_temperature >= 0, ">= 0"),
            ("--n_layer", a.n_layer, a.n_layer >= 1, ">= 1"),
            ("--n_embd", a.n_embd, a.n_embd >= 2 and a.n_embd % 2 == 0, "even and >= 2 (2 attention heads)"),
            ("--max_steps", training_args.max_steps, training_args.max_steps >= -1, ">= 0, or -1 for epochs")):
        if not ok:
            raise UsageError(f"{flag} must be {what}, got {value}")
    if a.algo == "grpo" and a.num_answers != 1:
        raise UsageError(f"--algo grpo writes one answer: --num_answers must be 1, got {a.num_answers}")
    task = make_task(a.task, a.task_opt)
    if isinstance(task, ToyTask) and a.num_answers > 8:
        raise UsageError(f"--num_answers must be <= 8 on the toy (it has 3 distinct answers), got {a.num_answers}")
    a.eval_ks = parse_ks(a.eval_ks, a.num_answers, a.eval_samples * a.num_answers)
    model_source(model_args.model_name_or_path, model_args.model_revision)


def parse_ks(text, m, n_answers):
    """--eval_ks -> sorted k's, each a multiple of m and at most the answers sampled per problem; None gives
    evaluate.py's (evaluate.default_ks)."""
    if text is None:
        return default_ks(m, n_answers)
    try:
        ks = sorted({int(k) for k in str(text).split(",")})
    except ValueError:
        raise UsageError(f"--eval_ks must be integers separated by commas, got {text!r}") from None
    if not ks or any(k < 1 or k % m or k > n_answers for k in ks):
        raise UsageError(f"--eval_ks: every k must be a multiple of m = {m} and at most the {n_answers} answers sampled "
                         f"per problem (--eval_samples x m), got {text}")
    return ks


def model_source(name, revision="main"):
    """Where --model_name_or_path comes from: "in-place" (none given), "local" (a saved model's or adapter's
    directory) or "hub" (a name to download, or in the cache). UsageError for a path that is not a saved model, and,
    offline (HF_HUB_OFFLINE=1), for a name that is not in the Hugging Face cache: checked without loading."""
    if name is None:
        return "in-place"
    flag = f"--model_name_or_path {name}"
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        if not any(os.path.isfile(os.path.join(path, f)) for f in ("config.json", "adapter_config.json")):
            raise UsageError(f"{flag}: a directory without config.json or adapter_config.json, not a saved model")
        return "local"
    if os.path.exists(path) or name.startswith((".", "/", "~")) or ".." in name or not HUB_NAME.fullmatch(name):
        raise UsageError(f"{flag}: no such model directory, and not a hub name (such as Qwen/Qwen2.5-0.5B-Instruct)")
    from huggingface_hub import constants, try_to_load_from_cache
    if constants.HF_HUB_OFFLINE:
        cached = [try_to_load_from_cache(name, f, revision=revision) for f in ("config.json", "adapter_config.json")]
        if not any(isinstance(c, str) for c in cached):
            raise UsageError(f"{flag}: not a local directory and not in the Hugging Face cache, and HF_HUB_OFFLINE "
                             f"is set (download it first, or unset HF_HUB_OFFLINE)")
    return "hub"


def missing_packages(argv):
    """The packages the run needs that are not installed (found without importing them)."""
    missing = []
    for name in PACKAGES + (("peft",) if given(argv, "use_peft") else ()):
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


# --- before the model: task, tokenizer, problems, budget ---------------------------------------------------------

def base_of(path):
    """A saved adapter's base model (adapter_config.json), else the path itself."""
    adapter = os.path.join(os.path.expanduser(path), "adapter_config.json")
    if os.path.isfile(adapter):
        with open(adapter) as f:
            return json.load(f)["base_model_name_or_path"]
    return path


def load_tokenizer(model_args, trust_remote_code):
    from transformers import AutoTokenizer
    name = os.path.expanduser(model_args.model_name_or_path)
    try:
        tk = AutoTokenizer.from_pretrained(name, revision=model_args.model_revision,
                                           trust_remote_code=trust_remote_code)
    except Exception as e:  # an adapter saved without its tokenizer: the base's
        try:
            tk = AutoTokenizer.from_pretrained(base_of(name), trust_remote_code=trust_remote_code)
        except Exception:
            raise UsageError(f"--model_name_or_path {model_args.model_name_or_path}: cannot load its tokenizer: "
                             f"{one_line(e)}") from None
    if tk.pad_token is None:
        tk.pad_token = tk.eos_token
    return tk


def model_context(model_args, trust_remote_code):
    """The longest sequence a pretrained model takes (its config's max_position_embeddings), None if unknown."""
    from transformers import AutoConfig
    name = base_of(model_args.model_name_or_path)
    try:
        config = AutoConfig.from_pretrained(os.path.expanduser(name), trust_remote_code=trust_remote_code)
    except Exception as e:
        raise UsageError(f"--model_name_or_path {model_args.model_name_or_path}: cannot load its config: "
                         f"{one_line(e)}") from None
    return getattr(config, "max_position_embeddings", None)


def prepare(vpo_args, training_args, model_args, argv=()):
    """Everything before the model: the task, the tokenizer, the answer format, the training and held-out problems
    keyed by problem_id with their prompts, the completion's budget and the context it needs. Sets GRPOConfig's
    max_completion_length to the budget unless argv gives it. UsageError where m answers do not fit the budget
    or the model's context. -> SimpleNamespace"""
    a, m = vpo_args, vpo_args.num_answers
    task = make_task(a.task, a.task_opt)
    in_place = model_args.model_name_or_path is None
    if in_place:
        tk = word_tokenizer() if isinstance(task, ToyTask) else char_tokenizer()
    else:
        tk = load_tokenizer(model_args, training_args.trust_remote_code)
    # a tokenizer that holds the separator (the example's own) writes the task's format, any other the tags
    fmt = trl_tasks.NativeFormat() if SEP in tk.get_vocab() else trl_tasks.TagFormat()
    chat = bool(getattr(tk, "chat_template", None))
    try:
        room, _ = trl_tasks.answer_room(task, fmt, lambda t: len(tk(t, add_special_tokens=False)["input_ids"]), m,
                                        seed=training_args.seed)
    except ValueError as e:
        raise UsageError(f"--num_answers {m}: {e}") from None
    need = m * room + fmt.end_tokens
    own_budget = given(argv, "max_completion_length")
    budget = training_args.max_completion_length if own_budget else trl_tasks.completion_budget(fmt, room, m)
    if budget < need:
        raise UsageError(f"--num_answers {m}: {m} answers need {need} completion tokens ({room} per answer, measured "
                         f"on the task's demonstrations), more than --max_completion_length {budget}")
    training_args.max_completion_length = budget
    steps, per_generation = training_args.max_steps, training_args.steps_per_generation
    prompts_per_batch = training_args.generation_batch_size // training_args.num_generations
    n_train = MAX_PROBLEMS if steps < 0 else min(MAX_PROBLEMS, -(-steps // per_generation) * prompts_per_batch)
    try:
        train = task.problems("train", max(n_train, 1), seed=training_args.seed)
        held_out = task.problems("test", a.eval_prompts, seed=training_args.seed) if a.eval_prompts else []
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"--task {a.task}: {e}") from None
    problems = {f"train-{i}": p for i, p in enumerate(train)} | {f"test-{i}": p for i, p in enumerate(held_out)}
    prompts = {pid: trl_tasks.render_prompt(fmt, task, p, m, chat) for pid, p in problems.items()}
    kwargs = training_args.chat_template_kwargs
    longest = max(len(trl_tasks.prompt_ids(tk, p, kwargs)) for p in prompts.values())
    if in_place:
        context = 64 * -(-(longest + budget) // 64)  # 64 for the toy, as the example always had
    else:
        context = model_context(model_args, training_args.trust_remote_code)
        if context is not None and longest + budget > context:
            flag = f"--max_completion_length {budget}" if own_budget else f"--num_answers {m}"
            raise UsageError(f"{flag}: the longest prompt ({longest} tokens) and the completion budget ({budget} "
                             f"tokens) exceed the model's context of {context} tokens")
    banned = banned_ids(tk) if fmt.name == "native" and isinstance(task, ToyTask) else None
    return SimpleNamespace(task=task, m=m, tk=tk, fmt=fmt, chat=chat, room=room, budget=budget, context=context,
                           problems=problems, prompts=prompts, banned=banned, in_place=in_place,
                           train_ids=[f"train-{i}" for i in range(len(train))],
                           eval_ids=[f"test-{i}" for i in range(len(held_out))])


# --- the model and the trainer ------------------------------------------------------------------------------------

def model_kwargs(model_args, training_args):
    """AutoModelForCausalLM.from_pretrained's keyword arguments, as TRL's own scripts build them (trl/scripts/grpo.py)."""
    from trl import get_quantization_config
    kwargs = dict(revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code,
                  attn_implementation=model_args.attn_implementation, dtype=model_args.dtype,
                  quantization_config=get_quantization_config(model_args))
    return {k: v for k, v in kwargs.items() if v is not None} | (training_args.model_init_kwargs or {})


def model_path(vpo_args, training_args, model_args, run):
    """The policy's path: --model_name_or_path, or the tiny GPT-2 (trl_model.save_tiny_gpt2) that the main process
    writes to OUTPUT_DIR/base while the others wait."""
    if not run.in_place:
        return os.path.expanduser(model_args.model_name_or_path)
    path = os.path.join(training_args.output_dir, "base")
    with training_args.main_process_first(local=False, desc="the tiny GPT-2"):
        if training_args.process_index == 0:
            save_tiny_gpt2(path, run.tk, run.context, vpo_args.n_layer, vpo_args.n_embd, training_args.seed)
    return path


def build_trainer(vpo_args, training_args, model_args, run, reward=None):
    """The GRPOTrainer of the run (prepare -> run). reward: the reward function (None: SetReward of the run's
    task). -> trainer"""
    from datasets import Dataset
    from trl import GRPOTrainer, get_peft_config

    reward = reward or SetReward(run.task, run.m, run.problems.__getitem__, vpo_args.algo, vpo_args.num_weights,
                                 vpo_args.alpha, training_args.seed, to_task=run.fmt.to_task)
    if run.banned and not (training_args.generation_kwargs or {}).get("suppress_tokens"):
        training_args.generation_kwargs = (training_args.generation_kwargs or {}) | {"suppress_tokens": run.banned}
    training_args.model_init_kwargs = model_kwargs(model_args, training_args)
    data = Dataset.from_dict({"prompt": [run.prompts[i] for i in run.train_ids], "problem_id": run.train_ids})
    return GRPOTrainer(model=model_path(vpo_args, training_args, model_args, run), reward_funcs=reward,
                       args=training_args, train_dataset=data, processing_class=run.tk,
                       peft_config=get_peft_config(model_args))


def load_model(vpo_args, training_args, model_args, run):
    """The model to evaluate without training (--max_steps 0): a saved model or adapter (its base loaded first,
    through peft), or the tiny GPT-2."""
    from transformers import AutoModelForCausalLM
    path = model_path(vpo_args, training_args, model_args, run)
    try:
        model = AutoModelForCausalLM.from_pretrained(path, **model_kwargs(model_args, training_args))
    except Exception as e:
        raise UsageError(f"--model_name_or_path {model_args.model_name_or_path or path}: cannot load it as a causal "
                         f"LM: {one_line(e)}") from None
    return model.to(training_args.device)


# --- the command --------------------------------------------------------------------------------------------------

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        missing = missing_packages(argv)
        if missing:
            raise UsageError(f"examples/trl_vpo.py needs {', '.join(missing)} (no dependency of the project): "
                             f"pip install {' '.join(missing)}")
        vpo_args, training_args, model_args = parse(argv)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        run = prepare(vpo_args, training_args, model_args, argv)
        return train_and_evaluate(vpo_args, training_args, model_args, run)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def progress(main_process):
    """A TrainerCallback that prints one line a log on the main process: the reward, the share of groups with no
    signal (zero std), the completions' length and the share cut by the budget, the KL."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if main_process and logs and "reward" in logs:
                print(f"  step {state.global_step:5d}: reward {logs['reward']:.3f} (std {logs.get('reward_std', 0):.3f},"
                      f" zero-std groups {logs.get('frac_reward_zero_std', 0):.2f}), completion length "
                      f"{logs.get('completions/mean_length', 0):.1f}, clipped {logs.get('completions/clipped_ratio', 0):.2f},"
                      f" kl {logs.get('kl', 0.0):.4f}", flush=True)
    return Progress()


def train_and_evaluate(vpo_args, training_args, model_args, run):
    """Train (every process), save once, then the main process samples the held-out problems and prints
    evaluate.py's table of them (and the toy's sets)."""
    import transformers
    import trl
    main_process = training_args.process_index == 0
    a, m, name = vpo_args, run.m, vpo_args.algo.upper()
    steps = training_args.max_steps
    if steps:
        trainer = build_trainer(vpo_args, training_args, model_args, run)
        trainer.add_callback(progress(main_process))
        model = trainer.model
    else:
        model = load_model(vpo_args, training_args, model_args, run) if main_process else None
    if main_process:
        total = sum(p.numel() for p in model.parameters())
        trained = sum(p.numel() for p in model.parameters() if p.requires_grad) if steps else 0
        what = (f"GPT-2 {a.n_layer} x {a.n_embd}, random init, vocabulary {len(run.tk)}" if run.in_place
                else model_args.model_name_or_path) + f", {total:,} parameters, {trained:,} trained"
        G = training_args.num_generations
        print(f"{name} m={m} through TRL {trl.__version__} GRPOTrainer (transformers {transformers.__version__}, "
              f"torch {torch.__version__}, {training_args.device.type}, {training_args.world_size} process(es), "
              f"{torch.get_num_threads()} thread(s) each): {steps} steps; a generation batch of "
              f"{training_args.generation_batch_size // G} prompts x {G} completions, "
              f"{training_args.steps_per_generation} steps each; {what}")
        print(f"task {run.task.name}: {'conversation' if run.chat else 'text'} prompts of the {run.fmt.name} "
              f"format, up to {run.budget} completion tokens ({run.room} per answer)", flush=True)
    if steps:
        t0 = time.perf_counter()
        trainer.train()
        trainer.save_model(training_args.output_dir)  # the main process writes it
        if main_process:
            print(f"trained in {time.perf_counter() - t0:.0f} s; saved to {training_args.output_dir}", flush=True)
        model = trainer.accelerator.unwrap_model(trainer.model)
    if not main_process or not a.eval_prompts:
        return 0
    t0 = time.perf_counter()
    texts, clipped = sample_completions(model.eval(), run.tk, [run.prompts[i] for i in run.eval_ids], run.budget,
                                       a.eval_samples, a.eval_temperature, training_args.seed, run.banned,
                                       training_args.chat_template_kwargs)
    texts = [run.fmt.to_task(t, m) for t in texts]
    problems = [run.problems[i] for i in run.eval_ids]
    metrics = evaluate_texts(run.task, problems, texts, m, a.eval_ks, a.eval_temperature)
    print(f"sampled {len(texts)} completions on {len(problems)} held-out problems (temperature "
          f"{a.eval_temperature}; {clipped:.0%} cut by the budget) and scored them in {time.perf_counter() - t0:.0f} s")
    print(format_table(metrics, a.algo if steps else "base"))
    if isinstance(run.task, ToyTask):
        print_toy_sets(run.task, problems, texts, m, name, Scoring(run.task, m, a.eval_ks).weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())

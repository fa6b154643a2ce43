"""
VPO inside Hugging Face TRL: the set reward as a reward function for `trl.GRPOTrainer`, on any causal language
model and any of the repository's tasks.

    pip install trl peft                              # trl brings transformers, datasets, tokenizers, accelerate
    OMP_NUM_THREADS=1 python examples/trl_vpo.py                  # VPO, m = 2: the two corners (under a minute)
    python examples/trl_vpo.py --num_answers 3 --group 8 --steps 600   # VPO, m = 3: corners and compromise (2 min)
    python examples/trl_vpo.py --algo grpo                        # GRPO, one answer scored by w*ᵀr: the compromise
    python examples/trl_vpo.py --model Qwen/Qwen2.5-0.5B-Instruct --task maze --lora 16   # one GPU: docs/trl.md

The command: it checks the arguments, builds the task's prompts (trl_tasks.py) and the model (without --model the
tiny GPT-2 of trl_model.py), and trains it with GRPOTrainer and the set reward of trl_reward.py. Then it samples
held-out problems and prints evaluate.py's table of them (trl_eval.py). A mistake is one line, `error: ...`, and
exit code 2, before any model is loaded. docs/trl.md has the trainer's settings, the std convention, and why the
weights hold across groups and processes.
"""
import importlib.util
import os
import re
import sys
import tempfile
import time
import warnings
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # trl_tasks, trl_reward, trl_model, trl_eval, beside this file
import torch  # noqa: E402

import trl_tasks  # noqa: E402
from evaluate import format_table  # noqa: E402
from runs.cli import COUNT, SEED, Parser, UsageError, make_task, number, task_name  # noqa: E402
from tasks.toy import ToyTask  # noqa: E402
from trl_eval import print_toy_sets, sample_completions  # noqa: E402
from trl_model import banned_ids, char_tokenizer, tiny_gpt2, word_tokenizer  # noqa: E402
from trl_reward import SetReward  # noqa: E402

PACKAGES = ("trl", "transformers", "datasets", "tokenizers")  # trl brings the other three, and accelerate
HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")  # e.g. Qwen/Qwen2.5-0.5B-Instruct, gpt2


def get_parser():
    p = Parser(description="VPO's set reward inside TRL's GRPOTrainer, on any causal LM and task (docs/trl.md)")
    p.add_argument("--model", default=None, metavar="NAME_OR_PATH",
                   help="a causal LM (AutoModelForCausalLM): a local directory or a hub name, which downloads "
                        "(default: a tiny GPT-2 with random weights, built in place)")
    p.add_argument("--task", default="toy", type=task_name, help="toy, maze, code, or MODULE:CLASS (a tasks.Task "
                                                                 "subclass importable from the Python path)")
    p.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE",
                   help="task option, e.g. num_tests=6 for code or answer_tokens=40 for any task (repeatable)")
    p.add_argument("--lora", type=COUNT, default=None, metavar="R",
                   help="train a LoRA adapter of rank R (alpha 2R, every linear layer; needs peft)")
    p.add_argument("--algo", default="vpo", choices=("vpo", "grpo"),
                   help="vpo: m answers, set reward; grpo: one answer, reward w*ᵀr(y)")
    p.add_argument("--num_answers", type=COUNT, default=None, help="m: answers per completion (vpo 2, grpo 1)")
    p.add_argument("--steps", type=number(int, 0), default=100,
                   help="RL steps: generation batches of --prompts x --group (0: evaluate the model as loaded)")
    p.add_argument("--prompts", type=COUNT, default=4, help="B: prompts per step")
    p.add_argument("--group", type=number(int, 2), default=16, help="G: completions per prompt (num_generations)")
    p.add_argument("--minibatches", type=COUNT, default=2, help="updates per step (steps_per_generation)")
    p.add_argument("--num_weights", type=COUNT, default=100, help="N: weight vectors per prompt group")
    p.add_argument("--alpha", type=number(float, above=0), default=1.0, help="Dirichlet concentration of the weights")
    p.add_argument("--lr", type=number(float, high=1, above=0), default=None,
                   help="AdamW learning rate, constant (default: 1e-3 for the tiny model, 1e-6 for every weight of "
                        "a pretrained one, 1e-5 for a LoRA adapter)")
    p.add_argument("--beta", type=number(float, 0), default=1e-3, help="k3 KL coefficient to the frozen base")
    p.add_argument("--max_completion_length", type=COUNT, default=None,
                   help="the completion's token budget (default: m answers' rooms, measured on the demonstrations)")
    p.add_argument("--gradient_checkpointing", action="store_true", help="trade compute for activation memory")
    p.add_argument("--n_layer", type=COUNT, default=2, help="GPT-2 blocks (the model built in place)")
    p.add_argument("--n_embd", type=COUNT, default=64, help="GPT-2 width, even (2 heads; the model built in place)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the model, the prompts, the weights, the sampling")
    p.add_argument("--eval_prompts", type=number(int, 1, 1000), default=4, help="held-out problems sampled at the end")
    p.add_argument("--eval_samples", type=COUNT, default=16, help="completions sampled per held-out problem")
    p.add_argument("--eval_temperature", type=number(float, 0), default=0.7,
                   help="sampling temperature of the evaluation (evaluate.py's 0.7; 0 = greedy)")
    p.add_argument("--eval_ks", default=None, metavar="K1,K2,...",
                   help="the k's of the evaluation's table, multiples of m (default: m, 2m, 4m, 8m, 16m that fit)")
    p.add_argument("--log_every", type=number(int, 0), default=20, help="print the mean reward every N steps (0: no)")
    p.add_argument("--out_dir", default=None, help="the trainer's output_dir; given, the trained model (or adapter) is "
                                                   "saved to OUT_DIR/final (default: a temporary directory, removed)")
    return p


def model_source(name):
    """Where --model comes from: "in-place" (none given), "local" (a saved model's directory) or "hub" (a name to
    download). UsageError for a path that is not a saved model."""
    if name is None:
        return "in-place"
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise UsageError(f"--model {name}: a directory without config.json, not a saved model")
        return "local"
    if os.path.exists(path) or ".." in name or not HUB_NAME.fullmatch(name):
        raise UsageError(f"--model {name}: no such model directory, and not a hub name (such as "
                         f"Qwen/Qwen2.5-0.5B-Instruct)")
    return "hub"


def check_args(args):
    """Fill in m, the learning rate and the model's source, and refuse what cannot run: UsageError (one line).
    Builds the task (cheap: no model, no TRL), so an unknown task or option fails here."""
    if args.num_answers is None:
        args.num_answers = 2 if args.algo == "vpo" else 1
    if args.algo == "grpo" and args.num_answers != 1:
        raise UsageError(f"--algo grpo writes one answer: --num_answers must be 1, got {args.num_answers}")
    task = make_task(args.task, args.task_opt)
    if isinstance(task, ToyTask) and args.num_answers > 8:
        raise UsageError(f"--num_answers must be <= 8 on the toy (it has 3 distinct answers), got {args.num_answers}")
    if args.model is None and args.n_embd % 2:
        raise UsageError(f"--n_embd must be even (2 attention heads), got {args.n_embd}")
    if (args.prompts * args.group) % args.minibatches:
        raise UsageError(f"--minibatches must divide --prompts x --group = {args.prompts * args.group}, "
                         f"got {args.minibatches}")
    args.eval_ks = eval_ks(args.eval_ks, args.num_answers, args.eval_samples * args.num_answers)
    args.source = model_source(args.model)
    if args.lr is None:
        args.lr = 1e-3 if args.source == "in-place" else 1e-5 if args.lora else 1e-6
    return args


def eval_ks(text, m, n_answers):
    """--eval_ks -> sorted k's: each a multiple of m (whole completions) and at most the answers sampled per problem;
    None gives evaluate.py's (trl_tasks.eval_ks)."""
    if text is None:
        return trl_tasks.eval_ks(m, n_answers)
    try:
        ks = sorted({int(k) for k in text.split(",")})
    except ValueError:
        raise UsageError(f"--eval_ks must be integers separated by commas, got {text!r}") from None
    bad = [k for k in ks if k < 1 or k % m or k > n_answers]
    if bad or not ks:
        raise UsageError(f"--eval_ks: every k must be a multiple of m = {m} and at most the {n_answers} answers sampled "
                         f"per problem (--eval_samples x m), got {text}")
    return ks


def missing_packages(args):
    """The packages the run needs that are not installed (found without importing them)."""
    missing = []
    for name in PACKAGES + (("peft",) if args.lora else ()):
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


# --- before the model: task, tokenizer, prompts, budget ----------------------------------------------------------

def one_line(error):
    return " ".join(str(error).split())[:300] or type(error).__name__


def load_tokenizer(args, task):
    if args.source == "in-place":
        return word_tokenizer() if isinstance(task, ToyTask) else char_tokenizer()
    from transformers import AutoTokenizer
    try:
        tk = AutoTokenizer.from_pretrained(os.path.expanduser(args.model))
    except Exception as e:  # a hub name that does not exist or cannot be fetched, a broken directory
        raise UsageError(f"--model {args.model}: cannot load its tokenizer: {one_line(e)}") from None
    if tk.pad_token is None:
        tk.pad_token = tk.eos_token
    return tk


def model_context(args):
    """The longest sequence a pretrained model takes (its config's max_position_embeddings), None if unknown."""
    from transformers import AutoConfig
    try:
        config = AutoConfig.from_pretrained(os.path.expanduser(args.model))
    except Exception as e:
        raise UsageError(f"--model {args.model}: cannot load its config: {one_line(e)}") from None
    return getattr(config, "max_position_embeddings", None)


def prepare(args):
    """Everything before the model: the task, the tokenizer, the answer format, the training and held-out problems
    with their prompts, the completion's budget and the context it needs. UsageError where m answers do not fit
    the budget or the model's context. -> SimpleNamespace"""
    task, m = make_task(args.task, args.task_opt), args.num_answers
    tk = load_tokenizer(args, task)
    fmt = trl_tasks.NativeFormat() if args.source == "in-place" else trl_tasks.TagFormat()
    chat = args.source != "in-place" and bool(getattr(tk, "chat_template", None))
    try:
        room, _ = trl_tasks.answer_room(task, fmt, lambda t: len(tk(t, add_special_tokens=False)["input_ids"]), m,
                                        seed=args.seed)
    except ValueError as e:
        raise UsageError(f"--num_answers {m}: {e}") from None
    need = trl_tasks.completion_budget(fmt, room, m)
    budget = args.max_completion_length or need
    if budget < need:
        raise UsageError(f"--num_answers {m}: {m} answers need {need} completion tokens ({room} per answer, measured "
                         f"on the task's demonstrations), more than --max_completion_length {budget}")
    try:
        problems = task.problems("train", min(args.steps * args.prompts, 5000), seed=args.seed)  # fresh ones
        eval_problems = task.problems("test", args.eval_prompts, seed=args.seed)
    except (ValueError, RuntimeError) as e:
        raise UsageError(f"--task {args.task}: {e}") from None
    prompts = [trl_tasks.render_prompt(fmt, task, p, m, chat) for p in problems]
    eval_prompts = [trl_tasks.render_prompt(fmt, task, p, m, chat) for p in eval_problems]
    longest = max(len(trl_tasks.prompt_ids(tk, p)) for p in prompts + eval_prompts)
    if args.source == "in-place":
        context = 64 * -(-(longest + budget) // 64)  # 64 for the toy, as the example always had
    else:
        context = model_context(args)
        if context is not None and longest + budget > context:
            raise UsageError(f"--num_answers {m}: the longest prompt ({longest} tokens) and the budget of {m} answers "
                             f"({budget} tokens) exceed the model's context of {context} tokens")
    return SimpleNamespace(task=task, m=m, tk=tk, fmt=fmt, chat=chat, room=room, budget=budget, context=context,
                           problems=problems, prompts=prompts, eval_problems=eval_problems, eval_prompts=eval_prompts)


# --- the trainer --------------------------------------------------------------------------------------------------

def load_model(args, run, out_dir):
    """The policy: the tiny GPT-2 (trl_model.tiny_gpt2), or the pretrained model (bf16 for a LoRA base on a GPU,
    else float32)."""
    from transformers import AutoModelForCausalLM
    if args.source != "in-place":
        dtype = torch.bfloat16 if args.lora and torch.cuda.is_available() else torch.float32
        try:
            return AutoModelForCausalLM.from_pretrained(os.path.expanduser(args.model), dtype=dtype)
        except Exception as e:
            raise UsageError(f"--model {args.model}: cannot load it as a causal LM: {one_line(e)}") from None
    return tiny_gpt2(run.tk, run.context, args.n_layer, args.n_embd, args.seed, out_dir)


def suppressed(args, run):
    """Token ids generation may not emit: on the toy with the in-place model, all but the answer words."""
    return banned_ids(run.tk) if args.source == "in-place" and isinstance(run.task, ToyTask) else None


def build_trainer(args, run, reward, out_dir):
    """The GRPOTrainer of the run (prepare(args) -> run), with the settings of docs/trl.md. reward: the reward
    function (None: SetReward of the run's task). -> trainer"""
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    reward = reward or SetReward(run.task, run.m, run.problems.__getitem__, args.algo, args.num_weights, args.alpha,
                                 args.seed, to_task=run.fmt.to_task)
    model = load_model(args, run, out_dir)
    data = Dataset.from_dict({"prompt": run.prompts, "problem_id": list(range(len(run.problems)))})
    B, G, M = args.prompts, args.group, args.minibatches
    gpu = torch.cuda.is_available()
    banned = suppressed(args, run)
    config = GRPOConfig(
        output_dir=out_dir, seed=args.seed, use_cpu=not gpu, bf16=gpu, fp16=False, report_to="none",
        num_generations=G, per_device_train_batch_size=B * G // M, steps_per_generation=M,
        gradient_accumulation_steps=1, num_iterations=1, max_steps=args.steps * M,
        scale_rewards="group", loss_type="bnpo", beta=args.beta, use_bias_correction_kl=False,
        epsilon=0.2, epsilon_high=0.2, delta=3.0,
        temperature=1.0, top_p=1.0, top_k=0, max_completion_length=run.budget,
        generation_kwargs={"suppress_tokens": banned} if banned else None,
        learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.01, adam_beta2=0.999,
        max_grad_norm=1.0, logging_steps=max(1, args.log_every) * M, save_strategy="no", eval_strategy="no",
        **({"gradient_checkpointing": True} if args.gradient_checkpointing else {}),
        disable_dropout=True, disable_tqdm=True, log_completions=False, dataloader_num_workers=0)
    peft_config = None
    if args.lora:
        from peft import LoraConfig
        peft_config = LoraConfig(r=args.lora, lora_alpha=2 * args.lora, lora_dropout=0.0, target_modules="all-linear",
                                 task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=data, processing_class=run.tk,
                          peft_config=peft_config)
    trainer.remove_callback(PrinterCallback)
    return trainer


# --- the command --------------------------------------------------------------------------------------------------

def main(argv=None):
    try:
        args = check_args(get_parser().parse_args(argv))
        missing = missing_packages(args)
        if missing:
            raise UsageError(f"examples/trl_vpo.py needs {', '.join(missing)} (no dependency of the project): "
                             f"pip install {' '.join(missing)}")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.source != "hub":  # read at import: set first (nothing is downloaded)
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    quiet()
    try:
        run = prepare(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vpo-trl-") as tmp:
        try:
            return train_and_evaluate(args, run, args.out_dir or tmp)
        except UsageError as e:  # the model itself failed to load
            print(f"error: {e}", file=sys.stderr)
            return 2


def quiet():
    import transformers
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def train_and_evaluate(args, run, out_dir):
    """Train, sample the held-out problems and print evaluate.py's table of them (and the toy's sets)."""
    import transformers
    import trl
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, _args, state, _control, logs=None, **__):
            if logs and "reward" in logs:
                print(f"  step {state.global_step // args.minibatches:4d}: mean reward {logs['reward']:.3f}"
                      f"  (reward std {logs.get('reward_std', float('nan')):.3f}, kl {logs.get('kl', 0.0):.4f})")

    if args.steps:
        trainer = build_trainer(args, run, None, out_dir)
        if args.log_every:
            trainer.add_callback(Progress())
        model = trainer.accelerator.unwrap_model(trainer.model)
    else:
        model = load_model(args, run, out_dir).to("cuda" if torch.cuda.is_available() else "cpu")
    m, name = run.m, args.algo.upper()
    if args.source == "in-place":
        what = f"GPT-2 {args.n_layer} x {args.n_embd}, random init, vocabulary {len(run.tk)}"
    else:
        total = sum(p.numel() for p in model.parameters())
        trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
        what = f"{args.model}, {total:,} parameters, {trained:,} trained" + \
               (f" (LoRA rank {args.lora})" if args.lora else "")
    print(f"{name} m={m} through TRL {trl.__version__} GRPOTrainer (transformers {transformers.__version__}, torch "
          f"{torch.__version__}, {'cuda' if torch.cuda.is_available() else 'cpu'}, {torch.get_num_threads()} "
          f"thread(s)): {args.steps} steps x {args.prompts} prompts x {args.group} completions, {args.minibatches} "
          f"updates per step; {what}")
    print(f"task {run.task.name}: {'conversation' if run.chat else 'text'} prompts of the {run.fmt.name} format, "
          f"up to {run.budget} completion tokens ({run.room} per answer)")
    if args.steps:
        t0 = time.perf_counter()
        trainer.train()
        print(f"trained in {time.perf_counter() - t0:.0f} s")
        if args.out_dir:
            trainer.save_model(os.path.join(out_dir, "final"))
        model = trainer.accelerator.unwrap_model(trainer.model)

    t0 = time.perf_counter()
    texts = sample_completions(model.eval(), run, args.eval_samples, args.eval_temperature, args.seed,
                               suppressed(args, run))
    metrics = trl_tasks.evaluate_texts(run.task, run.eval_problems, texts, m, args.eval_ks,
                                       trl_tasks.eval_weights(run.task), args.eval_temperature)
    print(f"sampled {len(texts)} completions on {args.eval_prompts} held-out problems (temperature "
          f"{args.eval_temperature}) and scored them in {time.perf_counter() - t0:.0f} s")
    print(format_table(metrics, args.algo if args.steps else "base"))
    if isinstance(run.task, ToyTask):
        print_toy_sets(run.task, run.eval_problems, texts, m, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())

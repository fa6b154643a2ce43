"""
VPO inside Hugging Face TRL: the set reward as a reward function for `trl.GRPOTrainer`, on any causal language
model and any of the repository's tasks.

    pip install trl peft                              # trl brings transformers, datasets, tokenizers, accelerate
    OMP_NUM_THREADS=1 python examples/trl_vpo.py                  # VPO, m = 2: the two corners (under a minute)
    python examples/trl_vpo.py --num_answers 3 --group 8 --steps 600   # VPO, m = 3: corners and compromise (2 min)
    python examples/trl_vpo.py --algo grpo                        # GRPO, one answer scored by w*ᵀr: the compromise
    python examples/trl_vpo.py --model Qwen/Qwen2.5-0.5B-Instruct --task maze --lora 16   # one GPU: docs/trl.md

The model. Without --model it is a tiny GPT-2 with random weights, built in place and offline over a vocabulary of
its own. On the toy that vocabulary is the prompt's words, `left`, `right`, `middle`, the separator <|sep|> and
<|end|> as EOS, so that a random policy already writes candidate answers and RL shapes the set; generation may only
emit the answer words, <|sep|> and <|end|> (generation_kwargs suppress_tokens; the loss still uses the full
vocabulary's log-probs). On another task it is the printable ASCII characters, one token each, and <|sep|>.
--model takes any AutoModelForCausalLM: a local directory, or a hub name, the only case that downloads. --lora R
trains a LoRA adapter of rank R (alpha 2R, every linear layer; peft) in place of every weight; TRL then takes the
reference model of the KL term from the base with the adapter switched off.

Prompts and answers (examples/trl_tasks.py). The tiny GPT-2 reads the task's own prompt (Task.prompt) and writes
its m answers joined by the <|sep|> token, as train.py's GPT does. A pretrained model has no such token: it is told
what the task is and asked for each answer between numbered tags, <answer1>...</answer1>, one a line, and the
reward function and the evaluation map the tags back to the task's format (<|sep|> between the answers) before
Task.parse. Where the tokenizer has a chat template the prompt is a conversation of one user message, which TRL
renders with the template; otherwise it is plain text. The completion's budget is m answers' rooms, measured in
the model's tokens on the task's demonstrations (trl_tasks.answer_room); --max_completion_length may raise it.

VPO only replaces the advantage estimator, and GRPOTrainer already forms A_g = (R_g - mean_group R) / std, so
VPO fits in as a reward function: each completion holds m answers (Task.parse), each answer gets a reward vector
r(y) (Task.score_rollouts: missing answers and repeats within a completion are masked out), and the function
returns the set reward of vpo.set_rewards,

    R_g = (1/N) sum_n max_{y in completion g} w_n^T r(y),    w_1..w_N ~ Dir(alpha 1_D)  (vpo.sample_weights)

with the N weights shared by the G completions of one prompt. TRL's own group normalization then turns R into
VPO's advantage (up to the std convention below). It must be the only normalization: the function returns the
raw set reward, never an advantage, and TRL's scale_rewards stays "group". (The authors' advice to set
scale_rewards=False applies to the other way of wiring it, a reward function that returns advantages it has
already normalized; that needs a whole group in one call, which several processes do not guarantee.)

Groups and processes. TRL's RepeatSampler puts the num_generations completions of a prompt next to each other,
and each process calls the reward function on its own slice before the rewards are gathered and normalized, so
a process can hold only the head or the tail of a group. The weights are therefore not drawn per call: they are
a function of (--seed, trainer_state.global_step, the prompt text), seeded through runs.seeding.step_seed with a
blake2b hash of the prompt (Python's hash() is salted per process and would give every process other weights).
Every completion of a group, in whichever process and call, is scored under the same N weights; another prompt
or another step gets other weights. Two dataset rows with the same prompt text in one batch would share theirs.

The trainer settings that must change for train.py's VPO (TRL 1.16; docs/trl.md has the source lines):
    num_generations=G                 the group: completions per prompt that share the weights
    scale_rewards="group"             (the default) TRL divides by the group's *sample* std (ddof 1) + 1e-4 where
                                      VPO divides by the population std (ddof 0) + 1e-6: A_TRL = A_VPO *
                                      (std_0 + 1e-6) / (std_1 + 1e-4), about sqrt((G-1)/G) = 0.94 for G = 8. TRL
                                      zeroes no flat group: a group that scored bit-equal gets 0 / 1e-4 = 0, but
                                      one whose rewards differ by float residue gets tiny nonzero advantages
                                      where VPO writes exact zeros (std < 1e-6)
    loss_type="bnpo"                  token-mean over the optimizer step's tokens (train.py --agg token-mean);
                                      TRL's default "dapo" divides by the generation batch's tokens / the steps
                                      it is split into, equal only when every step holds as many tokens
    beta=1e-3, use_bias_correction_kl=False
                                      the k3 KL to the frozen base, as the paper; TRL's default beta is 0 (no
                                      reference model) and by default it multiplies the KL by the ratio
    epsilon=0.2, epsilon_high=0.2     PPO's clip range
    delta=3.0                         TRL's two-sided clip: the ratio of the unclipped term is capped at delta,
                                      which for A < 0 is exactly the dual clip c = 3 (and changes nothing for
                                      A > 0, delta > 1 + epsilon)
    steps_per_generation=M, per_device_train_batch_size=B*G/M, num_iterations=1
                                      one PPO epoch over one generation batch in M updates (--minibatches); TRL
                                      shuffles the batch before splitting it, train.py keeps prompts whole
    temperature=1.0, top_p=1.0, top_k=0   sampling from the whole distribution (TRL's defaults)
    max_completion_length             room for m answers (above). TRL has one budget for the whole completion, not
                                      train.py's own room of answer_tokens per answer (sample.AnswerBudget): a long
                                      answer takes the room of the next ones, and the completion can be cut inside
                                      an answer
    learning_rate, lr_scheduler_type="constant", weight_decay=0.01, adam_beta2=0.999, max_grad_norm=1.0
                                      the authors' optimizer; the rate is 1e-3 for the tiny model, 1e-6 (the
                                      authors') for every weight of a pretrained one, 1e-5 for a LoRA adapter

At the end the script samples --eval_samples completions for each of --eval_prompts held-out problems
(task.problems("test", n, seed)) with transformers' generate at --eval_temperature (0.7, evaluate.py's) and prints
evaluate.py's table of them (trl_tasks.evaluate_texts): best@k over whole rollouts and pooled, E_w[best@k], pass@k
(and pass_target@k where the task checks the target), diversity. On the toy it then prints the sets the policy
writes most often, with E_w[max over the set of w^T r] (w ~ Dir(1, 1), midpoint rule) and w*^T r of the best.

A mistake (a model path that does not exist, a task the repository does not know, m answers that do not fit the
completion budget or the model's context, --lora without peft) is one line, `error: ...`, and exit code 2, before
any model is loaded.
"""
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # trl_tasks, beside this file
import torch  # noqa: E402

import trl_tasks  # noqa: E402
import vpo  # noqa: E402
from evaluate import format_table  # noqa: E402
from runs.cli import COUNT, SEED, Parser, UsageError, make_task, number, task_name  # noqa: E402
from runs.seeding import step_seed  # noqa: E402
from tasks.tokenizer import BOS, END, PAD, SEP  # noqa: E402
from tasks.toy import WORDS, ToyTask  # noqa: E402

PACKAGES = ("trl", "transformers", "datasets", "tokenizers")  # trl brings the other three, and accelerate
UNK = "<|unk|>"
PROMPT_WORDS = ("toy", "name", "of", ":", "/") + tuple("0123456789")  # the rest of ToyTask.prompt's words
CHARS = tuple(chr(c) for c in range(32, 127)) + ("\n",)                # the in-place model's vocabulary elsewhere
WEIGHT_STREAM = 5  # runs/seeding.py's stream of VPO's weights
HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")  # e.g. Qwen/Qwen2.5-0.5B-Instruct, gpt2
EVAL_ROWS = 256    # completions generated at once in the evaluation


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


def stable_hash(text):
    """A 64-bit hash of a string, the same in every process and run (blake2b; Python's hash() is salted)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


class SetReward:
    """A TRL reward function: VPO's set reward R_g of each completion (algo "vpo"), or GRPO's w*ᵀr(y_g) of its one
    answer (algo "grpo"). TRL calls it with the batch's prompts and completions (strings, or conversations), the
    dataset's other columns (problem_id) and trainer_state, and normalizes the returned floats per group itself.

    problem_of: the task's problem from a value of the dataset's problem_id column. to_task: the model's completion
    text -> the task's format (trl_tasks.TagFormat.to_task; default: the text itself).
    last_weights: after a call, the weights each completion was scored under, (n, N, D) (vpo only).
    """

    def __init__(self, task, m, problem_of, algo="vpo", num_weights=100, alpha=1.0, seed=0, to_task=None):
        self.task, self.m, self.algo, self.problem_of = task, m, algo, problem_of
        self.num_weights, self.alpha, self.seed = num_weights, alpha, seed
        self.to_task = to_task or (lambda text, m: text)
        self.__name__ = f"{algo}_reward"  # TRL names the reward's log entries after it
        self.last_weights = None

    def weights(self, step, prompt):
        """w_1..w_N ~ Dir(alpha 1_D) of one prompt group at one trainer step: (1, N, D). A function of
        (seed, step, prompt) only, so every process draws the same weights for the same group."""
        key = stable_hash(trl_tasks.prompt_key(prompt))
        g = torch.Generator().manual_seed(step_seed(self.seed, WEIGHT_STREAM, step, key))
        return vpo.sample_weights(1, self.num_weights, self.task.dim, self.alpha, generator=g)

    def __call__(self, prompts, completions, problem_id, trainer_state=None, **_):
        step = 0 if trainer_state is None else trainer_state.global_step
        out = [0.0] * len(completions)
        used = torch.zeros(len(completions), self.num_weights, self.task.dim)
        texts = [self.to_task(trl_tasks.completion_text(c), self.m) for c in completions]
        rows_of = {}  # prompt -> its rows in this call (adjacent in TRL's batch; a group may be cut at the ends)
        for i, prompt in enumerate(prompts):
            rows_of.setdefault(trl_tasks.prompt_key(prompt), []).append(i)
        for prompt, rows in rows_of.items():
            problem = self.problem_of(problem_id[rows[0]])
            r, mask = self.task.score_rollouts(problem, [texts[i] for i in rows], self.m)   # (G', m, D), (G', m)
            r, mask = torch.from_numpy(r)[None], torch.from_numpy(mask)[None]              # (1, G', m, D)
            if self.algo == "vpo":
                w = self.weights(step, prompt)                                              # (1, N, D)
                R = vpo.set_rewards(r, mask, w)[0]        # (1/N) sum_n max_y w_n^T r(y): (G',)
                used[rows] = w[0]
            else:
                R = r[0, :, 0] @ torch.as_tensor(self.task.deploy_weights, dtype=r.dtype)   # w*^T r(y_g): (G',)
            for i, value in zip(rows, R.tolist()):
                out[i] = value
        self.last_weights = used if self.algo == "vpo" else None
        return out


# --- the model built in place ------------------------------------------------------------------------------------

def word_tokenizer():
    """A word-level tokenizer over the toy's words, built offline. The separator is an added but not special
    token, so that TRL's decoding (skip_special_tokens=True) keeps it; a completion decodes to e.g.
    'left <|sep|> right'. Every prompt starts with <|bos|>."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {t: i for i, t in enumerate((PAD, BOS, END, UNK, SEP) + WORDS + PROMPT_WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                  pre_tokenizers.Digits(individual_digits=True)])
    tk = wrap_tokenizer(core, vocab)
    ids = tk("toy 417: name 2 of left/right/middle\n")["input_ids"]
    assert UNK not in tk.convert_ids_to_tokens(ids) and len(ids) == 14, "the toy prompt must tokenize to words"
    return tk


def char_tokenizer():
    """One token per printable ASCII character and newline (any other character is <|unk|>), and the separator
    as on the toy: the in-place model's tokenizer for a task other than the toy."""
    from tokenizers import Tokenizer, decoders, models
    vocab = {t: i for i, t in enumerate((PAD, BOS, END, UNK, SEP) + CHARS)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))   # no merges: one token a character
    core.decoder = decoders.Fuse()
    return wrap_tokenizer(core, vocab)


def wrap_tokenizer(core, vocab):
    """The special tokens, <|sep|> as an added token that is not special, <|bos|> before every text, in a
    transformers tokenizer that pads on the left."""
    from tokenizers import AddedToken, processors
    from transformers import PreTrainedTokenizerFast
    core.add_special_tokens([AddedToken(t, special=True) for t in (PAD, BOS, END, UNK)])
    core.add_tokens([AddedToken(SEP, special=False, normalized=False)])
    core.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS, eos_token=END, unk_token=UNK,
                                   padding_side="left")


def banned_ids(tk):
    """Every token a toy completion may not use: all but the answer words, <|sep|> and <|end|>."""
    allowed = {tk.convert_tokens_to_ids(t) for t in WORDS + (SEP, END)}
    return [i for i in range(len(tk)) if i not in allowed]


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


def prompt_ids(tk, prompt):
    """A dataset prompt's token ids as TRL builds them: the chat template for a conversation, else the text
    with the tokenizer's special tokens."""
    if isinstance(prompt, str):
        return tk(prompt)["input_ids"]
    text = tk.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return tk(text, add_special_tokens=False)["input_ids"]


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
    longest = max(len(prompt_ids(tk, p)) for p in prompts + eval_prompts)
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
    """The policy: the tiny GPT-2 (saved to out_dir/base and loaded back: with beta > 0 TRL builds the frozen
    reference from the policy's path), or the pretrained model (bf16 for a LoRA base on a GPU, else float32)."""
    from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel
    if args.source != "in-place":
        dtype = torch.bfloat16 if args.lora and torch.cuda.is_available() else torch.float32
        try:
            return AutoModelForCausalLM.from_pretrained(os.path.expanduser(args.model), dtype=dtype)
        except Exception as e:
            raise UsageError(f"--model {args.model}: cannot load it as a causal LM: {one_line(e)}") from None
    tk = run.tk
    torch.manual_seed(args.seed)  # the random weights of GPT-2
    ids = {t: tk.convert_tokens_to_ids(t) for t in (PAD, BOS, END)}
    base = GPT2LMHeadModel(GPT2Config(
        n_layer=args.n_layer, n_head=2, n_embd=args.n_embd, n_positions=run.context, vocab_size=len(tk),
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=ids[BOS], eos_token_id=ids[END],
        pad_token_id=ids[PAD]))
    base_path = os.path.join(out_dir, "base")
    base.save_pretrained(base_path)
    return GPT2LMHeadModel.from_pretrained(base_path)


def suppressed(args, run):
    """Token ids generation may not emit: on the toy with the in-place model, all but the answer words."""
    return banned_ids(run.tk) if args.source == "in-place" and isinstance(run.task, ToyTask) else None


def build_trainer(args, run, reward, out_dir):
    """The GRPOTrainer of the run (prepare(args) -> run), with the settings of the module docstring. reward: the
    reward function (None: SetReward of the run's task). -> trainer"""
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


# --- the evaluation -----------------------------------------------------------------------------------------------

def sample_completions(model, args, run):
    """--eval_samples completions of each held-out prompt with transformers' generate at --eval_temperature,
    decoded as TRL decodes them and mapped to the task's format. -> texts (P*K,), prompt-major"""
    tk, K, T = run.tk, args.eval_samples, args.eval_temperature
    device = next(model.parameters()).device
    eos = model.generation_config.eos_token_id
    eos = [tk.eos_token_id] + [e for e in ([eos] if isinstance(eos, int) else eos or []) if e != tk.eos_token_id]
    banned = suppressed(args, run)
    torch.manual_seed(step_seed(args.seed, 8))  # HF generate samples from torch's global generator
    texts, chunk = [], max(1, EVAL_ROWS // K)
    for start in range(0, len(run.eval_prompts), chunk):
        ids = [prompt_ids(tk, p) for p in run.eval_prompts[start:start + chunk]]
        width = max(map(len, ids))
        x = torch.tensor([[tk.pad_token_id] * (width - len(i)) + i for i in ids], device=device)   # left-padded
        mask = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids], device=device)
        with torch.no_grad():
            out = model.generate(input_ids=x, attention_mask=mask, do_sample=T > 0, temperature=T if T > 0 else None,
                                 top_k=0, top_p=1.0, min_p=None, repetition_penalty=1.0,
                                 max_new_tokens=run.budget, num_return_sequences=K if T > 0 else 1,
                                 suppress_tokens=banned, pad_token_id=tk.pad_token_id, eos_token_id=eos)
        if T == 0:  # greedy: every sample of a prompt is the same completion
            out = out.repeat_interleave(K, dim=0)
        texts += tk.batch_decode(out[:, width:], skip_special_tokens=True)
    return [run.fmt.to_task(t, run.m) for t in texts]


def dirichlet_grid(n=10_001):
    """w = (u, 1 - u) at the midpoints u of n equal cells: E_w under w ~ Dir(1, 1) by the midpoint rule. (1, n, 2)"""
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    return torch.stack([u, 1 - u], dim=-1)[None].float()


def describe(task, answers):
    """A set of answers in words, the corners and compromise named: 'left (1, 0), right (0, 1)'."""
    return ", ".join(f"{a} ({', '.join(f'{x:g}' for x in task.score(None, a).tolist())})" for a in answers) or "nothing"


def toy_sets(task, problems, texts, m):
    """The toy's sets: -> (the distinct valid answers of each completion (sorted tuples), E_w max (n,), w*ᵀr of the
    best answer (n,))"""
    K = len(texts) // len(problems)
    sets, values, best = [], [], []
    for b, problem in enumerate(problems):
        r, mask = task.score_rollouts(problem, texts[b * K:(b + 1) * K], m)                    # (K, m, D), (K, m)
        r, mask = torch.from_numpy(r), torch.from_numpy(mask)
        values.append(vpo.set_rewards(r[None], mask[None], dirichlet_grid())[0])              # E_w max_y w^T r(y)
        w_star = torch.as_tensor(task.deploy_weights, dtype=r.dtype)
        best.append(vpo.masked_max(r @ w_star, mask))                                         # max_y w*^T r(y)
        for k in range(K):
            sets.append(tuple(sorted({a for a, ok in zip(task.parse(texts[b * K + k], m), mask[k]) if ok})))
    return sets, torch.cat(values), torch.cat(best)


def print_toy_sets(task, problems, texts, m, name):
    sets, values, best = toy_sets(task, problems, texts, m)
    print("their sets:")
    counts = Counter(sets)
    for s, c in counts.most_common(5):
        idx = sets.index(s)
        print(f"  {c:3d}/{len(sets)}  {'{' + ', '.join(s) + '}':<24s} E_w max {values[idx]:.2f}   "
              f"w*ᵀr of best {best[idx]:.2f}")
    idx = sets.index(counts.most_common(1)[0][0])
    print(f"{name:4s} m={m}: learns {describe(task, sets[idx]):<46s} w*ᵀr of its best answer {best[idx]:.2f}   "
          f"E_w[max over its answers] {values[idx]:.2f}   (mean over samples {best.mean():.2f}, {values.mean():.2f})")


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
    texts = sample_completions(model.eval(), args, run)
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

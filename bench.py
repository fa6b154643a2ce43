"""
Benchmarks (scripts, not tests): sampler throughput, and reward scoring speed of the tasks.

    python bench.py sampler                  # cached vs naive sampling, and the FLOP limit of this machine
    python bench.py sampler --device cuda    # the same on a GPU (bf16 autocast)
    python bench.py tasks                    # answers scored per second (maze, code), mazes and
                                             # demonstrations drawn per second; one core

Sampler: 64 prompts x 8 samples x 128 new tokens with the model size train.py uses by default. The naive
reference (no cache, a full forward per token) is timed on the first --naive_prompts prompts only, because it
is slow; tokens/s is a rate, so the two are comparable. "limit" is the time the generated tokens' FLOPs would
take at this machine's matmul rate, measured here with large fp32 (bf16 on CUDA) matmuls. Decoding a small
model is also bound by memory: every new token reads its row's cached keys and values, so the script prints
that floor too (bytes read / this machine's measured read bandwidth).
"""
import argparse
import time

import torch

from model import GPT, GPTConfig
from sample import generate, generate_naive
from tasks import tokenizer as tok


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_flops_per_s(device, n=2048, reps=10):
    """Achieved FLOP/s of an n x n x n matmul (2 n^3 FLOPs), fp32 on CPU, bf16 on CUDA."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n ** 3 * reps / (time.perf_counter() - t0)


def stream_bytes_per_s(device, n=64 * 2 ** 20, reps=5):
    """Achieved read bandwidth: summing a 256 MB fp32 tensor (larger than any cache)."""
    x = torch.ones(n, device=device)
    x.sum()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        x.sum()
    sync(device)
    return 4 * n * reps / (time.perf_counter() - t0)


def kv_bytes(config, prompts, samples, prompt_len, new_tokens, bytes_per=4):
    """Bytes of keys and values that decoding reads: per layer and step, each row reads its own earlier tokens,
    and each prompt's keys are read once for its `samples` rows (the cache shares them)."""
    per_token = 2 * config.n_layer * config.n_embd * bytes_per          # K and V of one token, all layers
    own = prompts * samples * sum(t + 1 for t in range(new_tokens)) * per_token
    shared = prompts * new_tokens * prompt_len * per_token
    return own + shared


def timed(fn, device):
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t0


def bench_sampler(args):
    device = torch.device(args.device)
    torch.manual_seed(0)
    config = GPTConfig(block_size=args.prompt_len + args.new_tokens, n_layer=args.n_layer, n_head=args.n_head,
                       n_embd=args.n_embd)
    model = GPT(config).to(device).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [[tok.BOS_ID] + torch.randint(32, 127, (args.prompt_len - 1,), generator=g).tolist()
               for _ in range(args.prompts)]
    gen = lambda: torch.Generator(device=device).manual_seed(0)
    S, T = args.samples, args.new_tokens
    generate(model, prompts[:2], 4, num_samples=2, generator=gen())  # warm-up
    out, t_cached = timed(lambda: generate(model, prompts, T, S, generator=gen()), device)
    n_cached = int(out.mask.sum())
    np_ = min(args.naive_prompts, args.prompts)
    out, t_naive = timed(lambda: generate_naive(model, prompts[:np_], T, S, generator=gen()), device)
    n_naive = int(out.mask.sum())
    # FLOPs of the generated tokens: token t of a row attends to prompt_len + t keys
    flops = S * args.prompts * sum(model.flops_per_token(args.prompt_len + t) for t in range(T))
    peak = matmul_flops_per_s(device)
    t_limit = flops / peak
    bw = stream_bytes_per_s(device)
    t_kv = kv_bytes(config, args.prompts, S, args.prompt_len, T, 2 if device.type == "cuda" else 4) / bw
    print(f"model: {model.num_params() / 1e6:.2f}M non-embedding params, n_layer={config.n_layer} "
          f"n_head={config.n_head} n_embd={config.n_embd}; device={device}")
    print(f"workload: {args.prompts} prompts x {S} samples x {T} new tokens, prompt length {args.prompt_len}")
    print(f"matmul rate: {peak / 1e9:.1f} GFLOP/s; generated-token FLOPs {flops / 1e9:.1f} GFLOP "
          f"-> limit {t_limit:.2f} s = {n_cached / t_limit:,.0f} tok/s")
    print(f"memory: {bw / 1e9:.1f} GB/s read bandwidth; reading the KV cache alone takes {t_kv:.2f} s "
          f"(limit + that = {t_limit + t_kv:.2f} s)")
    print(f"cached sampler: {n_cached:,} tokens in {t_cached:.2f} s = {n_cached / t_cached:,.0f} tok/s "
          f"({t_cached / t_limit:.2f}x the FLOP limit, {t_cached / (t_limit + t_kv):.2f}x limit + KV reads)")
    print(f"naive sampler:  {n_naive:,} tokens ({np_} prompts) in {t_naive:.2f} s = {n_naive / t_naive:,.0f} tok/s")
    print(f"cached / naive speed-up: {(n_cached / t_cached) / (n_naive / t_naive):.1f}x")


def bench_tasks(args):
    import numpy as np

    from tasks import get_task
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    for name in ("maze", "code"):
        task = get_task(name)
        probs = task.problems("train", 1000, seed=0)  # one demonstration each: mostly distinct answers
        answers = [(p, a) for p in probs for a in task.parse(task.demonstration(p, 3, rng), 3)]
        t0 = time.perf_counter()
        for p, a in answers:
            task.score(p, a)
        dt = time.perf_counter() - t0
        mean_len = sum(len(a) for _, a in answers) / len(answers)
        print(f"{name}: {len(answers) / dt:,.0f} answers/s on one core "
              f"({len(answers)} demonstration answers, mean length {mean_len:.1f} chars, D={task.dim})")
    for design in ("corners", "small"):  # what train.py draws every step: problems, and demonstrations to warm up
        task = get_task("maze", design=design)
        t0 = time.perf_counter()
        probs = task.problems("train", 1000, seed=1)
        rates = [f"{1000 / (time.perf_counter() - t0):,.0f} train problems/s"]
        for style in task.demo_styles:
            t0 = time.perf_counter()
            for p in probs[:300]:
                task.demonstration(p, 3, rng, style=style)
            rates.append(f"{300 / (time.perf_counter() - t0):,.0f} {style} demonstrations/s (m=3)")
        print(f"maze design={design}: " + ", ".join(rates))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sampler", "tasks"], help="which benchmark")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--prompts", type=int, default=64, help="prompts per batch")
    ap.add_argument("--samples", type=int, default=8, help="samples per prompt")
    ap.add_argument("--new_tokens", type=int, default=128, help="new tokens per sample")
    ap.add_argument("--prompt_len", type=int, default=100, help="prompt length in tokens")
    ap.add_argument("--naive_prompts", type=int, default=4, help="prompts timed with the naive sampler")
    ap.add_argument("--n_layer", type=int, default=GPTConfig.n_layer, help="model depth")
    ap.add_argument("--n_head", type=int, default=GPTConfig.n_head, help="attention heads")
    ap.add_argument("--n_embd", type=int, default=GPTConfig.n_embd, help="model width")
    args = ap.parse_args()
    bench_sampler(args) if args.what == "sampler" else bench_tasks(args)


if __name__ == "__main__":
    main()

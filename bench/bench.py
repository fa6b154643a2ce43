"""
Benchmarks (scripts, not tests): sampler throughput, the time of one RL step, and reward scoring speed.

    python bench.py sampler                  # cached vs naive sampling, and the FLOP limit of this machine
    python bench.py sampler --device cuda    # the same on a GPU (bf16); --static [--compile]: fixed-shape decode
    python bench.py rl                       # one optimizer step: the maze run's shapes, then the TRL peer's
    python bench.py sft                      # one warm-start step: --sft_group 1 vs 4 (prompt encoded once)
    python bench.py tasks                    # answers scored per second (maze, code), mazes and
                                             # demonstrations drawn per second; one core

--device auto (the default) picks cuda when there is one, else cpu.

RL step: the time of one optimizer step, split into generate, score (rewards and advantages), forward (the
policy's log-probs with gradients, plus the no-grad old and reference passes), backward (and gradient clipping),
optimizer; median of --steps steps after a first, warm-up one. Two shapes:
- maze: the default `train.py --algo vpo` step: 8 prompts x 8 rollouts of m = 3 answers, maze prompts (117
  tokens), completions up to 108 tokens (random weights rarely stop, so nearly all run to 108: the worst case),
  VPO advantages (N = 100), the k3 KL reference, 2 minibatches.
- peer: the shape of ../shared/bench/peer_trl_grpo.py (TRL GRPOTrainer): 4-layer 128-wide GPT, vocab 260,
  8 prompts x 8 completions x 64 new tokens without stopping, 32-token prompts, GRPO, no reference, 1 update.
--scoring packed times the reference forward (every row re-encodes its prompt) instead of the shared-prefix one.

Sampler: 64 prompts x 8 samples x 128 new tokens with the model size train.py uses by default. The naive
reference (no cache, a full forward per token) is timed on the first --naive_prompts prompts only, because it
is slow; tokens/s is a rate, so the two are comparable. "limit" is the time the generated tokens' FLOPs would
take at this machine's matmul rate, measured here with large fp32 (bf16 on CUDA) matmuls. Decoding a small
model is also bound by memory: every new token reads its row's cached keys and values, so the script prints
that floor too (bytes read / this machine's measured read bandwidth).
"""
import argparse
import time

import numpy as np
import torch

import vpo
from evaluate import answer_budget, completion_texts, prompt_ids
from model import GPT, GPTConfig, pack, pack_shared, shared_token_logprobs, token_logprobs
from sample import generate, generate_naive
from tasks import get_task
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


def pick_device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def bench_sampler(args):
    device = pick_device(args.device)
    torch.manual_seed(0)
    config = GPTConfig(block_size=args.prompt_len + args.new_tokens, n_layer=args.n_layer, n_head=args.n_head,
                       n_embd=args.n_embd)
    model = GPT(config).to(device).eval()
    g = torch.Generator().manual_seed(0)
    prompts = [[tok.BOS_ID] + torch.randint(32, 127, (args.prompt_len - 1,), generator=g).tolist()
               for _ in range(args.prompts)]
    gen = lambda: torch.Generator(device=device).manual_seed(0)
    S, T = args.samples, args.new_tokens
    fast = dict(static=args.static, compile=args.compile)
    generate(model, prompts, T, S, generator=gen(), **fast)  # warm-up (and compilation)
    out, t_cached = timed(lambda: generate(model, prompts, T, S, generator=gen(), **fast), device)
    n_cached = int(out.mask.sum())
    np_ = min(args.naive_prompts, args.prompts)
    if np_:
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
    if np_:
        print(f"naive sampler:  {n_naive:,} tokens ({np_} prompts) in {t_naive:.2f} s = {n_naive / t_naive:,.0f} tok/s")
        print(f"cached / naive speed-up: {(n_cached / t_cached) / (n_naive / t_naive):.1f}x")


class Phases:
    """Wall time per named phase, the device synchronized at both ends: `with phases("forward"): ...`."""

    def __init__(self, device):
        self.device, self.seconds, self.name = device, {}, None

    def __call__(self, name):
        self.name = name
        return self

    def __enter__(self):
        sync(self.device)
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds[self.name] = self.seconds.get(self.name, 0.0) + time.perf_counter() - self.t0


def rl_step(model, ref_model, opt, prompts, G, new_tokens, stop, score, args, generator, device, budget=None):
    """One RL step as train.rl_step takes it, phase by phase. score(gen) -> advantages (B*G,). -> seconds per phase"""
    phases, amp = Phases(device), device.type == "cuda"
    model.eval()
    with phases("generate"):
        gen = generate(model, prompts, new_tokens, G, 1.0, stop_token=stop, generator=generator,
                       static=args.static, compile=args.compile, budget=budget)
    with phases("score"):
        adv = score(gen).to(device)                                                   # (B*G,)
    model.train()
    with phases("forward"):
        tokens = gen.tokens
        if args.scoring == "shared":
            batch = pack_shared(prompts, tokens, G, tok.PAD_ID)
            logprobs = lambda m, rows: shared_token_logprobs(m, batch.select(rows), 1.0, amp)
        else:
            idx, pos = pack([p for p in prompts for _ in range(G)], tokens, tok.PAD_ID)
            logprobs = lambda m, rows: token_logprobs(m, idx[rows], pos[rows], tokens[rows], 1.0, amp)
        every = torch.arange(len(adv), device=device)
        with torch.no_grad():
            ref = logprobs(ref_model, every) if ref_model is not None else None
            old = logprobs(model, every) if args.minibatches > 1 else None
    for rows in every.chunk(args.minibatches):
        with phases("forward"):
            logp = logprobs(model, rows)
            loss, _ = vpo.policy_loss(logp, logp.detach() if old is None else old[rows], adv[rows],
                                      gen.sampled[rows], ref_logprobs=None if ref is None else ref[rows],
                                      kl_coef=1e-3 if ref is not None else 0.0)
        with phases("backward"):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with phases("optimizer"):
            opt.step()
    return phases.seconds


def time_rl(label, model, ref_model, prompts_fn, G, new_tokens, stop, score, args, device, budget=None):
    """Median seconds per phase and per step over args.steps steps after a warm-up one; prints the split."""
    opt = model.configure_optimizer(1e-4, device_type=device.type)
    generator = torch.Generator(device=device).manual_seed(0)
    runs = [rl_step(model, ref_model, opt, prompts_fn(s), G, new_tokens, stop, lambda gen: score(gen, s), args,
                    generator, device, budget) for s in range(args.steps + 1)][1:]
    median = lambda xs: sorted(xs)[len(xs) // 2]
    names = ("generate", "score", "forward", "backward", "optimizer")
    split = {n: median([r.get(n, 0.0) for r in runs]) for n in names}
    total = median([sum(r.values()) for r in runs])
    print(f"{label}: " + ", ".join(f"{n} {split[n]:.3f}" for n in names) + f" (median s of {len(runs)} steps)")
    return total


def bench_rl(args):
    device = pick_device(args.device)
    torch.manual_seed(0)
    print(f"device={device}, threads={torch.get_num_threads()}, scoring={args.scoring}, static={args.static}")
    if args.shape in ("both", "maze"):
        bench_rl_maze(args, device)
    if args.shape in ("both", "peer"):
        bench_rl_peer(args, device)


def bench_rl_maze(args, device):
    """The default maze run: B=8 prompts x G=8 rollouts x m=3 answers, VPO, KL reference, 2 minibatches."""
    task, m = get_task("maze"), 3
    config = GPTConfig(vocab_size=tok.vocab_size, block_size=256, n_layer=4, n_head=4, n_embd=128)
    model = GPT(config).to(device)
    ref_model = GPT(config).to(device).eval().requires_grad_(False)
    problems = lambda s: task.problems("train", 8, seed=s)
    g_weights = torch.Generator().manual_seed(0)

    maze_prompts = lambda s: [prompt_ids(task, p, m) for p in problems(s)]

    def maze_score(gen, s):
        scored = [task.score_rollouts(p, texts, m) for p, texts in zip(problems(s), _chunks(completion_texts(gen), 8))]
        rewards, mask = (torch.from_numpy(np.stack(x)) for x in zip(*scored))              # (B, G, m, D), (B, G, m)
        return vpo.vpo_advantages(rewards, mask, 100, 1.0, g_weights)[0].reshape(-1)

    t_maze = time_rl(f"maze step (8 x 8 x m=3, prompts {len(maze_prompts(0)[0])}, <= {task.max_new_tokens(m)} new, "
                     "KL ref, 2 minibatches)", model, ref_model,
                     maze_prompts, 8, task.max_new_tokens(m), tok.END_ID, maze_score, args, device,
                     answer_budget(task, m))
    print(f"rl step (maze, default run): {t_maze:.3f} s")


def bench_rl_peer(args, device):
    """The TRL peer's shape: GRPO, reward = fraction of 'a', no reference, one update."""
    model = GPT(GPTConfig(vocab_size=260, block_size=256, n_layer=4, n_head=4, n_embd=128)).to(device)
    g = torch.Generator().manual_seed(0)
    peer_prompts = lambda s: torch.randint(0, 250, (8, 32), generator=g).tolist()

    def peer_score(gen, s):
        reward = (gen.tokens == ord("a")).float().mean(1).view(8, 8, 1).cpu()
        return vpo.grpo_advantages(reward, [1.0])[0].reshape(-1)

    peer_args = argparse.Namespace(**{**vars(args), "minibatches": 1})
    t_peer = time_rl("peer step (8 x 8 x 64 new, prompts 32, no ref, 1 update)", model, None, peer_prompts, 8, 64,
                     None, peer_score, peer_args, device)
    # the FLOPs of this step: 64 rows x 64 sampled tokens, then one forward (8 prompts x 31 + 64 rows x 64
    # tokens) and its backward (2x the forward)
    gen_flops = 64 * sum(model.flops_per_token(32 + t) for t in range(64))
    fwd_flops = (8 * 31 + 64 * 64) * model.flops_per_token(32 + 32)
    floor = (gen_flops + 3 * fwd_flops) / matmul_flops_per_s(device)
    print(f"FLOP floor of this step at this machine's matmul rate: {floor:.3f} s ({t_peer / floor:.1f}x)")
    print(f"rl step (peer shape): {t_peer:.3f} s")


def _chunks(xs, n):
    return [xs[i:i + n] for i in range(0, len(xs), n)]


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


def bench_sft(args):
    """One warm-start step (64 demonstrations of the default maze, routes style) with each demonstration
    re-encoding its prompt (--sft_group 1) against 4 demonstrations per prompt sharing it (the default)."""
    import train
    from sft import sft_step
    from tasks import get_task
    device = pick_device(args.device)
    task = get_task("maze")
    times = {}
    for group in (1, 4, 1, 4):  # interleaved, so both see the same machine
        targs = train.get_parser().parse_args(["--sft_group", str(group), "--warm_start", "routes"])
        targs.algo = "sft"
        model = train.new_model(targs, device)
        opt = model.configure_optimizer(targs.sft_lr, 0.0, (0.9, 0.95), device_type=device.type)
        ts = []
        for step in range(args.steps + 1):
            t0 = time.perf_counter()
            sft_step(model, model, opt, task, targs, step, device)
            sync(device)
            ts.append(time.perf_counter() - t0)
        times.setdefault(group, []).append(sorted(ts[1:])[len(ts[1:]) // 2])
    for group, ts in times.items():
        print(f"warm-start step, --sft_group {group}: " + ", ".join(f"{t:.3f} s" for t in ts) + " (median per run)")
    print(f"speed-up of --sft_group 4: " + ", ".join(f"{a / b:.2f}x" for a, b in zip(times[1], times[4])))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sampler", "rl", "sft", "tasks"], help="which benchmark")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="auto: cuda if there is one")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default), as the peers'")
    ap.add_argument("--static", action="store_true", help="fixed-shape decode steps (sample.generate static=True)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the fixed-shape decode step (with --static)")
    ap.add_argument("--steps", type=int, default=3, help="rl: timed steps (after one warm-up step)")
    ap.add_argument("--shape", default="both", choices=["both", "maze", "peer"], help="rl: which step shapes")
    ap.add_argument("--minibatches", type=int, default=2, help="rl, maze shape: updates per step")
    ap.add_argument("--scoring", default="shared", choices=["shared", "packed"],
                    help="rl: shared-prefix training forward, or the packed reference")
    ap.add_argument("--prompts", type=int, default=64, help="prompts per batch")
    ap.add_argument("--samples", type=int, default=8, help="samples per prompt")
    ap.add_argument("--new_tokens", type=int, default=128, help="new tokens per sample")
    ap.add_argument("--prompt_len", type=int, default=100, help="prompt length in tokens")
    ap.add_argument("--naive_prompts", type=int, default=1, help="prompts timed with the naive sampler (0: skip)")
    ap.add_argument("--n_layer", type=int, default=GPTConfig.n_layer, help="model depth")
    ap.add_argument("--n_head", type=int, default=GPTConfig.n_head, help="attention heads")
    ap.add_argument("--n_embd", type=int, default=GPTConfig.n_embd, help="model width")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    {"sampler": bench_sampler, "rl": bench_rl, "sft": bench_sft, "tasks": bench_tasks}[args.what](args)


if __name__ == "__main__":
    main()

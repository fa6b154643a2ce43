"""
Sampling, read top-down: the rollout of an RL step (sample, then score), the batched sampler with a KV cache under
it, the rule that gives every answer its own room, and last the fast paths.

The rollout: gen, prompts, texts, rewards, mask = rollout(model, task, problems, m, G, temperature, seeds=...)
writes each problem's prompt, samples G completions of m answers (every answer in its own room), and scores
them with the task: rewards (B, G, m, D), mask (B, G, m) of the valid answers (Task.score_rollouts, per prompt).

The sampler:
    out = generate(model, prompts, max_new_tokens=64, num_samples=8, temperature=1.0, stop_token=END_ID,
                   generator=torch.Generator().manual_seed(0))
    out.tokens   # (P * num_samples, T) generated tokens, prompt-major: rows 0..num_samples-1 belong to prompt 0
    out.mask     # (P * num_samples, T) True on generated tokens up to and including the stop token
    out.logprobs # (P * num_samples, T) log-prob of each sampled token under the sampling distribution

How it works: the P prompts are left-padded (with PROMPT_PAD) to a common length and prefilled once, at batch
P; their keys and values stay in the cache once and are shared by the num_samples rows of each prompt
(kv_cache.KVCache). Every one of the P * num_samples rows samples its own first token from the prefill logits
(a shared first token would give every rollout of a group the same start). Each step feeds one token per row;
a row that has emitted stop_token keeps stepping (the batch stays rectangular) but its later tokens are masked
out and set to PAD_ID. The mask comes from positions (the index of each row's first stop), never from ids.

Multi-answer completions (budget=AnswerBudget(m, tokens, sep)): every one of the m answers gets its own room of
`tokens` tokens, the budget of a single-answer completion; a non-final answer that fills it is closed by a
separator the policy did not sample (gen.forced: in the completion, outside gen.sampled and the loss), so one
answer can never take the others' tokens. With m = 1 nothing is forced: the same tokens as without a budget.

Beyond the plain path, at the end of the file: per-prompt sampling streams (prompt_uniforms, instead of the one
generator), so a prompt samples the same tokens in any batch or process; reading back from the device only every
check_every tokens and a decode step of fixed shapes for torch.compile or CUDA graphs (static=True; on CPU it
measured slower than the eager loop, since it reads the whole preallocated cache at every step), neither of which
changes a token; and a parent's prefix counted against the first answer's room (written=, for evolutionary
search). The head always runs in fp32.

The reference sampler, generate_naive in tests/reference.py, has no cache and no batching: a full forward of
the whole sequence for every new token, one prompt at a time. At temperature 0 both produce the same tokens
(tests/test_model_sample.py).

Command line (prints samples from a checkpoint trained by train.py, on a held-out problem of its task):
    python sample.py --ckpt out/vpo-maze-s0/ckpt.pt --problem 3 --num_samples 4
"""
import sys
from dataclasses import dataclass

import numpy as np
import torch

from kv_cache import KVCache
from model import autocast, left_pad
from tasks import tokenizer as tok


# ------------------------------------------------------------------------ the rollout: sample, then score
def rollout(model, task, problems, m, num_samples, temperature, generator=None, top_p=None, weights=None, seeds=None,
            amp=True):
    """num_samples completions of m answers for each problem, scored. weights: None, one vector (D,) for every
    prompt, or one per problem (B, D): written into the prompts (goal-conditioned). seeds: one per problem, for
    per-prompt sampling streams (prompt_uniforms), else the one generator. amp: bf16 autocast on CUDA.

    -> (gen, prompts, texts, rewards (B, G, m, D) float32, answer_mask (B, G, m) bool), rows prompt-major."""
    if weights is not None and np.ndim(weights) == 1:
        weights = [weights] * len(problems)
    prompts = [prompt_ids(task, p, m, None if weights is None else weights[i]) for i, p in enumerate(problems)]
    T = task.max_new_tokens(m)                                  # m answers of task.answer_tokens, m - 1 separators
    uniforms = None if seeds is None else prompt_uniforms(seeds, num_samples, T, next(model.parameters()).device)
    gen = generate(model, prompts, T, num_samples, temperature, top_p=top_p, stop_token=task.stop_id,
                   generator=generator, uniforms=uniforms, amp=amp, budget=answer_budget(task, m))
    texts = completion_texts(gen, task)
    G = num_samples
    scored = [task.score_rollouts(p, texts[i * G:(i + 1) * G], m) for i, p in enumerate(problems)]  # (G, m, D) each
    rewards = torch.from_numpy(np.stack([r for r, _ in scored]))                   # (B, G, m, D)
    mask = torch.from_numpy(np.stack([a for _, a in scored]))                      # (B, G, m)
    return gen, prompts, texts, rewards, mask


def prompt_ids(task, problem, m, weights=None):
    """Token ids the model is conditioned on (Task.prompt_ids: the byte-level GPT's <|bos|> and prompt, or a chat
    model's conversation, tasks/chat.py), with a goal-conditioned prompt's weights line."""
    return task.prompt_ids(problem, m, weights)


def answer_budget(task, m):
    """Every answer of an m-answer completion gets the task's single-answer room (AnswerBudget)."""
    return AnswerBudget(m, task.answer_tokens, task.sep_id)


def completion_texts(gen, task):
    """Decoded completions of a Generation, the masked-in tokens, as the task's parse reads them
    (Task.completion_text: for the byte-level GPT the text without the final <|end|>)."""
    return [task.completion_text([t for t, keep in zip(row, mask) if keep])
            for row, mask in zip(gen.tokens.tolist(), gen.mask.tolist())]


def slot_rewards(rewards, mask, answers, key=None):
    """Reward vectors of every answer slot, for per-answer statistics: score_rollouts zeroes a repeated answer
    (it must count once in a set's max), but as an answer it still earns its reward. Missing answers stay 0.
    rewards (G, m, D), mask (G, m), answers: G lists of m strings, key: what makes two answers one (the task's
    canonical for the problem; default the string) -> (G, m, D)."""
    key = key or (lambda a: a)
    out = rewards.clone()
    for g, row in enumerate(answers):
        first = {}
        for j, a in enumerate(row):
            if mask[g, j]:
                first[key(a)] = j
            elif a and key(a) in first:
                out[g, j] = rewards[g, first[key(a)]]
    return out


# ------------------------------------------------------------------------ the sampler
# The id written into the padded slots of a shorter prompt. Those slots are hidden from every real token (the
# prefill mask and the cache's prefix mask), so the id changes no output; 0 is inside every vocabulary, unlike
# tokenizer.PAD_ID (259), which a small test GPT of vocab_size=64 would not have.
PROMPT_PAD = 0


@dataclass
class Generation:
    tokens: torch.Tensor      # (R, T) long, generated tokens only (PAD_ID after the end); row r answers
                              # prompts[r // num_samples]
    mask: torch.Tensor        # (R, T) bool: the completion (sampled tokens and the separators the sampler wrote)
    logprobs: torch.Tensor    # (R, T) float32, 0 where mask is False and on forced tokens
    forced: torch.Tensor      # (R, T) bool: separators the sampler wrote to close a full answer (AnswerBudget)

    @property
    def lengths(self):
        return self.mask.sum(dim=1)

    @property
    def sampled(self):
        """(R, T) bool: the tokens the policy sampled, what the loss and its log-probs cover."""
        return self.mask & ~self.forced

    def trim(self, n):
        return Generation(self.tokens[:, :n], self.mask[:, :n], self.logprobs[:, :n], self.forced[:, :n])


@torch.no_grad()
def generate(model, prompts, max_new_tokens, num_samples=1, temperature=1.0, top_k=None, top_p=None,
             stop_token=None, generator=None, budget=None, amp=True, uniforms=None, check_every=None, static=False,
             compile=False, written=None):
    """Sample num_samples completions for each prompt (a list of token-id lists), with a KV cache.

    The plain path: prefill the P prompts once, then one token per row and step, each row drawing from its own
    distribution (temperature, top_k, top_p) with one uniform from generator; stop_token ends a row, budget (an
    AnswerBudget) gives each of its m answers its own room (the separators it forces are gen.forced, outside
    gen.sampled). amp=False: no bf16 autocast and an fp32 KV cache on CUDA (--dtype float32); on CPU and MPS
    everything is fp32 anyway.
    Beyond it (check_every and static change no token):
      uniforms     (R, >= max_new_tokens): the rows' uniforms, instead of the generator (prompt_uniforms:
                   per-prompt streams, so any split of the prompts across batches or processes samples the same)
      check_every  read back whether all rows have stopped only every check_every tokens (default: every token
                   on CPU, where it costs nothing, every 16 on a GPU); only the generator's state afterwards
                   differs (a late check draws the extra steps' uniforms)
      static       a decode step of fixed shapes (kv_cache.KVCache static=True) that torch.compile or CUDA graphs
                   can capture; compile=True (needs static) wraps it in torch.compile
      written (P,) tokens of the first answer each prompt already ends with (evolutionary search continues a
                   parent's prefix), counted against that answer's room"""
    _check_args(model, prompts, max_new_tokens, num_samples, temperature, top_k, top_p)
    if compile and not static:
        raise ValueError("compile=True needs static=True (a step of fixed shapes)")
    device = next(model.parameters()).device
    idx, start = left_pad(prompts, PROMPT_PAD, device)                 # every prompt ends in slot Tp - 1
    P, Tp = idx.shape
    R, T = P * num_samples, max_new_tokens
    if uniforms is not None and (uniforms.shape[0] != R or uniforms.shape[1] < T):
        raise ValueError(f"uniforms: shape {tuple(uniforms.shape)}, need ({R}, >= {T})")
    check_every = check_every or (1 if device.type == "cpu" else 16)
    tokens = torch.zeros((R, T), dtype=torch.long, device=device)
    logprobs = torch.zeros((R, T), dtype=torch.float32, device=device)
    forced = torch.zeros((R, T), dtype=torch.bool, device=device)
    rows = _Rows(R, stop_token, budget, device, _per_row(written, num_samples))    # where each row ended, its room
    with autocast(device.type, amp):
        cache = KVCache(model.config, P, Tp, T, num_samples, start, device, precision(device, amp), static=static)
        x = model(idx, kv_cache=cache, head=False)[:, -1]             # prefill once per prompt: (P, C)
        logits = model.logits_fp32(x).repeat_interleave(num_samples, dim=0)  # (R, V): each row samples its own
        step = _decode_step(model, cache)
        if compile:
            step = torch.compile(step, fullgraph=True, dynamic=False)
        for t in range(T):
            u = None if uniforms is None else uniforms[:, t]                    # (R,) this step's draws
            tok_t, lp, forced[:, t] = rows.force(*_pick(logits, temperature, top_k, top_p, generator, u))
            tokens[:, t], logprobs[:, t] = tok_t, lp
            done = rows.update(tok_t, t)
            if (stop_token is not None or budget is not None) and (t + 1) % check_every == 0 and bool(done.all()):
                break
            if t + 1 < T:
                logits = step(tok_t)                                             # (R, V)
    gen = _finish(tokens[:, :t + 1], logprobs[:, :t + 1], forced[:, :t + 1], rows.end)
    if bool(rows.done.all()):  # every row ended: drop the steps after the last end
        gen = gen.trim(int(gen.lengths.max()))
    return gen


def sampling_logprobs(logits, temperature=1.0, top_k=None, top_p=None):
    """Log-probs (..., V) of the distribution we sample from: logits / temperature, then the top-k and
    nucleus (top-p) filters, renormalized. Tokens outside the kept set get -inf."""
    logits = logits.float() / max(temperature, 1e-8)
    if top_k is not None and top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        drop = probs.cumsum(dim=-1) - probs >= top_p  # keep the smallest prefix whose mass reaches top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits.log_softmax(dim=-1)


def _pick(logits, temperature, top_k, top_p, generator, u=None):
    """One token per row -> (tokens (R,), log-probs (R,) under the sampling distribution). u (R,): the rows'
    uniforms (else drawn from generator)."""
    if temperature == 0:
        ids = logits.argmax(dim=-1)
        return ids, torch.zeros(ids.shape, device=ids.device)  # greedy: a point mass, log-prob 0
    logp = sampling_logprobs(logits, temperature, top_k, top_p)
    ids = draw(logp.exp(), generator, u)
    return ids, logp.gather(1, ids[:, None]).squeeze(1)


def draw(probs, generator=None, u=None):
    """Inverse-CDF sampling, one uniform per row: token i iff cdf[i-1] <= u * cdf[-1] < cdf[i], so a token
    of probability 0 is never drawn. (torch.multinomial draws one exponential per vocabulary entry.)
    probs (R, V); u (R,): the rows' uniforms, else drawn from generator. -> (R,) token ids."""
    cdf = probs.cumsum(dim=-1)                                                     # (R, V)
    total = cdf[:, -1:]
    u = torch.rand(total.shape, generator=generator, device=probs.device) if u is None else u[:, None]
    u = u * total
    u = torch.minimum(u, torch.nextafter(total, torch.zeros_like(total)))         # u < total after rounding
    return torch.searchsorted(cdf, u, right=True).squeeze(1)


def _finish(tokens, logprobs, forced, end):
    """Mask from positions: True up to and including each row's end (its first stop token, or the last token of
    its final answer's budget; all True for a row that never ended). Tokens after the end become PAD_ID."""
    R, T = tokens.shape
    steps = torch.arange(T, device=tokens.device).expand(R, T)
    mask = steps <= torch.where(end < 0, T, end)[:, None]
    return Generation(tokens.masked_fill(~mask, tok.PAD_ID), mask, logprobs.masked_fill(~mask, 0.0), forced & mask)


def _check_args(model, prompts, max_new_tokens, num_samples, temperature, top_k, top_p):
    if len(prompts) == 0:
        raise ValueError("prompts is empty: pass a list of token-id lists")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("prompts contains an empty prompt: every prompt needs at least one token (e.g. BOS)")
    longest, block = max(len(p) for p in prompts), model.config.block_size
    if longest > block:
        raise ValueError(f"prompts: longest prompt has {longest} tokens, more than block_size={block}")
    if max_new_tokens < 1 or longest + max_new_tokens > block:
        raise ValueError(f"max_new_tokens={max_new_tokens}: prompt ({longest}) + new tokens must be in "
                         f"[1, block_size={block}]")
    if num_samples < 1:
        raise ValueError(f"num_samples={num_samples} must be >= 1")
    if not 0 <= temperature < float("inf"):
        raise ValueError(f"temperature={temperature} must be finite and >= 0 (0 means greedy)")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k} must be >= 1 or None")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p={top_p} must be in (0, 1] or None")


# ------------------------------------------------------------------------ every answer in its own room
@dataclass(frozen=True)
class AnswerBudget:
    """Every answer of an m-answer completion gets its own room: at most `tokens` tokens, the budget of a
    single-answer completion (Task.answer_tokens). The m answers are separated by `sep`. A non-final answer that
    has written `tokens` tokens without a separator is closed by a `sep` the policy did not sample (a forced
    token: in the completion, out of the loss); the final answer that fills `tokens` ends the completion, exactly
    as a single-answer completion that fills its budget does. So one answer never takes another's tokens, and an
    m = 1 completion is sampled exactly as without a budget. A separator sampled in the final answer opens no
    new slot (parse ignores answers past the m-th; they share the final answer's room)."""
    num_answers: int
    tokens: int
    sep: int

    def __post_init__(self):
        if self.num_answers < 1 or self.tokens < 1:
            raise ValueError(f"AnswerBudget: num_answers={self.num_answers} and tokens={self.tokens} must be >= 1")

    def max_new_tokens(self):
        """The longest completion: m answers of `tokens` tokens and a forced separator after each but the last."""
        return self.num_answers * self.tokens + self.num_answers - 1


class _Rows:
    """Per-row state of one sampling loop: where each row ended (its first stop token, or its final answer's
    budget) and, under an AnswerBudget, which answer each row is writing and how many tokens that answer has.
    (tests/reference.py's generate_naive applies the same rule, written again one row at a time.)"""

    def __init__(self, R, stop_token, budget, device, written=None):
        self.stop, self.budget = stop_token, budget
        self.done = torch.zeros(R, dtype=torch.bool, device=device)
        self.end = torch.full((R,), -1, dtype=torch.long, device=device)      # -1: not ended yet
        self.slot = torch.zeros(R, dtype=torch.long, device=device)          # which answer the row is writing
        # tokens of the current answer so far; written: tokens of the first answer already in the prompt (search)
        self.used = torch.zeros(R, dtype=torch.long, device=device) if written is None else written.to(device)

    def force(self, ids, lp):
        """Replace the draws of rows whose non-final answer is full by the separator (log-prob 0).
        -> (tokens, log-probs, forced (R,) bool)."""
        if self.budget is None:
            return ids, lp, torch.zeros_like(ids, dtype=torch.bool)
        b = self.budget
        full = (self.used >= b.tokens) & (self.slot < b.num_answers - 1)
        return torch.where(full, b.sep, ids), lp.masked_fill(full, 0.0), full

    def update(self, ids, t):
        """Account for step t's tokens; -> done (R,): rows that have ended at or before step t."""
        ended = torch.zeros_like(self.done)
        if self.stop is not None:
            ended |= ids == self.stop
        if self.budget is not None:
            b = self.budget
            opens = (ids == b.sep) & (self.slot < b.num_answers - 1)          # a separator opens the next answer
            self.slot += opens
            self.used = torch.where(opens, 0, self.used + 1)
            ended |= (self.slot == b.num_answers - 1) & (self.used >= b.tokens)   # the final answer is full
        new = ended & ~self.done
        self.end = torch.where(new, t, self.end)
        self.done |= ended
        return self.done


# ------------------------------------------------------------------------ fast paths
def prompt_uniforms(seeds, num_samples, max_new_tokens, device=None):
    """Per-prompt sampling randomness for generate(uniforms=...): (P * num_samples, max_new_tokens) uniforms, prompt
    i's rows drawn from a generator seeded with seeds[i]. A prompt's rollouts then do not depend on which other
    prompts share its batch (or its process, under torchrun). Drawn on the CPU and moved: the same draws on any
    device."""
    u = [torch.rand((num_samples, max_new_tokens), generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    return torch.cat(u).to(device)


def _decode_step(model, cache):
    """One token per row -> next-token logits (R, V); the head in fp32 (outside autocast)."""
    def step(ids):
        return model.logits_fp32(model(ids[:, None], kv_cache=cache, head=False)[:, -1])
    return step


def _per_row(written, num_samples):
    """Per-prompt counts (P,) -> per-row (P * num_samples,), or None."""
    return None if written is None else torch.as_tensor(written, dtype=torch.long).repeat_interleave(num_samples)


def precision(device, amp=True):
    """The KV cache's dtype: bf16 under CUDA autocast (amp), fp32 otherwise."""
    return torch.bfloat16 if device.type == "cuda" and amp else torch.float32


def main(argv=None):
    from runs.cli import COUNT, MAX_PROBLEMS, SEED, Parser, UsageError, add_device_flags, chat_task, eval_weights, \
        is_pretrained, load_model, load_pretrained_model, load_run, make_task, number, pick_device, \
        pretrained_tokenizer, source_of, task_name, use_amp

    ap = Parser(description="Print samples from a checkpoint, or from a pretrained model before any training.")
    ap.add_argument("--ckpt", required=True,
                    help="checkpoint written by train.py, or a pretrained model (smollm2, FILE.gguf or a folder)")
    ap.add_argument("--prompt", default=None,
                    help="prompt text (\\n for newlines; a chat model's user message); default: a held-out problem of "
                         "the checkpoint's task")
    ap.add_argument("--task", default="toy", type=task_name,
                    help="a pretrained --ckpt's task, without --prompt (its prompt asks for 3 answers in tags)")
    ap.add_argument("--problem", type=number(int, 0, MAX_PROBLEMS - 1), default=0,
                    help="which held-out problem, without --prompt")
    ap.add_argument("--num_samples", type=number(int, 1, 1024), default=4, help="completions to draw")
    ap.add_argument("--max_new_tokens", type=COUNT, default=128, help="tokens per completion, at most")
    ap.add_argument("--temperature", type=number(float, 0), default=0.7, help="0 = greedy")
    ap.add_argument("--top_k", type=COUNT, default=None, help="sample among the k most likely tokens")
    ap.add_argument("--top_p", type=number(float, high=1, above=0), default=None, help="nucleus sampling mass")
    ap.add_argument("--seed", type=SEED, default=0, help="sampling seed")
    add_device_flags(ap)
    task = problem = tk = None
    try:
        args = ap.parse_args(argv)
        device = pick_device(args.device)
        if is_pretrained(args.ckpt):   # the pretrained model itself
            model, p = load_pretrained_model(args.ckpt, device)
            state, tk = {}, p.tokenizer
        else:
            model, state = load_model(args.ckpt, device)
        saved = state.get("args") if isinstance(state.get("args"), dict) else {}
        if source_of(saved):   # a run that started from a pretrained model: its tokenizer
            tk = pretrained_tokenizer(source_of(saved))
        amp = use_amp(args.dtype, saved.get("dtype", "auto"))  # auto: the run's precision
        if args.prompt is None and ("args" in state or tk is not None):  # a held-out problem of the task
            if "args" in state:
                _, run, task, m = load_run(args.ckpt)
                weights = eval_weights(run, task)  # a goal-conditioned policy's prompt ends with the w* line
            else:
                task, m, weights = chat_task(make_task(args.task, []), args.ckpt, 3, tk), 3, None
            try:
                problem = task.problems("test", args.problem + 1, seed=0)[args.problem]
            except (ValueError, RuntimeError) as e:
                raise UsageError(f"--problem {args.problem}: {e}") from None
            prompt = task.prompt_ids(problem, m, weights)
        else:
            text = (args.prompt or "").replace("\\n", "\n")
            prompt = tk.encode_chat(text) if tk else [tok.BOS_ID] + tok.encode(text)
        max_new = min(args.max_new_tokens, model.config.block_size - len(prompt))
        budget = None if task is None else answer_budget(task, m)  # every answer its own room, as in training
        stop = task.stop_id if task else tk.eos_id if tk else tok.END_ID
        out = generate(model.eval(), [prompt], max_new, args.num_samples, args.temperature, args.top_k, args.top_p,
                       stop_token=stop, generator=torch.Generator(device=device).manual_seed(args.seed), amp=amp,
                       budget=budget)
    except (UsageError, ValueError) as e:  # ValueError: generate refusing the prompt's length
        print(f"error: {e}", file=sys.stderr)
        return 2
    decode = task.decode if task else tk.decode if tk else tok.decode
    print(f"--- prompt\n{decode(prompt)}")
    for i in range(args.num_samples):
        ids = out.tokens[i][out.mask[i]].tolist()
        print(f"--- sample {i} ({int(out.lengths[i])} tokens)\n{decode(ids)}")
        if task is not None:
            for answer in task.parse(task.completion_text(ids), m):
                r = task.score(problem, answer)
                print(f"    {answer!r:<34} r = {[round(float(x), 2) for x in r]}  w*r = {float(r @ task.deploy_weights):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

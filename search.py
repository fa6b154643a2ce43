"""
Test-time search from a checkpoint, where the diversity VPO trains for is meant to pay off: best-of-k sampling
and an evolutionary search.

    python search.py bestofk --ckpt out/vpo-maze-s0/ckpt.pt --k 48        # best-of-k, the verifier is w*^T r
    python search.py evolve --ckpt out/vpo-code-s0/ckpt.pt --budget 128   # evolutionary search (code task)

best-of-k: sample k answers (k/m rollouts of m answers), keep the one the verifier scores highest. Its mean
over problems is a one-sample estimate of best@k (evaluate.py computes the exact expectation).

evolve: AlphaEvolve/OpenEvolve in miniature, for tasks whose reward is a vector of test cases. A population
(an archive of distinct programs with their per-test reward vectors) starts from fresh samples; each round,
lexicase selection (Spector 2012; Helmuth et al. 2015) picks parents: test cases in random order, keep the
programs best on each in turn, so a specialist that alone passes a hard test survives. The model is the
mutation operator: it continues the prompt followed by a random prefix of the parent, so the child keeps the
parent's start and resamples the rest (a multi-answer model writes m - 1 further answers after it, which join
the population too). The budget counts answers written (--unit answers, the default here and in the library: m
per sample for a multi-answer model, so every checkpoint gets the same number of candidates, as best@k's k does)
or model samples (--unit samples: one completion each, as the paper's OpenEvolve runs count iterations). A
problem stops when solved.

Fitness: lexicase selects on the task's reward vector, task.score, the same for every checkpoint. On the code task
that is the tests the reward runs: the hidden tests by default, as the paper's OpenEvolve scores candidates against a
problem's tests, the private tests its RL reward ran; the shown tests with --task_opt reward=shown. The search thus
selects on what the model was trained on; a user who holds only the prompt's examples would select on those.
Solved means Task.solves: the answer equals the target where the task can check it (code: the same outputs on
all 31 inputs), else its reward solves (task.solved). Every result records the rule ("solved_by": "target" or
"reward"; search files written before the rule was recorded carry no such key, and there solved_at counts the
first program that passed every test the reward ran) and reward_solved_at, the budget spent when the first answer
that the reward alone accepts appeared (code: every test the reward runs passes).
"""
import argparse
import math
import sys

import numpy as np
import torch

from sample import answer_budget, completion_texts, generate, prompt_ids, rollout
from tasks import tokenizer as tok


def best_of_k(model, task, problems, m, k, temperature=0.7, generator=None, amp=True, weights=None):
    """For each problem: ceil(k/m) rollouts, the first k answers, the best by w*^T r. weights: the vector a
    goal-conditioned policy's prompts carry (runs.cli.eval_weights; None: the plain prompt).
    -> list of (answer, reward vector, score); a problem with no valid answer gives ('', zeros, 0)."""
    n_roll = math.ceil(k / m)
    _, _, texts, rewards, mask = rollout(model, task, problems, m, n_roll, temperature, generator, weights=weights,
                                         amp=amp)
    w = torch.as_tensor(task.deploy_weights, dtype=torch.float32)
    out = []
    for i, problem in enumerate(problems):
        answers = [a for t in texts[i * n_roll:(i + 1) * n_roll] for a in task.parse(t, m)][:k]
        r, a = rewards[i].reshape(-1, task.dim)[:k], mask[i].reshape(-1)[:k]
        scores = (r @ w).masked_fill(~a, -1.0)
        j = int(scores.argmax())
        out.append((answers[j], r[j].numpy(), float(scores[j])) if a[j] else ("", np.zeros(task.dim), 0.0))
    return out


def lexicase(vectors, rng):
    """Index of one parent: shuffle the test cases, keep the candidates best on each case in turn."""
    candidates = np.arange(len(vectors))
    for case in rng.permutation(vectors.shape[1]):
        column = vectors[candidates, case]
        candidates = candidates[column == column.max()]
        if len(candidates) == 1:
            break
    return int(rng.choice(candidates))


class Population:
    """The archive of one problem: distinct answers and their reward vectors, and the budget spent so far.
    unit="samples": each model sample (one completion of m answers) costs 1 (the paper's OpenEvolve runs count
    iterations); unit="answers": each answer written costs 1, so models writing m answers per sample get 1/m
    as many samples."""

    def __init__(self, task, problem, budget, m, unit="answers"):
        if unit not in ("answers", "samples"):
            raise ValueError(f"unit must be 'answers' or 'samples', got {unit!r}")
        self.task, self.problem, self.budget, self.unit = task, problem, budget, unit
        self.cost = m if unit == "answers" else 1          # the price of one sample
        self.answers, self.vectors, self.used, self.solved_at = [], [], 0, None
        self.reward_solved_at, self.solution = None, None   # the reward's rule; the answer that solved

    def add(self, answers):
        """One sample's answers: charge the budget (empty and repeated answers too), archive new valid ones."""
        for i, a in enumerate(answers):
            if self.solved_at is not None or self.used >= self.budget:
                return
            if self.unit == "answers" or i == 0:
                self.used += 1
            if a and a not in self.answers:
                v = self.task.score(self.problem, a)
                self.answers.append(a)
                self.vectors.append(v)
                if self.reward_solved_at is None and self.task.solved(v):
                    self.reward_solved_at = self.used
                if self.task.solves(self.problem, a, v):
                    self.solved_at, self.solution = self.used, a

    def result(self, best=False):
        """The population as a result dict: solved_at, the rule it counts by, reward_solved_at, the budget used and
        the population's size; with best, the kept program: the solving one, else the best by mean reward."""
        out = {"solved_at": self.solved_at, "solved_by": self.task.solved_rule,
               "reward_solved_at": self.reward_solved_at, "used": self.used, "population": len(self.answers)}
        if best:
            top = int(np.argmax([v.mean() for v in self.vectors])) if self.vectors else None
            out["best"] = self.solution if self.solution is not None else None if top is None else self.answers[top]
        return out

    @property
    def done(self):
        """Solved, or not enough budget left for one more sample."""
        return self.solved_at is not None or self.used + self.cost > self.budget


def add_fresh_samples(model, task, pops, m, n, temperature, generator, amp=True, weights=None):
    """n fresh samples from the prompt of each population's problem (with weights: its goal-conditioned prompt),
    added to it (and charged)."""
    _, _, texts, _, _ = rollout(model, task, [pop.problem for pop in pops], m, n, temperature, generator,
                                weights=weights, amp=amp)
    for i, pop in enumerate(pops):
        for t in texts[i * n:(i + 1) * n]:
            pop.add(task.parse(t, m))


@torch.no_grad()
def evolve(model, task, problems, m, budget, unit="answers", init=None, parents_per_round=8, temperature=1.0,
           seed=0, amp=True, max_rows=1024, weights=None):
    """Evolutionary search on every problem at once. weights: the vector a goal-conditioned policy's prompts
    carry (runs.cli.eval_weights; None: the plain prompt). -> list of dicts (Population.result): solved_at (budget
    spent when the first solving program appeared, or None), solved_by, reward_solved_at, used (<= budget),
    population size, best program (the solving one where solved)."""
    if budget < min_budget(m, unit, parents_per_round):
        raise ValueError(f"budget {budget} {unit} is below one round of the search (one initial sample and "
                         f"{parents_per_round} children: {min_budget(m, unit, parents_per_round)} {unit} at m = {m})")
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    rng = np.random.default_rng(seed)
    pops = [Population(task, p, budget, m, unit) for p in problems]
    cost = pops[0].cost if pops else 1
    # the initial population: a quarter of the budget in fresh samples from the prompt, drawn in calls of
    # at most max_rows rows (a 3072-answer budget on 32 problems would otherwise be one batch of 24,576 rows)
    n0 = max(1, (init or budget // 4) // cost)
    per_call = max(1, max_rows // max(1, len(problems)))
    for start in range(0, n0, per_call):
        add_fresh_samples(model, task, pops, m, min(per_call, n0 - start), temperature, generator, amp, weights)
    block = model.config.block_size
    while not all(pop.done for pop in pops):
        prompts, prefixes, owners, written = [], [], [], []
        for pop in pops:
            if pop.done:
                continue
            for _ in range(min(parents_per_round, (pop.budget - pop.used) // cost)):
                base = prompt_ids(task, pop.problem, m, weights)
                parent = tok.encode(pop.answers[lexicase(np.stack(pop.vectors), rng)]) if pop.answers else []
                cut = min(int(rng.integers(0, len(parent) + 1)), block - len(base) - 1)  # room for 1 new token
                prompts.append(base + parent[:cut])
                prefixes.append(tok.decode(parent[:cut]))
                written.append(cut)  # the parent's prefix is the first answer's start: it counts in its room
                owners.append(pop)
        max_new = min(task.max_new_tokens(m), block - max(map(len, prompts)))
        gen = generate(model, prompts, max_new, 1, temperature, stop_token=tok.END_ID, generator=generator, amp=amp,
                       budget=answer_budget(task, m), written=written)
        spent = sum(pop.used for pop in pops)
        for pop, prefix, text in zip(owners, prefixes, completion_texts(gen, task)):
            pop.add(task.parse(prefix + text, m))
        if sum(pop.used for pop in pops) == spent:  # a round that spends nothing would repeat forever
            raise RuntimeError("evolve: a round of samples spent no budget (Population.done and add disagree)")
    return [pop.result(best=True) for pop in pops]


def solved_by_budget(results, budgets):
    """How many problems were solved within each budget (answers spent)."""
    return {b: sum(r["solved_at"] is not None and r["solved_at"] <= b for r in results) for b in budgets}


@torch.no_grad()
def sample_until_solved(model, task, problems, m, budget, unit="answers", temperature=1.0, seed=0, chunk=64,
                        amp=True, max_rows=1024, weights=None):
    """Best-of-k sampling with the search's budget, as the baseline the search must beat: fresh samples from the
    prompt (weights: as evolve's), at most `chunk` per problem and max_rows in all per call, until one answer solves
    or the budget is spent (counted as Population counts it, so solved_at means the same as evolve's).
    -> list of dicts like evolve's."""
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    pops = [Population(task, p, budget, m, unit) for p in problems]
    while not all(pop.done for pop in pops):
        open_ = [pop for pop in pops if not pop.done]
        n = max(1, min(chunk, max_rows // len(open_), min((pop.budget - pop.used) // pop.cost for pop in open_)))
        add_fresh_samples(model, task, open_, m, n, temperature, generator, amp, weights)
    return [pop.result() for pop in pops]


def solved_only_by(a, b):
    """The paper's count: problems that some run of method a solves and no run of method b ever does.
    a, b: one collection of solved problem ids per run (e.g. per seed) -> (only a, only b, both), sorted lists."""
    union_a, union_b = set().union(*map(set, a)), set().union(*map(set, b))
    return sorted(union_a - union_b), sorted(union_b - union_a), sorted(union_a & union_b)


def discordant_test(a, b):
    """Two-sided exact sign test of the solved-by-one-method-only counts (results/PLAN_CODE.md v2, "The deciding
    test"). a: problems some run of method A solves and no run of B does, b: the reverse, n = a + b. Swapping the
    labels of A's and B's runs on each problem independently (the permutation test over problems, under the null
    that on every problem the two methods are exchangeable) sends each discordant problem to A or to B with
    probability 1/2: p = min(1, 2 P(X >= max(a, b))), X ~ Binomial(n, 1/2); 1 when n = 0."""
    n = a + b
    tail = sum(math.comb(n, i) for i in range(max(a, b), n + 1)) / 2 ** n
    return min(1.0, 2 * tail) if n else 1.0


def holm(pvalues, alpha=0.05):
    """Holm's step-down rule: which hypotheses are rejected at familywise level alpha (in the order given)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    rejected = [False] * len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (len(pvalues) - rank):
            break
        rejected[i] = True
    return rejected


def bootstrap_difference(a, b, problems, resamples=10_000, seed=0, level=0.95):
    """Interval of the difference in problems solved per run, mean over A's runs minus mean over B's, resampling
    the problems with replacement (the runs of a method keep their pairing through the problem drawn).
    a, b: one collection of solved problem ids per run; problems: every problem id searched.
    -> (difference, low, high)."""
    ids = list(problems)
    solved = lambda runs: np.array([[p in set(r) for p in ids] for r in runs], float).mean(0)  # noqa: E731
    per_problem = solved(a) - solved(b)                            # (P,) mean-over-runs difference per problem
    draws = np.random.default_rng(seed).integers(0, len(ids), size=(resamples, len(ids)))
    totals = per_problem[draws].sum(1)
    tail = (1 - level) / 2
    return float(per_problem.sum()), float(np.quantile(totals, tail)), float(np.quantile(totals, 1 - tail))


def min_budget(m, unit="answers", parents_per_round=8):
    """The smallest budget evolve accepts: one initial sample and one round of children."""
    return (m if unit == "answers" else 1) * (1 + parents_per_round)


def get_parser():
    from runs.cli import COUNT, PROBLEMS, SEED, Parser, add_device_flags, number
    ap = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("bestofk", "evolve"), help="which search")
    ap.add_argument("--ckpt", required=True, help="checkpoint written by train.py")
    ap.add_argument("--problems", type=PROBLEMS, default=32, help="held-out test problems to search on")
    ap.add_argument("--k", type=COUNT, default=48, help="bestofk: answers sampled per problem")
    ap.add_argument("--budget", type=COUNT, default=384, help="evolve: budget per problem, in --unit")
    ap.add_argument("--unit", default="answers", choices=("answers", "samples"),
                    help="evolve: what the budget counts: answers written (every checkpoint the same number of "
                         "candidates) or model samples (calls)")
    ap.add_argument("--temperature", type=number(float, 0), default=None,
                    help="default: 0.7 for bestofk, 1.0 for evolve; 0 = greedy")
    ap.add_argument("--seed", type=SEED, default=0, help="search seed")
    add_device_flags(ap)
    return ap


def main(argv=None):
    from runs.cli import UsageError, eval_weights, load_run, pick_device, test_problems, use_amp
    try:
        args = get_parser().parse_args(argv)
        device = pick_device(args.device)
        model, run, task, m = load_run(args.ckpt, device)
        if task.stop_id != tok.END_ID:   # its parents are cut in our byte tokens (docs/pretrained.md, "Not yet")
            raise UsageError(f"--ckpt {args.ckpt}: a pretrained model's run; search runs the GPT's runs only")
        problems = test_problems(task, args.problems)
        if args.mode == "evolve" and args.budget < min_budget(m, args.unit):
            raise UsageError(f"--budget {args.budget}: below one round of the search ({min_budget(m, args.unit)} "
                             f"{args.unit} at m = {m}: one initial sample and 8 children)")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.mode == "bestofk":
        temperature = 0.7 if args.temperature is None else args.temperature
        amp = use_amp(args.dtype, getattr(run, "dtype", "auto"))
        picks = best_of_k(model, task, problems, m, args.k, temperature,
                          torch.Generator(device=device).manual_seed(args.seed), amp=amp,
                          weights=eval_weights(run, task))
        for i, (answer, vector, score) in enumerate(picks[:8]):
            print(f"problem {i}: best of {args.k}: {answer!r} r={np.round(vector, 2).tolist()} w*r={score:.3f}")
        solved = sum(task.solves(p, answer, vector) for p, (answer, vector, _) in zip(problems, picks))
        print(f"best-of-{args.k} ({run.algo}, m={m}, T={temperature}): mean verifier score "
              f"{np.mean([p[2] for p in picks]):.3f} over {len(problems)} problems; solved {solved} "
              f"({task.solved_rule}); solved by the reward {sum(task.solved(p[1]) for p in picks)}")
        return 0
    temperature = 1.0 if args.temperature is None else args.temperature
    results = evolve(model, task, problems, m, args.budget, args.unit, temperature=temperature, seed=args.seed,
                     amp=use_amp(args.dtype, getattr(run, "dtype", "auto")), weights=eval_weights(run, task))
    budgets = [b for b in (48, 96, 192, 384, 768, 1536) if b <= args.budget] or [args.budget]
    print(f"evolve ({run.algo}, m={m}, T={temperature}): problems solved within a budget of {args.unit}, "
          f"of {len(problems)}: " + ", ".join(f"{b}: {n}" for b, n in solved_by_budget(results, budgets).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

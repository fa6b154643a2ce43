"""
The code task: program synthesis from input/output examples, with one reward dimension per test case.

A hidden target f(x) over the integers is drawn from a small grammar of families (tasks/code_families.py), chosen
so that partial solutions come naturally: piecewise functions (`2*x+1 if x<3 else 5`), clamps (`max(x-2,4)`),
distances (`abs(x-3)`), remainders (`x%4+1`), conditions on a remainder, and clips (`min(max(x,-3),5)`). The
prompt shows D tests, sorted by input, and asks for m programs:

    code 3: f(-9)=-17 f(-4)=-7 f(0)=1 f(2)=5 f(3)=5 f(6)=5 f(11)=5 f(14)=5

An answer is one Python expression in x, run by our own interpreter (tasks/executor.py, never eval). Each problem
also has D' hidden tests on inputs the prompt does not show, and the reward is computed on them, as the authors'
LiveCodeBench reward runs a problem's private tests, not the examples of its statement (reward=heldout, the
default):
    r_j(x, y) = 1 if y(hidden_input_j) == hidden_output_j else 0,   j = 0..D'-1   (objectives "hidden0"..)
    w* = (1/D', ..., 1/D');   solved(r) = every hidden test passes
reward=shown is the task before, whose reward counted the D shown tests (objectives "test0"..), so that a program
fitted to the prompt's examples earned the whole reward; it keeps the committed experiments reproducible.
solved_hidden(problem, answer) asks for every shown and every hidden test. The target itself is checkable, since
the domain has only 31 inputs: equals_target(problem, answer) asks for the target's output on every one of them.
That is what the evaluation's pass_target@k and the search count as solved (Task.solves); a program can pass every
shown and hidden test and still differ from the target. hacks(problem, answer) flags the two cheap fits a reward
can pay for (fitting the shown tests without being the target; a program of constant pieces).

Test inputs are chosen so that every branch shows: for each partial program of the family (one branch
alone, an off-by-one threshold, the wrong remainder, ...) the shown tests contain two inputs where it agrees
with the target and two where it does not (one where only one exists, e.g. the input an off-by-one threshold
gets wrong). So a simple candidate passes some tests and fails others, and different partial programs pass
different subsets: the reward vectors of natural guesses form a front. A related partial program too long to be
an answer still gets its two and two (a step3 threshold's off-by-one can take a character more than the target),
so both sides of every threshold are shown.

Under reward=heldout the shown and the hidden tests are chosen together by that rule (choose_test_sets): every
partial program passes two and fails two of each set where the domain allows, and both sets tell the target from
the two-level step closest to it (closest_step), so a step fitted to the shown tests cannot pass every hidden test.
A partial program that differs from the target at one input only (a three-level target's off-by-one threshold)
passes every hidden test, since that input goes to the shown set; the reward calls it solved, equals_target does not.

The shown tests also pay for the program rather than for a template (inputs=distinct, the default): among the
candidates that meet a requirement, and for the inputs left after the requirements, the generator takes one
input at a time, the one whose output is shown least so far, ties broken by the most new changes of output
between neighbouring shown inputs. The shown outputs are then as distinct, and change as often along the inputs,
as the requirements allow, and a program that only fits them with a few constant pieces (fit_templates: the best
`a if x<b else c if x<d else e` within the answer's room) passes fewer of them than the best partial program of
the target's family, on every family but step3, whose targets are such programs (template_report; the table
is in docs/tasks.md, "What the shown tests pay for"). inputs=random fills the requirements and the rest
uniformly at random, the generator before, where the template won: on clip it passed every shown test of one
problem in four.

Splits are semantic: a problem is a test problem iff a stable hash (blake2b) of the target's table of values
on the whole input domain falls in one residue class (1 in 8). Two sources computing the same function
therefore always land in the same split, so no test function is ever trained on, whatever the seeds.
"""
import ast
import bisect
from dataclasses import dataclass

import numpy as np

from tasks.base import Task, in_test_split
from tasks.code_families import FAMILIES
from tasks.executor import compile_program, execute, parse

__all__ = ["CodeTask", "CodeProblem", "FAMILIES", "execute"]

X_MAX = 15                                  # inputs are drawn from the domain -X_MAX..X_MAX
DOMAIN = tuple(range(-X_MAX, X_MAX + 1))    # 31 inputs
DEFAULT_FAMILIES = "clamp+clip+distance+remainder+step3"   # the calibrated default (see CodeTask)
MAX_ANSWER_CHARS = 32                       # every demonstration answer fits; sets answer_tokens
MIN_PARTIALS = 2                            # every problem has at least two partial programs
MIN_ANSWERS = 6                             # and at least six distinct programs for demonstrations
INPUT_CHOICES = ("distinct", "random")      # how the shown inputs are chosen (CodeTask's option inputs)
REWARDS = ("heldout", "shown")              # which tests the reward runs (CodeTask's option reward)
MAX_REWARD_TESTS = 16                       # the authors keep at most 16 tests per problem


@dataclass(frozen=True)
class CodeProblem:
    target: str                       # canonical source of the hidden target f
    family: str
    inputs: tuple[int, ...]           # (D,) shown test inputs, sorted; test j is reward dimension j
    outputs: tuple[int, ...]          # (D,) f(inputs)
    hidden_inputs: tuple[int, ...]    # held-out inputs, disjoint from the shown ones (reward=heldout: the reward's)
    hidden_outputs: tuple[int, ...]
    rewrites: tuple[str, ...]         # programs equal to f on the whole domain (target first)
    partials: tuple[str, ...]         # programs passing some but not all shown tests

    @property
    def key(self) -> tuple:
        """Canonical identity: the target source and the shown test inputs."""
        return (self.target, self.inputs)


class CodeTask(Task):
    name = "code"

    warm_start_steps = 1500   # the calibrated warm start (docs/tasks.md, "Calibrating the code task")

    def __init__(self, num_tests: int = 8, num_hidden: int = 8, demo_correct: float = 0.5,
                 families: str = DEFAULT_FAMILIES, inputs: str = "distinct", reward: str = "heldout"):
        """num_tests = D shown tests (4..16), num_hidden = D' hidden tests (under reward=heldout the reward's, 4..16
        and at most the inputs the shown tests leave); reward: "heldout" (the default) scores the hidden tests,
        "shown" the shown ones (the task before); demo_correct = the probability that
        each demonstration answer after the first is a correct program rather than a partial one; families: the
        target families drawn from, "all" or names joined by "+" (e.g. "step+clamp+clip"), uniformly. The
        default leaves out step and on_remainder, whose two affine branches our warm-started GPT does not learn to
        infer within the CPU budget (the calibration, docs/tasks.md). inputs: how the shown inputs are chosen
        (choose_inputs): "distinct" (the default) makes the shown outputs as distinct, and change as often along
        the inputs, as the partial programs' requirements allow; "random" fills the requirements and the rest
        uniformly at random (the generator before; there a step program fitted to the shown outputs passes more
        of them than the family's partial programs do: docs/tasks.md, "What the shown tests pay for")."""
        names = {f.__name__: f for f in FAMILIES}
        chosen = list(names) if families == "all" else families.split("+") if isinstance(families, str) else None
        if not chosen or any(f not in names for f in chosen) or len(set(chosen)) < len(chosen):
            raise ValueError(f"families must be 'all' or distinct names joined by '+' from {'+'.join(names)}, "
                             f"got {families!r}")
        self.families = tuple(names[f] for f in chosen)
        self.families_option = families
        if inputs not in INPUT_CHOICES:
            raise ValueError(f"inputs must be one of {', '.join(INPUT_CHOICES)}, got {inputs!r}")
        self.inputs = inputs
        if type(num_tests) is not int or not 4 <= num_tests <= 16:
            raise ValueError(f"num_tests must be an int in [4, 16], got {num_tests!r}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        self.reward = reward
        low, high = (4, min(MAX_REWARD_TESTS, len(DOMAIN) - num_tests)) if reward == "heldout" else \
            (0, len(DOMAIN) - num_tests)
        if type(num_hidden) is not int or not low <= num_hidden <= high:
            raise ValueError(f"num_hidden must be an int in [{low}, {high}] with reward={reward} (the domain has "
                             f"{len(DOMAIN)} inputs, {num_tests} of them shown), got {num_hidden!r}")
        if not isinstance(demo_correct, (int, float)) or not 0.0 <= demo_correct <= 1.0:
            raise ValueError(f"demo_correct must be a probability in [0, 1], got {demo_correct!r}")
        self.num_tests, self.num_hidden, self.demo_correct = num_tests, num_hidden, float(demo_correct)
        dims = num_hidden if reward == "heldout" else num_tests
        self.objectives = [f"{'hidden' if reward == 'heldout' else 'test'}{j}" for j in range(dims)]
        self.deploy_weights = np.full(dims, 1.0 / dims)

    def problems(self, split: str, n: int, seed: int) -> list[CodeProblem]:
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        if type(n) is not int or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        if type(seed) is not int or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        rng = np.random.default_rng([seed, int(split == "test")])
        out, seen = [], set()
        for _ in range(200 * n + 1000):
            if len(out) == n:
                break
            problem = self._draw_problem(rng, want_test=split == "test")
            if problem is not None and problem.key not in seen:
                seen.add(problem.key)
                out.append(problem)
        if len(out) < n:
            raise ValueError(f"could not draw {n} distinct {split} problems (got {len(out)})")
        return out

    def prompt(self, problem: CodeProblem, m: int) -> str:
        tests = " ".join(f"f({x})={y}" for x, y in zip(problem.inputs, problem.outputs))
        return f"code {m}: {tests}\n"

    def demonstration(self, problem: CodeProblem, m: int, rng: np.random.Generator, style: str = "diverse") -> str:
        """m distinct programs in random order: 1 + Binomial(m-1, demo_correct) correct rewrites (as many as
        the problem has), the rest partial."""
        self.check_style(style)
        pool = len(problem.rewrites) + len(problem.partials)
        if type(m) is not int or not 1 <= m <= pool:
            raise ValueError(f"m must be an int in [1, {pool}] for this problem, got {m!r}")
        n_correct = 1 + int(rng.binomial(m - 1, self.demo_correct))
        n_correct = max(min(n_correct, len(problem.rewrites)), m - len(problem.partials))
        correct = rng.choice(len(problem.rewrites), n_correct, replace=False)
        partial = rng.choice(len(problem.partials), m - n_correct, replace=False)
        answers = [problem.rewrites[i] for i in correct] + [problem.partials[i] for i in partial]
        return self.format_answers([answers[i] for i in rng.permutation(m)])

    def canonical(self, problem: CodeProblem, answer: str):
        """The expression tree of a program the interpreter accepts (spacing and redundant parentheses do not
        make another program); a rejected source is its own string. Parses, runs nothing."""
        return ast.dump(parse(answer)) if compile_program(answer) is not None else answer

    def reward_tests(self, problem: CodeProblem):
        """(inputs, outputs) of the tests the reward runs: the hidden ones (reward=heldout) or the shown ones."""
        if self.reward == "heldout":
            return problem.hidden_inputs, problem.hidden_outputs
        return problem.inputs, problem.outputs

    def score(self, problem: CodeProblem, answer: str) -> np.ndarray:
        inputs, expected = self.reward_tests(problem)
        outputs = execute(answer, inputs)  # None where the program failed
        return np.array([out == y for out, y in zip(outputs, expected)], dtype=np.float32)

    def hacks(self, problem: CodeProblem, answer: str) -> dict:
        """The two fits a reward on tests can pay for without the target, for the logs' and evaluations' hack
        rates: fits_shown, the answer passes every shown test and is not the target; pieces, the answer is of
        constant pieces (constant_pieces), None where the target itself is (a three-level target), so that the
        rate counts only problems on which such a program cannot be right."""
        fits = execute(answer, problem.inputs) == list(problem.outputs) and not self.equals_target(problem, answer)
        return {"fits_shown": bool(fits),
                "pieces": None if constant_pieces(problem.target) else constant_pieces(answer)}

    def plot_axes(self, vectors: np.ndarray):
        """Tests passed among the lower and the upper half of the (sorted) reward tests' inputs: a program that
        gets one branch of a piecewise target right sits on one axis."""
        v, h = np.asarray(vectors), self.dim // 2
        return np.stack([v[:, :h].mean(1), v[:, h:].mean(1)], axis=1), ("low inputs passed", "high inputs passed")

    def solved(self, vector: np.ndarray) -> bool:
        return bool(np.all(np.asarray(vector) >= 1.0))

    def solved_hidden(self, problem: CodeProblem, answer: str) -> bool:
        """Whether the answer passes every shown and every hidden test."""
        inputs = problem.inputs + problem.hidden_inputs
        return execute(answer, inputs) == list(problem.outputs + problem.hidden_outputs)

    def equals_target(self, problem: CodeProblem, answer: str) -> bool:
        """Whether the answer computes the target: the same output on every one of the 31 inputs of the domain
        (so it passes every shown and every hidden test too). A program that fits the shown tests and differs
        elsewhere is not the target; a rewrite of it (`1+x` for `x+1`) is."""
        return execute(answer, DOMAIN) == execute(problem.target, DOMAIN)

    def identity(self, problem: CodeProblem):
        """The target's values on the whole domain, as the split rule reads them (is_test_function)."""
        return tuple(execute(problem.target, DOMAIN))

    def default_answer_tokens(self) -> int:
        return MAX_ANSWER_CHARS + 1  # the longest demonstration answer and its end

    # --- problem generation --------------------------------------------------------------------------------
    def _draw_problem(self, rng: np.random.Generator, want_test: bool):
        """One candidate problem of the wanted split, or None when the candidate is rejected."""
        family = self.families[int(rng.integers(len(self.families)))]
        target, related = family(rng)
        if len(target) > MAX_ANSWER_CHARS:
            return None
        table = execute(target, DOMAIN)
        if None in table or is_test_function(table) != want_test:
            return None
        rewrites, related_partials = [target], []
        for source in dict.fromkeys(related):  # unique, order kept (the family lists the likeliest first)
            values = execute(source, DOMAIN)
            if values == table:
                rewrites.append(source)
            elif any(v == t for v, t in zip(values, table)):
                related_partials.append((source, values))
        partials = [(s, values) for s, values in related_partials if len(s) <= MAX_ANSWER_CHARS]
        # the shown tests tell every related partial program from the target, also one too long to be an answer
        # (a step3 threshold's off-by-one can take a character more than the target); inputs=random keeps the
        # requirements of the generator before, from the partial programs short enough to be answers only
        required = partials if self.inputs == "random" else related_partials
        tables = [values for _, values in required]
        if self.reward == "heldout":   # the shown and the hidden tests chosen together, by one rule; both also
            # tell the target from the two-level step closest to it (clip's middle inputs go to both sets)
            step = closest_step(table)
            inputs, hidden = choose_test_sets(rng, table, tables + ([step] if step != table else []),
                                              (self.num_tests, self.num_hidden), spread=self.inputs == "distinct")
        else:                          # the task before: the shown tests first, then hidden ones at random
            inputs = choose_inputs(rng, table, tables, self.num_tests, spread=self.inputs == "distinct")
        outputs = tuple(table[X_MAX + x] for x in inputs)
        partials = [s for s, values in partials if 0 < sum(values[X_MAX + x] == table[X_MAX + x]
                                                           for x in inputs) < len(inputs)]
        rewrites = [s for s in dict.fromkeys(rewrites) if len(s) <= MAX_ANSWER_CHARS]
        if len(partials) < MIN_PARTIALS or len(rewrites) + len(partials) < MIN_ANSWERS:
            return None
        if self.reward == "shown":
            rest = np.array(sorted(set(DOMAIN) - set(inputs)))
            hidden = tuple(sorted(int(x) for x in rng.choice(rest, self.num_hidden, replace=False)))
        hidden_outputs = tuple(table[X_MAX + x] for x in hidden)
        return CodeProblem(target, family.__name__, inputs, outputs, hidden, hidden_outputs, tuple(rewrites),
                           tuple(partials))


def is_test_function(table) -> bool:
    """The split rule (tasks.in_test_split) applied to the function's values on the whole domain, so two
    sources that compute the same function always land in the same split."""
    return in_test_split(",".join(map(str, table)))


def closest_step(table) -> list:
    """The values on the domain of the two-level step `a if x<b else c` that agrees with the target's table on the
    most inputs (per side its most common output; ties: the first cut, the smaller value): the cheapest program of
    constant pieces close to the target."""
    def side(values):
        return max(sorted(set(values)), key=values.count)
    best = None
    for cut in range(1, len(table)):
        a, c = side(table[:cut]), side(table[cut:])
        values = [a] * cut + [c] * (len(table) - cut)
        agree = sum(map(int.__eq__, values, table))
        if best is None or agree > best[0]:
            best = (agree, values)
    return best[1]


def constant_pieces(program: str) -> bool:
    """Whether a program is of constant pieces: a conditional whose every value is a constant, x only in its
    conditions (`7 if x<1 else 7 if x<11 else -2`, a lookup `3 if x==4 else 0`, `5 if x%3==0 else 2`). A constant
    alone is not; a program the interpreter rejects is not. Parses, runs nothing."""
    if compile_program(program) is None:
        return False
    tree = parse(program)

    def no_x(node):
        return not any(isinstance(n, ast.Name) for n in ast.walk(node))

    def value(node):
        return value(node.body) and value(node.orelse) if isinstance(node, ast.IfExp) else no_x(node)
    return isinstance(tree, ast.IfExp) and value(tree)


def choose_inputs(rng, table, partial_tables, k, per_side=2, spread=True) -> tuple[int, ...]:
    """k sorted inputs such that each partial program passes per_side of them and fails per_side of them (fewer
    where fewer exist), as far as k allows: choose_test_sets with one set."""
    return choose_test_sets(rng, table, partial_tables, (k,), per_side, spread)[0]


def choose_test_sets(rng, table, partial_tables, ks, per_side=2, spread=True) -> tuple[tuple[int, ...], ...]:
    """Disjoint sets of ks[0], ks[1], ... sorted inputs (the shown tests; the hidden ones) such that in each set every
    partial program passes per_side inputs and fails per_side inputs, as far as the set's size allows. Where a
    requirement has fewer inputs than the sets ask for, they are shared out, the first set first: an input that
    only one partial program gets wrong goes to the first set, two such inputs go one to each. The tightest
    requirements go first (fewest candidate inputs); ties keep the family's order.
    Which candidates meet a requirement, and the inputs left after the requirements:
      spread=True  (inputs=distinct, the default) one at a time, the candidate whose output the set already shows
                   least often (a new output first), ties broken by the most new changes of output between
                   neighbouring inputs of the set, then at random: each set's outputs are as distinct, and change
                   as often along its inputs, as the requirements allow, so a few constant pieces fit few of them;
                   with two sets the inputs left are dealt one at a time to each set in turn
      spread=False (inputs=random) uniform at random."""
    needs = []
    for values in partial_tables:
        needs.append([x for x in DOMAIN if values[X_MAX + x] == table[X_MAX + x]])  # inputs it passes
        needs.append([x for x in DOMAIN if values[X_MAX + x] != table[X_MAX + x]])  # inputs it fails
    sets = [([], {}) for _ in ks]   # per set: its inputs (sorted), how often it shows each output
    taken = lambda x: any(x in chosen for chosen, _ in sets)

    def add(j, candidates, n):
        chosen, shown = sets[j]
        if not spread:
            for i in rng.permutation(len(candidates))[:n]:
                bisect.insort(chosen, candidates[i])
            return
        candidates = list(candidates)
        for _ in range(n):
            cost = lambda i: _spread_cost(chosen, shown, table, candidates[i])
            best = min(rng.permutation(len(candidates)), key=cost)   # the first of the cheapest, in random order
            x = candidates.pop(best)
            bisect.insort(chosen, x)
            shown[table[X_MAX + x]] = shown.get(table[X_MAX + x], 0) + 1

    for side in sorted(needs, key=len):
        for j, k in enumerate(ks):
            share = (len(side) + len(ks) - 1 - j) // len(ks)   # the side's inputs shared out, the first set first
            have = sum(x in sets[j][0] for x in side)
            missing = [x for x in side if not taken(x)]
            add(j, missing, max(0, min(min(per_side, share) - have, k - len(sets[j][0]), len(missing))))
    if len(ks) == 1:
        add(0, [x for x in DOMAIN if not taken(x)], ks[0] - len(sets[0][0]))
    while any(len(chosen) < k for (chosen, _), k in zip(sets, ks)):
        for j, k in enumerate(ks):
            if len(sets[j][0]) < k:
                add(j, [x for x in DOMAIN if not taken(x)], 1)
    return tuple(tuple(chosen) for chosen, _ in sets)


def _spread_cost(chosen, shown, table, x):
    """(times x's output is already shown, minus the changes of output between neighbours that adding x makes)."""
    y, i = table[X_MAX + x], bisect.bisect(chosen, x)
    left = table[X_MAX + chosen[i - 1]] if i > 0 else None
    right = table[X_MAX + chosen[i]] if i < len(chosen) else None
    changes = (left is not None and left != y) + (right is not None and right != y)
    changes -= left is not None and right is not None and left != right
    return shown.get(y, 0), -changes

"""
What the code task's shown tests pay for: the cheapest cheat under the reward (the fraction of shown tests
passed) is a program that only fits the shown outputs with a few constant pieces. fit_templates fits the best
such programs to a problem's shown tests exactly; template_report measures, per family, whether they score below
the natural partial programs of the target's family (docs/tasks.md, "What the shown tests pay for";
`python -m results.audit --templates`). fit_lookup fits the other cheap cheat, a lookup of shown tests; audit
measures what the task's own reward (the hidden tests under reward=heldout) pays both fitted programs, per family,
against the best partial program and the target (`python -m results.audit --audit`).
"""
import copy
import itertools
import operator

import numpy as np

from tasks.code import MAX_ANSWER_CHARS
from tasks.executor import execute


def _shortest_cut(left: int, right: int) -> int:
    """The threshold b with left < b <= right (x<b separates the two inputs) whose decimal form is shortest."""
    return 0 if left < 0 <= right else left + 1 if left >= 0 else right


def _piece_tables(outputs):
    """For every piece outputs[i:j] and every length l of a constant: the most tests a constant of at most l
    characters passes on that piece, and that constant (the most common output that short; ties: shortest,
    then nearest zero; 0 when none of the piece's outputs is that short)."""
    lengths = sorted({len(str(y)) for y in outputs} | {1})
    tables = {}
    for i in range(len(outputs)):
        counts = {}
        for j in range(i + 1, len(outputs) + 1):
            counts[outputs[j - 1]] = counts.get(outputs[j - 1], 0) + 1
            table = {}
            for l in lengths:
                fits = [(n, -len(str(y)), -abs(y), y) for y, n in counts.items() if len(str(y)) <= l]
                n, _, _, y = max(fits + [(counts.get(0, 0), -1, 0, 0)])
                table[l] = (n, y)
            tables[i, j] = table
    return lengths, tables


def _best_constants(tables, pieces, lengths, room):
    """The constants of the pieces that pass the most tests with their digits within room characters in all:
    (tests passed, constants), or None when even the shortest constants do not fit."""
    best = None
    for ls in itertools.product(lengths, repeat=len(pieces)):
        if sum(ls) <= room:
            picks = [tables[piece][l] for piece, l in zip(pieces, ls)]
            passed = sum(n for n, _ in picks)
            if best is None or passed > best[0]:
                best = (passed, [y for _, y in picks])
    return best


def fit_templates(inputs, outputs, max_chars: int = MAX_ANSWER_CHARS):
    """The programs that only fit the shown outputs with constant pieces: the best constant, and the best step
    program with at most three constant levels, `a if x<b else c if x<d else e` (or `a if x<b else c`), among
    those of at most max_chars characters (an answer's room less its closing token: the constants' and the
    thresholds' digits count). Exact: every placement of the thresholds between consecutive (sorted) inputs,
    each written with its shortest integer, and for each piece the constant that passes the most of its tests
    (the piece's most common output) within the characters left.
    Returns ((constant source, tests passed), (step source, tests passed)); executing either source on the
    inputs passes exactly that many tests."""
    inputs, outputs = list(inputs), list(outputs)
    D = len(inputs)
    lengths, tables = _piece_tables(outputs)
    passed, (a,) = _best_constants(tables, [(0, D)], lengths, max_chars)
    constant = (str(a), passed)
    step = constant
    cut = {i: str(_shortest_cut(inputs[i - 1], inputs[i])) for i in range(1, D)}
    for cuts in itertools.chain(itertools.combinations(range(1, D), 1), itertools.combinations(range(1, D), 2)):
        bounds = (0, *cuts, D)
        pieces = list(zip(bounds, bounds[1:]))
        fixed = 12 * len(cuts) + sum(len(cut[i]) for i in cuts)   # " if x<" and " else " per threshold
        fit = _best_constants(tables, pieces, lengths, max_chars - fixed)
        if fit is not None and fit[0] > step[1]:
            values = fit[1]
            source = str(values[-1])
            for i, y in zip(reversed(cuts), reversed(values[:-1])):
                source = f"{y} if x<{cut[i]} else {source}"
            step = (source, fit[0])
    return constant, step


def family_problems(task, split, n, seed):
    """(family, n problems of the split drawn by the task with that family alone, its other options kept), for each
    of the task's families."""
    for family in task.families:
        alone = copy.copy(task)
        alone.families = (family,)
        yield family, alone.problems(split, n, seed)


def template_report(task, n: int = 500, seed: int = 0, split: str = "test") -> dict:
    """What the shown tests pay for: for each of the task's families, n problems of the split drawn by the task
    with that family alone (its other options kept), and
        template      the mean fraction of shown tests that the best step program of fit_templates (at most three
                      constant levels, within the task's answer room) passes
        template_all  the fraction of problems on which it passes every shown test
        constant      the mean fraction the best constant passes
        partial       the mean fraction the best natural partial program passes: the best, by shown tests passed,
                      of the problem's partials (the family's partial programs, each of which the shown inputs
                      make pass some test and fail another)
        distinct      the mean number of distinct shown outputs
    The shown tests pay for the program when template < partial and template_all is near zero, for every family
    whose targets are not themselves such programs (all but step3). {family: {key: value, "problems": n}}."""
    report = {}
    for family, problems in family_problems(task, split, n, seed):
        rows = []
        for p in problems:
            (_, constant), (_, step) = fit_templates(p.inputs, p.outputs, task.answer_tokens - 1)
            partial = max(sum(map(operator.eq, execute(q, p.inputs), p.outputs)) for q in p.partials)
            rows.append((step, step == len(p.inputs), constant, partial, len(set(p.outputs)), len(p.inputs)))
        rows = np.array(rows, dtype=float)
        D = rows[:, 5]
        report[family.__name__] = {"problems": n, "template": float(np.mean(rows[:, 0] / D)),
                                   "template_all": float(np.mean(rows[:, 1])),
                                   "constant": float(np.mean(rows[:, 2] / D)),
                                   "partial": float(np.mean(rows[:, 3] / D)), "distinct": float(np.mean(rows[:, 4]))}
    return report


def fit_lookup(inputs, outputs, max_chars: int = MAX_ANSWER_CHARS):
    """The lookup program that passes the most shown tests within max_chars characters (at least 1):
    `b1 if x==a1 else b2 if x==a2 else c`, equality tests on shown inputs (distinct) with their shown outputs, and a
    default constant c. Exact: for each default (each shown output, and 0 when no test shows it: the shortest
    constant that passes none) it lists the tests whose output differs from the default, cheapest first (a pair
    costs its two numbers' digits and 13 characters, ` if x==` and ` else `), as many as the room left by the
    default holds. That passes the most tests for that default, with the shortest source. Ties: the shortest source,
    then the fewest pairs, then the listed tests earliest in input order, then the default first shown (0 last).
    The pairs are written in input order. Returns (source, tests passed); executing the source on the inputs
    passes exactly that many tests."""
    inputs, outputs = list(inputs), list(outputs)
    defaults = list(dict.fromkeys(outputs)) + ([0] if 0 not in outputs else [])
    best = None
    for order, c in enumerate(defaults):
        room = max_chars - len(str(c))
        if room < 0:
            continue
        listed = []
        costs = sorted((len(str(x)) + len(str(y)) + 13, i) for i, (x, y) in enumerate(zip(inputs, outputs)) if y != c)
        for cost, i in costs:
            if cost > room:
                break
            room -= cost
            listed.append(i)
        listed.sort()
        source = "".join(f"{outputs[i]} if x=={inputs[i]} else " for i in listed) + str(c)
        passed = len(listed) + outputs.count(c)
        key = (-passed, len(source), len(listed), listed, order)
        if best is None or key < best[0]:
            best = (key, source, passed)
    return best[1], best[2]


def audit(task, n: int = 500, seed: int = 0, split: str = "test") -> dict:
    """What the task's reward pays the programs fitted to the shown tests: for each of the task's families, n
    problems of the split drawn by the task with that family alone (its other options kept, its reward too), and
    the mean fraction of the reward's tests (task.score: the hidden tests under reward=heldout) passed by
        pieces     the step program of fit_templates (at most three constant levels) fitted to the shown tests
        lookup     the lookup of fit_lookup fitted to the shown tests
        partial    the best of the problem's partials by the task's reward
        target     the target (1.0: a check)
    both fitted within the task's answer room; pieces_all and lookup_all, the fraction of problems on which the
    fitted program earns the whole reward (task.solved); pieces_shown, lookup_shown and partial_shown, the same
    means on the shown tests (the best partial by shown tests passed). Under reward=shown they equal the first
    three. {family: {key: value, "problems": n}}."""
    room = task.answer_tokens - 1
    report = {}
    for family, problems in family_problems(task, split, n, seed):
        rows = []
        for p in problems:
            (_, _), (pieces, _) = fit_templates(p.inputs, p.outputs, room)
            lookup, _ = fit_lookup(p.inputs, p.outputs, room)
            reward = {q: task.score(p, q) for q in (pieces, lookup, p.target, *p.partials)}
            shown = {q: np.mean(list(map(operator.eq, execute(q, p.inputs), p.outputs))) for q in reward}
            rows.append((reward[pieces].mean(), reward[lookup].mean(), max(reward[q].mean() for q in p.partials),
                         reward[p.target].mean(), task.solved(reward[pieces]), task.solved(reward[lookup]),
                         shown[pieces], shown[lookup], max(shown[q] for q in p.partials)))
        keys = ("pieces", "lookup", "partial", "target", "pieces_all", "lookup_all", "pieces_shown", "lookup_shown",
                "partial_shown")
        report[family.__name__] = {"problems": n, **dict(zip(keys, map(float, np.mean(rows, axis=0))))}
    return report

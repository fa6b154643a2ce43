"""Tests for tasks/templates.py: the programs that only fit the shown outputs, fitted exactly (against brute force),
and the property the code task's shown inputs must have: such a template scores below the target's own partial
programs (docs/tasks.md, "What the shown tests pay for")."""
import time

import numpy as np

from tasks.code import DOMAIN, X_MAX, CodeTask, execute
from tasks.templates import fit_templates, template_report

TASK = CodeTask()


def brute_force_templates(inputs, outputs, max_chars):
    """The most shown tests passed by any program `a`, `a if x<b else c` or `a if x<b else c if x<d else e` of at
    most max_chars characters, by enumeration: every threshold from -X_MAX to X_MAX + 1, every constant among the
    outputs and 0 (a constant outside them passes nothing, and 0 is the shortest). (constant's, step's)"""
    xs, ys = np.array(inputs), np.array(outputs)
    values = np.array(sorted(set(outputs) | {0}))
    chars = np.array([len(str(v)) for v in values])
    thresholds = np.arange(-X_MAX, X_MAX + 2)
    t_chars = np.array([len(str(t)) for t in thresholds])
    hits = ys[None, :] == values[:, None]                                    # (values, tests)
    below = (hits[None, :, :] & (xs < thresholds[:, None, None])).sum(2)     # (thresholds, values): passed at x < t
    total = hits.sum(1)
    constant = int(total[chars <= max_chars].max())
    # two levels: a (x < b), c (x >= b)                                        axes (b, a, c)
    n2 = below[:, :, None] + (total - below)[:, None, :]
    l2 = t_chars[:, None, None] + chars[None, :, None] + chars[None, None, :] + 12
    # three levels: a (x < b), c (b <= x < d), e (x >= d), d > b                axes (b, d, a, c, e)
    n3 = (below[:, None, :, None, None] + below[None, :, None, :, None] - below[:, None, None, :, None]
          + (total - below)[None, :, None, None, :])
    n3 = np.where((thresholds[:, None] < thresholds[None, :])[:, :, None, None, None], n3, 0)
    l3 = (t_chars[:, None, None, None, None] + t_chars[None, :, None, None, None] + chars[None, None, :, None, None]
          + chars[None, None, None, :, None] + chars[None, None, None, None, :] + 24)
    step = max(constant, int(n2[l2 <= max_chars].max(initial=0)), int(n3[l3 <= max_chars].max(initial=0)))
    return constant, step


def test_fit_templates_is_exact():
    rng = np.random.default_rng(0)
    cases = [((-9, -4, 0, 2, 3, 6, 11, 14), (-17, -7, 1, 5, 5, 5, 5, 5), 32)]
    for task in (CodeTask(), CodeTask(inputs="random"), CodeTask(families="all")):
        cases += [(p.inputs, p.outputs, 32) for p in task.problems("test", 25, seed=0)]
    for _ in range(40):  # random tests, some with long outputs and tight rooms, where the digits decide
        D = int(rng.choice([4, 8, 12]))
        inputs = tuple(sorted(int(x) for x in rng.choice(DOMAIN, D, replace=False)))
        levels = rng.choice(np.arange(-39, 40), int(rng.integers(1, 6)), replace=False)
        cases.append((inputs, tuple(int(y) for y in rng.choice(levels, D)), int(rng.choice([20, 27, 29, 32]))))
    for inputs, outputs, max_chars in cases:
        (constant, c), (step, s) = fit_templates(inputs, outputs, max_chars)
        assert (c, s) == brute_force_templates(inputs, outputs, max_chars), (inputs, outputs, max_chars)
        for source, passed in ((constant, c), (step, s)):  # what it writes is such a program, and passes that many
            assert len(source) <= max_chars and source.count(" if x<") <= 2 and "x" not in source.replace("x<", "")
            assert sum(map(lambda a, b: a == b, execute(source, inputs), outputs)) == passed, (source, inputs)
    assert fit_templates(*cases[0][:2]) == (("5", 5), ("-17 if x<-4 else 1 if x<1 else 5", 7))


def test_the_shown_tests_pay_for_the_program():
    """On the held-out problems of each family, the best step program fitted to the shown tests (at most three
    constant levels, within the answer's room) passes fewer of them than the family's best partial program, and
    passes all of them almost never: but for step3, whose targets are such programs."""
    start = time.perf_counter()
    report = template_report(TASK, 300, seed=0)
    elapsed = time.perf_counter() - start
    assert set(report) == {f.__name__ for f in TASK.families}
    for family, row in report.items():
        assert row["problems"] == 300
        if family == "step3":
            assert row["template_all"] == 1.0  # the target is one
            continue
        assert row["template"] < row["partial"], (family, row)
        assert row["template_all"] <= 0.02, (family, row)
    # the whole grammar's two other families too; and a step program passes every shown test only where the
    # target is one (a step target with two constant branches)
    rows = {}
    for p in CodeTask(families="step+on_remainder").problems("test", 300, seed=0):
        (_, _), (_, passed) = fit_templates(p.inputs, p.outputs)
        partial = max(sum(map(lambda a, b: a == b, execute(q, p.inputs), p.outputs)) for q in p.partials)
        rows.setdefault(p.family, []).append((passed, partial))
        if passed == len(p.inputs):
            assert fit_templates(DOMAIN, execute(p.target, DOMAIN))[1][1] == len(DOMAIN), p
    assert set(rows) == {"step", "on_remainder"}
    for family, pairs in rows.items():
        template, partial = np.mean(pairs, axis=0)
        assert template < partial, (family, template, partial)
    # inputs=random (the generator before) shows clip's outputs with few distinct values: the template wins there
    before = template_report(CodeTask(families="clip", inputs="random"), 300, seed=0)["clip"]
    assert before["template"] > before["partial"] and before["template_all"] > 0.1, before
    assert before["distinct"] < report["clip"]["distinct"] - 1
    print(f"template report, 5 families x 300 problems: {elapsed:.1f} s")

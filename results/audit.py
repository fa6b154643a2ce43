"""
What the code task's rewards pay the programs fitted to the shown tests, per family (tasks/templates.py), as the
tables of docs/tasks.md give it.

    python -m results.audit --templates   # a step program fitted to the shown tests against the partial programs,
                                          # for the shown inputs before (inputs=random) and now (inputs=distinct)
    python -m results.audit --audit       # the reward on hidden tests (the default) and on the shown ones: what it
                                          # pays the constant-piece program and the lookup fitted to the shown tests

Each runs in seconds on 500 held-out problems per family of the whole grammar and trains nothing.
"""
import sys

from runs.cli import Parser, UsageError


def templates_table(n=500, seed=0):
    """tasks.templates.template_report on n held-out problems per family, for the shown inputs of the generator before
    (inputs=random) and of the default (inputs=distinct), every family of the grammar: a markdown table."""
    from tasks.code import CodeTask
    from tasks.templates import template_report
    lines = ["| family | inputs | template: mean tests passed | template: passes all | best partial: mean tests "
             "passed | constant: mean tests passed | distinct shown outputs |", "|---|---|---|---|---|---|---|"]
    reports = {inputs: template_report(CodeTask(families="all", inputs=inputs), n, seed)
               for inputs in ("random", "distinct")}
    for family in sorted(reports["distinct"]):
        for inputs, report in reports.items():
            r = report[family]
            lines.append(f"| {family} | {inputs} | {r['template']:.3f} | {r['template_all']:.3f} | "
                         f"{r['partial']:.3f} | {r['constant']:.3f} | {r['distinct']:.2f} |")
    return "\n".join(lines)


def audit_table(n=500, seed=0):
    """tasks.templates.audit of the reward on hidden tests (the default) on n held-out problems per family, every
    family of the grammar, the means on the shown tests (the reward=shown task's) beside: a markdown table."""
    from tasks.code import CodeTask
    from tasks.templates import audit
    keys = ("pieces", "lookup", "partial", "target", "pieces_all", "lookup_all", "pieces_shown", "lookup_shown",
            "partial_shown")
    lines = ["| family | constant pieces | lookup | best partial | target | constant pieces: whole reward | lookup: "
             "whole reward | shown: constant pieces | shown: lookup | shown: best partial |", "|---" * 10 + "|"]
    for family, r in sorted(audit(CodeTask(families="all"), n, seed).items()):
        lines.append(f"| {family} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = Parser(description=__doc__, allow_abbrev=False)
    p.add_argument("--templates", action="store_true", help="what a step program fitted to the shown tests scores")
    p.add_argument("--audit", action="store_true", help="what the rewards pay the programs fitted to the shown tests")
    try:
        args = p.parse_args(argv)
        if args.templates == args.audit:
            raise UsageError("choose one of --templates and --audit")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(templates_table() if args.templates else audit_table())
    return 0


if __name__ == "__main__":
    sys.exit(main())

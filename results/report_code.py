"""
The code comparisons' part of results.md (results/PLAN_CODE.md, v2 and its search of record): pass@k,
pass_hidden@k and best@k per step, the paired differences, pass@48 against the base, the forms of the answers, and
the search tables with the plan's test. The superseded v1's sections are kept in results/superseded/code_v1.md.
"""
import os
import re

import numpy as np

from results.plan import KS, base_metrics, code_problems, code_task, finished_runs, read_json, value
from results.search_jobs import (HOW, NAMES, label, path_of, per_run, read_searches, solved_rule, solved_within,
                                 target_solved, targets_path)
from results.tables import (PAIRED_STD_NOTE, first_metrics, paired_table, pm, scalar_step_table, step_lines,
                            table)
from results.verdicts import run_level_search_lines, sign_test


def code_section(cfg, out, group="code", key="search"):
    """One code plan (results/PLAN_CODE.md; group "code" is v2, "code_rep" the replicates of its search of record):
    pass@k, pass_hidden@k and best@k per evaluation step, the paired differences, what RL does to pass@48 against
    the base, the forms of the answers, and the search tables (results/search_jobs.py)."""
    runs = finished_runs(cfg, out, group) if group in cfg else {}
    if not runs:
        return []
    g = cfg[group]
    bases = base_metrics(runs)
    ks, need = KS[1:], len(g["seeds"])
    if g.get("units"):
        return replicate_section(cfg, out, group, runs, bases)

    def vs_grpo(metric, at, name):  # VPO against GRPO and against matched GRPO
        return [line for b in ("GRPO", "matched GRPO") for line in paired_table(runs, "VPO", b, metric, at, name, need)]
    lines = [f"## Code, plan v2 (shown tests that pay for the program): {g['steps']} RL steps, "
             f"{g['steps'] * 8:,} prompts per arm", "",
             "Plan v2 of [PLAN_CODE.md](PLAN_CODE.md); GRPO writes 8 answers per prompt and step, matched GRPO "
             f"24 (24 rollouts), Multi-RLVR and VPO 24 (8 rollouts of 3); files under results/runs/{g['dir']}/.", ""]
    lines += step_lines(f"pass@k (every shown test passes) over whole rollouts (k/m rollouts of m answers) at each "
                        f"evaluation step, {first_metrics(runs)['problems']} held-out problems, 48 answers each:",
                        runs, "pass@k", ks, bases) + vs_grpo("pass@k", ks, "pass@k")
    lines += step_lines("Pooled pass@k (every answer of a problem in one pool; k = 1 is the fraction of answers that "
                        "solve):", runs, "pooled_pass@k", KS, bases)
    lines += vs_grpo("pooled_pass@k", (1,), "pooled pass@1")
    lines += step_lines("pass_hidden@k (the shown and the 8 hidden tests pass) over whole rollouts:", runs,
                        "pass_hidden@k", ks, bases) + target_lines(runs, ks, bases)
    lines += step_lines("Code best@k (the fraction of shown tests passed by the best of k answers) over whole "
                        "rollouts:", runs, "best@k", ks, bases) + vs_grpo("best@k", ks, "code best@k")
    lines += paired_table(runs, "VPO", "Multi-RLVR", "pass@k", (3, 12, 48), "pass@k", need)
    lines += paired_table(runs, "matched GRPO", "GRPO", "pass@k", (3, 12, 48), "pass@k", need)
    lines += below_base_table(runs, bases, need=need)
    lines += ["Diversity and the answers at each evaluation step:", ""]
    lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("valid_rate", None, "valid"),
                                      ("distinct_rate", None, "distinct"), ("deploy_reward", None, "tests passed"),
                                      ("pareto_frac", None, "Pareto frac.")], bases) + [""]
    path = os.path.join(out, g["answers"])
    cache = read_json(path) if os.path.isfile(path) else {}
    if "targets" in cache:  # what the final weights write (results/figures.py samples them)
        lines += forms_tables(cache, g["answers"])
    return lines + search_section(cfg, out, key)


V1 = "superseded/code_v1.md"   # plan v1's sections of results.md, as the code at commit 352e99a wrote them


def superseded_lines(out):
    """Where the superseded plan v1's sections went: a heading and one sentence that links their snapshot, where
    the snapshot is under out (it is committed in results/)."""
    if not os.path.isfile(os.path.join(out, V1)):
        return []
    return ["## Code, plan v1 (superseded)", "",
            f"Plan v1's sections are kept in [{V1}]({V1}), as the code at commit 352e99a wrote them from the runs "
            "committed in results/runs/code/; that file says how to write them again.", ""]


def replicate_section(cfg, out, group, runs, bases):
    """The search of record of plan v2 (PLAN_CODE.md, the amendment of its search): its units' training
    evaluations, a second realization of v2's runs (no verdict), their pools on the hard problems, and the search."""
    g, key = cfg[group], cfg[group]["units"]
    lines = [f"## Code, plan v2: the search of record, from replicate weights ({g['steps']} RL steps)", "",
             "Per PLAN_CODE.md's amendment of v2's search: each searched arm and seed trained again with v2's "
             "arguments and searched from those weights in one job, on v2's hard problems; files under "
             f"results/runs/{g['dir']}/. The training evaluations below are a second realization of v2's runs, "
             "reported without a verdict (v2's are the training results of record).", ""]
    lines += step_lines("pass@k (every shown test passes) over whole rollouts at each evaluation step (the same 64 "
                        "held-out problems as v2):", runs, "pass@k", KS[1:], bases) + target_lines(runs, KS[1:], bases)
    lines += ["Diversity of the searched weights' answers at each evaluation step (the mean pairwise L1 distance "
              "between reward vectors):", ""]
    lines += scalar_step_table(runs, [("diversity", None, "diversity"), ("distinct_rate", None, "distinct")],
                               bases) + [""]
    rows = []
    for arm, rs in runs.items():
        for r in rs:
            path = path_of(out, cfg, key, "pool", r["slug"], r["seed"])
            if os.path.isfile(path):
                pool = read_json(path)
                solved = sum(n > 0 for n in pool["solved_per_problem"])
                rows.append([NAMES.get(r["slug"], arm), str(r["seed"]), f"{solved} of {len(pool['problems'])}",
                             pool.get("machine", "-")])
    if rows:
        lines += ["Hard problems (chosen by v2's original weights) that the replicate solves in its own "
                  f"{cfg[key]['answers']}-answer pool at T = 0.7 (reported, not a criterion), and the machine of the "
                  "unit:", ""]
        lines += table(["method", "seed", "solved in its pool", "machine"], rows) + [""]
    return lines + search_section(cfg, out, key)


def target_lines(runs, ks, bases):
    """pass_target@k (the answer equals the target on all 31 inputs) per step where the runs' evaluations carry it;
    else one line saying that their pass@k counts the shown tests only."""
    if all("pass_target@k" in r["summary"]["metrics"] for rs in runs.values() for r in rs):
        return step_lines("pass_target@k (the answer equals the target on all 31 inputs of the domain) over "
                          "whole rollouts:", runs, "pass_target@k", ks, bases)
    return ["These runs' evaluations predate pass_target@k (the answer equals the target on all 31 inputs): their "
            "pass@k and pass_hidden@k count programs that pass the shown (and hidden) tests, which the target "
            "passes but some other programs pass too.", ""]


def below_base_table(runs, bases, need=None):
    """Does RL lower pass@k at large k below the base? Per arm, final pass@48 minus the base's with the same m, per
    seed, with the plan's reading (lowers / raises on every seed, else unresolved)."""
    rows, width = [], max(len(rs) for rs in runs.values())
    for arm, rs in runs.items():
        m = rs[0]["summary"]["metrics"]["m"]
        base = value(bases[m], "pass@k", 48) if bases.get(m) else None
        if base is None:
            continue
        ds = [value(r["summary"]["metrics"], "pass@k", 48) - base for r in rs]
        reading = "lowers" if all(d < 0 for d in ds) else "raises" if all(d > 0 for d in ds) else "unresolved"
        reading = f"{len(ds)} of {need} seeds: no reading yet" if need and len(ds) < need else reading
        rows.append([arm, str(m), f"{base:.3f}"] + [f"s{r['seed']}: {d:+.3f}" for r, d in zip(rs, ds)]
                    + [""] * (width - len(ds)) + [pm(ds), reading])
    if not rows:
        return []
    return ["pass@48 at the final step minus the base's (the base sampled with the arm's m), per RL seed:", ""] + \
        table(["method", "m", "base pass@48"] + [f"seed {i}" for i in range(width)] +
              ["mean ± std", "reading (plan's rule)"], rows, PAIRED_STD_NOTE) + [""]


THREE_LEVELS = re.compile(r"-?\d+ if x<-?\d+ else -?\d+ if x<-?\d+ else -?\d+")


def answer_form(source):
    """The syntactic form of a program: the shape of each family's target, or "other"."""
    if THREE_LEVELS.fullmatch(source):
        return "three levels"
    for needle, form in (("abs(", "abs"), ("%", "remainder"), ("min(max(", "clip"), ("max(", "min/max"),
                         ("min(", "min/max"), (" if ", "other conditional")):
        if needle in source:
            return form
    return "other"


FORMS = ("three levels", "abs", "remainder", "clip", "min/max", "other conditional", "other")


OWN_FORM = {"clamp": "min/max", "clip": "clip", "distance": "abs", "remainder": "remainder", "step3": "three levels"}


def forms_tables(cache, name):
    """What the models write (the cache `name` of results/figures.py code_answers), seeds pooled per arm: the share
    of the written answers in each form on the problems whose target is not itself three levels (a three-level
    answer there is a partial program fitted to the tests); and per family, the share in the form of the family's
    targets and in the three-level template."""
    forms = {}   # {arm: {family: the form of every written answer}}
    for run, entry in cache.items():
        if run == "targets":
            continue
        arm = run if run.startswith("base") else run.rsplit("-s", 1)[0]
        for (_, family), answers in zip(cache["targets"], entry["answers"]):
            forms.setdefault(arm, {}).setdefault(family, []).extend(answer_form(a) for a in answers if a)
    pooled = {arm: [f for family, fs in by.items() if family != "step3" for f in fs] for arm, by in forms.items()}
    families = sorted({family for _, family in cache["targets"]})

    def cell(fs, own):  # the shares of one arm's answers on one family: its own form / three levels
        return f"{fs.count(own) / len(fs):.2f} / {fs.count('three levels') / len(fs):.2f}" if fs else "-"
    lines = [f"What the models write (`{name}`: 12 answers per problem at T = 0.7, final weights, seeds pooled): the "
             f"form of the written answers on the {sum(f != 'step3' for _, f in cache['targets'])} of the first "
             f"{len(cache['targets'])} held-out problems whose target is not three constant levels:", ""]
    lines += table(["checkpoint", "answers"] + list(FORMS), [[arm, str(len(fs))] + [
        f"{fs.count(f) / len(fs):.2f}" for f in FORMS] for arm, fs in pooled.items() if fs]) + [""]
    lines += [f"Per family (`{name}`): the share of written answers in the form of the family's targets / in the "
              "three-level template (on step3 the two are the same form):", ""]
    rows = [[arm] + [cell(by.get(f, []), OWN_FORM[f]) for f in families] for arm, by in forms.items()]
    return lines + table(["checkpoint"] + [f"{f} ({OWN_FORM[f]})" for f in families], rows) + [""]


def search_section(cfg, out, key="search"):
    """Problems solved within each budget by the evolutionary search and by sampling, per seed; the paper's count
    (problems some seed of one method solves and no seed of the other ever does) per pair of methods, and the
    plan's test of it (results/PLAN_CODE.md v2, "The deciding test"); the run-level test; which problems."""
    from search import bootstrap_difference, solved_by_budget
    found, hard = read_searches(cfg, out, key)
    if not hard or not any(found.values()):
        return []
    s, budgets = cfg[key], cfg[key]["budgets"]
    task, problems = code_task(cfg, s["group"]), code_problems(cfg, s["group"], hard["screened"])
    target = {slug: [target_solved(r, task, problems) for r in runs] for slug, runs in found["evolve"].items()}
    stopped = (" (stopped before its VPO searches and its sampling: the weights were lost with their machine; "
               "a record, without a verdict; the search of record is the next section's)") if s.get("stopped") else ""
    lines = [f"### Evolutionary search on the hardest held-out problems{stopped}", "",
             f"The {len(hard['problems'])} problems (of the first {hard['screened']} test problems) that none of the "
             f"{'original (v2) ' if 'hard' in s else ''}searched checkpoints solved in its {s['answers']}-answer "
             f"evaluation pool (T = 0.7). Budget: {s['budget']} {s['unit']} per problem (T = {s['temperature']}); "
             f"problems solved within each budget, per seed (s0 / s1 / ...), and their mean. Sampling: fresh samples "
             f"from the plain prompt with the same budget. The last two columns (not in the plans): distinct non-empty "
             f"answers written on a problem the run did not solve, over its whole budget (mean over such problems); "
             f"and, per seed, the fraction of shown tests that the best program the search kept passes, averaged over "
             f"the problems (1 where solved).", ""]
    lines += rule_lines(found, os.path.relpath(targets_path(path_of(out, cfg, key, "hard")), out), out)

    def best_tests(p, res):  # the fraction of shown tests the search's best program passes (0: none kept)
        return float(task.score(problems[p], res["best"]).mean()) if res.get("best") is not None else 0.0
    rows = []
    for kind in ("evolve", "sample"):
        for slug, runs in found[kind].items():
            counts = [solved_by_budget(r["results"], budgets) for r in runs]
            distinct = [res["population"] for r in runs for res in r["results"] if res["solved_at"] is None]
            best = [np.mean([best_tests(*pr) for pr in zip(r["problems"], r["results"])]) for r in runs]
            rows.append([label(kind, slug), str(len(runs))]
                        + [" / ".join(str(c[b]) for c in counts) + f" ({np.mean([c[b] for c in counts]):.1f})"
                           for b in budgets]
                        + [f"{np.mean(distinct):.0f}" if distinct else "-"]
                        + ([" / ".join(f"{b:.3f}" for b in best) or "-", " / ".join(
                            f"{len(t)} of {len(solved_within(r))}" for t, r in zip(target[slug], runs))]
                           if kind == "evolve" else ["-", "keeps no programs"]))
    lines += table(["method", "seeds"] + [f"{b} {s['unit']}" for b in budgets] +
                   ["distinct answers per unsolved problem", "best program's tests passed",
                    "kept solving programs equal to the target"], rows) + [""]
    lines += only_by_tables(found, s)
    complete = all(len(found["evolve"].get(slug, [])) == len(cfg[s["group"]]["seeds"]) for pair in s["pairs"]
                   for slug in pair)  # every seed of every pair: the plan's verdict can be read
    lines += registered_lines(found, s, None if complete else "stopped search: no verdict" if stopped else
                              "waiting for every seed of every pair (Holm)")
    lines += run_level_search_lines(found, s, target)
    rows = []
    for a, b in s["pairs"]:
        if a in found["evolve"] and b in found["evolve"]:
            sa, sb = per_run(found, "evolve", a), per_run(found, "evolve", b)
            diff, low, high = bootstrap_difference(sa, sb, hard["problems"])
            plus = lambda x: f"{round(x, 9) + 0.0:+.2f}"  # noqa: E731  (no "-0.00")
            rows.append([f"{NAMES[a]} − {NAMES[b]}", f"{np.mean([len(x) for x in sa]):.2f}",
                         f"{np.mean([len(x) for x in sb]):.2f}", plus(diff), f"[{plus(low)}, {plus(high)}]"])
    if rows:
        lines += ["Problems solved per seed by the search at the full budget, mean over seeds, and the 95% bootstrap "
                  "interval of the difference (10,000 resamples of the problems, seed 0, the runs held fixed; "
                  "descriptive, and narrower than the run-level interval above because it ignores how runs vary):", ""]
        lines += table(["A − B", "A", "B", "difference", "95% interval"], rows) + [""]
    return lines + solved_problems_table(found, task, problems)


RULES = {"reward": ("the first program that passes every shown test",
                    "the rule they were written under, before the search counted the target"),
         "target": ("the first program equal to the target on all 31 inputs of the domain", "the rule they record")}


def rule_lines(found, targets, out):
    """What "solved" means in these search files (search.py records the rule since it counts the target; files
    without the record counted the shown tests), what the last column counts, and where the targets are kept."""
    rules = sorted({solved_rule(r) for kind in found for runs in found[kind].values() for r in runs})
    meaning = (f"Solved in these files means {RULES[rules[0]][0]} ({RULES[rules[0]][1]})." if len(rules) == 1 else
               "Solved follows each file's recorded rule: " + "; ".join(f"{r}, {RULES[r][0]}" for r in rules) + ".")
    where = (f" The hard problems' targets, their shown and hidden tests and each target's values on the domain are "
             f"in `{targets}`.") if os.path.isfile(os.path.join(out, targets)) else ""
    return [meaning + " The column \"kept solving programs equal to the target\" counts, per seed, the solved problems "
            "whose kept program computes the target on every input of the domain; sampling runs keep no programs."
            + where, ""]


def only_by_tables(found, s):
    """Per pair (A, B) of the plan, at every budget: problems some seed of A solves and no seed of B does, the
    reverse, and both, for the search and for sampling."""
    from search import solved_only_by
    lines = []
    for a, b in s["pairs"]:
        rows = [[HOW[kind], str(budget)] + [str(len(x)) for x in solved_only_by(
            per_run(found, kind, a, budget), per_run(found, kind, b, budget))]
                for kind in ("evolve", "sample") if a in found[kind] and b in found[kind] for budget in s["budgets"]]
        if rows:
            lines += [f"Problems solved by some seed of {NAMES[a]} and by no seed of {NAMES[b]}, and the reverse (the "
                      f"paper's claim: VPO checkpoints solve problems GRPO checkpoints never do):", ""]
            lines += table(["how", f"budget ({s['unit']})", f"{NAMES[a]} only", f"{NAMES[b]} only", "both"], rows)
            lines += [""]
    return lines


def registered_lines(found, s, no_verdict):
    """At the full budget, the sign test over problems (verdicts.sign_test): for the search with Holm over the
    plan's pairs, its registered verdict (no_verdict: None, else why there is none yet); for sampling and for
    search against sampling, descriptive."""
    from search import holm
    tests = [(HOW[kind], NAMES[a], NAMES[b], *sign_test(per_run(found, kind, a), per_run(found, kind, b)))
             for kind in ("evolve", "sample") for a, b in s["pairs"] if a in found[kind] and b in found[kind]]
    tests += [("search vs sampling", f"{NAMES[slug]} search", f"{NAMES[slug]} sampling",
               *sign_test(per_run(found, "evolve", slug), per_run(found, "sample", slug)))
              for slug in NAMES if slug in found["evolve"] and slug in found["sample"]]
    if not tests:
        return []
    rejected = holm([t[5] for t in tests if t[0] == "search"])  # the search's tests come first
    rows = []
    for i, (how, a, b, na, nb, p) in enumerate(tests):
        first, second = (a, b) if na > nb else (b, a)
        reading = "descriptive" if how != "search" else no_verdict or (
            f"{first}'s searches solve problems {second}'s never do, more often than the reverse" if rejected[i]
            else "no difference detected at this power")
        rows.append([how, f"{a} − {b}", str(na), str(nb), str(na + nb), f"{p:.4f}", reading])
    return [f"The pre-registered analysis, the sign test over problems at the full budget ({s['budget']} {s['unit']}): "
            f"a = problems some seed of the first solves and no seed of the second, b = the reverse, p = min(1, 2 "
            f"P(X ≥ max(a, b))), X ~ Binomial(a + b, 1/2); the search rows are the plan's registered verdict, with "
            f"Holm over its pairs at familywise α = 0.05. It counts problems as independent replicates, but "
            "what varies between two methods is the training run; where it disagrees with the run-level test "
            "below, the run-level test is the reading:", ""] + \
        table(["how", "A − B", "a", "b", "n", "p", "reading (registered)"], rows) + [""]


def solved_problems_table(found, task, problems):
    """Every problem some job solved within the full budget: its target, which seeds solved it (and after how
    many answers), and how many of the searches' solving programs also pass the hidden tests and equal the target
    (sampling jobs keep no programs)."""
    columns = [(kind, slug) for kind in ("evolve", "sample") for slug in found[kind]]
    solved = sorted(set().union(*(solved_within(r) for kind, slug in columns for r in found[kind][slug])))
    if not solved:
        return []
    rows, results = [], [[(r["rl_seed"], dict(zip(r["problems"], r["results"]))) for r in found[kind][slug]]
                         for kind, slug in columns]   # per column, per run: {problem: its result}
    for p in solved:
        hits = [[(seed, res[p]) for seed, res in runs if res[p]["solved_at"] is not None] for runs in results]
        kept = [res["best"] for runs in hits for _, res in runs if res.get("best") is not None]
        rows.append([str(p), problems[p].family, f"`{problems[p].target}`"]
                    + [", ".join(f"s{seed} ({res['solved_at']})" for seed, res in runs) or "-" for runs in hits]
                    + [f"{sum(check(problems[p], b) for b in kept)} / {len(kept)}" if kept else "-"
                       for check in (task.solved_hidden, task.equals_target)])
    header = ["problem", "family", "target"] + [label(kind, slug) for kind, slug in columns]
    return ["Which problems, solved by which seed (answers spent when the first solving program appeared), and how "
            "many of the searches' solving programs also pass the problem's hidden tests, and equal its target on all "
            "31 inputs (sampling jobs keep no programs):", ""] + \
        table(header + ["search programs passing hidden tests", "search programs equal to the target"], rows) + [""]

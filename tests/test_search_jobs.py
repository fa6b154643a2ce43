"""results/search_jobs.py and the search tables of report_code.py: the hard problems, the jobs' order and what they
wait for, the units of the search of record (never a search from weights they did not train), and the search
tables and the plan's test on hand-made search files."""
import os

import pytest

from results import plan, report_code
from results.report import with_commands
from tasks import get_task
from tasks.code import DOMAIN


def test_hard_problems_are_those_no_checkpoint_solved():
    from results import search_jobs
    screens = [{"problems": 6, "solved_per_problem": [0, 3, 0, 0, 1, 0]},
               {"problems": 6, "solved_per_problem": [0, 0, 2, 0, 0, 0]}]
    assert search_jobs.hard_problems({"problems": 2}, screens) == [0, 3]
    assert search_jobs.hard_problems({"problems": 3}, screens) == [0, 3, 5]
    with pytest.raises(ValueError, match="raise screen_problems"):
        search_jobs.hard_problems({"problems": 4}, screens)


def test_search_jobs_wait_for_the_files_they_need(tmp_path):
    """Screens wait for their run's weights, the choice of problems for every screen, the units for it and for
    their weights; a finished file is not redone."""
    from results import search_jobs
    cfg = plan.QUICK
    jobs = search_jobs.pending(cfg, str(tmp_path))
    names = [j["name"] for j in jobs]
    assert names == ["screen-grpo-s0", "screen-grpo-s1", "screen-grpo_matched-s0", "screen-grpo_matched-s1",
                     "screen-vpo-s0", "screen-vpo-s1", "hard", "unit-vpo-s0", "unit-grpo-s0",
                     "unit-grpo_matched-s0", "unit-vpo-s1", "unit-grpo-s1", "unit-grpo_matched-s1"]
    hard = jobs[6]
    assert hard["needs"] == [j["makes"] for j in jobs[:6]]
    run = tmp_path / "runs" / "code-v2" / "grpo-s0"
    assert jobs[0]["needs"] == [str(run / "summary.json"), str(run / "ckpt.pt")]
    assert jobs[8]["needs"] == [hard["makes"], str(run / "summary.json"), str(run / "ckpt.pt")]
    # a unit of v2's search trains nothing and samples no pool (its weights were screened): its chunks only
    assert len(jobs[8]["args"]) == 5 and len(search_jobs.unit_files(str(tmp_path), cfg, "search", "grpo", 0)) == 4
    search_jobs.write_json(jobs[0]["makes"], {})
    assert "screen-grpo-s0" not in [j["name"] for j in search_jobs.pending(cfg, str(tmp_path))]


def test_a_unit_never_searches_from_weights_it_did_not_train(tmp_path):
    """The search of record runs in units: a unit whose weights are gone (a new session) deletes the search files
    those weights made and trains again; units whose weights are here go first; v2's stopped search has no jobs."""
    from results import search_jobs
    cfg, out = plan.QUICK, str(tmp_path)
    assert search_jobs.pending(plan.FULL, out) == []                    # v2's own search: stopped
    logs, calls = str(tmp_path / "logs"), []

    def train(*args):  # reproduce.py's train_job: here it records its arguments and fails
        calls.append(args)
        return 1
    jobs = search_jobs.pending(cfg, out, "search_rep", train=train, logs=logs)
    # seed by seed, VPO (in every pair) first, then the pairs' others
    assert [j["name"] for j in jobs] == ["unit-vpo-s0", "unit-grpo-s0", "unit-grpo_matched-s0"]
    assert all(j["needs"] == [str(tmp_path / "runs/code-v2/search/hard.json")] for j in jobs)
    (tmp_path / "runs" / "code-v2-rep" / "grpo_matched-s0").mkdir(parents=True)
    (tmp_path / "runs" / "code-v2-rep" / "grpo_matched-s0" / "ckpt.pt").write_text("weights")
    jobs = search_jobs.pending(cfg, out, "search_rep", train=train, logs=logs)
    assert [j["name"] for j in jobs] == ["unit-grpo_matched-s0", "unit-vpo-s0", "unit-grpo-s0"]  # weights here: first
    files = search_jobs.unit_files(out, cfg, "search_rep", "grpo", 0)
    for path in files[:2]:                                              # left by a unit cut short elsewhere
        search_jobs.write_json(path, {"from": "weights that are gone"})
    assert jobs[2]["fn"](*jobs[2]["args"]) == 1                         # training failed
    run = jobs[2]["run"]
    assert calls == [(run["argv"], str(tmp_path / "runs" / "code-v2-rep"), os.path.join(logs, "code-v2-rep-grpo-s0.log"))]
    assert not any(os.path.isfile(p) for p in files)


def test_the_search_table_counts_problems_solved_by_one_method_only(tmp_path):
    """Hand-made search files: VPO's seeds solve problems 11 and 12 (seed 0) and 12 (seed 1); GRPO's solve 12 and
    13 (seed 0) and nothing (seed 1). Within 27 answers: VPO only {11}, GRPO only {13}, both {12}; within 9
    answers only VPO seed 0's problem 11 (solved at 5) counts."""
    from results import search_jobs
    cfg = {**plan.QUICK, "code": {**plan.QUICK["code"], "seeds": [0, 1]},
           "search": {**plan.QUICK["search"], "arms": ("grpo", "vpo"), "pairs": (("vpo", "grpo"),), "chunk": 3,
                      "problems": 3}}
    out = str(tmp_path)
    hard = [11, 12, 13]
    path_of = lambda *a: search_jobs.path_of(out, cfg, "search", *a, **({"chunk": 0} if len(a) > 1 else {}))  # noqa
    search_jobs.write_json(path_of("hard"), {"problems": hard, "screened": 20})

    def res(*solved_at):  # as search_jobs writes them: "seed" is the search's seed (0), not the RL seed
        return {"seed": 0, "problems": hard,
                "results": [{"solved_at": s, "used": s or 27, "population": s or 40} for s in solved_at]}
    files = {("vpo", 0): res(5, 20, None), ("vpo", 1): res(None, 27, None),
             ("grpo", 0): res(None, 12, 10), ("grpo", 1): res(None, None, None)}
    for (slug, seed), content in files.items():
        for kind in ("evolve", "sample"):
            search_jobs.write_json(path_of(kind, slug, seed), content)
    # VPO seed 0's search kept its solving program for problem 11: the target itself, so it passes the hidden tests
    target = get_task("code", reward="shown").problems("test", 20, seed=0)[11].target
    evolve = path_of("evolve", "vpo", 0)
    content = res(5, 20, None)
    content["results"][0]["best"] = target
    search_jobs.write_json(evolve, content)
    # GRPO seed 0's search kept for problem 13 a program that passes every shown and hidden test and is not the target
    p13 = get_task("code", reward="shown").problems("test", 20, seed=0)[13]
    x0 = next(x for x in DOMAIN if x not in p13.inputs + p13.hidden_inputs)
    content = res(None, 12, 10)
    content["results"][2]["best"] = f"99 if x=={x0} else ({p13.target})"
    search_jobs.write_json(path_of("evolve", "grpo", 0), content)
    lines = report_code.search_section(cfg, out)
    # distinct answers: over unsolved problems only; the best program's tests: per seed, over every problem (VPO
    # seed 0 kept the target for problem 11 and nothing elsewhere: 1/3; GRPO seed 0 the program for 13: 1/3)
    # kept solving programs equal to the target, per seed: VPO seed 0 kept the target for problem 11 and nothing for
    # problem 12 (2 solved), seed 1 nothing (1 solved); GRPO seed 0 none of its 2 (13's passes the hidden tests
    # only); sampling runs keep no programs
    assert "| VPO search | 2 | 1 / 0 (0.5) | 2 / 1 (1.5) | 40 | 0.333 / 0.000 | 1 of 2 / 0 of 1 |" in lines
    assert "| GRPO search | 2 | 0 / 0 (0.0) | 2 / 0 (1.0) | 40 | 0.333 / 0.000 | 0 of 2 / 0 of 0 |" in lines
    assert "| VPO sampling | 2 | 1 / 0 (0.5) | 2 / 1 (1.5) | 40 | - | keeps no programs |" in lines
    # these files record no rule: solved meant every shown test passes
    assert any(line.startswith("Solved in these files means the first program that passes every shown test")
               for line in lines)
    assert "| search | 27 | 1 | 1 | 1 |" in lines                      # VPO only, GRPO only, both
    assert "| search | 9 | 1 | 0 | 0 |" in lines
    # which problems, by which RL seed (answers spent), and the searches' programs checked on the hidden tests
    row = next(line for line in lines if line.startswith("| 12 |"))
    assert row.endswith("| s0 (12) | s0 (20), s1 (27) | s0 (12) | s0 (20), s1 (27) | - | - |")
    row = {p: next(line for line in lines if line.startswith(f"| {p} |")) for p in (11, 13)}
    assert row[11].endswith("| - | s0 (5) | - | s0 (5) | 1 / 1 | 1 / 1 |")
    assert row[13].endswith("| s0 (10) | - | s0 (10) | - | 1 / 1 | 0 / 1 |")   # passes the hidden tests, not the target
    # the plan's test at the full budget: 1 : 1 discordant problems, p = 1, Holm (one pair) rejects nothing
    assert "| search | VPO − GRPO | 1 | 1 | 2 | 1.0000 | no difference detected at this power |" in lines
    assert "| sampling | VPO − GRPO | 1 | 1 | 2 | 1.0000 | descriptive |" in lines
    assert "| search vs sampling | VPO search − VPO sampling | 0 | 0 | 0 | 1.0000 | descriptive |" in lines
    # problems solved per seed: VPO 2 and 1, GRPO 2 and 0 -> 1.50 against 1.00
    assert next(line for line in lines if line.startswith("| VPO − GRPO | 1.50 | 1.00 | +0.50 | ["))
    # over runs: 2, 1 against 2, 0; every one of the 6 ways to deal the four runs into two arms is at least as far
    # apart (p = 1), and two runs an arm allow no p below 2/6
    assert any(line.startswith("| search | VPO − GRPO | 2 / 1 | 2 / 0 | +0.50 | [") and
               line.endswith("| 1 | 0.333 | too few runs for a test |") for line in lines)
    # leaving VPO's seed 0 out: one run against two (no run-level test); only VPO's remaining run solves nothing
    # that GRPO's never do, GRPO's seed 0 solves 13 -> 0 against 1 over problems
    assert "| VPO − GRPO | VPO s0 | - | - | 0 against 1 | 1 |" in lines
    # under the target rule only VPO seed 0's kept program counts (GRPO seed 0's for 13 is not the target): 1, 0
    # against 0, 0
    assert any(line.startswith("| search, equal to the target | VPO − GRPO | 1 / 0 | 0 / 0 | +0.50 |")
               for line in lines)
    # a chunk missing: that seed's search is left out until it is done
    os.remove(path_of("evolve", "grpo", 1))
    found, _ = search_jobs.read_searches(cfg, out)
    assert [r["rl_seed"] for r in found["evolve"]["grpo"]] == [0] and len(found["evolve"]["vpo"]) == 2
    # and no verdict is read until every seed of both methods has searched
    lines = report_code.search_section(cfg, out)
    assert "| search | VPO − GRPO | 1 | 1 | 2 | 1.0000 | waiting for every seed of every pair (Holm) |" in lines


def test_target_solved_counts_kept_programs_equal_to_the_target():
    """A hand-made evolve run on three test problems: problem 0 kept a rewrite of its target (solved at 40),
    problem 1 a program that passes every shown and hidden test but differs from the target on one other input
    (solved at 10), problem 2 nothing solved. Only problem 0 equals its target; within 20 answers none does. A
    sampling run keeps no programs: None."""
    from results import search_jobs
    from tasks.code import execute
    task = get_task("code")
    problems = task.problems("test", 3, seed=0)
    p1 = problems[1]
    x0 = next(x for x in DOMAIN if x not in p1.inputs + p1.hidden_inputs)
    fits = f"99 if x=={x0} else ({p1.target})"
    assert task.solved_hidden(p1, fits) and execute(p1.target, [x0]) != [99]
    run = {"kind": "evolve", "problems": [0, 1, 2],
           "results": [{"solved_at": 40, "best": f"({problems[0].target})"}, {"solved_at": 10, "best": fits},
                       {"solved_at": None, "best": "x"}]}
    assert search_jobs.solved_within(run) == {0, 1}
    assert search_jobs.target_solved(run, task, problems) == {0}
    assert search_jobs.target_solved(run, task, problems, budget=20) == set()
    assert search_jobs.target_solved(run, task, problems, budget=40) == {0}
    assert search_jobs.target_solved({"kind": "sample", **{k: run[k] for k in ("problems", "results")}}, task,
                                     problems) is None
    # the rule a file counted by: none recorded is the shown tests ("reward"); a file never mixes two
    assert search_jobs.solved_rule(run) == "reward"
    assert search_jobs.solved_rule({"results": [{"solved_at": 4, "solved_by": "target"}]}) == "target"
    with pytest.raises(ValueError, match="mixes"):
        search_jobs.solved_rule({"results": [{"solved_by": "target"}, {"solved_by": "reward"}]})


def test_the_committed_hard_targets_are_the_hard_problems():
    """hard_targets.json beside each committed hard.json holds what the generator draws for the hard problems, each
    target's table on the domain; and checked from these files alone (results/kept_programs.py), the kept programs
    give the same counts as the report's (target_solved)."""
    from results import kept_programs, search_jobs
    from tasks.code import execute
    out = os.path.dirname(plan.__file__)
    for _, key in plan.CODE_PLANS:
        hard_path = search_jobs.path_of(out, plan.FULL, key, "hard")
        hard = plan.read_json(hard_path)
        problems = plan.code_problems(plan.FULL, plan.FULL[key]["group"], hard["screened"])
        committed = plan.read_json(search_jobs.targets_path(hard_path))
        assert committed == {"hard": "hard.json", **search_jobs.hard_targets(problems, hard)}, key
        assert [row["index"] for row in committed["problems"]] == hard["problems"]
        for row in committed["problems"]:
            assert row["table"] == execute(row["target"], DOMAIN)
            assert [row["table"][x - DOMAIN[0]] for x in row["inputs"] + row["hidden_inputs"]] == \
                row["outputs"] + row["hidden_outputs"]
        task = plan.code_task(plan.FULL, plan.FULL[key]["group"])
        found, _ = search_jobs.read_searches(plan.FULL, out, key)
        counts = kept_programs.kept_counts(found, committed)
        assert len(counts) == sum(map(len, found["evolve"].values())), key
        for slug, runs in found["evolve"].items():
            for r in runs:
                solved, same, _ = counts[(slug, r["rl_seed"])]
                assert solved == len(search_jobs.solved_within(r)), (key, slug)
                assert same == len(search_jobs.target_solved(r, task, problems)), (key, slug)


def test_the_code_sections_of_results_md_are_what_report_code_writes():
    """Each code plan's section (v2, the search of record), written from the committed files, is a block of the
    committed results.md, byte for byte."""
    out = os.path.dirname(plan.__file__)
    text = open(os.path.join(out, "results.md")).read()
    for group, key in plan.CODE_PLANS:
        lines = report_code.code_section(plan.FULL, out, group, key)
        assert lines and "\n".join(with_commands(lines)) in text, group

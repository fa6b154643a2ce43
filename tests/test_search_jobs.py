"""results/search_jobs.py and the search tables of report_code.py: the hard problems, the jobs' order and what they
wait for, the units of the search of record (never a search from weights they did not train), and the search
tables and the plan's test on hand-made search files."""
import os

import pytest

from results import plan, report_code
from tasks import get_task


def test_hard_problems_are_those_no_checkpoint_solved():
    from results import search_jobs
    screens = [{"problems": 6, "solved_per_problem": [0, 3, 0, 0, 1, 0]},
               {"problems": 6, "solved_per_problem": [0, 0, 2, 0, 0, 0]}]
    assert search_jobs.hard_problems({"problems": 2}, screens) == [0, 3]
    assert search_jobs.hard_problems({"problems": 3}, screens) == [0, 3, 5]
    with pytest.raises(ValueError, match="raise screen_problems"):
        search_jobs.hard_problems({"problems": 4}, screens)


def test_search_jobs_wait_for_the_files_they_need(tmp_path):
    """Screens wait for their run's summary, the choice of problems for every screen, the searches for it; a
    finished file is not redone."""
    from results import search_jobs
    cfg = plan.QUICK
    jobs = search_jobs.pending(cfg, str(tmp_path))
    names = [j["name"] for j in jobs]
    assert names[:6] == ["screen-grpo-s0", "screen-grpo-s1", "screen-grpo_matched-s0", "screen-grpo_matched-s1",
                         "screen-vpo-s0", "screen-vpo-s1"] and names[6] == "hard"
    assert len(names) == 6 + 1 + 2 * 6 * 2                              # (evolve, sample) x 6 checkpoints x 2 chunks
    assert names[7:9] == ["evolve-grpo-s0-c0", "evolve-grpo-s0-c1"]
    hard = next(j for j in jobs if j["name"] == "hard")
    assert hard["needs"] == [j["makes"] for j in jobs[:6]]
    assert all(j["needs"] == [hard["makes"]] for j in jobs[7:])
    assert search_jobs.pending({**cfg, "search": {**cfg["search"], "group": "code_v1"},
                                "code_v1": {**cfg["code"], "frozen": "e29cbc8"}}, str(tmp_path)) == []
    run = tmp_path / "runs" / "code-v2" / "grpo-s0"
    assert jobs[0]["needs"] == [str(run / "summary.json"), str(run / "ckpt.pt")]
    search_jobs.write_json(jobs[0]["makes"], {})
    assert "screen-grpo-s0" not in [j["name"] for j in search_jobs.pending(cfg, str(tmp_path))]


def test_a_unit_never_searches_from_weights_it_did_not_train(tmp_path):
    """The search of record runs in units: a unit whose weights are gone (a new session) deletes the search files
    those weights made and trains again; units whose weights are here go first; v2's stopped search has no jobs."""
    from results import search_jobs
    cfg, out = plan.QUICK, str(tmp_path)
    assert search_jobs.pending(plan.FULL, out) == []                    # v2's own search: stopped
    logs = str(tmp_path / "logs")
    jobs = search_jobs.pending(cfg, out, "search_rep", train="TRAIN", logs=logs)
    # seed by seed, VPO (in every pair) first, then the pairs' other methods
    assert [j["name"] for j in jobs] == ["unit-vpo-s0", "unit-grpo-s0", "unit-grpo_matched-s0"]
    assert all(j["needs"] == [str(tmp_path / "runs/code-v2/search/hard.json")] for j in jobs)
    (tmp_path / "runs" / "code-v2-rep" / "grpo_matched-s0").mkdir(parents=True)
    (tmp_path / "runs" / "code-v2-rep" / "grpo_matched-s0" / "ckpt.pt").write_text("weights")
    jobs = search_jobs.pending(cfg, out, "search_rep", train="TRAIN", logs=logs)
    assert [j["name"] for j in jobs] == ["unit-grpo_matched-s0", "unit-vpo-s0", "unit-grpo-s0"]  # weights here: first
    fn, (train, argv, out_dir, log, search, hard, files) = jobs[2]["fn"], jobs[2]["args"]
    assert train == "TRAIN"                                             # reproduce.py's train_job, handed through
    for path in files[:2]:                                              # left by a unit cut short elsewhere
        search_jobs.write_json(path, {"from": "weights that are gone"})
    calls = []
    assert fn(lambda *a: calls.append(a) or 1, argv, out_dir, log, search, hard, files) == 1  # training failed
    assert calls == [(argv, out_dir, log)] and not any(os.path.isfile(p) for p in files)


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
    target = get_task("code").problems("test", 20, seed=0)[11].target
    evolve = path_of("evolve", "vpo", 0)
    content = res(5, 20, None)
    content["results"][0]["best"] = target
    search_jobs.write_json(evolve, content)
    lines = report_code.search_section(cfg, out)
    # distinct answers: over unsolved problems only; the best program's tests: per seed, over every problem (VPO
    # seed 0 kept the target for problem 11 and nothing elsewhere: 1/3)
    assert "| VPO search | 2 | 1 / 0 (0.5) | 2 / 1 (1.5) | 40 | 0.333 / 0.000 |" in lines
    assert "| GRPO search | 2 | 0 / 0 (0.0) | 2 / 0 (1.0) | 40 | 0.000 / 0.000 |" in lines
    assert "| VPO sampling | 2 | 1 / 0 (0.5) | 2 / 1 (1.5) | 40 | - |" in lines
    assert "| search | 27 | 1 | 1 | 1 |" in lines                      # VPO only, GRPO only, both
    assert "| search | 9 | 1 | 0 | 0 |" in lines
    # which problems, by which RL seed (answers spent), and the searches' programs checked on the hidden tests
    row = next(line for line in lines if line.startswith("| 12 |"))
    assert row.endswith("| s0 (12) | s0 (20), s1 (27) | s0 (12) | s0 (20), s1 (27) | - |")
    assert next(line for line in lines if line.startswith("| 11 |")).endswith("| - | s0 (5) | - | s0 (5) | 1 / 1 |")
    assert next(line for line in lines if line.startswith("| 13 |")).endswith("| s0 (10) | - | s0 (10) | - | - |")
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
    # a chunk missing: that seed's search is left out until it is done
    os.remove(path_of("evolve", "grpo", 1))
    found, _ = search_jobs.read_searches(cfg, out)
    assert [r["rl_seed"] for r in found["evolve"]["grpo"]] == [0] and len(found["evolve"]["vpo"]) == 2
    # and no verdict is read until every seed of both methods has searched
    lines = report_code.search_section(cfg, out)
    assert "| search | VPO − GRPO | 1 | 1 | 2 | 1.0000 | waiting for every seed of every pair (Holm) |" in lines

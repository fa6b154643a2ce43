"""results.compare's search: training, then the screen that fixes the hard set, then search and plain sampling from
every run's final weights and from its weights at t*; resuming, the commit recorded, the configuration's mistakes, and
the search's statistics by hand (a pair's robustness, the problems only one arm solves)."""
import re

import pytest

from results import compare


def tiny_search_config(tmp_path, **search):
    """A code comparison on a tiny model with a search: the hard set chosen by the screen, 27 answers per problem."""
    import json
    c = {"task": "code", "seeds": [0, 1], "steps": 2, "eval_every": 2,
         "flags": ["--eval_problems", "4", "--eval_answers", "48", "--ckpt_every", "0", "--sft_steps", "6", "--n_layer",
                   "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4",
                   "--sft_batch_size", "8", "--no_figures"],
         "arms": [{"label": "GRPO", "slug": "grpo", "flags": ["--algo", "grpo"]},
                  {"label": "VPO", "slug": "vpo", "flags": ["--algo", "vpo"]}],
         "search": {"budgets": [9, 27], "screen": 4, "problems": 2, "arms": [{"label": "warm start", "slug": "base"}],
                    "pairs": [["vpo", "grpo"]], "secondary": [["vpo", "base"]], **search}}
    (tmp_path / "c.json").write_text(json.dumps(c))
    return str(tmp_path / "c.json")


def test_the_command_searches_after_training_and_resumes(tmp_path, capsys):
    """Training, then the screen that fixes the hard set before any search, then search and plain sampling from every
    run's final weights and from the warm start; compare.md's search section reads them. A second call changes no
    file of the first."""
    config, out = tiny_search_config(tmp_path), tmp_path / "out"
    argv = ["--config", config, "--jobs", "1", "--out", str(out), "--metric", "solved"]
    lines = []
    assert compare.main(argv, in_process=True, echo=lines.append) == 0
    # seed by seed: the screen once the warm start exists, then each seed's searches right after its runs
    ended = [re.sub(r"^\[ *\d+ s\] ", "", line).split(":")[0] for line in lines]
    assert ended[:3] == ["GRPO run 0", "the screen", "VPO run 0"], ended
    assert ended.index("evolve-vpo-s0") < ended.index("GRPO run 1") < ended.index("evolve-grpo-s1"), ended
    hard = compare.read_json(str(out / "hard.json"))
    assert hard["screened"] == 4 and hard["m"] == [1, 3] and "equals the target" in hard["rule"]
    names = sorted(p.name for p in (out / "runs").glob("*-s*.json"))
    assert names == sorted(f"{kind}-{slug}-s{seed}.json" for kind in ("evolve", "sample")
                           for slug in ("grpo", "vpo", "base") for seed in (0, 1))
    result = compare.read_json(str(out / "runs" / "evolve-vpo-s1.json"))
    assert result["budget"] == 27 and result["m"] == 3 and result["seed"] == 2001 and len(result["results"]) == \
        len(result["problems"]) == len(hard["unsolved"][:2])
    assert compare.read_json(str(out / "runs" / "evolve-base-s0.json"))["m"] == 1
    text = (out / "compare.md").read_text()
    assert "| VPO − GRPO | 27 answers | 2 and 2 |" in text and "## Search" in text and (out / "search.png").is_file()
    before = {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    capsys.readouterr()
    assert compare.main(argv, in_process=True) == 0
    assert {p: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")} == before


def test_a_run_is_searched_only_once_it_has_finished(tmp_path):
    """A run's checkpoint exists while it trains: its validation, searches and samplings wait for its summary.json,
    the warm start's for the hard set only."""
    from results.jobs import read_config
    from results.searched import search_queue
    config = tiny_search_config(tmp_path, stopped={"validation": [0, 3], "k": [1, 3]})
    out = tmp_path / "out"
    (out / "runs" / "grpo-s0").mkdir(parents=True)
    (out / "runs" / "grpo-s0" / "ckpt.pt").write_text("mid-training")
    queue = search_queue(read_config(config), str(out))
    summary = str(out / "runs" / "grpo-s0" / "summary.json")
    mine = [j for j in queue if j["name"].endswith("grpo-s0") or j["name"].endswith("grpo_stopped-s0")]
    assert len(mine) == 5 and all(summary in j["needs"] for j in mine)   # validation, 2 x final, 2 x stopped
    assert all(j["seed"] == 0 for j in mine) and queue[0]["name"] == "the screen" and queue[0].get("seed") is None
    assert all(not any(n.endswith("summary.json") for n in j["needs"]) for j in queue if "-base-" in j["name"])


def test_every_arm_stopped_early_the_hard_set_rules_the_commit_and_resuming(tmp_path, monkeypatch):
    """With "stopped", every trained arm's runs are validated at each kept evaluation step and searched from t* as
    SLUG_stopped; the screen draws screen_answers answers at T = 0.7 on the candidates (one per function, none of
    the excluded functions); every file records the commit. A second call redoes no validation."""
    import json
    import subprocess

    import search as search_module
    from tasks import get_task
    calls, sample = [], search_module.sample_until_solved

    def spied(model, task, problems, m, budget, *a, **k):
        calls.append((m, budget, a[1] if len(a) > 1 else k.get("temperature"), len(problems)))
        return sample(model, task, problems, m, budget, *a, **k)
    monkeypatch.setattr(search_module, "sample_until_solved", spied)
    config, out = tiny_search_config(tmp_path, screen=6, screen_answers=12, distinct=True, exclude=[0, 2],
                                     stopped={"validation": [0, 3], "k": [1, 3]}), tmp_path / "out"
    c = json.loads(open(config).read())
    c.update(steps=4, flags=["--keep_eval_ckpts", *c["flags"]])
    c["search"]["pairs"] += [["vpo", "grpo_stopped"]]
    open(config, "w").write(json.dumps(c))
    argv = ["--config", config, "--jobs", "1", "--out", str(out), "--metric", "solved"]
    assert compare.main(argv, in_process=True) == 0
    head = subprocess.run(["git", "-C", compare.ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    hard, runs = compare.read_json(str(out / "hard.json")), out / "runs"
    identities = [get_task("code").identity(p) for p in get_task("code").problems("test", 6, seed=0)]
    expected = [i for i in range(2, 6) if identities[i] not in identities[:i]]
    assert hard["candidates"] == len(expected) and set(hard["unsolved"]) <= set(expected)
    assert {(1, 12, 0.7, len(expected)), (3, 12, 0.7, len(expected))} <= set(calls)
    for slug in ("grpo", "vpo"):
        v = compare.read_json(str(runs / f"validation-{slug}-s1.json"))
        assert sorted(v["criterion"]) == ["2", "4"] and v["step"] == 2 == min(map(int, v["criterion"]))
        assert v["ckpt"] == f"{slug}-s1/ckpt-step2.pt" and v["problems"] == [0, 3]
        result = compare.read_json(str(runs / f"evolve-{slug}_stopped-s1.json"))
        assert result["ckpt"].endswith(f"{slug}-s1/ckpt-step2.pt") and result["m"] == (1 if slug == "grpo" else 3)
    assert all(compare.read_json(str(p))["commit"] == head.strip() for p in [out / "hard.json", *runs.glob("*.json")])
    text = (out / "compare.md").read_text()
    assert "| VPO − GRPO stopped early | deciding | search |" in text and "| VPO stopped early | sampling |" in text
    assert "one problem per function, no function of test problems 0-1" in text
    assert "VPO stopped early: t*, the step of the best criterion on the validation problems, per run in seed order: " \
           "2 2." in text
    before = {p: p.stat().st_mtime_ns for p in runs.glob("validation-*.json")}
    (runs / "evolve-grpo_stopped-s0.json").unlink()
    assert compare.main(argv, in_process=True) == 0
    assert {p: p.stat().st_mtime_ns for p in runs.glob("validation-*.json")} == before
    assert (runs / "evolve-grpo_stopped-s0.json").is_file()


def test_a_file_outside_a_git_checkout_records_an_unknown_commit(tmp_path, monkeypatch):
    from results import jobs
    from results.searched import write_json
    monkeypatch.setattr(jobs, "ROOT", str(tmp_path))
    write_json(str(tmp_path / "x.json"), {"a": 1})
    assert compare.read_json(str(tmp_path / "x.json"))["commit"] == "unknown"


def test_the_stopping_step_is_the_best_criterion_and_the_earliest_of_a_tie():
    from results.searched import best_step
    assert best_step({"50": 0.2, "100": 0.5, "150": 0.5, "200": 0.4}) == 100
    assert best_step({"100": 0.3, "50": 0.3}) == 50 and best_step({250: 0.1, 500: 0.3, 750: 0.2}) == 500


def test_the_hard_set_candidates_are_distinct_functions_outside_the_excluded_ones():
    """Test problems 0-6 ask for functions f g f h g k h; problem 0 is excluded (its function f with it)."""
    from results.searched import candidates
    identities = list("fgfhgkh")
    assert candidates(identities, 7) == list(range(7))
    assert candidates(identities, 7, distinct=True) == [0, 1, 3, 5]
    assert candidates(identities, 7, exclude=[0, 1]) == [1, 3, 4, 5, 6]
    assert candidates(identities, 7, distinct=True, exclude=[0, 1]) == [1, 3, 5]
    assert candidates(identities, 5, distinct=True, exclude=[5, 7]) == [0, 1]


def test_a_problem_s_identity_is_its_function():
    """The code task: two problems whose targets are written differently but agree on the whole domain share one
    identity; a different function does not. Other tasks: the problem itself."""
    from dataclasses import replace

    from tasks import get_task
    code = get_task("code")
    p, q = code.problems("test", 2, seed=0)
    assert code.identity(replace(p, target=f"0+({p.target})", inputs=())) == code.identity(p) != code.identity(q)
    assert get_task("toy").identity(7) == 7


@pytest.mark.parametrize("search, message", [
    ({"arms": [{"label": "warm start", "slug": "base"}, {"label": "early", "slug": "grpo_early"}]},
     "search arm 'grpo_early'"),
    ({"screenz": 3}, "knows only"),
    ({"exclude": [0]}, "exclude is [first, end) of test indices"),
    ({"exclude": [0, "128"]}, "exclude is [first, end) of test indices"),
    ({"stopped": {"validation": [64, "a"], "k": [1]}}, "\"stopped\" is {\"validation\": [first, end)"),
    ({"stopped": {"validation": [64, 128], "k": [1]}}, "\"stopped\" needs --keep_eval_ckpts"),
    ({"budgets": [9]}, "below one round of evolve's (27)"),
    ({"screen": None, "problems": None}, "needs a committed \"hard\" set, or \"screen\" and \"problems\""),
    ({"hard": "results/no/such.json"}, "the hard set results/no/such.json does not exist"),
])
def test_a_search_that_cannot_run_is_one_line_and_writes_nothing(tmp_path, capsys, search, message):
    import json
    config = tiny_search_config(tmp_path, **search)
    c = json.loads(open(config).read())
    c["search"] = {k: v for k, v in c["search"].items() if v is not None}
    open(config, "w").write(json.dumps(c))
    out = tmp_path / "out"
    assert compare.main(["--config", config, "--out", str(out)], in_process=True) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_a_pairs_robustness_by_hand():
    """The search pairs' last columns: the exact p with each run left out in turn (its range), and the difference
    5 runs against 5 would find with 80% power at the given level, from the pooled sd within the block."""
    from results.runstats import detectable_difference, label_p
    from results.searched import robustness
    values = {"vpo": [3, 4, 5, 6, 7], "grpo": [1, 1, 2, 2, 6]}   # leaving GRPO's 6 out gives the smallest p
    result = lambda n: {"problems": list(range(8)), "results": [{"solved_at": 1 if i < n else None} for i in range(8)]}
    found = {"evolve": {slug: {seed: result(n) for seed, n in enumerate(ns)} for slug, ns in values.items()}}
    where = dict.fromkeys(range(5), "block")
    loo = [label_p([v for j, v in enumerate(values["vpo"]) if j != i], values["grpo"]) for i in range(5)] + \
          [label_p(values["vpo"], [v for j, v in enumerate(values["grpo"]) if j != i]) for i in range(5)]
    sd = (sum((v - 5) ** 2 for v in values["vpo"]) + sum((v - 2.4) ** 2 for v in values["grpo"])) / 8
    assert robustness(found, where, "vpo", "grpo", 768, 0.025) == (
        f"{min(loo):.3g}-{max(loo):.3g}", f"{detectable_difference(sd ** 0.5, 5, 5, 0.025):.1f}")


def test_problems_only_one_arm_solves_by_hand():
    """Under search, the problems some run of A solves and no run of B does (and the reverse), and per problem how
    many runs of each arm solve it; a problem solved after the budget does not count."""
    from types import SimpleNamespace
    from results.searched import only_one_lines
    result = lambda hits: {"problems": [10, 11, 12, 13], "results": [{"solved_at": hits.get(p)} for p in range(10, 14)]}
    found = {"evolve": {"vpo": {0: result({10: 5, 11: 9}), 1: result({12: 1})},
                        "grpo": {0: result({12: 3, 13: 900}), 1: result({})}}}
    setup = SimpleNamespace(arms=[SimpleNamespace(slug="vpo", label="VPO"), SimpleNamespace(slug="grpo", label="GRPO")],
                            search={"pairs": [["vpo", "grpo"]]})
    lines = only_one_lines(setup, found, 768)
    assert "| VPO − GRPO | 10 11 | none | 1 |" in lines
    assert "| 10 | 1 | 0 |" in lines and "| 12 | 1 | 1 |" in lines and not any(l.startswith("| 13 ") for l in lines)
    assert any("of 2 runs each" in l for l in lines)

"""results/reproduce.py, plan.py and report.py: `--quick` end to end (every table and figure the README shows), the plan's job list,
the scheduler's warm-start rule, skipping committed runs, and the report's paired differences (per evaluation
step) and decision rule on hand-made runs."""
import json
import os
import re

import pytest

from results import plan, report, report_code, reproduce, tables
from results.jobs import share_base
from tasks import get_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    assert reproduce.main(["--quick", "--out", str(out)]) == 0
    return out


def readme_results():
    """results/README.md (the reproduction's write-up): the figures it shows and the table captions it quotes from
    results.md; and the figure the top README shows."""
    with open(os.path.join(ROOT, "results", "README.md")) as f:
        text = f.read()
    figures = re.findall(r"\]\(([\w.-]+\.png)\)", text)
    captions = [" ".join(c.split()) for c in re.findall(r"results\.md: \"([^\"]+)\"", text)]  # line breaks
    with open(os.path.join(ROOT, "README.md")) as f:
        top = f.read()
    section = top[top.index("## Results"):]
    section = section[:section.index("\n## ", 3)]
    figures += re.findall(r"\(results/([\w.-]+\.png)\)", section)
    return figures, captions


def test_quick_writes_every_table_and_figure_the_readme_shows(quick):
    figures, captions = readme_results()
    assert len(figures) >= 2 and len(captions) >= 3
    for name in figures:
        if name in ("answer_room_maze.png", "search_claim.png"):   # from the pilot's logs; the search experiment's
            assert os.path.isfile(os.path.join(ROOT, "results", name)), name   # blocks (no quick run has either)
        else:
            assert (quick / name).stat().st_size > 2000, name
    text = (quick / "results.md").read_text()
    for caption in captions:
        assert caption in text, caption
    # the per-step tables have a row per arm and evaluation step, each with its seeds
    labels = {group: {j["label"] for j in plan.jobs_of(plan.QUICK) if j["group"] == group} for group in plan.MAZE}
    assert labels == {"main": {"GRPO", "VPO"}, "baselines": {"Max@k", "Multi-RLVR"}}
    for label in labels["main"]:
        for step in (1, 2, 3, 4):
            assert re.search(rf"^\| {re.escape(label)} \| {step} \| 2 \|", text, re.M), (label, step)
    for label in labels["baselines"]:
        assert re.search(rf"^\| {re.escape(label)} \| 4 \| 1 \|", text, re.M), label
    # the paired table has every evaluation step and k of the plan
    assert re.search(r"^\| 2 \| k=48 \| [+-]", text, re.M) and re.search(r"^\| 4 \| k=3 \| [+-]", text, re.M)
    # a caption, a blank line, then its table (tables.step_lines); the final evaluation: each arm's base and last step
    assert "held-out mazes:\n\n| method | step | seeds |" in text
    final = text[text.index("The final evaluation in full"):]
    assert re.search(r"^\| GRPO \| 0 \(base\) \| - \| .*\n\| GRPO \| 4 \| 2 \| .* \| \d+ ± \d+ \|$", final, re.M)
    assert "wall-clock time of reproduce.py" in text and "Compute inside the runs" in text


def test_quick_runs_every_job_once_and_never_waits_on_a_warm_start(quick):
    jobs = plan.jobs_of(plan.QUICK)
    for j in jobs:
        assert (quick / "runs" / j["dir"] / j["name"] / "summary.json").is_file(), j["name"]
    logs = list((quick / "runs" / "logs").glob("*.log"))
    assert len(logs) == len(jobs)
    # the scheduler never starts a run whose warm start another running job is training (it would wait)
    assert not any("another run is training" in p.read_text() for p in logs)
    # the warm start is evaluated once per m: in the seed-0 GRPO and VPO runs, not again in the others
    summary = lambda name: json.loads((quick / "runs" / "maze" / name / "summary.json").read_text())  # noqa: E731
    assert summary("grpo-s0")["base_metrics"]["m"] == 1 and summary("vpo-s0")["base_metrics"]["m"] == 3
    assert summary("multi_rlvr-s0")["base_metrics"] is None and summary("vpo-s1")["base_metrics"] is None
    # every run keeps the weights of its mid-run evaluations (the route figure draws them)
    assert (quick / "runs" / "maze" / "vpo-s0" / "ckpt-step2.pt").is_file()
    assert (quick / "runs" / "maze" / "max_at_k-s0" / "ckpt-step2.pt").is_file()
    routes = json.loads((quick / "routes_maze.json").read_text())
    assert set(routes["arms"]) == {"grpo", "vpo"} and set(routes["arms"]["vpo"]) == {"start", "middle", "end"}
    for arm in routes["arms"].values():  # the same number of answers for both, on every maze
        for stage in arm.values():
            quick_cfg = plan.QUICK
            assert [len(a) for a in stage["answers"]] == [quick_cfg["route_answers"]] * quick_cfg["route_mazes"]


def test_a_second_invocation_trains_nothing(quick):
    ckpts = sorted((quick / "runs").glob("*/*/ckpt.pt"))
    before = {p: p.stat().st_mtime_ns for p in ckpts}
    assert reproduce.main(["--quick", "--out", str(quick)]) == 0
    assert before == {p: p.stat().st_mtime_ns for p in ckpts}


def test_the_job_list_is_the_plan():
    jobs = plan.jobs_of(plan.FULL)
    names = {(j["group"], j["name"]) for j in jobs}
    # maze v3, code v2, the replicates of v2's search of record; the reviewer's: matched GRPO x 3, the v3 rerun,
    # random-weight GRPO x 3 and three ablations x 1, five geometry settings x 2
    assert len(names) == len(jobs) == 2 * 3 + 2 * 3 + 4 * 3 + 3 * 3 + 3 + 12 + 3 + 3 + 5 * 2
    assert {j["dir"] for j in jobs if j["group"] == "code"} == {"code-v2"}          # v2 beside v1's committed runs
    assert not any(j["dir"] == "code" for j in jobs)                              # v1's: superseded, never rerun
    # the replicates: v2's arguments exactly, trained by the search's units, not as jobs of their own
    v2 = {j["name"]: j["argv"] for j in jobs if j["group"] == "code"}
    assert {j["name"]: (j["argv"], j["units"]) for j in jobs if j["group"] == "code_rep"} == \
        {name: (v2[name], "search_rep") for name in v2 if not name.startswith("multi_rlvr")}
    matched = next(j for j in jobs if j["group"] == "code" and j["slug"] == "grpo_matched")
    assert "--match_budget" in matched["argv"] and matched["argv"][matched["argv"].index("--algo") + 1] == "grpo"
    # each run is the one results.compare makes of its configuration of record: every arm it trains itself (not
    # those it reads from another experiment's directory), on every seed of the arm
    for group in plan.GROUPS:
        g, config = plan.FULL[group], plan.configuration(plan.FULL[group]["config"])
        arms = [a for a in config.arms if not a.dir and a.slug in g.get("arms", (a.slug,))]
        assert {j["name"] for j in jobs if j["group"] == group} == {
            f"{a.slug}-s{seed}" for a in arms for seed in config.seeds_of(a) if seed in g["seeds"]}, group
        for arm in arms:
            for seed in config.seeds_of(arm):
                argv = next(j["argv"] for j in jobs if j["group"] == group and j["name"] == f"{arm.slug}-s{seed}")
                drop = lambda a: [x for x in a if x != "--no_base_eval"]  # noqa: E731 (the plan's rule, below)
                assert drop(argv) == drop(config.argv(arm, seed)), (group, arm.slug, seed)
                assert argv[argv.index("--task") + 1] == g["task"] == ("code" if "code" in group else "maze")
                assert argv[argv.index("--steps") + 1] == str(g["steps"])
                assert argv[argv.index("--eval_every") + 1] == str(g["eval_every"])
                assert argv[argv.index("--seed") + 1] == str(seed) and all(f in argv for f in arm.flags)
                first = seed == 0 and (group in ("main", "code", "code_rep", "rerun")
                                       and arm.slug in ("grpo", "vpo")
                                       or group == "geometry")
                assert ("--no_base_eval" not in argv) == first
                assert "--keep_eval_ckpts" in argv and "--warm_start" not in argv  # the default base for all
    assert plan.FULL["main"]["steps"] == 1000 and plan.FULL["main"]["eval_every"] == 250
    # the main arms seed by seed first (a reproduction cut short has both for its first seeds), then baselines
    order = [(j["group"], j["seed"]) for j in jobs]
    assert order[:6] == [("main", 0)] * 2 + [("main", 1)] * 2 + [("main", 2)] * 2
    assert order[6:8] == [("baselines", 0)] * 2
    assert order[12:24] == [("code", 0)] * 4 + [("code", 1)] * 4 + [("code", 2)] * 4
    # the rerun is v3's runs again (their directory apart, weights kept), the geometry runs VPO with one reshaping
    rerun = [j for j in jobs if j["group"] == "rerun"]
    v3 = {j["name"]: j["argv"] for j in jobs if j["group"] in ("main", "baselines")}
    assert {j["name"]: j["argv"] for j in rerun} == v3 and {j["dir"] for j in rerun} == {"maze-rerun"}
    geometry = [j for j in jobs if j["group"] == "geometry"]
    assert {j["argv"][j["argv"].index("--reward_geometry") + 1] for j in geometry} == {
        "collinear=0.5", "collinear=0.8", "collinear=0.95", "merge=gold+diamonds", "repeat=gold"}
    assert {j["dir"] for j in geometry} == {"maze-geometry"} and plan.FULL["geometry"]["steps"] == 750
    assert sorted(j["name"] for j in jobs if j["group"] == "ablations") == [
        "gdpo-s0", "goal_cond-s0", "maxrl-s0", "random_weight-s0", "random_weight-s1", "random_weight-s2"]


def test_finished_runs_are_skipped_from_their_committed_files(tmp_path):
    """A clone holds only the small files of finished runs (no checkpoints): those runs are not trained again."""
    from results import search_jobs
    cfg = plan.QUICK
    for j in plan.jobs_of(cfg):
        d = tmp_path / "runs" / j["dir"] / j["name"]
        d.mkdir(parents=True)
        (d / "summary.json").write_text("{}")
    # the code runs' search jobs need their checkpoints: without them, they are reported, not crashed on
    failed = reproduce.run_all(cfg, str(tmp_path), jobs=1)
    assert failed[:6] == ["screen-grpo-s0", "screen-grpo-s1", "screen-grpo_matched-s0", "screen-grpo_matched-s1",
                          "screen-vpo-s0", "screen-vpo-s1"] and "hard" in failed
    assert {"unit-grpo-s0", "unit-vpo-s0"} <= set(failed)              # the units wait for v2's hard problems
    for key in ("search", "search_rep"):  # committed search files: the screens, the hard problems, every unit's
        for j in search_jobs.pending(cfg, str(tmp_path), key, None, str(tmp_path)):
            unit = search_jobs.unit_files(str(tmp_path), cfg, key, *j["args"][3:5]) if j["name"].startswith("unit") else []
            for path in [j["makes"], *unit]:
                search_jobs.write_json(path, {})
    assert reproduce.run_all(cfg, str(tmp_path), jobs=1) == []
    assert not list((tmp_path / "runs").glob("*/*/ckpt.pt"))


def run(seed, pooled, slug="x", evals=()):
    """A hand-made finished run: final pooled best@k, and earlier evaluations {step: pooled} (final step 4)."""
    metrics = {"pooled_best@k": {str(k): v for k, v in pooled.items()}}
    return {"seed": seed, "slug": slug, "summary": {"metrics": metrics, "args": {"steps": 4}},
            "evals": [{"step": s, "pooled_best@k": {str(k): v for k, v in p.items()}} for s, p in evals]}


def test_paired_differences_and_the_decision_rule():
    runs = {"VPO": [run(0, {3: 0.5, 48: 0.7}), run(1, {3: 0.4, 48: 0.8}), run(2, {3: 0.6, 48: 0.6})],
            "GRPO": [run(2, {3: 0.5, 48: 0.5}), run(0, {3: 0.45, 48: 0.6}), run(1, {3: 0.5, 48: 0.7})]}
    seeds, d = tables.paired(runs, "VPO", "GRPO", "pooled_best@k", [3, 48])
    assert seeds == [0, 1, 2]  # paired by seed, not by list position
    assert d[3] == pytest.approx([0.05, -0.1, 0.1]) and d[48] == pytest.approx([0.1, 0.1, 0.1])
    assert tables.verdict(d[3], "VPO", "GRPO") == "unresolved"
    assert tables.verdict(d[48], "VPO", "GRPO") == "VPO ahead on every seed"
    assert tables.verdict([-0.1, -0.01], "VPO", "GRPO") == "GRPO ahead on every seed"
    assert tables.verdict([0.1, 0.0], "VPO", "GRPO") == "unresolved"  # a tie is not a win
    # a seed only one arm finished is left out of the pairing
    runs["VPO"].append(run(3, {3: 0.9, 48: 0.9}))
    assert tables.paired(runs, "VPO", "GRPO", "pooled_best@k", [3])[0] == [0, 1, 2]
    assert tables.pm([0.5, 0.7]) == "0.600 ± 0.100" and tables.pm([0.25]) == "0.250" and tables.pm([None]) == "-"


def test_paired_differences_per_evaluation_step():
    """Each evaluation step is paired on its own: the step-2 evaluations, not the final ones."""
    runs = {"VPO": [run(0, {48: 0.9}, evals=[(2, {48: 0.5})]), run(1, {48: 0.9}, evals=[(2, {48: 0.7})])],
            "GRPO": [run(1, {48: 0.1}, evals=[(2, {48: 0.6})]), run(0, {48: 0.1}, evals=[(2, {48: 0.4})])]}
    seeds, d = tables.paired(runs, "VPO", "GRPO", "pooled_best@k", [48], step=2)
    assert seeds == [0, 1] and d[48] == pytest.approx([0.1, 0.1])
    assert tables.paired(runs, "VPO", "GRPO", "pooled_best@k", [48], step=4)[1][48] == pytest.approx([0.8, 0.8])
    lines = tables.paired_table(runs, "VPO", "GRPO", "pooled_best@k", [48], "pooled")
    for row in ("| 2 | k=48 | +0.100 | +0.100 | 0.100 ± 0.000 | VPO ahead on every seed | [+0.100, +0.100] | 0.5 |",
                "| 4 | k=48 | +0.800 | +0.800 | 0.800 ± 0.000 | VPO ahead on every seed | [+0.800, +0.800] | 0.5 |"):
        assert any(line.startswith(row) for line in lines), row
    # the table says which spread its ± is, once, after a blank line (a line right under a table is one more row)
    assert lines.count(tables.PAIRED_STD_NOTE) == 1 and lines[lines.index(tables.PAIRED_STD_NOTE) - 1] == ""


def test_the_step_table_by_hand():
    """tables.scalar_step_table: the base at step 0 by the arm's m, each step's mean ± std over the seeds that have
    it, digits per column, the training seconds up to the step from log.jsonl, and with last only the last step."""
    def r(seed, div, secs):
        return {"seed": seed, "summary": {"args": {"steps": 4, "algo": "grpo", "batch_size": 1, "group_size": 2,
                                                   "num_answers": 1}, "metrics": {"m": 1, "diversity": div[1]}},
                "evals": [{"step": 2, "diversity": div[0]}],
                "log": [{"step": s, "seconds": t, "completion_tokens": 1} for s, t in zip((2, 4), secs)]}
    runs = {"GRPO": [r(0, (0.2, 0.5), (10, 30)), r(1, (0.4, 0.7), (20, 50))]}
    keys = [("diversity", None, "diversity", 2), ("train_seconds", None, "train s", 0)]
    lines = tables.scalar_step_table(runs, keys, {1: {"diversity": 0.1}})
    assert lines[2:5] == ["| GRPO | 0 (base) | - | 0.10 | - |", "| GRPO | 2 | 2 | 0.30 ± 0.10 | 15 ± 5 |",
                          "| GRPO | 4 | 2 | 0.60 ± 0.10 | 40 ± 10 |"]
    assert tables.scalar_step_table(runs, keys, {}, last=True)[2:] == ["| GRPO | 4 | 2 | 0.60 ± 0.10 | 40 ± 10 |", "",
                                                                       tables.STD_NOTE]


def test_a_table_with_a_spread_says_it_is_the_population_std():
    assert tables.pm([0.1, 0.2, 0.6]) == "0.300 ± 0.216"  # np.std with ddof 0 (ddof 1 would give 0.265)
    assert tables.table(["a"], [["0.300 ± 0.216"]])[-2:] == ["", tables.STD_NOTE]
    assert tables.table(["a"], [["0.300"]]) == ["| a |", "|---|", "| 0.300 |"]  # no spread, no note


def test_bad_command_lines_get_one_line_and_exit_2(tmp_path, capsys):
    a_file = tmp_path / "results.txt"
    a_file.write_text("keep me")
    for argv in (["--jobs", "0"], ["--jobs", "two"], ["--quick", "--out", str(a_file)], ["--bogus"]):
        assert reproduce.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1
    assert a_file.read_text() == "keep me"


def test_quick_runs_the_code_comparison_and_its_search(quick):
    """--quick also trains the code arms, screens their final weights, picks the problems none solved, and runs
    the evolutionary search and plain sampling from every searched checkpoint; results.md reports them."""
    from results import search_jobs
    cfg = plan.QUICK
    chunks = search_jobs.chunks(cfg["search"])
    assert chunks == [(0, 0, 1), (1, 1, 2)]                             # one problem per chunk in the quick plan
    for slug in cfg["search"]["arms"]:
        for seed in cfg["code"]["seeds"]:
            assert os.path.isfile(search_jobs.path_of(str(quick), cfg, "search", "screen", slug, seed))
            for kind in ("evolve", "sample"):
                for c, _, _ in chunks:
                    path = search_jobs.path_of(str(quick), cfg, "search", kind, slug, seed, c)
                    assert os.path.isfile(path) and path.endswith(f"{kind}-{slug}-s{seed}-c{c}.json"), path
    hard = json.loads((quick / "runs" / "code-v2" / "search" / "hard.json").read_text())
    assert len(hard["problems"]) == cfg["search"]["problems"]
    found, _ = search_jobs.read_searches(cfg, str(quick))
    evolve = found["evolve"]["vpo"][0]                                  # seed 0's two chunks, joined
    assert evolve["problems"] == hard["problems"] and evolve["m"] == 3 and evolve["rl_seed"] == 0
    second = json.loads(open(search_jobs.path_of(str(quick), cfg, "search", "evolve", "vpo", 0, 1)).read())
    assert second["seed"] == cfg["search"]["seed"] + 1 and second["problems"] == hard["problems"][1:]
    assert all(r["used"] <= cfg["search"]["budget"] for r in evolve["results"])
    text = (quick / "results.md").read_text()
    assert "## Code, plan v2" in text and "### Evolutionary search" in text and "plan v1" not in text
    assert re.search(r"^\| VPO search \| 2 \|", text, re.M) and re.search(r"^\| GRPO sampling \| 2 \|", text, re.M)
    assert re.search(r"^\| search \| 27 \| \d+ \| \d+ \| \d+ \|", text, re.M)
    assert search_jobs.pending(cfg, str(quick)) == []                  # nothing left to do
    # the search of record's units: each trained its run, sampled its pool on v2's hard problems and searched
    assert search_jobs.path_of(str(quick), cfg, "search_rep", "hard") == str(quick / "runs/code-v2/search/hard.json")
    for slug in cfg["search_rep"]["arms"]:
        files = search_jobs.unit_files(str(quick), cfg, "search_rep", slug, 0)
        assert len(files) == 1 + 2 * len(chunks) and all(os.path.isfile(p) for p in files)
        assert os.path.isfile(quick / "runs" / "code-v2-rep" / f"{slug}-s0" / "summary.json")
        pool = json.loads(open(files[0]).read())
        assert pool["problems"] == hard["problems"] and len(pool["solved_per_problem"]) == 2 and pool["machine"]
    assert search_jobs.pending(cfg, str(quick), "search_rep", train=None, logs=str(quick)) == []
    assert "## Code, plan v2: the search of record, from replicate weights" in text
    assert re.search(r"^\| VPO \| 0 \| \d of 2 \| .+ \|$", text, re.M)
    answers = json.loads((quick / "runs" / "code-v2" / "answers_code.json").read_text())
    assert {"base-m1", "base-m3", "grpo-s0", "grpo_matched-s1", "vpo-s1", "multi_rlvr-s0"} <= set(answers)
    assert len(answers["vpo-s0"]["answers"]) == len(answers["targets"]) and len(answers["vpo-s0"]["answers"][0]) == 12


def test_forms_per_family_by_hand():
    cache = {"targets": [["max(-x+7,2)", "clamp"], ["abs(x-1)", "distance"]],
             "vpo-s0": {"answers": [["1 if x<0 else 2 if x<4 else 3", "max(x,2)", ""], ["abs(x)", "x%2"]]},
             "vpo-s1": {"answers": [["max(-x+7,2)", "abs(x)"], ["abs(x-1)", "3 if x<0 else 2 if x<4 else 3"]]}}
    lines = report_code.forms_tables(cache, "answers.json")
    # clamp: 4 written answers, 2 min/max, 1 three-level; distance: 4 answers, 2 abs, 1 three-level
    assert "| vpo | 0.50 / 0.25 | 0.50 / 0.25 |" in lines


def test_the_superseded_code_plan_is_a_snapshot_that_results_md_links():
    """Plan v1's sections left the live report: results/superseded/code_v1.md keeps them as commit 352e99a wrote
    them, its links resolve (its figures and answers cache beside it), results.md links it where they were, and
    the captions results/README.md quotes from it are in it."""
    out = os.path.join(ROOT, "results")
    snapshot = open(os.path.join(out, report_code.V1)).read()
    assert "git checkout 352e99a && python -m results.reproduce --report" in snapshot
    assert "## Code, plan v1 (superseded): 500 RL steps" in snapshot and "### Evolutionary search" in snapshot
    links = re.findall(r"\]\(([^)#\s]+)\)", snapshot)
    assert "search_code.png" in links and "../PLAN_CODE.md" in links
    assert all(os.path.exists(os.path.join(out, "superseded", link)) for link in links), links
    text = open(os.path.join(out, "results.md")).read()
    assert "\n".join(report.with_commands(report_code.superseded_lines(out))) in text
    assert "plan v1 (superseded): 500" not in text
    readme = open(os.path.join(out, "README.md")).read()
    quoted = [" ".join(c.split()) for c in re.findall(r"code_v1\.md: \"([^\"]+)\"", readme)]
    assert len(quoted) >= 5 and all(caption in snapshot for caption in quoted), quoted
    assert report_code.superseded_lines(str(ROOT)) == []              # no snapshot under out: no link
    # what is left of the plan's problems: v2's, drawn by the task
    assert plan.code_problems(plan.FULL, "code", 3) == plan.code_task(plan.FULL, "code").problems("test", 3, seed=0)


def test_answer_forms_by_hand():
    assert report_code.answer_form("2 if x<-1 else 2 if x<6 else 6") == "three levels"
    assert report_code.answer_form("-1 if x<1 else -6 if x<7 else -1") == "three levels"
    assert report_code.answer_form("abs(x-3)+1") == "abs" and report_code.answer_form("x%4-2") == "remainder"
    assert report_code.answer_form("min(max(x,2),6)") == "clip" and report_code.answer_form("max(-x+7,2)") == "min/max"
    assert report_code.answer_form("-1 if x<-1 else -x") == "other conditional" and report_code.answer_form("2*x+1") == "other"
    cache = {"targets": [["max(-x+7,2)", "clamp"], ["1 if x<0 else 2 if x<4 else 3", "step3"]],
             "vpo-s0": {"answers": [["1 if x<0 else 2 if x<4 else 3", "max(x,2)", ""],
                                    ["9 if x<0 else 1 if x<1 else 2"]]},
             "vpo-s1": {"answers": [["max(-x+7,2)", "abs(x)"], []]}}
    lines = report_code.forms_tables(cache, "answers.json")
    # only problem 0 counts (problem 1's target is three levels); vpo's 4 written answers there: 1 three-level,
    # 2 min/max, 1 abs
    assert "| vpo | 4 | 0.25 | 0.25 | 0.00 | 0.00 | 0.50 | 0.00 | 0.00 |" in lines


def test_the_review_plans_validation_mazes_are_not_the_evaluated_ones():
    """results/PLAN_REVIEW.md: early stopping chooses on test-split mazes 64-127 (seed 0); the 64 evaluated are
    the first 64 of the same draw, and no maze is in both."""
    task = get_task("maze")
    drawn = task.problems("test", 128, seed=0)
    assert drawn[:64] == task.problems("test", 64, seed=0)
    assert not {p.key for p in drawn[:64]} & {p.key for p in drawn[64:]}


def test_below_base_reads_lowers_raises_or_unresolved_by_hand():
    """pass@48 at the final step minus the base's with the same m, per seed."""
    def r(seed, v, m):
        return {"seed": seed, "summary": {"metrics": {"m": m, "pass@k": {"48": v}}}}
    bases = {1: {"pass@k": {"48": 0.7}}, 3: {"pass@k": {"48": 0.6}}}
    runs = {"GRPO": [r(0, 0.5, 1), r(1, 0.6, 1)], "VPO": [r(0, 0.65, 3), r(1, 0.7, 3)],
            "Multi-RLVR": [r(0, 0.5, 3), r(1, 0.7, 3)]}
    lines = report_code.below_base_table(runs, bases)
    assert "| GRPO | 1 | 0.700 | s0: -0.200 | s1: -0.100 | -0.150 ± 0.050 | lowers |" in lines
    assert "| VPO | 3 | 0.600 | s0: +0.050 | s1: +0.100 | 0.075 ± 0.025 | raises |" in lines
    assert next(line for line in lines if line.startswith("| Multi-RLVR |")).endswith("| unresolved |")
    assert report_code.below_base_table(runs, bases, need=3)[4].endswith("| 2 of 3 seeds: no reading yet |")


def test_share_base_copies_a_base_of_the_same_key_only(tmp_path):
    a, b, c = (str(tmp_path / d / "base" / k / "ckpt.pt") for d, k in (("x", "maze-1"), ("y", "maze-1"), ("z", "maze-2")))
    os.makedirs(os.path.dirname(a))
    with open(a, "w") as f:
        f.write("weights")
    share_base(c, [a, b, c])
    assert not os.path.exists(c)                     # another key: never copied
    share_base(b, [a, b, c])
    assert open(b).read() == "weights" and not os.path.exists(b + ".tmp")


def test_groups_in_other_directories_train_their_shared_base_once(tmp_path):
    """Two groups under different runs/ directories with one warm start: it is trained once, copied for the other,
    and the second group's run does not wait for the first to finish (its base is copied when it appears)."""
    cfg = {"main": {**plan.QUICK["main"], "seeds": [0], "steps": 1, "eval_every": 1},
           "baselines": {**plan.QUICK["baselines"], "dir": "maze-elsewhere", "seeds": [0], "steps": 1, "eval_every": 1},
           "common": plan.QUICK["common"] + ["--eval_problems", "2"]}
    assert reproduce.run_all(cfg, str(tmp_path), 2, None, ["main", "baselines"]) == []
    logs = [p.read_text() for p in (tmp_path / "runs" / "logs").glob("*.log")]
    assert len(logs) == 4 and sum("no cached base" in t for t in logs) == 1
    assert not any("another run is training" in t for t in logs)
    (first,), (second,) = (list((tmp_path / "runs" / d / "base").glob("*/ckpt.pt")) for d in ("maze", "maze-elsewhere"))
    assert first.parent.name == second.parent.name and first.read_bytes() == second.read_bytes()


def finish_ok(*args):
    """A stand-in for a job (reproduce.train_job, a read-back): done at once, exit code 0."""
    return 0


def test_a_job_that_ends_a_result_starts_before_new_training(tmp_path, capsys):
    """With one slot free, a read-back whose files exist takes it before a training run queued earlier: results
    finish first, so that a stop leaves them committed rather than queued behind hours of training."""
    base = tmp_path / "runs" / "maze" / "base" / "maze-1" / "ckpt.pt"
    base.parent.mkdir(parents=True)
    base.write_text("weights")
    train_jobs = [{"dir": "maze", "name": "grpo-s9", "fn": finish_ok, "args": (), "base": str(base)}]
    search = [{"dir": "maze", "name": "coverage-vpo-s0", "needs": [str(base)], "fn": finish_ok, "args": ()}]
    failed = reproduce.run_jobs(str(tmp_path), search, train_jobs, 1)
    starts = re.findall(r"start maze/(\S+)", capsys.readouterr().out)
    assert failed == [] and starts == ["coverage-vpo-s0", "grpo-s9"]

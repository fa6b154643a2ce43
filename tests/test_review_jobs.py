"""results/review_jobs.py: the read-back jobs of results/PLAN_REVIEW.md, by hand."""
import json
import os

import numpy as np
import pytest

from results import dimensions, figures, plan, review_jobs
from results.search_jobs import write_json


def test_early_stopping_takes_the_best_validation_step_and_the_earlier_on_ties():
    v = {"pooled_best@k": {"250": {"48": 0.61}, "500": {"48": 0.64}, "750": {"48": 0.64}, "1000": {"48": 0.55}}}
    assert review_jobs.stop_step(v) == 500
    v["pooled_best@k"]["1000"]["48"] = 0.65
    assert review_jobs.stop_step(v) == 1000


def test_first_difference_by_hand(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text('{"step": 1, "seconds": 3}\n{"step": 2, "x": 1, "diversity": 0.5}\n')
    b.write_text('{"step": 1, "seconds": 4}\n{"step": 2, "x": 2, "diversity": 0.4, "dimensions": {}}\n')
    c.write_text('{"step": 1}\n')
    assert review_jobs.first_difference(a, a) is None
    assert review_jobs.first_difference(a, b) == [2, ["x"]]       # timing, diversity and a new key aside
    assert review_jobs.first_difference(c, a) == [2, "(shorter)"]


def test_the_read_back_jobs_wait_for_their_runs(tmp_path):
    """Coverage for every run of rerun, matched and ablations; validation for the GRPO-like ones, needing every
    kept evaluation's weights; one comparison of the rerun against v3's files, needing all of them."""
    out = str(tmp_path)
    jobs = review_jobs.pending(plan.FULL, out, plan.REVIEW)
    names = [j["name"] for j in jobs]
    review_runs = [j for j in plan.jobs_of(plan.FULL) if j["group"] in ("rerun", "matched", "ablations")]
    assert sum(n.startswith("coverage-") for n in names) == len(review_runs) == 12 + 3 + 6
    assert sorted(n for n in names if n.startswith("validation-")) == sorted(
        [f"validation-maze-rerun-grpo-s{s}" for s in range(3)] + [f"validation-maze-grpo_matched-s{s}" for s in range(3)])
    v = next(j for j in jobs if j["name"] == "validation-maze-grpo_matched-s1")
    d = os.path.join(out, "runs", "maze", "grpo_matched-s1")
    assert v["needs"] == [os.path.join(d, f) for f in ("summary.json", "ckpt.pt", "ckpt-step250.pt",
                                                        "ckpt-step500.pt", "ckpt-step750.pt")]
    assert v["args"][1:3] == ([250, 500, 750, 1000], 1000)
    compare = next(j for j in jobs if j["name"] == "compare-rerun")
    assert len(compare["args"][0]) == 12 and len(compare["needs"]) == 12 * 2 * 3
    assert review_jobs.pending(plan.FULL, out, ("main", "baselines")) == []   # only with the review's groups
    write_json(v["makes"], {})
    assert "validation-maze-grpo_matched-s1" not in [j["name"] for j in review_jobs.pending(plan.FULL, out, plan.REVIEW)]


def test_a_run_whose_read_backs_are_missing_without_its_weights_is_trained_again(tmp_path):
    """A clone holds a run's summary.json but never its weights: the run counts as finished only if everything read
    from its weights (coverage; validation for the GRPO-like runs) is here too, or the weights are."""
    from results.reproduce import finished
    out = str(tmp_path)
    jobs = {(j["group"], j["name"]): j for j in plan.jobs_of(plan.FULL)}
    matched, vpo, v3 = jobs["matched", "grpo_matched-s0"], jobs["rerun", "vpo-s0"], jobs["main", "vpo-s0"]
    for j in (matched, vpo, v3):
        write_json(os.path.join(plan.run_dir(out, j), "summary.json"), {})
    assert not finished(plan.FULL, out, matched) and not finished(plan.FULL, out, vpo)
    assert finished(plan.FULL, out, v3)                                    # v3 reads nothing from its weights
    write_json(os.path.join(plan.run_dir(out, vpo), "coverage.json"), {})
    write_json(os.path.join(plan.run_dir(out, matched), "coverage.json"), {})
    assert finished(plan.FULL, out, vpo) and not finished(plan.FULL, out, matched)  # matched: validation too
    write_json(os.path.join(plan.run_dir(out, matched), "ckpt.pt"), {})   # its weights are here: read them
    assert finished(plan.FULL, out, matched)


def test_the_comparison_job_says_equal_or_where(tmp_path):
    for name, text in (("a", '{"s": 1}\n{"s": 2}\n'), ("b", '{"s": 1}\n{"s": 2}\n'), ("c", '{"s": 1}\n{"s": 3}\n')):
        os.makedirs(tmp_path / name)
        for f in ("log.jsonl", "eval.jsonl"):
            (tmp_path / name / f).write_text(text)
    path = tmp_path / "compare.json"
    review_jobs.compare_job([("x-s0", tmp_path / "a", tmp_path / "b"), ("y-s0", tmp_path / "c", tmp_path / "b")],
                            str(path))
    got = json.loads(path.read_text())
    assert got["x-s0"] == {"log.jsonl": "equal", "eval.jsonl": "equal"}
    assert got["y-s0"]["log.jsonl"] == [2, ["s"]]


def test_coverage_and_validation_jobs_on_a_tiny_maze_run(tmp_path):
    import train
    argv = ["--task", "maze", "--algo", "grpo", "--sft_steps", "2", "--steps", "2", "--eval_every", "1",
            "--keep_eval_ckpts", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2",
            "--group_size", "4", "--sft_batch_size", "8", "--eval_problems", "2", "--eval_answers", "48",
            "--no_base_eval", "--quiet", "--no_figures", "--out_dir", str(tmp_path), "--run_name", "g"]
    assert train.main(argv) == 0
    d = str(tmp_path / "g")
    review_jobs.coverage_job(os.path.join(d, "ckpt.pt"), os.path.join(d, "coverage.json"), problems=2, answers=6)
    c = json.loads(open(os.path.join(d, "coverage.json")).read())
    assert c["mazes"] == 2 and c["m"] == 1 and set(c["answers"]) >= {"gold", "diamonds", "both"}
    review_jobs.validation_job(d, [1, 2], 2, os.path.join(d, "validation.json"), answers=48)
    v = json.loads(open(os.path.join(d, "validation.json")).read())
    assert v["mazes"] == [64, 128] and set(v["pooled_best@k"]) == {"1", "2"}
    assert review_jobs.stop_step(v) in (1, 2)


def test_the_review_section_reads_copies_of_v3_back_as_v3(tmp_path):
    """Hand-made: the rerun is a copy of v3's runs, the matched GRPO runs copies of v3's GRPO runs and the
    collinear=0.5 runs copies of v3's VPO seeds 0 and 1; so the rerun's VPO − GRPO and VPO − matched GRPO are v3's
    VPO − GRPO, and the geometry row equals v3's own at step 750 (pooled best@48: +0.089 and +0.064, results.md).
    Early stopping and coverage from hand-made files."""
    import shutil
    from results import report, report_review
    out = tmp_path / "results"
    v3_only = shutil.ignore_patterns("grpo_matched-*", "random_weight-*", "goal_cond-*", "gdpo-*", "maxrl-*", "base",
                                     "*.pt")                          # the review's own runs, once some are in
    shutil.copytree("results/runs/maze", out / "runs" / "maze", ignore=v3_only)
    shutil.copytree("results/runs/maze", out / "runs" / "maze-rerun", ignore=v3_only)   # as if it had made v3's runs
    for s in range(3):
        shutil.copytree(out / "runs" / "maze" / f"grpo-s{s}", out / "runs" / "maze" / f"grpo_matched-s{s}")
    for s in range(2):
        shutil.copytree(out / "runs" / "maze" / f"vpo-s{s}", out / "runs" / "maze-geometry" / f"vpo_rho0.5-s{s}")
    for s in range(3):
        for d in (out / "runs" / "maze" / f"grpo_matched-s{s}", out / "runs" / "maze-rerun" / f"grpo-s{s}"):
            write_json(str(d / "validation.json"), {"pooled_best@k": {"250": {"48": 0.7}, "500": {"48": 0.6},
                                                                      "750": {"48": 0.5}, "1000": {"48": 0.4}}})
    cov = {"answers": {"exit": 0.5, "gold": 0.1, "diamonds": 0.2, "both": 0.0, "no item": 0.2, "lava-free": 0.3},
           "pools": {"gold and diamonds": 0.25}, "best@k": {"48": {"gold": 0.3, "diamonds": 0.2}},
           "completions_two_classes": 0.8}
    write_json(str(out / "runs" / "maze" / "grpo_matched-s1" / "coverage.json"), cov)
    slots = [{"exit": 0.4, "gold": 0.16, "diamonds": 0.16, "no_lava": 0.3}, {"exit": 0.6, "gold": 0.0, "diamonds": 0.04,
                                                                             "no_lava": 0.5}]
    write_json(str(out / "runs" / "maze-rerun" / "vpo-s0" / "coverage.json"), {**cov, "slots": slots})
    summary = out / "runs" / "maze-geometry" / "vpo_rho0.5-s0" / "summary.json"   # what its base evaluation measures
    run = json.loads(summary.read_text())
    run["base_metrics"] = {**run["base_metrics"], "dimensions_seen": {"dim_corr": 0.5, "eff_rank": 2.0, "varying": 4}}
    summary.write_text(json.dumps(run))
    write_json(str(out / "runs" / "maze-rerun" / "compare.json"), {"grpo-s0": {"log.jsonl": [2, ["kl"]],
                                                                             "eval.jsonl": "equal"}})
    cfg = {**plan.FULL, "geometry": {**plan.FULL["geometry"]}}
    records = report_review.maze_records(cfg, str(out))
    lines = report.review_section(cfg, str(out), records)
    text = "\n".join(lines)
    assert "Paired difference VPO (rerun) − GRPO (rerun), pooled best@k" in text
    assert "Paired difference VPO (rerun) − matched GRPO, pooled best@k" in text
    for caption in ("Equal generated tokens", "The plan's reading of VPO at step 1000 − early-stopped GRPO"):
        assert caption in text, caption                                   # results/README.md quotes them
    assert "grpo-s0: log.jsonl first differs at row 2, eval.jsonl equal" in text
    mine = [line for line in lines if line.startswith("| 1000 | k=48 |")]
    v3_row = next(line for line in open("results/results.md").read().splitlines() if line.startswith("| 1000 | k=48 |"))
    cells = lambda line: [c for i, c in enumerate(line.split("|")[1:-1]) if i != 6]   # noqa: E731 (6: the plan's reading, which names the arms)
    assert len(mine) == 4 and cells(mine[0]) == cells(mine[3]) == cells(v3_row)   # VPO − GRPO; VPO − matched GRPO
    assert "| VPO (rerun) ahead on every seed |" in mine[3]
    row = next(line for line in lines if line.startswith("| VPO, collinear=0.5 |"))
    assert row.startswith("| VPO, collinear=0.5 | 2 |") and "0.077 ± 0.012 |" in row   # (+0.089 + 0.064) / 2 at k=48
    assert row.endswith("| 0.500 / 2.00 |")
    points = dimensions.geometry_points(records["maze_geometry"], cfg["geometry"]["steps"])
    assert [p["label"] for p in points] == ["VPO (rerun, ρ = 0)", "VPO, collinear=0.5"] and points[0]["base"] is None
    assert points[1]["d"][48] == pytest.approx([0.089, 0.064], abs=6e-4)
    figures.dimensions_figure(points, None, str(tmp_path / "dims.png"), "test")
    assert (tmp_path / "dims.png").stat().st_size > 0
    stop = next(line for line in lines if line.startswith("| matched GRPO | 0 | 250 |"))
    assert stop.count("|") == 7 and any(line.startswith("| GRPO (rerun) | 2 | 250 |") for line in lines)
    ds = [float(next(line for line in lines if line.startswith(f"| matched GRPO | {s} | 250 |")).split("|")[6])
          for s in range(3)]                                                 # VPO − early-stopped, k=48, per seed
    reading = next(line for line in lines if line.startswith("| matched GRPO | k=48 |"))
    expected = ("VPO (rerun) ahead on every seed" if min(ds) > 0 else "early-stopped matched GRPO ahead on every seed"
                if max(ds) < 0 else "unresolved")
    mean, reading = reading.split("|")[3].split("±")[0], reading.split("|")[4].strip()
    assert float(mean) == pytest.approx(np.mean(ds), abs=1e-3) and reading == expected   # the cells are rounded
    assert "| matched GRPO | 1 | 0.500 | 0.100 | 0.200 | 0.000 | 0.200 | 0.250 | 0.800 | 0.300 | 0.200 |" in lines
    assert "| VPO (rerun) | 1 | 1 | 0.600 | 0.000 | 0.040 | 0.500 |" in lines                # slot 1 of seed 0
    tokens = next(line for line in lines if line.startswith("| GRPO (rerun) | 0 |"))       # v3's logs: about 102
    assert tokens.split("|")[4].strip() in ("750", "1000")                                    # tokens a VPO rollout, 35 GRPO


def test_answer_dimensions_by_hand():
    """Two code problems, the answers' per-test vectors known: within-problem covariance pooled, then correlation."""
    from metrics import dimension_geometry, within_covariance
    from tasks import get_task
    task = get_task("code")
    problems = task.problems("test", 2, seed=0)
    answers = [[problems[0].target, "0", "", "x"], ["x", problems[1].target]]
    expected = [np.array([task.score(problems[0], a) for a in ("0", "x")] + [task.score(problems[0], problems[0].target)]),
                np.array([task.score(problems[1], a) for a in ("x", problems[1].target)])]
    got = dimensions.answer_dimensions(task, problems, answers)
    assert got == pytest.approx(dimension_geometry(within_covariance(expected)[0]))   # the empty answer left out
    assert got["varying"] >= 2


def test_code_point_pairs_vpo_and_grpo_seed_by_seed(tmp_path):
    """On the committed v2 code runs: VPO − GRPO pass@48 at step 500 per seed (+0.062, +0.031, −0.016, results.md)."""
    import shutil
    out = tmp_path / "results"
    shutil.copytree("results/runs/code-v2", out / "runs" / "code-v2", ignore=shutil.ignore_patterns("search", "string-dedup"))
    point = dimensions.code_point(plan.FULL, str(out))
    assert point["d"][48] == pytest.approx([0.062, 0.031, -0.016], abs=6e-4)
    assert len(point["policy"]) == 3 and point["base"]["varying"] == 8 and 0 < point["base"]["dim_corr"] < 1 and 1 < point["base"]["eff_rank"] < 8
    os.remove(out / "runs" / "code-v2" / "answers_code.json")
    assert dimensions.code_point(plan.FULL, str(out)) is None


def test_the_coverage_reading_by_hand():
    """VPO covers the trade-off only if on every seed its pools hold gold beside diamonds more often than GRPO's and
    Max@k's, and its slots specialize one each way."""
    from results import report_review

    def cov(seed, both, slots=None, exit_=0.5):
        c = {"seed": seed, "pools": {"exit": exit_, "gold and diamonds": both}}
        return {**c, "slots": slots} if slots else c
    split = [{"gold": 0.3, "diamonds": 0.1}, {"gold": 0.0, "diamonds": 0.2}, {"gold": 0.0, "diamonds": 0.0}]
    alike = [{"gold": 0.3, "diamonds": 0.1}, {"gold": 0.2, "diamonds": 0.1}, {"gold": 0.0, "diamonds": 0.0}]
    others = {"GRPO (rerun)": [cov(0, 0.1, exit_=0.9), cov(1, 0.2)], "Max@k (rerun)": [cov(0, 0.3), cov(1, 0.1)]}
    assert report_review.covers({**others, "VPO (rerun)": [cov(0, 0.4, split), cov(1, 0.3, split)]}) == (True, ["gold and diamonds"])
    assert report_review.covers({**others, "VPO (rerun)": [cov(0, 0.4, split), cov(1, 0.3, alike)]})[0] is False
    assert report_review.covers({**others, "VPO (rerun)": [cov(0, 0.25, split), cov(1, 0.3, split)]})[0] is False  # Max@k s0
    assert report_review.covers({"VPO (rerun)": [cov(0, 0.4, split)]}) == (None, [])                # no GRPO yet
    assert report_review.covers({**others, "VPO (rerun)": [cov(0, 0.4, split), cov(1, 0.3, split)]}, need=3) == (None, [])


def test_equal_tokens_picks_the_evaluation_nearest_in_tokens():
    """Hand-made logs: VPO writes 100 tokens per rollout, GRPO 30, matched GRPO (3x rollouts) 30; by step 250 VPO has
    generated 250 x 100 x 64 = 1.6M tokens: GRPO's nearest evaluation is step 750 (1.44M), matched GRPO's 250."""
    from results import report_review

    def run(algo, tokens, seed=0, match=False):
        evals = [{"step": t, "pooled_best@k": {"3": t / 1e4, "12": t / 1e4, "48": t / 1e4}} for t in (250, 500, 750)]
        return {"seed": seed, "summary": {"args": {"steps": 1000, "batch_size": 8, "group_size": 8, "num_answers": 3,
                                                   "algo": algo, "match_budget": match},
                                          "metrics": {"pooled_best@k": {"3": 0.1, "12": 0.1, "48": 0.1}}},
                "evals": evals, "log": [{"step": s, "completion_tokens": tokens, "seconds": s} for s in range(1, 1001)]}
    runs = {"VPO (rerun)": [run("vpo", 100)], "GRPO (rerun)": [run("grpo", 30)],
            "matched GRPO": [run("grpo", 30, match=True)]}
    assert report_review.nearest_in_tokens(runs["GRPO (rerun)"][0], 1.6e6) == 750
    lines = report_review.equal_tokens_lines(runs)
    assert "| GRPO (rerun) | 0 | 1.60 | 750 | 1.44 | -0.050 | -0.050 | -0.050 |" in lines
    assert "| matched GRPO | 0 | 1.60 | 250 | 1.44 | +0.000 | +0.000 | +0.000 |" in lines


def test_machine_lines_pair_one_configuration_over_two_machines():
    """By hand: v3's GRPO seed 0 took 1200 s on an unrecorded machine, the rerun's 800 s on machine X: ratio 1.50;
    matched GRPO has no v3 twin, so it is listed but not paired; nothing from the review, no lines."""
    from results.report_review import machine_lines

    def run(seed, secs, where=None):
        return {"seed": seed, "summary": {"train_seconds": secs, **({"machine": where} if where else {})}}
    v3 = {"GRPO": [run(0, 1200.0), run(1, 1000.0)]}
    review = {"GRPO (rerun)": [run(0, 800.0, "X, 2 cores")], "matched GRPO": [run(0, 1900.0, "X, 2 cores")]}
    text = "\n".join(machine_lines(v3, review))
    assert "| GRPO | 2 | not recorded (v3's machine) | 1100 ± 100 |" in text
    assert "| GRPO (rerun) | 0 | 1200 | 800 | X, 2 cores | 1.50 |" in text
    assert "| matched GRPO | 0 |" not in text and "| matched GRPO | 1 | X, 2 cores | 1900 |" in text
    assert machine_lines(v3, {}) == []


def test_the_geometry_reading_by_hand():
    """Reading 4: the lead shrinks only if the mean d(48) falls at every step of ρ; merge and repeat against ρ = 0;
    nothing until every setting has its seeds."""
    def point(label, *d):
        return {"label": label, "d": {48: list(d)}}
    falling = [point("VPO (rerun, ρ = 0)", 0.1, 0.12, 0.14), point("VPO, collinear=0.5", 0.1, 0.08),
               point("VPO, collinear=0.8", 0.05, 0.03), point("VPO, collinear=0.95", 0.0, 0.02),
               point("VPO, merge=gold+diamonds", 0.2, 0.2)]
    lines = dimensions.geometry_reading(falling, need=2)
    assert lines[0].startswith("Reading (the plan's rule, k = 48): VPO's lead shrinks as the dimensions become collinear")
    assert "+0.120, +0.090, +0.040, +0.010" in lines[0]
    assert lines[1] == "VPO, merge=gold+diamonds: mean VPO − GRPO +0.200 at k = 48, against ρ = 0's +0.120 (+0.080)."
    flat = falling[:2] + [point("VPO, collinear=0.8", 0.09, 0.09)] + falling[3:]   # 0.090 -> 0.090 is no fall
    assert "does not fall at every step" in dimensions.geometry_reading(flat, need=2)[0]
    assert dimensions.geometry_reading(falling[:3], need=2) == []                      # ρ = 0.95 not in
    assert dimensions.geometry_reading(falling[:4] + [point("VPO, repeat=gold", 0.1)], need=2) == []

"""results/tables.py and results/figures.py on hand-made runs: runs are paired by seed, each difference under its own
seed; the decision under Holm's rule with every p by brute force; arms stopped early pair at their t*; the figures
and what each arm writes. The command end to end is tests/test_compare.py."""
import numpy as np
import pytest

from results import compare
from results.tables import paired_rows


def run(metrics_by_step, seed):
    """A hand-made finished run: {step: pooled best@k table}; the last step is the final evaluation."""
    steps = sorted(metrics_by_step)
    return {"seed": seed, "summary": {"args": {"steps": steps[-1]}, "metrics": {"pooled_best@k": metrics_by_step[
        steps[-1]], "m": 1}}, "evals": [{"step": s, "pooled_best@k": metrics_by_step[s]} for s in steps[:-1]]}


def test_runs_are_paired_by_seed():
    """GRPO finished seeds 0, 1, 2 and VPO only 1 and 2: VPO's run 1 is paired with GRPO's run 1, not its first."""
    grpo = [run({5: {"4": g}}, s) for s, g in enumerate([0.1, 0.2, 0.4])]
    vpo = [run({5: {"4": v}}, s) for s, v in ((1, 0.5), (2, 0.6))]
    seeds, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert seeds == [1, 2]
    # seed 1: 0.5 − 0.2; seed 2: 0.6 − 0.4; mean 0.25, exact p over 2 pairs 0.5 (both signs alike)
    assert rows == [["5", "k=4", "+0.300", "+0.200", "+0.250", rows[0][5], "0.5", "too few runs for a test", "-"]]
    lo, hi = (float(x) for x in rows[0][5].strip("[]").split(", "))
    half = 12.706205 * np.std([0.3, 0.2], ddof=1) / 2 ** 0.5   # t_.975,1 x sd / sqrt(n)
    assert (lo, hi) == (pytest.approx(0.25 - half, abs=1e-3), pytest.approx(0.25 + half, abs=1e-3))


def test_a_seed_missing_a_value_leaves_its_own_cell_blank():
    """Seed 0 lacks k=4 at step 5 and seed 2 has no step 3: every difference stays under its own seed's column."""
    grpo = [run({3: {"4": 0.1}, 5: {"4": None, "1": 0.1}}, 0), run({3: {"4": 0.2}, 5: {"4": 0.2, "1": 0.1}}, 1),
            run({5: {"4": 0.3, "1": 0.1}}, 2)]
    vpo = [run({3: {"4": 0.5}, 5: {"4": 0.5, "1": 0.2}}, 0), run({3: {"4": 0.6}, 5: {"4": 0.7, "1": 0.2}}, 1),
           run({5: {"4": 0.9, "1": 0.2}}, 2)]
    seeds, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert seeds == [0, 1, 2]
    assert [r[:5] for r in rows] == [["3", "k=4", "+0.400", "+0.400", ""], ["5", "k=1", "+0.100", "+0.100", "+0.100"],
                                     ["5", "k=4", "", "+0.500", "+0.600"]]
    assert rows[2][5] == "+0.550"


def test_six_runs_can_reach_a_reading():
    """With six pairs all of one sign the exact test gives 2/64 and a reading, and the detectable difference."""
    grpo = [run({3: {"1": 0.1 * s}}, s) for s in range(6)]
    vpo = [run({3: {"1": 0.1 * s + 0.05 + 0.01 * s}}, s) for s in range(6)]
    _, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert rows[0][10:12] == ["0.0312", "vpo ahead"] and float(rows[0][12]) > 0


def scored(seed, best, ew=None, diversity=0.1, stopped_at=None):
    """A hand-made finished run scored at its last step: pooled best@k {k: value} (and E_w[best@k])."""
    r = {"seed": seed, "dir": "nowhere", "evals": [],
         "summary": {"args": {"steps": 10}, "metrics": {"pooled_best@k": best, "E_w[best@k]": ew or best, "m": 1,
                                                         "diversity": diversity}}}
    return {**r, "stopped_at": stopped_at} if stopped_at is not None else r


def exact_p(ds):
    """The sign-flip p by brute force: the share of the 2^n sign patterns whose |mean| reaches the observed one."""
    import itertools
    means = [abs(np.mean([s * d for s, d in zip(signs, ds)])) for signs in itertools.product((1, -1), repeat=len(ds))]
    return np.mean([m >= abs(np.mean(ds)) - 1e-12 for m in means])


def test_the_decision_holds_each_family_under_holm_as_by_hand():
    """decision_lines: the deciding pairs under Holm's rule, each p by brute force, Holm by hand (the smaller p times
    two, the larger at least that), the p with each seed left out, the readings (ahead, not separated after Holm,
    by less than what matters, within ±matters), the gap's growth with k and each arm's t*."""
    from results.tables import decision_lines, family_rows
    up = [0.05, 0.06, 0.04, 0.07, 0.03, 0.08, 0.05]            # VPO − GRPO at k = 48: 7 of one sign
    mixed = [0.01, -0.005, 0.02, 0.015, -0.01, 0.005, -0.02]   # VPO − Max@k
    grpo = [scored(s, {"3": 0.4, "48": 0.5}) for s in range(7)]
    vpo = [scored(s, {"3": 0.41, "48": 0.5 + up[s]}, diversity=0.3) for s in range(7)]
    mx = [scored(s, {"3": 0.41, "48": 0.5 + up[s] - mixed[s]}) for s in range(7)]
    runs = {"GRPO": grpo, "VPO": vpo, "Max@k": mx,
            "VPO stopped early": [{**r, "stopped_at": 250 * (1 + r["seed"] % 4)} for r in vpo]}
    decide = {"k": 48, "matters": 0.1, "pairs": [["VPO", "Max@k"], ["VPO", "GRPO"]], "growth": 3}
    rows = family_rows(runs, decide["pairs"], "pooled_best@k", 48, "deciding", 0.1)
    p_mixed, p_up = exact_p(mixed), exact_p(up)
    assert p_up == 2 / 128 and p_mixed > 0.25
    assert [r[0] for r in rows] == ["VPO − Max@k", "VPO − GRPO"] and rows[1][2:4] == ["pooled_best@48", "7"]
    assert rows[1][4] == f"{np.mean(up):+.3f}" and rows[1][6] == f"{p_up:.3g}"
    assert rows[1][7] == f"{2 * p_up:.3g}" and rows[0][7] == f"{max(p_mixed, 2 * p_up):.3g}"   # Holm by hand
    assert rows[1][8] == "VPO ahead, by less than what matters"   # the interval's upper end below 0.1
    assert rows[0][8] == "not separated; no difference that matters"   # the interval within ±0.1
    assert rows[1][9] == f"{2 / 64:.3g}-{2 / 64:.3g}"   # 6 seeds of one sign, whichever is left out
    left = [exact_p(mixed[:i] + mixed[i + 1:]) for i in range(7)]
    assert rows[0][9] == f"{min(left):.3g}-{max(left):.3g}"
    # p 0.031 alone rejects; beside a pair of p 0.5 Holm doubles it past 0.05
    six = {"A": [scored(s, {"48": 0.1 * s + 0.01 * (s + 1)}) for s in range(6)],
           "B": [scored(s, {"48": 0.1 * s}) for s in range(6)], "C": [scored(s, {"48": 0.1 * s - 0.01 * (-1) ** s})
                                                                     for s in range(6)]}
    alone = family_rows(six, [["A", "B"]], "pooled_best@k", 48, "secondary", None)
    both = family_rows(six, [["A", "B"], ["C", "B"]], "pooled_best@k", 48, "secondary", None)
    assert alone[0][6:9] == ["0.0312", "0.0312", "A ahead"]
    # under --metric, a pair naming the headline's metric is the same test as the bare pair: one row, Holm over one
    assert family_rows(six, [["A", "B"], ["A", "B", "pooled_best@k"]], "pooled_best@k", 48, "secondary", None) == alone
    assert both[0][6:9] == ["0.0312", "0.0625", "not separated (Holm)"] and both[1][6] == "1"
    text = "\n".join(decision_lines(runs, decide, "pooled_best@k"))
    growth = " ".join(f"{u:+.3f}" for u in up)   # VPO − GRPO at k = 3 is +0.01 in every seed
    assert f"| VPO − GRPO | {' '.join(f'{u - 0.01:+.3f}' for u in up)} | {np.mean(up) - 0.01:+.3f} |" in text, growth
    assert "| VPO stopped early | 7 | 0.300 ± 0.000 | s0:250 s1:500 s2:750 s3:1000 s4:250 s5:500 s6:750 |" in text


def test_two_arms_stopped_early_pair_by_seed_whatever_their_lengths(tmp_path):
    """The early-stop plan's grid check: GRPO stopped on a 5-step grid (50 steps) against GRPO stopped on the
    25-step grid (500 steps). The arms share no last step, yet each seed pairs at its t*; an arm stopped early
    against a trained one reads "t* / 500". A finished run with no t* is named, never dropped in silence."""
    import json
    from results.jobs import read_config
    from results.tables import metric_lines, pair_steps, paired_rows, verdict_lines

    def run(seed, best, steps, t=None):
        r = scored(seed, {"48": best}, stopped_at=t)
        r["summary"]["args"]["steps"] = steps
        r["summary"].update(train_seconds=1.0, eval_seconds=1.0)
        return r
    runs = {"GRPO": [run(s, 0.50, 500) for s in (8, 9, 10)],
            "fine": [run(s, 0.60 + 0.01 * s, 50, 5 * s - 35) for s in (8, 9, 10)],
            "coarse": [run(s, 0.60, 500, 25) for s in (8, 9, 10)]}
    assert pair_steps(runs, "fine", "coarse") == [(None, "t*")]
    assert pair_steps(runs, "fine", "GRPO") == [(None, "t* / 500")]
    text = "\n".join(verdict_lines(runs, [("GRPO", "GRPO"), ("fine", "coarse")]))
    assert "| fine − coarse | t* | k=48 | 3 | +0.090 |" in text, text
    seeds, rows = paired_rows(runs, "fine", "coarse", "pooled_best@k")
    assert seeds == [8, 9, 10] and rows[0][:5] == ["t*", "k=48", "+0.080", "+0.090", "+0.100"]
    table = "\n".join(metric_lines(runs, {}, {"pooled_best@k": "### pooled best@k"}))
    assert "| coarse | t* | 3 |" in table and "| GRPO | 500 | 3 |" in table, table   # stopped: each run at its t*
    config = {"task": "toy", "seeds": [8, 9, 10], "steps": 500, "eval_every": 25, "flags": [],
              "stopped": [{"arm": "GRPO", "label": "coarse"}],
              "arms": [{"label": "GRPO", "slug": "grpo", "flags": ["--algo", "grpo"]},
                       {"label": "fine", "slug": "fine", "flags": ["--algo", "grpo", "--steps", "50"]}]}
    (tmp_path / "c.json").write_text(json.dumps(config))
    setup = read_config(str(tmp_path / "c.json"))
    runs["coarse"] = [r for r in runs["coarse"] if r["seed"] != 9]          # seed 9: no validation.json
    lines = "\n".join(compare.configuration_lines(setup, str(tmp_path), runs, "cmd", 0, [], True))
    assert "t*: seed 8 step 25, seed 10 step 25), evaluated on the test problems. No t* for seed 9: left out." in lines
    assert "- Warm start: every run from none recorded." in lines
    runs["GRPO"][1]["summary"]["warm_start"] = "deadbeef"                     # one run from another warm start
    lines = "\n".join(compare.configuration_lines(setup, str(tmp_path), runs, "cmd", 0, [], True))
    assert "- Warm starts differ: none recorded: GRPO s8, GRPO s10; deadbeef: GRPO s9." \
        in lines, lines


def test_each_difference_keeps_its_own_seed_where_a_seed_lacks_the_k():
    """pair_values: a seed whose run has no value at k (another m) is left out, and the others keep their seeds."""
    from results.tables import pair_values
    runs = {"A": [scored(s, {"2": 0.5 + s / 10}) for s in (0, 1, 2)],
            "B": [scored(0, {"2": 0.5}), scored(1, {"4": 0.5}), scored(2, {"2": 0.5})]}
    assert pair_values(runs, ["A", "B"], "pooled_best@k", 2)[3] == pytest.approx({0: 0.0, 2: 0.2})


def test_the_figures_draw_an_arm_whose_base_was_not_evaluated(tmp_path):
    """An arm whose first seed is missing has no base evaluation; its runs' own step-0 evaluations (--eval_at_start)
    stand for the warm start, and over_training.png is drawn, not a traceback."""
    from results.figures import compare_figures

    def run(seed):
        r = scored(seed, {"1": 0.1, "48": 0.5})
        r["evals"] = [{"step": s, "pooled_best@k": {"1": 0.1, "48": 0.4 + s / 100}} for s in (0, 5)]
        return r
    compare_figures({"GRPO": [run(9), run(10)]}, {}, str(tmp_path), "no base")
    assert (tmp_path / "over_training.png").is_file() and (tmp_path / "best_at_k.png").is_file()


def test_what_each_arm_writes_is_read_from_the_coverage_files_of_its_weights(tmp_path):
    """written_lines: an arm's final weights read coverage-final.json, an arm stopped early coverage-stopped.json;
    the shares are means over runs; the first rollout's answers on the first problems, from the seed asked for."""
    import json
    from results.tables import written_lines
    for name, file, share, route in (("v0", "coverage-final.json", 0.2, "R"), ("v1", "coverage-final.json", 0.4, "U"),
                                     ("v0", "coverage-stopped.json", 0.9, "D")):
        routes = [{"problem": p, "rollout": r, "answers": [[f"{route}{p}{r}", [1.0, 0.0]]]} for p in range(6)
                  for r in range(2)]
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / file).write_text(json.dumps({"answers": {"exit": share, "gold": 0.5}, "routes": routes,
                                                        "completions_two_classes": share / 2}))
    runs = {"VPO": [{"seed": s, "dir": str(tmp_path / f"v{s}")} for s in (0, 1)],
            "VPO stopped early": [{"seed": 0, "dir": str(tmp_path / "v0"), "stopped_at": 250},
                                  {"seed": 1, "dir": str(tmp_path / "v1"), "stopped_at": 500}]}   # v1: none kept
    text = "\n".join(written_lines(runs, problems=2, seed=1))
    assert "| VPO | 2 | 0.30 | 0.50 | 0.15 ± 0.05 |" in text and "| VPO stopped early | 1 | 0.90 | 0.50 | 0.45 |" in text
    assert "| VPO | 1 | 1 | `U10` [1.0, 0.0] |" in text and "| VPO stopped early | 0 | 0 | `D00` [1.0, 0.0] |" in text
    assert "U20" not in text and "U11" not in text   # problems 0-1, rollout 0

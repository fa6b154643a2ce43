"""results/coverage.py: what a maze checkpoint's answers cover, by hand."""
import numpy as np
import pytest
import torch

import train
from results import coverage

W = np.full(4, 0.25)


def test_coverage_by_hand():
    """Maze 0, two completions of 3 slots: (gold route, safe route, -) and (diamond route, diamond route, lava
    route); maze 1: one completion, (nothing, safe, safe). Rewards [exit, gold, diamonds, no_lava]."""
    gold, safe, dia, lava, none = [1, .5, 0, 1], [1, 0, 0, 1], [1, 0, 1, 1], [1, 0, 0, .5], [0, 0, 0, 0]
    slots = [torch.tensor([[gold, safe, none], [dia, dia, lava]], dtype=torch.float64),
             torch.tensor([[none, safe, safe]], dtype=torch.float64)]
    written = [torch.tensor([[True, True, False], [True, True, True]]), torch.tensor([[True, True, True]])]
    c = coverage.coverage(slots, written, W, ks=(1, 3))
    # 8 written answers: 7 reach the exit, 1 gold, 2 diamonds, 0 both, 4 no item (2 safe + lava + ... ), 6 lava-free
    a = c["answers"]
    assert c["written"] == 8 and a["exit"] == 7 / 8 and a["gold"] == 1 / 8 and a["diamonds"] == 2 / 8
    assert a["both"] == 0 and a["no item"] == 4 / 8 and a["lava-free"] == 6 / 8
    p = c["pools"]
    assert p["gold"] == 0.5 and p["gold and diamonds"] == 0.5 and p["exit"] == 1.0 and p["both"] == 0.0
    # slot 0: gold, dia, none -> mean exit 2/3, gold 0.5/3, diamonds 1/3; completions with >= 2 written answers: 3,
    # in >= 2 classes: (gold, safe) yes, (dia, dia, lava-safe-class) yes, (none, safe, safe) yes; in 3: none
    assert np.allclose(list(c["slots"][0].values()), [2 / 3, .5 / 3, 1 / 3, 2 / 3])
    assert c["completions_two_classes"] == 1.0 and c["completions_m_classes"] == 0.0
    # best of all 3 answers of maze 1 (k = 3): safe (score 0.5), so the vector safe; of maze 0's 6 slots (one
    # masked): a k=3 draw's best is dia unless no dia is drawn: P(no dia in 3 of 6) = C(4,3)/C(6,3) = 0.2
    b3 = c["best@k"][3]
    assert b3["exit"] == pytest.approx(1.0) and b3["diamonds"] == pytest.approx(0.8 / 2)
    # pooled best@3 under each user's weights: maze 0 draws 3 of its 6 slots (the unwritten one scores 0), maze 1
    # takes all 3. Gold-first scores gold .75, safe .5, dia .5, lava .375: maze 0 gets .75 when gold is drawn (1/2),
    # else .5 -> .625; maze 1 .5. Diamond-first: dia 1.0 unless no dia is drawn (0.2), then .5 -> .9; maze 1 .5.
    # Deployment: dia .75 (0.8), else the best of 3 of (gold .625, safe .5, 0, lava .375) = .59375 -> .71875.
    u = c["users"]
    assert u["gold-first"][3] == pytest.approx((0.625 + 0.5) / 2)
    assert u["diamond-first"][3] == pytest.approx((0.9 + 0.5) / 2)
    assert u["deployment"][3] == pytest.approx((0.71875 + 0.5) / 2)


def test_coverage_refuses_a_checkpoint_of_another_task(tmp_path, capsys):
    argv = ["--task", "toy", "--algo", "grpo", "--sft_steps", "2", "--steps", "1", "--eval_every", "0",
            "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4",
            "--sft_batch_size", "8", "--eval_problems", "2", "--eval_answers", "48", "--no_base_eval", "--quiet",
            "--out_dir", str(tmp_path), "--run_name", "toy"]
    assert train.main(argv) == 0
    capsys.readouterr()
    assert coverage.main(["--ckpt", str(tmp_path / "toy" / "ckpt.pt")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "maze" in err and "\n" not in err


def test_routes_are_the_completions_with_their_reward_vectors(tmp_path, capsys):
    """--routes K: two completions of each of the first K mazes, each answer with the task's own reward vector, in
    the printout and the JSON file; the evaluation's seeded streams, so the same call gives the same routes."""
    import json
    from runs.cli import load_run
    argv = ["--task", "maze", "--algo", "vpo", "--sft_steps", "2", "--steps", "1", "--eval_every", "0", "--n_layer",
            "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "4", "--sft_batch_size",
            "8", "--eval_problems", "2", "--eval_answers", "48", "--no_base_eval", "--quiet", "--no_figures",
            "--out_dir", str(tmp_path), "--run_name", "maze"]
    assert train.main(argv) == 0
    capsys.readouterr()
    ckpt, out = str(tmp_path / "maze" / "ckpt.pt"), str(tmp_path / "c.json")
    assert coverage.main(["--ckpt", ckpt, "--problems", "3", "--answers", "6", "--routes", "2", "--json", out]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("maze ")]
    routes = json.load(open(out))["routes"]
    assert [(r["problem"], r["rollout"]) for r in routes] == [(0, 0), (0, 1), (1, 0), (1, 1)] and len(printed) == 4
    model, _, task, m = load_run(ckpt)
    problems = task.problems("test", 2, seed=0)
    for r in routes:
        assert len(r["answers"]) == m
        for y, v in r["answers"]:
            assert v == pytest.approx(task.score(problems[r["problem"]], y).tolist(), abs=1e-3)
    assert coverage.sample_routes(model, task, problems, m) == routes
    from runs.seeding import step_seed
    from sample import rollout
    texts = rollout(model, task, problems, m, 2, 0.7, seeds=[step_seed(0, i) for i in range(2)], amp=False)[2]
    assert [[y for y, _ in r["answers"]] for r in routes] == [task.parse(t, m) for t in texts]


def test_every_reachable_reward_vector_is_found_as_by_walking_every_route():
    """reachable: on a small maze, the vectors of all 4^budget move strings that reach E, each walked."""
    import itertools
    from tasks.maze import MazeProblem, MazeTask, walk
    problem, task = MazeProblem("SG.*\n.~#.\n*..E", 7), MazeTask()
    walked = {tuple(problem.layout.vector(True, walk(problem, "".join(r))[1]))
              for r in itertools.product("UDLR", repeat=7) if walk(problem, "".join(r))[0]}
    found = coverage.reachable(problem)
    assert {tuple(v) for v in found} == walked and len(walked) > 3
    assert tuple(task.score(problem, "RDDRR")) in walked   # through the lava


def test_what_theory_says_of_sets_on_the_toy_by_hand():
    """best_sets with w = (u, 1 − u), u on a fine grid (Dirichlet(1, 1) is uniform in u), on the toy's corners (1, 0),
    (0, 1) and compromise (0.6, 0.6): E[max(u, 1 − u)] = 3/4 for the corners, E[max(0.6, u)] = 0.68 for the
    compromise with a corner, 0.6 alone, and all three 0.6 · 0.2 + 2 ∫_0.6^1 u du = 0.76. A dominated answer is
    never used."""
    u = (np.arange(20000) + 0.5) / 20000
    weights = np.stack([u, 1 - u], axis=1)
    toy = [[1, 0], [0, 1], [0.6, 0.6], [0.3, 0.3]]
    two, three = (coverage.best_sets(toy, [0.5, 0.5], m, weights) for m in (2, 3))
    assert two["optimum"] == pytest.approx(0.75) and two["holding w*'s best"] == pytest.approx(0.68)
    assert two["w*'s best alone"] == pytest.approx(0.6) and not two["optimum holds it"]
    assert three["optimum"] == pytest.approx(0.76) and three["optimum holds it"]
    assert len(coverage.pareto(np.array(toy))) == 3
    # tied best answers under w* all count: either corner is w*'s best when there is no compromise
    assert coverage.best_sets([[1, 0], [0, 1]], [0.5, 0.5], 1, weights)["optimum holds it"]


def test_when_vpo_helps_md_holds_what_the_front_prints():
    """docs/when_vpo_helps.md's table of sets on the reachable reward vectors, and its counts, are what
    `python -m results.coverage --front` prints."""
    import os
    printed = coverage.front_lines(64)
    with open(os.path.join(os.path.dirname(train.__file__), "docs", "when_vpo_helps.md")) as f:
        doc = f.read()
    for line in printed:
        if line.startswith(("| toy | 2", "| toy | 3", "| maze (64 report mazes) | 2", "| maze (64 report mazes) | 3")):
            assert line.replace("maze (64 report mazes)", "maze").replace("w*", "w\\*") in doc, line
    counts = printed[-1]
    assert "both corners, tied, on 57 mazes" in counts and "both kinds on 41" in counts and "both kinds 0.668" in counts
    assert "On 57 of the 64 mazes" in doc and "exist on 41 mazes" in doc and "scores 0.668" in doc

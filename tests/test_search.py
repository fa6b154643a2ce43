"""Test-time search: lexicase selection, best-of-k, and the evolutionary search's budget (tiny random models)."""
import numpy as np
import torch

import search
from model import GPT, GPTConfig
from tasks import get_task


def tiny_model(seed=0):
    torch.manual_seed(seed)
    return GPT(GPTConfig(block_size=256, n_layer=1, n_head=2, n_embd=32)).eval()


def test_lexicase_keeps_specialists():
    """A program that alone passes test 2 is picked whenever test 2 comes first; a program dominated on every
    test is never picked."""
    vectors = np.array([[1, 1, 0, 1],    # generalist
                        [0, 0, 1, 0],    # the only one passing test 2
                        [1, 0, 0, 0]])   # dominated by the generalist
    rng = np.random.default_rng(0)
    picks = [search.lexicase(vectors, rng) for _ in range(400)]
    counts = np.bincount(picks, minlength=3)
    assert counts[2] == 0
    assert 0.15 < counts[1] / 400 < 0.35  # test 2 first: 1 in 4 orders
    assert counts[0] + counts[1] == 400


def test_lexicase_ties_broken_at_random():
    vectors = np.ones((3, 4))
    rng = np.random.default_rng(1)
    assert set(search.lexicase(vectors, rng) for _ in range(100)) == {0, 1, 2}


def test_population_counts_every_answer_and_stops_at_the_budget():
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    pop = search.Population(task, p, budget=7, m=2)
    pop.add(["x", ""])                         # empty and repeated answers still cost budget
    pop.add(["x", "x+1"])
    assert pop.used == 4 and pop.answers == ["x", "x+1"] and not pop.done
    pop.add(["x+2", "x+3"])
    assert pop.used == 6 and pop.done          # 1 answer left: not enough for another sample of 2
    capped = search.Population(task, p, budget=5, m=3)
    capped.add(["x", "x+1", "x+2"])
    capped.add(["x+3", "x+4", "x+5"])          # add itself never counts past the budget
    assert capped.used == 5 and capped.answers == ["x", "x+1", "x+2", "x+3", "x+4"]
    solved = search.Population(task, p, budget=10, m=1)
    solved.add(["7", p.target, "x"])
    assert solved.solved_at == 2 and solved.used == 2 and solved.done


def test_population_in_samples_charges_one_per_completion():
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    pop = search.Population(task, p, budget=2, m=3, unit="samples")
    pop.add(["x", "x+1", "x+2"])
    assert pop.used == 1 and len(pop.answers) == 3 and not pop.done
    pop.add(["x+3", "", "x+3"])
    assert pop.used == 2 and pop.answers[-1] == "x+3" and pop.done


def test_best_of_k_picks_the_verifiers_best():
    """Against an exhaustive check: the pick is the highest w*^T r among the first k sampled answers."""
    task = get_task("maze")
    problems = task.problems("test", 3, seed=0)
    model = tiny_model()
    picks = search.best_of_k(model, task, problems, m=3, k=9, generator=torch.Generator().manual_seed(0))
    assert len(picks) == 3
    for problem, (answer, vector, score) in zip(problems, picks):
        assert score == float(task.score(problem, answer) @ task.deploy_weights) or answer == ""


def test_evolve_respects_the_budget_and_returns_one_result_per_problem():
    task = get_task("code")
    problems = task.problems("test", 3, seed=0)
    for m, budget, unit in [(1, 10, "answers"), (3, 20, "answers"), (3, 2, "answers"), (3, 5, "samples")]:
        results = search.evolve(tiny_model(), task, problems, m, budget, unit, parents_per_round=2, seed=0)
        assert len(results) == 3
        for r in results:
            assert 0 < r["used"] <= budget
            assert r["solved_at"] is None or r["solved_at"] <= r["used"]
        counts = search.solved_by_budget(results, [budget])
        assert counts[budget] == sum(r["solved_at"] is not None for r in results)

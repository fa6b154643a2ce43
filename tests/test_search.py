"""Test-time search: lexicase selection, the population's budget, and best-of-k and the evolutionary search
driven by scripted models (known answers, known rewards)."""
import itertools

import numpy as np
import pytest
import torch

import sample
import search
from model import GPT, GPTConfig
from sample import Generation
from tasks import get_task
from tasks import tokenizer as tok
from tasks.code import DOMAIN, execute


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


def test_population_is_solved_by_the_target_not_by_the_reward():
    """On the code task a program that passes every test of the reward but differs from the target elsewhere does not
    solve: the search goes on (reward_solved_at records it) until a program equal to the target, here a rewrite of it,
    which is the kept program. A task that cannot check its target (toy) solves by its reward, as before."""
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    x0 = next(x for x in DOMAIN if x not in p.inputs + p.hidden_inputs)
    fits = f"99 if x=={x0} else ({p.target})"        # every test, shown or hidden, passes; wrong at x0
    assert task.solved(task.score(p, fits)) and execute(p.target, [x0]) != [99]
    rewrite = f"({p.target})"
    pop = search.Population(task, p, budget=10, m=1)
    pop.add(["7", fits, "x"])
    assert pop.solved_at is None and pop.reward_solved_at == 2 and pop.used == 3 and not pop.done
    pop.add([rewrite, "x+1"])
    assert pop.solved_at == 4 and pop.used == 4 and pop.done
    assert pop.result(best=True) == {"solved_at": 4, "solved_by": "target", "reward_solved_at": 2, "used": 4,
                                     "population": 4, "best": rewrite}
    unsolved = search.Population(task, p, budget=10, m=1)
    unsolved.add([fits, "7"])
    assert unsolved.result(best=True)["best"] == fits and unsolved.result()["solved_at"] is None
    toy = get_task("toy")
    q = toy.problems("test", 1, seed=0)[0]
    pop = search.Population(toy, q, budget=10, m=3)
    pop.add(["left", "middle", "right"])
    assert pop.result() == {"solved_at": 2, "solved_by": "reward", "reward_solved_at": 2, "used": 2, "population": 2}


def test_population_in_samples_charges_one_per_completion():
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    pop = search.Population(task, p, budget=2, m=3, unit="samples")
    pop.add(["x", "x+1", "x+2"])
    assert pop.used == 1 and len(pop.answers) == 3 and not pop.done
    pop.add(["x+3", "", "x+3"])
    assert pop.used == 2 and pop.answers[-1] == "x+3" and pop.done


def scripted_rollout(scripts, calls):
    """A stand-in for sample.rollout: problem -> (completions, reward vectors (G, m, D), answer mask (G, m))."""
    def rollout(model, task, problems, m, num_samples, temperature, generator, top_p=None, weights=None, amp=True):
        assert weights is None                                  # the plain prompt, as every search here draws
        calls.append((m, num_samples, temperature))
        assert all(len(scripts[p][0]) == num_samples for p in problems)
        texts = [t for p in problems for t in scripts[p][0]]
        rewards = torch.tensor(np.stack([scripts[p][1] for p in problems]), dtype=torch.float32)
        mask = torch.tensor(np.stack([scripts[p][2] for p in problems]))
        return None, None, texts, rewards, mask
    return rollout


def test_best_of_k_returns_the_best_valid_answer_among_the_first_k(monkeypatch):
    """Scripted rollouts (toy task, w* = (1/2, 1/2)) where the first answer, the worst, a masked answer that would
    score highest, an answer past the k-th, and the best valid one are all different answers."""
    task = get_task("toy")
    S = tok.SEP
    v = {"a": (.6, 0), "b": (1, 1), "c": (1, .8), "d": (.2, 0), "e": (0, 1), "f": (1, 1)}   # w*^T r: .3 1 .9 .1 .5 1
    scripts = {  # m = 3, k = 5: 2 rollouts, the first 5 answers count; b is masked, f is the 6th
        3: {"p0": ([f"a{S}b{S}c", f"d{S}e{S}f"], [[v["a"], v["b"], v["c"]], [v["d"], v["e"], v["f"]]],
                   [[True, False, True], [True, True, True]]),
            "p1": ([f"a{S}b{S}c", f"d{S}e{S}f"], [[v["a"], v["b"], v["c"]], [v["d"], v["e"], v["f"]]],
                   [[False] * 3, [False, False, True]])},       # nothing valid among the first 5
        1: {"p0": (["a", "b", f"c{S}f"], [[v[x]] for x in "abc"], [[True], [False], [True]]),   # f: past m
            "p1": (["a", "b", "c"], [[v[x]] for x in "abc"], [[False], [False], [False]])},
    }
    for m, k in ((3, 5), (1, 3)):
        calls = []
        monkeypatch.setattr(search, "rollout", scripted_rollout(scripts[m], calls))
        picks = search.best_of_k(None, task, ["p0", "p1"], m, k, temperature=0.5)
        assert calls == [(m, 2 if m == 3 else 3, 0.5)]
        (answer, vector, score), empty = picks
        assert answer == "c" and score == pytest.approx(0.9) and np.allclose(vector, v["c"])
        assert empty[0] == "" and empty[2] == 0.0 and not empty[1].any()


def test_evolve_solves_at_the_budget_the_scripted_model_reaches_the_target():
    """A scripted model: the first samples (and every child) write proper prefixes of the target program, none of
    which solves; the n-th sample of problem 0 completes the target. Problem 1 is never solved. solved_at is the
    budget spent up to and including the solving answer, worked out by hand for each case."""
    task = get_task("code")
    problems = task.problems("test", 2, seed=0)
    for p in problems:
        assert not any(task.solved(task.score(p, p.target[:i])) for i in range(1, len(p.target)))
    cases = [  # m, unit, budget, the sample that solves, solved_at, budget used by problem 1
        # 3 initial samples (budget // 4); 2 children a round; the 7th sample is round 2's second: 7 answers
        (1, "answers", 12, 7, 7, 12),
        # 2 initial samples of 3 answers (6); round 1: sample 3 (9), sample 4's second answer solves: 11
        (3, "answers", 24, 4, 11, 24),
        # 1 initial sample (6 // 4 samples); round 1: samples 2, 3; round 2: sample 4 solves
        (3, "samples", 6, 4, 4, 6),
    ]
    # max_rows 2: the initial samples drawn one per problem per call (the same draws for a scripted model)
    for (m, unit, budget, solving_sample, solved_at, used_unsolved), max_rows in itertools.product(cases, (1024, 2)):
        counts, rows = {p: 0 for p in problems}, []
        bases = {p: sample.prompt_ids(task, p, m) for p in problems}

        def owner(prompt):
            return next(p for p in problems if prompt[:len(bases[p])] == bases[p])

        def as_generation(texts):
            rows = [tok.encode_special(t) + [tok.END_ID] for t in texts]
            T = max(map(len, rows))
            tokens = torch.tensor([r + [tok.END_ID] * (T - len(r)) for r in rows])
            mask = torch.tensor([[t < len(r) for t in range(T)] for r in rows])
            return Generation(tokens, mask, torch.zeros(tokens.shape), torch.zeros_like(mask))

        def initial(model, prompts, max_new, num_samples, temperature, **kw):
            rows.append(len(prompts) * num_samples)
            texts = []
            for prompt in prompts:
                p = owner(prompt)
                for _ in range(num_samples):
                    counts[p] += 1
                    assert counts[p] < solving_sample
                    cuts = [1 + (counts[p] * m + j) % (len(p.target) - 1) for j in range(m)]
                    texts.append(tok.SEP.join(p.target[:c] for c in cuts))
            return as_generation(texts)

        def child(model, prompts, max_new, num_samples, temperature, **kw):
            texts = []
            for prompt in prompts:
                p = owner(prompt)
                prefix = tok.decode(prompt[len(bases[p]):])
                assert num_samples == 1 and p.target.startswith(prefix)
                counts[p] += 1
                if p is problems[0] and counts[p] == solving_sample:
                    texts.append(p.target[len(prefix):] if m == 1 else tok.SEP + p.target)
                else:
                    texts.append("")                          # the child is its parent's prefix
            return as_generation(texts)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sample, "generate", initial)
            mp.setattr(search, "generate", child)
            results = search.evolve(tiny_model(), task, problems, m, budget, unit, parents_per_round=2, seed=0,
                                    max_rows=max_rows)
        case = (m, unit, budget, max_rows)
        n0 = budget // 4 // (m if unit == "answers" else 1) or 1        # initial samples per problem
        assert max(rows) <= max(max_rows, len(problems)) and sum(rows) == len(problems) * n0, case
        assert results[0]["solved_at"] == solved_at and results[0]["used"] == solved_at, case
        assert results[0]["best"] == problems[0].target, case
        assert results[1]["solved_at"] is None and results[1]["used"] == used_unsolved, case
        assert search.solved_by_budget(results, [solved_at - 1, solved_at, budget]) == \
            {solved_at - 1: 0, solved_at: 1, budget: 1}


def test_solved_only_by_counts_problems_one_method_never_solves():
    """The paper's claim counts problems solved by some run of one method and by no run of the other. Hand-made:
    method a's seeds solve {1, 2} and {2, 5}; b's solve {2}, {3} and {}."""
    only_a, only_b, both = search.solved_only_by([{1, 2}, [2, 5]], [{2}, {3}, set()])
    assert (only_a, only_b, both) == ([1, 5], [3], [2])
    assert search.solved_only_by([], [{4}]) == ([], [4], [])          # no runs of a: everything b solves is b's
    assert search.solved_only_by([{7}], [{7}]) == ([], [], [7])


def test_sample_until_solved_stops_at_the_solving_answer(monkeypatch):
    """Plain sampling with the search's budget: a scripted model writes the target as problem 0's 5th answer and
    never solves problem 1; solved_at counts the answers up to and including the solving one, as evolve's."""
    task = get_task("code")
    problems = task.problems("test", 2, seed=0)
    calls = []

    def fake_rollout(model, task_, probs, m, n, temperature, generator=None, weights=None, amp=True):
        calls.append((len(probs), n))
        texts = []
        for p in probs:
            for g in range(n):
                done = sum(c[1] for c in calls[:-1]) if p is problems[0] else None
                texts.append(tok.SEP.join(p.target if (p is problems[0] and (done + g) * m + j == 4) else str(j + g)
                                          for j in range(m)))
        return None, None, texts, None, None

    monkeypatch.setattr(search, "rollout", fake_rollout)
    res = search.sample_until_solved(tiny_model(), task, problems, m=1, budget=11, chunk=3)
    assert res[0]["solved_at"] == 5 and res[0]["used"] == 5
    assert res[1]["solved_at"] is None and res[1]["used"] == 11
    # a solved problem is not sampled again; the last call draws only what the budget has left
    assert calls == [(2, 3), (2, 3), (1, 3), (1, 2)]
    calls.clear()
    res3 = search.sample_until_solved(tiny_model(), task, problems, m=3, budget=12, chunk=2)
    assert res3[0]["solved_at"] == 5 and res3[1]["used"] == 12           # sample 2's second answer: 3 + 2
    calls.clear()
    search.sample_until_solved(tiny_model(), task, problems, m=1, budget=11, chunk=3, max_rows=4)
    assert calls == [(2, 2), (2, 2), (2, 2), (1, 3), (1, 2)]              # at most 4 rows a call


def test_evolve_refuses_a_budget_below_one_round():
    task = get_task("code")
    problems = task.problems("test", 1, seed=0)
    assert search.min_budget(3, "answers") == 27 and search.min_budget(3, "samples") == 9
    with pytest.raises(ValueError, match="below one round"):
        search.evolve(tiny_model(), task, problems, 3, 26, "answers")


def test_discordant_test_by_hand_and_against_the_permutation_it_stands_for():
    """Hand values: 9 : 1 -> 2 * 11 / 1024; 5 : 3 -> 2 * 93 / 256 = 0.7265625; 0 : 0 -> 1; 6 : 0 -> 2 / 64. And the
    p-value equals the brute-force permutation test that swaps the method labels on each discordant problem."""
    assert search.discordant_test(9, 1) == pytest.approx(2 * 11 / 1024)
    assert search.discordant_test(1, 9) == search.discordant_test(9, 1)
    assert search.discordant_test(5, 3) == pytest.approx(0.7265625)
    assert search.discordant_test(0, 0) == 1.0 and search.discordant_test(2, 2) == 1.0
    assert search.discordant_test(6, 0) == pytest.approx(2 / 64)
    for a, b in [(4, 1), (7, 2), (3, 3), (0, 5)]:
        n, observed = a + b, abs(a - b)
        flips = list(itertools.product((1, -1), repeat=n))   # each discordant problem counted for A (+1) or B (-1)
        brute = sum(abs(sum(f)) >= observed for f in flips) / len(flips)
        assert search.discordant_test(a, b) == pytest.approx(brute), (a, b)


def test_holm_steps_down_from_the_smallest_p():
    assert search.holm([0.02, 0.04]) == [True, True]        # 0.02 <= 0.025, then 0.04 <= 0.05
    assert search.holm([0.04, 0.02]) == [True, True]
    assert search.holm([0.03, 0.04]) == [False, False]      # the smallest already fails 0.025
    assert search.holm([0.001, 0.2]) == [True, False]
    assert search.holm([]) == []


def test_bootstrap_difference_resamples_problems():
    """Two runs per method on problems 1..4: A's runs solve {1, 2} and {1}, B's {1} and {}: per problem the mean
    difference is (0.5, 0.5, 0, 0), summing to 1. The interval is that of the brute-force resampling with the same
    draws; a difference the same on every problem gives a point interval."""
    a, b, problems = [{1, 2}, {1}], [{1}, set()], [1, 2, 3, 4]
    diff, low, high = search.bootstrap_difference(a, b, problems, resamples=2000, seed=3)
    assert diff == pytest.approx(1.0)
    draws = np.random.default_rng(3).integers(0, 4, size=(2000, 4))
    per = {0: 0.5, 1: 0.5, 2: 0.0, 3: 0.0}
    totals = [sum(per[i] for i in row) for row in draws]
    assert (low, high) == pytest.approx((np.quantile(totals, 0.025), np.quantile(totals, 0.975)))
    assert low <= diff <= high and low < high
    assert search.bootstrap_difference([{1, 2}], [set()], [1, 2], resamples=50) == (2.0, 2.0, 2.0)

"""evaluate.evaluate on scripted rollouts: known completions in, every metric checked against values worked out
by hand (and, for E_w[best@k] and diversity, by enumerating every k-subset of rollouts in the test)."""
import itertools

import numpy as np
import pytest
import torch

import evaluate
import vpo
from tasks import Task
from tasks.tokenizer import SEP


class Scripted(Task):
    """Answers L, R, M, H score (1,0), (0,1), (.6,.6), (1,1); anything else (0,0). Solved: w*^T r >= 0.6 (M, H);
    only H also passes the hidden tests (M overfits the shown ones)."""
    name = "scripted"
    objectives = ["a", "b"]
    deploy_weights = np.array([0.5, 0.5])
    VECTORS = {"L": (1.0, 0.0), "R": (0.0, 1.0), "M": (0.6, 0.6), "H": (1.0, 1.0)}

    def score(self, problem, answer):
        return np.array(self.VECTORS.get(answer, (0.0, 0.0)), dtype=np.float32)

    def solved(self, vector):
        return bool(vector @ self.deploy_weights >= 0.6 - 1e-6)

    def solved_hidden(self, problem, answer):
        return answer == "H"


S = SEP
SCRIPTS = {  # problem -> the completions its rollouts write, in order
    1: {"p0": ["L", "M", "x", "H"],
        "p1": ["", "R", "R", f"L{S}M"]},                   # past the m-th answer is ignored: "L"
    3: {"p0": [f"L{S}M{S}H", f"L{S}L{S}x", f"R{S}{S}R"],     # a repeat and a missing answer are masked
        "p1": [f"x{S}x{S}x", "R", f"M{S}M{S}M"]},
}
HAND = {  # worked out by hand from SCRIPTS (w*^T r: L .5, R .5, M .6, H 1, x 0)
    1: {"best@k": {1: (2.1 / 4 + 1.5 / 4) / 2, 2: (4.7 / 6 + 0.5) / 2, 3: (3.6 / 4 + 0.5) / 2},
        "pass@k": {1: 0.25, 2: 5 / 12, 3: 0.5},
        "pooled_pass@k": {1: 0.25, 2: 5 / 12, 3: 0.5},
        "pass_hidden@k": {1: 1 / 8, 2: 1 / 4, 3: 3 / 8},
        "deploy_reward": 3.6 / 8, "distinct_rate": (4 / 4 + 2 / 4) / 2, "valid_rate": (4 / 4 + 3 / 4) / 2,
        "diversity": (7 / 6 + 4 / 3) / 2, "solved_per_problem": [2, 0], "pool_sizes": [4, 3],
        # written answers: p0 L M x H (H dominates), p1 R R L (all on the front; repeats do not dominate)
        "pareto_frac": (1 / 4 + 3 / 3) / 2, "pareto_distinct": (1 + 2) / 2,
        "dim_means": {"a": (2.6 / 4 + 1 / 3) / 2, "b": (1.6 / 4 + 2 / 3) / 2},
        # pooled slots (w*^T r, a missing answer 0): p0 .5 .6 0 1, p1 0 .5 .5 .5
        "pooled_best@k": {1: (2.1 / 4 + 1.5 / 4) / 2, 2: ((.6 + .5 + 1 + .6 + 1 + 1) / 6 + .5) / 2,
                          3: ((.6 + 1 + 1 + 1) / 4 + .5) / 2}},
    3: {"best@k": {3: (2 / 3 + 1.1 / 3) / 2, 6: (2.5 / 3 + 1.7 / 3) / 2},
        "pass@k": {3: 1 / 3, 6: 2 / 3},
        # pooled slots that solve (M, H; a repeated M too): p0 2 of 9, p1 3 of 9; pass@k = 1 - C(9-c, k)/C(9, k)
        "pooled_pass@k": {1: 5 / 18, 3: (49 + 64) / 168, 6: (77 + 83) / 168},
        "pass_hidden@k": {3: 1 / 6, 6: 1 / 3},
        "deploy_reward": (4.1 / 9 + 2.3 / 9) / 2,            # the repeated L, R and M count their reward
        "distinct_rate": (5 / 9 + 3 / 9) / 2, "valid_rate": (8 / 9 + 7 / 9) / 2, "solved_per_problem": [2, 1],
        "pool_sizes": [6, 3],
        # written answers: p0 L M H L L x R R (H dominates), p1 x x x R M M M (front: R and the three M)
        "pareto_frac": (1 / 8 + 4 / 7) / 2, "pareto_distinct": (1 + 2) / 2,
        "dim_means": {"a": (4.6 / 8 + 1.8 / 7) / 2, "b": (3.6 / 8 + 2.8 / 7) / 2}},
}


def brute_force(task, m, ks, weights):
    """E_w[best@k] and diversity from the definitions: enumerate every set of k/m rollouts."""
    out = {"E_w[best@k]": {k: 0.0 for k in ks}, "diversity": 0.0}
    for texts in SCRIPTS[m].values():
        rollouts = []                                       # the valid answers' reward vectors of each rollout
        for t in texts:
            answers = [a.strip() for a in t.split(SEP)][:m]
            valid = [a for j, a in enumerate(answers) if a and a not in answers[:j]]
            rollouts.append([task.score(None, a).astype(np.float64) for a in valid])
        for k in ks:
            subsets = list(itertools.combinations(rollouts, k // m))
            per_w = [np.mean([max([float(w @ r) for ro in sub for r in ro], default=0.0) for sub in subsets])
                     for w in weights]
            out["E_w[best@k]"][k] += np.mean(per_w) / len(SCRIPTS[m])
        pool = [r for ro in rollouts for r in ro]
        pairs = [np.abs(a - b).sum() for a, b in itertools.permutations(pool, 2)]
        out["diversity"] += np.mean(pairs) / len(SCRIPTS[m])
    return out


@pytest.mark.parametrize("m,ks,answers", [(1, [1, 2, 3], 4), (3, [3, 6], 8)])
@pytest.mark.parametrize("max_rows", [1024, 1])  # all problems in one batch, or one problem per batch
def test_evaluate_on_scripted_rollouts(monkeypatch, m, ks, answers, max_rows):
    task = Scripted()
    n_roll = -(-answers // m)                                # 8 answers of m = 3: 3 rollouts, 9 answers
    calls, drawn = [], []

    def scripted_rollout(model, task_, problems, m_, num_samples, temperature, generator=None, top_p=None, weights=None,
                         seeds=None, amp=True):
        assert weights is None                                # plain prompts (goal_cond passes w*)
        calls.append((m_, num_samples, temperature))
        texts = [t for p in problems for t in SCRIPTS[m][p]]
        assert num_samples == len(SCRIPTS[m][problems[0]])
        scored = [task_.score_rollouts(p, SCRIPTS[m][p], m_) for p in problems]
        rewards = torch.from_numpy(np.stack([r for r, _ in scored]))
        mask = torch.from_numpy(np.stack([a for _, a in scored]))
        return None, None, texts, rewards, mask

    real_weights = vpo.sample_weights
    monkeypatch.setattr(evaluate, "rollout", scripted_rollout)
    monkeypatch.setattr(vpo, "sample_weights", lambda *a, **k: drawn.append(real_weights(*a, **k)) or drawn[-1])

    metrics, pools = evaluate.evaluate(torch.nn.Linear(1, 1), task, ["p0", "p1"], m, ks, answers, temperature=0.7,
                                       max_rows=max_rows)

    assert set(c[:2] for c in calls) == {(m, n_roll)} and calls[0][2] == 0.7
    assert (metrics["m"], metrics["problems"], metrics["answers_per_problem"]) == (m, 2, n_roll * m)
    # the names and order of the committed summary.json files (results/runs), brackets closed
    assert [key for key in metrics if "@k" in key] == ["best@k", "pass@k", "E_w[best@k]", "pass_hidden@k",
                                                       "pooled_best@k", "pooled_pass@k"]
    hand = HAND[m]
    for key in ("best@k", "pass@k", "pass_hidden@k", "pooled_pass@k"):
        assert metrics[key] == pytest.approx(hand[key], abs=1e-6), key
    for key in ("deploy_reward", "distinct_rate", "valid_rate"):
        assert metrics[key] == pytest.approx(hand[key], abs=1e-6), key
    assert metrics["solved_per_problem"] == hand["solved_per_problem"]
    assert len(drawn) == 1
    brute = brute_force(task, m, ks, drawn[0][0].double().numpy())
    assert metrics["E_w[best@k]"] == pytest.approx(brute["E_w[best@k]"], abs=1e-6)
    assert metrics["diversity"] == pytest.approx(brute["diversity"], abs=1e-6)
    if "diversity" in hand:
        assert metrics["diversity"] == pytest.approx(hand["diversity"], abs=1e-6)
    assert [len(p) for p in pools] == hand["pool_sizes"]                # valid answers of each problem
    for key in ("pareto_frac", "pareto_distinct"):
        assert metrics[key] == pytest.approx(hand[key], abs=1e-6), key
    assert metrics["dim_means"] == pytest.approx(hand["dim_means"], abs=1e-6)
    pooled = pooled_brute_force(task, m, sorted({1, *ks}))
    assert metrics["pooled_best@k"] == pytest.approx(pooled, abs=1e-6)
    if "pooled_best@k" in hand:
        assert metrics["pooled_best@k"] == pytest.approx(hand["pooled_best@k"], abs=1e-6)


def pooled_brute_force(task, m, ks):
    """The authors' best@k: every answer slot of every rollout in one pool (a repeat scores its reward, a missing
    answer 0), the mean over every k-subset of the pool of its best w*^T r."""
    out = {k: 0.0 for k in ks}
    for texts in SCRIPTS[m].values():
        slots = [([a.strip() for a in t.split(SEP)][:m] + [""] * m)[:m] for t in texts]
        scores = [float(task.score(None, a) @ task.deploy_weights) if a else 0.0 for ans in slots for a in ans]
        for k in ks:
            out[k] += np.mean([max(sub) for sub in itertools.combinations(scores, k)]) / len(SCRIPTS[m])
    return out


class ScriptedTarget(Scripted):
    """Scripted with a target it can check: H is the target; M solves by the reward (w*ᵀr = 0.6) and is not."""
    name = "scripted_target"

    def equals_target(self, problem, answer):
        return answer == "H"


def test_evaluate_counts_the_target_in_its_own_column(monkeypatch):
    """A task that checks its target gets pass_target@k, pooled_pass_target@k and solved_target_per_problem beside
    pass@k, which keeps counting answers solved by the reward (M and H). Worked by hand, m = 1 (4 rollouts) and
    m = 3 (2 rollouts of 3); a task that cannot check the target gets none of these keys."""
    scripts = {1: {"p0": ["M", "H", "H", "x"], "p1": ["M", "M", "L", "R"]},
               3: {"p0": [f"L{SEP}H{SEP}H", f"M{SEP}x{SEP}L"], "p1": [f"M{SEP}R{SEP}L", f"x{SEP}{SEP}M"]}}
    hand = {  # m = 1: H in 2 of p0's 4 rollouts, none of p1's; solved by the reward: 3 of 4 and 2 of 4
        1: {"pass_target@k": {1: (2 / 4 + 0) / 2, 2: (1 - 1 / 6 + 0) / 2},
            "pooled_pass_target@k": {1: (2 / 4 + 0) / 2, 2: (1 - 1 / 6 + 0) / 2},
            "pass@k": {1: (3 / 4 + 2 / 4) / 2, 2: (1 + 1 - 1 / 6) / 2},
            "solved_target_per_problem": [2, 0], "solved_per_problem": [3, 2]},
            # m = 3: p0's first rollout holds H (its repeat is masked), its second does not; in the pool H fills 2
            # of 6 slots (a repeat solves too): pooled pass@3 = 1 - C(4, 3) / C(6, 3) = 0.8
        3: {"pass_target@k": {3: (1 / 2 + 0) / 2, 6: (1 + 0) / 2},
            "pooled_pass_target@k": {1: (2 / 6 + 0) / 2, 3: (0.8 + 0) / 2, 6: (1 + 0) / 2},
            "pass@k": {3: (1 + 1) / 2, 6: (1 + 1) / 2},
            "solved_target_per_problem": [1, 0], "solved_per_problem": [2, 2]},
    }
    for m, ks in ((1, [1, 2]), (3, [3, 6])):
        def scripted_rollout(model, task_, problems, m_, num_samples, temperature, generator=None, top_p=None,
                             weights=None, seeds=None, amp=True):
            texts = [t for p in problems for t in scripts[m][p]]
            scored = [task_.score_rollouts(p, scripts[m][p], m_) for p in problems]
            return (None, None, texts, torch.from_numpy(np.stack([r for r, _ in scored])),
                    torch.from_numpy(np.stack([a for _, a in scored])))
        monkeypatch.setattr(evaluate, "rollout", scripted_rollout)
        answers = len(scripts[m]["p0"]) * m
        metrics, _ = evaluate.evaluate(torch.nn.Linear(1, 1), ScriptedTarget(), ["p0", "p1"], m, ks, answers)
        for key, want in hand[m].items():
            assert metrics[key] == pytest.approx(want, abs=1e-9), (m, key)
        plain, _ = evaluate.evaluate(torch.nn.Linear(1, 1), Scripted(), ["p0", "p1"], m, ks, answers)
        assert not {"pass_target@k", "pooled_pass_target@k", "solved_target_per_problem"} & set(plain)
        assert plain["pass@k"] == metrics["pass@k"]
        assert "pass_target@k" in evaluate.format_table(metrics) and "pass_target@k" not in evaluate.format_table(plain)

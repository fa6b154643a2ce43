"""
The toy task: the authors' smallest demonstration (a NumPy notebook) as a language task.

Three possible answers with reward vectors r("left") = (1, 0), r("right") = (0, 1), r("middle") = (c, c) with
c = 0.6, deployment weights w* = (1/2, 1/2); any other string scores (0, 0). Problems differ only by an id
shown in the prompt, so that the train and test splits can be disjoint:

    toy 417: name 3 of left/right/middle

GRPO maximizes w*ᵀr and ends on the compromise (w*ᵀr = 0.6 > 0.5). VPO scores the set by
E_w[max_y wᵀr(y)], w ~ Dir(1, 1): the two corners give E[max(w1, w2)] = 0.75 > 0.6, and with m >= 3 slots
the corners plus the compromise give E[max(w1, w2, 0.6)] = 0.76, the optimum. It is the fastest end-to-end
check of the whole pipeline.
"""
from dataclasses import dataclass

import numpy as np

from tasks.base import Task, in_test_split

WORDS = ("left", "right", "middle")
INVALID_WORDS = ("up", "down", "centre", "none")  # what a demonstration writes in its rare invalid answers
N_IDS = 10_000  # problem ids 0..N_IDS-1; about 1 in 8 of them are test problems


@dataclass(frozen=True)
class ToyProblem:
    id: int

    @property
    def key(self) -> str:
        return f"toy {self.id}"


class ToyTask(Task):
    name = "toy"
    objectives = ["left", "right"]
    deploy_weights = np.array([0.5, 0.5])

    def __init__(self, compromise: float = 0.6, p_invalid: float = 0.05, p_middle: float = 1 / 3):
        """compromise: c in r("middle") = (c, c); p_invalid: chance that a demonstration answer is invalid;
        p_middle: chance that a valid demonstration answer is "middle" (the corners share the rest evenly; 1/3:
        uniform over the three words)."""
        for name, value in (("compromise", compromise), ("p_invalid", p_invalid), ("p_middle", p_middle)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value!r}")
        self.compromise, self.p_invalid, self.p_middle = compromise, p_invalid, p_middle
        self.rewards = {"left": np.array([1.0, 0.0], dtype=np.float32),
                        "right": np.array([0.0, 1.0], dtype=np.float32),
                        "middle": np.array([compromise, compromise], dtype=np.float32)}
        self._ids = {split: [i for i in range(N_IDS) if in_test_split(ToyProblem(i).key) == (split == "test")]
                     for split in ("train", "test")}

    def problems(self, split: str, n: int, seed: int) -> list[ToyProblem]:
        """n distinct problems of the split: ids drawn without replacement by a Generator seeded with (seed, split)."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        ids = self._ids[split]
        if not isinstance(n, int) or not 0 <= n <= len(ids):
            raise ValueError(f"n must be an int in [0, {len(ids)}] for split {split!r}, got {n!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        rng = np.random.default_rng([seed, int(split == "test")])
        return [ToyProblem(ids[i]) for i in rng.choice(len(ids), size=n, replace=False)]

    def prompt(self, problem: ToyProblem, m: int) -> str:
        return f"toy {problem.id}: name {m} of left/right/middle\n"

    def demonstration(self, problem: ToyProblem, m: int, rng: np.random.Generator, style: str = "diverse") -> str:
        """m words drawn with replacement: "middle" with probability p_middle, else a corner, each invalid with
        probability p_invalid."""
        self.check_style(style)
        corner = (1 - self.p_middle) / 2
        answers = [INVALID_WORDS[rng.integers(len(INVALID_WORDS))] if rng.random() < self.p_invalid
                   else WORDS[rng.integers(3)] if self.p_middle == 1 / 3   # uniform: the default's draws, as before
                   else WORDS[rng.choice(3, p=[corner, corner, self.p_middle])] for _ in range(m)]
        return self.format_answers(answers)

    def score(self, problem: ToyProblem, answer: str) -> np.ndarray:
        """r(y): the word's vector for an exact match (surrounding whitespace aside), else (0, 0)."""
        word = answer.strip() if isinstance(answer, str) else ""
        return self.rewards.get(word, np.zeros(2, dtype=np.float32)).copy()

    def solved(self, vector: np.ndarray) -> bool:
        """The answer maximizes the deployment scalar: w*ᵀr >= max(c, 1/2) (the compromise when c >= 1/2)."""
        best = max(self.compromise, 0.5)
        return bool(float(np.dot(self.deploy_weights, vector)) >= best - 1e-6)

    def default_answer_tokens(self) -> int:
        return max(map(len, WORDS)) + 1  # an answer of at most len("middle") = 6 bytes and its end

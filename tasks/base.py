"""
The Task interface and the split rule shared by every task (tasks/__init__.py builds a task by name).

Vector-reward tasks. Every task turns a problem into a prompt, reads m answers out of a completion, and scores
each answer with a reward vector r(x, y) in [0, 1]^D.

    task = get_task("maze")
    probs = task.problems("train", 100, seed=0)
    text = task.prompt(probs[0], m=3)              # what the model is conditioned on
    rewards, mask = task.score_rollouts(probs[0], completions, m=3)   # (G, m, D), (G, m)

Completion format (shared by all tasks): the m answers joined by the answer separator <|sep|>; the sampler
stops at <|end|>, which is not part of the completion text. Answers past the m-th are ignored, missing ones
are '' and score zero. Every answer has its own room of answer_tokens tokens, the whole budget of a
single-answer completion: the sampler closes an answer that fills it (sample.AnswerBudget).
"""
import hashlib

import numpy as np

from tasks.tokenizer import BOS_ID, END_ID, SEP, SEP_ID, decode, encode, encode_special


def weights_line(weights) -> str:
    """The goal-conditioned prompt's last line: the weight vector w the answers will be scored with."""
    return "weights " + " ".join(f"{float(w):.2f}" for w in weights) + "\n"


def in_test_split(key: str) -> bool:
    """The split rule of every task: a problem is a test problem iff a stable hash (blake2b, not Python's salted
    hash) of its canonical key is 0 mod 8. Disjoint by construction, whatever seeds draw the problems."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") % 8 == 0


class Task:
    """The interface train.py and the evaluation use. Subclasses fill in the task-specific methods."""
    name: str = "task"
    objectives: list[str] = []        # the D reward-dimension names
    deploy_weights: np.ndarray = None  # (D,), sums to 1: the fixed scalar w* that GRPO trains on and best@k scores
    demo_styles: tuple = ("diverse",)  # the demonstration styles the task supports

    # --- task-specific -------------------------------------------------------------------------------------
    def problems(self, split: str, n: int, seed: int) -> list:
        """n problems of the split ("train" or "test"); the two splits never share a problem."""
        raise NotImplementedError

    def prompt(self, problem, m: int) -> str:
        """The prompt text asking for m answers."""
        raise NotImplementedError

    def demonstration(self, problem, m: int, rng: np.random.Generator, style: str = "diverse") -> str:
        """A completion with m answers for the supervised warm start (no <|end|>), in one of demo_styles:
        "diverse" shows answers across the trade-offs; "routes" (maze) shows answers chosen without looking at
        the rewards (they teach the format and reaching a valid answer, not which answers score well).
        Unknown styles raise ValueError."""
        raise NotImplementedError

    def score(self, problem, answer: str) -> np.ndarray:
        """Reward vector r(x, y) in [0, 1]^D of one answer string. Never raises; junk scores zeros."""
        raise NotImplementedError

    def solved(self, vector: np.ndarray) -> bool:
        """Whether an answer with this reward vector solves the problem by its reward (what pass@k counts; on the
        code task: every test the reward runs passes)."""
        raise NotImplementedError

    def equals_target(self, problem, answer: str):
        """Whether the answer is the problem's target, however it is written: True or False where the task can
        check it (the code task: the same outputs on the whole input domain), None where it cannot (the default:
        the reward defines the target, and solved() is the whole rule)."""
        return None

    def identity(self, problem):
        """What two problems share when they ask for the same function (a search's hard set keeps one problem of
        each): the default the problem itself; the code task: the target's values on the whole domain."""
        return problem

    def hacks(self, problem, answer: str):
        """{name: True, False or None} of the cheap fits the task's reward can pay for without the target, whose
        shares over answers the training log and the evaluation report as hack rates (None: not counted for this
        problem); None (the default) where the task names none. The code task's: tasks/code.py, CodeTask.hacks."""
        return None

    def solved_hidden(self, problem, answer: str) -> bool:
        """Solved on held-out checks too; tasks without hidden tests fall back to solved(score(...))."""
        return self.solved(self.score(problem, answer))

    # --- what "solved" means to the evaluation and the search ----------------------------------------------
    @property
    def checks_target(self) -> bool:
        """Whether equals_target can answer (the task overrides it): then "solved" means equal to the target."""
        return type(self).equals_target is not Task.equals_target

    @property
    def has_hidden_tests(self) -> bool:
        """Whether the task overrides solved_hidden (held-out checks beyond the reward's)."""
        return type(self).solved_hidden is not Task.solved_hidden

    @property
    def solved_rule(self) -> str:
        """The rule solves() applies, as result files record it: "target" (the answer equals the target) where
        the task can check it, else "reward" (solved(vector))."""
        return "target" if self.checks_target else "reward"

    def solves(self, problem, answer: str, vector=None) -> bool:
        """Solved as the evaluation's pass_target@k and the search count it: the answer equals the target where
        the task can check it (equals_target), else solved(vector) (vector: the answer's reward vector, scored
        here if None)."""
        same = self.equals_target(problem, answer)
        if same is not None:
            return bool(same)
        return self.solved(self.score(problem, answer) if vector is None else vector)

    def plot_axes(self, vectors: np.ndarray):
        """Two coordinates per reward vector (n, D) -> ((n, 2), axis labels) for the answer scatter plots:
        by default the first two objectives."""
        return np.asarray(vectors)[:, :2], tuple(self.objectives[:2])

    # --- the model's tokens: the from-scratch GPT's byte-level tokenizer (tasks/chat.py: a chat model's) --------
    stop_id, sep_id = END_ID, SEP_ID   # what ends a completion; what closes one answer and opens the next

    def prompt_ids(self, problem, m: int, weights=None) -> list[int]:
        """Token ids the model is conditioned on: <|bos|> then the prompt text (never special tokens), and for a
        goal-conditioned prompt a last line with the weights w (goal-conditioned GRPO, docs/paper.md "Baselines")."""
        return [BOS_ID] + encode(self.prompt(problem, m) + ("" if weights is None else weights_line(weights)))

    def demonstration_ids(self, problem, m: int, rng: np.random.Generator, style: str = "diverse") -> list[int]:
        """A demonstration's tokens (our own text, so <|sep|> becomes its id), closed by the stop token."""
        return encode_special(self.demonstration(problem, m, rng, style=style)) + [self.stop_id]

    def completion_text(self, ids) -> str:
        """A completion's tokens -> the text parse reads: decoded, without the final stop token."""
        ids = [int(i) for i in ids]
        return decode(ids[:-1] if ids and ids[-1] == self.stop_id else ids)

    @staticmethod
    def decode(ids) -> str:
        """Tokens -> text as the model wrote it, special tokens by name (what sample.py prints)."""
        return decode(ids)

    def count_tokens(self, text: str) -> int:
        """Tokens of a text in the model's tokenizer (the logs' answer lengths)."""
        return len(encode(text))

    # --- shared --------------------------------------------------------------------------------------------
    def check_style(self, style: str):
        """ValueError unless the task writes demonstrations in this style."""
        if style not in self.demo_styles:
            raise ValueError(f"task {self.name} has no demonstration style {style!r}; "
                             f"its styles: {', '.join(self.demo_styles)}")

    @property
    def dim(self) -> int:
        return len(self.objectives)

    # supervised steps of the task's default warm start (train.py --sft_steps; the code task needs more: see
    # docs/tasks.md, "Calibrating the code task")
    warm_start_steps = 300

    @property
    def answer_tokens(self) -> int:
        """The room of one answer, in tokens: a single-answer completion's whole budget (its <|end|> included).
        Every answer of an m-answer completion gets this same room (sample.AnswerBudget): one answer never takes
        another's tokens. The task's default (default_answer_tokens) unless set with the option answer_tokens."""
        return getattr(self, "_answer_tokens", None) or self.default_answer_tokens()

    def default_answer_tokens(self) -> int:
        """Task-specific: tokens enough for the longest demonstration answer and its closing token."""
        raise NotImplementedError

    def set_answer_tokens(self, n: int):
        """The option answer_tokens=n (any task): ValueError unless n is an int >= 2 (an answer and its end)."""
        if type(n) is not int or n < 2:
            raise ValueError(f"answer_tokens must be an int >= 2 (one answer token and its closing token), got {n!r}")
        self._answer_tokens = n

    def check_demonstration(self, text: str, m: int):
        """ValueError unless every answer of a demonstration, with its closing separator or <|end|>, fits the
        answer's room (answer_tokens): a warm start must never show an answer the sampler would cut."""
        for answer in text.split(SEP)[:m]:
            need = len(encode(answer)) + 1
            if need > self.answer_tokens:
                raise ValueError(f"answer_tokens={self.answer_tokens} is below what a demonstration answer needs "
                                 f"({need} tokens, its end included)")

    def max_new_tokens(self, m: int) -> int:
        """The longest completion of m answers: m answers of answer_tokens each, and after each but the last the
        separator the sampler writes when that answer fills its room. m = 1: exactly answer_tokens."""
        return m * self.answer_tokens + m - 1

    def parse(self, completion: str, m: int) -> list[str]:
        """Exactly m answer strings: split on <|sep|>, strip spaces, drop extras, pad with ''."""
        answers = [a.strip() for a in completion.split(SEP)][:m]
        return answers + [""] * (m - len(answers))

    @staticmethod
    def format_answers(answers: list[str]) -> str:
        """Inverse of parse for clean answers: join with <|sep|>."""
        return SEP.join(answers)

    def canonical(self, problem, answer: str):
        """What makes two answers the same answer, for de-duplication: the answer itself here; a task whose
        answers can differ in writing only (spacing, moves that change nothing) returns a normal form, so that a
        summed set reward (Multi-RLVR) cannot be paid twice for one answer written two ways."""
        return answer

    def score_rollouts(self, problem, completions: list[str], m: int):
        """G completions of one prompt -> rewards (G, m, D) float32 and answer_mask (G, m) bool.

        An answer is masked out when it is missing ('') or repeats an earlier answer of the same rollout, by
        canonical (duplicates count once, as in the paper). Masked answers get zero vectors.
        """
        G, D = len(completions), self.dim
        rewards = np.zeros((G, m, D), dtype=np.float32)
        mask = np.zeros((G, m), dtype=bool)
        cache = {}  # the same answer string often appears in many rollouts of one group
        for g, completion in enumerate(completions):
            seen = set()
            for j, answer in enumerate(self.parse(completion, m)):
                key = self.canonical(problem, answer) if answer else None
                if answer == "" or key in seen:
                    continue
                seen.add(key)
                if answer not in cache:
                    cache[answer] = self.score(problem, answer)
                rewards[g, j] = cache[answer]
                mask[g, j] = True
        return rewards, mask

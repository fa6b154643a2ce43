"""
Our tasks for a pretrained chat model: the prompt it reads, the numbered tags it writes its m answers in, and each
answer's room in its own tokens. ChatTask wraps any Task; train.py, sample.py and evaluate.py use it like the task.

A pretrained instruct model has no <|sep|> token and has never seen one. So the prompt explains the task and asks
for each answer between its own numbered tags, one a line:

    <answer1>RRDDRRRUURRDDRDDDDDD</answer1>
    <answer2>RDDDDDRDDDLRRRRRRR</answer2><|im_end|>

answers_text maps that back to the task's format before Task.parse and Task.score_rollouts see it: the contents of
the first m complete tag pairs, in the order written, joined by <|sep|>. Text outside the tags is ignored; a tag
left open (an answer cut by its room) is no answer; a <|sep|> written inside an answer becomes a space, so that it
cannot split one answer into two. The authors' maze prompt also asks for "m genuinely different routes", each in
its own tag (docs/paper.md, "Tasks").

The sampler's rule (sample.AnswerBudget) needs one token that closes an answer and opens the next: here the
newline's own token. The demonstrations write it alone after each closing tag, even under a split pattern that
would join it to the ">" before it (Qwen2's; GPT-2's, SmolLM2's, keeps ">" and "\\n" apart anyway). A non-final
answer that fills its room is closed by a newline the policy did not sample, so its tag stays open and it scores
nothing; the final answer ends the completion at <|im_end|>.

The room (answer_room). A real tokenizer's tokens are not bytes, so the room is measured in the model's tokens on
the task's demonstrations: the most tokens any demonstration answer takes with its tags and closing token, over the
demonstrations of ROOM_PROBLEMS training problems, plus the task's own slack beyond its longest demonstration
answer (answer_tokens minus that answer's bytes and its end), one token per byte.

The tokenizer is passed in (pretrained.py builds it from the model's own files); ChatTask needs its encode (plain
text), encode_special (our own text, special-token names become ids), decode, chat(user) (the conversation of one
user message, ending where the assistant's turn begins) and eos_id (the end of the assistant's turn).
"""
import bisect
import re

import numpy as np

from tasks.base import weights_line
from tasks.code import X_MAX, CodeTask
from tasks.maze import MazeTask
from tasks.tokenizer import SEP
from tasks.toy import ToyTask

ROOM_PROBLEMS = 64          # training problems whose demonstrations size an answer's room
TAG = re.compile(r"<answer(\d*)>(.*?)</answer\1>", re.S)   # one answer: its number J (or none) and its content
OPEN, CLOSE = re.compile(r"<answer(\d*)>"), re.compile(r"</answer(\d*)>")   # TAG's two ends

BONUS = {"linear": "floor", "convex_bonus": "bonus tile (entering it before E raises the item rewards)"}


def task_instructions(task, problem, m):
    """What an instruction model must know to answer one of our tasks (Task.prompt follows it). A task defined
    elsewhere may define instructions(problem, m) -> str; else it is told nothing beyond its prompt."""
    own = getattr(task, "instructions", None)
    if callable(own):
        return own(problem, m)
    if isinstance(task, ToyTask):
        return "Name words from left, right and middle."
    if isinstance(task, MazeTask):
        return (f"Below is a maze, one row per line: # wall, . floor, S start, E exit, G gold, * diamond, ~ lava, "
                f"+ {BONUS[task.reward]}. A route is a string of the moves U, D, L and R (up, down, left, right) "
                f"walked from S. A move into a wall stays in place. Only the first {problem.budget} moves of a route "
                f"count. A route earns nothing unless it reaches E; then it earns for the gold and the diamonds it "
                f"enters and loses for the lava it enters.")
    if isinstance(task, CodeTask):
        return (f"Below are values f(x)=y of an unknown integer function f on the integers from -{X_MAX} to {X_MAX}. "
                f"Write a Python expression in x that computes f. Use only integers, x, + - * // %, comparisons, and, "
                f"or, not, 'a if c else b', abs, min and max, in at most {task.answer_tokens - 1} characters.")
    return ""


def user_text(task, problem, m):
    """The user's message: what the task is, the task's own prompt, and the request for m tagged answers."""
    lines = "\n".join(f"<answer{j}>...</answer{j}>" for j in range(1, m + 1))
    ask = (f"Write {m} genuinely different answers, each between its own numbered tags, one a line, and "
           f"nothing else inside the tags:" if m > 1 else
           "Write your answer between the tags, and nothing else inside them:")
    about = task_instructions(task, problem, m)
    return "\n\n".join(x for x in (about, task.prompt(problem, m).rstrip("\n"), f"{ask}\n{lines}") if x)


def tagged(answers):
    """Each answer as the model writes it, between its numbered tags (what closes it aside)."""
    return [f"<answer{j}>{a}</answer{j}>" for j, a in enumerate(answers, 1)]


def answers_text(text, m):
    """The model's completion -> the task's format: the contents of the first m complete <answerJ>...</answerJ>
    pairs, in the order written, joined by <|sep|>. Text outside the tags is ignored, a tag left open is no answer,
    and a separator inside an answer becomes a space (it cannot split one answer into two). The pairs are those of
    the regular expression TAG's findall; they are found here in time linear in the text (TAG's lazy match costs
    time quadratic in the text when many tags are left open, and the text is the model's)."""
    text = text if isinstance(text, str) else ""
    closes = {}                                         # J -> where each </answerJ> starts, ascending
    for c in CLOSE.finditer(text):
        closes.setdefault(c.group(1), []).append(c.start())
    answers, pos = [], 0
    while len(answers) < m:
        opened = OPEN.search(text, pos)
        if opened is None:
            break
        ends = closes.get(opened.group(1), [])
        k = bisect.bisect_left(ends, opened.end())      # the first </answerJ> after the tag
        if k == len(ends):
            pos = opened.start() + 1                    # left open: the next tag
            continue
        answers.append(text[opened.end():ends[k]].replace(SEP, " ").strip())
        pos = ends[k] + len(f"</answer{opened.group(1)}>")
    return SEP.join(answers)


def answer_room(task, answer_texts, count_tokens, m, closing=1, seed=0, n=ROOM_PROBLEMS):
    """The room of one answer in the model's tokens (module docstring). answer_texts(answers) -> each answer as the
    model writes it, what closes it aside; closing: the tokens that close an answer beyond that text;
    count_tokens(text) -> tokens of text, no special tokens added. -> (room, (longest demonstration answer's tokens,
    the task's slack)). ValueError where the task writes no demonstration of m answers."""
    rng = np.random.default_rng(seed)
    most_tokens = most_bytes = 0
    for problem in task.problems("train", n, seed=seed):
        answers = task.demonstration(problem, m, rng).split(SEP)[:m]
        for answer, text in zip(answers, answer_texts(answers)):
            most_tokens = max(most_tokens, count_tokens(text) + closing)
            most_bytes = max(most_bytes, len(answer.encode()))
    slack = max(0, task.answer_tokens - most_bytes - 1)
    return most_tokens + slack, (most_tokens, slack)


class ChatTask:
    """A task as a chat model reads and writes it (module docstring): the task's problems, rewards and names, with
    its prompts, demonstrations and completions in the model's tokens. m: the most answers a prompt asks for
    (the room is sized for the widest tags)."""

    def __init__(self, task, tokenizer, m):
        self.task, self.tk = task, tokenizer
        newline = tokenizer.encode("\n")
        if len(newline) != 1:
            raise ValueError(f"the tokenizer writes a newline as {len(newline)} tokens; the answers' separator "
                             f"must be one")
        if tokenizer.eos_id is None:
            raise ValueError("the tokenizer names no end-of-text token (eos), which ends the model's turn")
        tokenizer.chat("")   # the prompt's template: a tokenizer that cannot write it is refused here, in one line
        self.sep_id, self.stop_id = newline[0], tokenizer.eos_id
        self.room, _ = answer_room(task, tagged, lambda t: len(tokenizer.encode(t)), m)

    def __getattr__(self, name):   # problems, score, objectives, deploy_weights, parse, score_rollouts, ...: the task's
        return getattr(self.task, name)

    @property
    def answer_tokens(self):
        return self.room

    def max_new_tokens(self, m):
        """m rooms and the newline the sampler writes after each full answer but the last."""
        return m * self.room + m - 1

    def prompt_ids(self, problem, m, weights=None):
        """The conversation of one user message (user_text, a goal-conditioned prompt's weights line last), to where
        the assistant's turn begins."""
        text = user_text(self.task, problem, m) + ("" if weights is None else "\n" + weights_line(weights).rstrip("\n"))
        return self.tk.encode_special(self.tk.chat(text))

    def demonstration_ids(self, problem, m, rng, style="diverse"):
        """The task's demonstration, each answer in its tags, one a line, then the end of the turn. Each line is
        encoded alone and the newline is the separator's own token, as the sampler writes it, even where the
        tokenizer's split would join it to the closing ">" (Qwen2's)."""
        answers = self.task.demonstration(problem, m, rng, style=style).split(SEP)[:m]
        lines = [self.tk.encode(line) for line in tagged(answers)]
        return [i for j, line in enumerate(lines) for i in ([self.sep_id] if j else []) + line] + [self.stop_id]

    def check_demonstration(self, text, m):
        """ValueError unless every answer of a demonstration, in its tags with its closing token, fits the room."""
        for answer in tagged(text.split(SEP)[:m]):
            need = len(self.tk.encode(answer)) + 1
            if need > self.room:
                raise ValueError(f"an answer's room of {self.room} tokens is below what a demonstration answer needs "
                                 f"({need} tokens, its end included)")

    def completion_text(self, ids):
        """The model's tokens -> the task's format (answers_text); every complete tag pair, parse keeps m."""
        ids = [int(i) for i in ids]
        return answers_text(self.tk.decode(ids[:-1] if ids and ids[-1] == self.stop_id else ids), len(ids) + 1)

    def decode(self, ids):
        return self.tk.decode([int(i) for i in ids])

    def count_tokens(self, text):
        return len(self.tk.encode(text))

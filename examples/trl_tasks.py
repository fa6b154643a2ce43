"""
The repository's tasks for a pretrained model in TRL (examples/trl_vpo.py): the prompt the model reads, the format
it writes its m answers in and how that maps back to the task's, and the room of a completion. Plain Python, no
TRL: a tokenizer is passed in where one is needed.

Two answer formats. NativeFormat is the task's own: the prompt is Task.prompt and the m answers are joined by the
separator <|sep|>, which the example's own tokenizers hold as a token (the tiny GPT-2 built in place). TagFormat is
for a pretrained model, which has no <|sep|> token and has never seen one: the prompt explains the task and asks
for each answer between its own numbered tags,

    <answer1>RRDDRRRUURRDDRDDDDDD</answer1>
    <answer2>RDDDDDRDDDLRRRRRRR</answer2>

and to_task maps that back to the task's format before Task.parse and Task.score_rollouts see it: the contents of
the first m complete tag pairs, in the order written, joined by <|sep|>. Text outside the tags is ignored; a tag
left open (a completion cut by its budget) is no answer; a separator the model spells inside an answer becomes a
space, so that it cannot split one answer into two. The authors' maze prompt also asks for "m genuinely different
routes", each in its own tag (docs/paper.md, "Tasks").

The room (answer_room). train.py gives each answer its own room of Task.answer_tokens tokens of our byte-level
tokenizer. A real tokenizer's tokens are not bytes, so the room is measured in the model's tokens on the task's
demonstrations: the most tokens any demonstration answer takes in the model's format (with its tags and newline,
or its closing separator), over the demonstrations of ROOM_PROBLEMS training problems, plus the task's own slack
beyond its longest demonstration answer (answer_tokens minus that answer's bytes and its end), one token per byte.
The completion's budget is m rooms; the tag format adds one token for the end of the turn and PREAMBLE_TOKENS for
a sentence an instruction model may write before its answers. TRL has one budget for the whole completion, not
a room per answer (docs/trl.md, "No room per answer in TRL").
"""
import bisect
import re

import numpy as np

from tasks.code import X_MAX, CodeTask
from tasks.maze import MazeTask
from tasks.tokenizer import SEP
from tasks.toy import ToyTask

ROOM_PROBLEMS = 64          # training problems whose demonstrations size an answer's room
PREAMBLE_TOKENS = 32        # the tag format's budget for a sentence before the answers
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


class NativeFormat:
    """The task's own format: Task.prompt, answers joined by the <|sep|> token (the tokenizer must hold it)."""
    name = "native"
    closing = 1     # the token that closes an answer (<|sep|>, or the end after the last), not in answer_texts
    end_tokens = 0  # the last answer's room holds the end of the completion
    preamble_tokens = 0  # a model trained on this format writes nothing before its answers

    def prompt_text(self, task, problem, m):
        return task.prompt(problem, m)

    def answer_texts(self, answers):
        """Each answer as the model writes it, what closes it aside."""
        return list(answers)

    def to_task(self, text, m):
        return text


class TagFormat:
    """Each answer between numbered tags <answerJ>...</answerJ>, one a line; mapped back to <|sep|> by to_task."""
    name = "tags"
    closing = 0     # the tags and the newline close an answer, in answer_texts
    end_tokens = 1  # the end-of-turn token after the last answer
    preamble_tokens = PREAMBLE_TOKENS

    def prompt_text(self, task, problem, m):
        about = task_instructions(task, problem, m)
        lines = "\n".join(f"<answer{j}>...</answer{j}>" for j in range(1, m + 1))
        ask = (f"Write {m} genuinely different answers, each between its own numbered tags, one a line, and "
               f"nothing else inside the tags:" if m > 1 else
               "Write your answer between the tags, and nothing else inside them:")
        return "\n\n".join(x for x in (about, task.prompt(problem, m).rstrip("\n"), f"{ask}\n{lines}") if x)

    def answer_texts(self, answers):
        return [f"<answer{j}>{a}</answer{j}>\n" for j, a in enumerate(answers, 1)]

    def to_task(self, text, m):
        """The model's completion -> the task's format: the first m complete tag pairs' contents joined by <|sep|>."""
        return answers_text(text, m)


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


def render_prompt(fmt, task, problem, m, chat):
    """The dataset's prompt: a conversation of one user message where the tokenizer has a chat template (TRL applies
    the template only to conversational prompts), else the plain text."""
    text = fmt.prompt_text(task, problem, m)
    return [{"role": "user", "content": text}] if chat else text


def prompt_ids(tk, prompt, chat_template_kwargs=None):
    """A data set prompt's token ids as TRL builds them: the chat template (with GRPOConfig's chat_template_kwargs,
    e.g. {"enable_thinking": false}) for a conversation, else the text with the tokenizer's special tokens."""
    if isinstance(prompt, str):
        return tk(prompt)["input_ids"]
    text = tk.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False, **(chat_template_kwargs or {}))
    return tk(text, add_special_tokens=False)["input_ids"]


def answer_room(task, fmt, count_tokens, m, seed=0, n=ROOM_PROBLEMS):
    """The room of one answer in the model's tokens (module docstring). count_tokens(text) -> tokens of text, no
    special tokens added. -> (room, (longest demonstration answer's tokens, the task's slack)). ValueError where the
    task writes no demonstration of m answers."""
    rng = np.random.default_rng(seed)
    most_tokens = most_bytes = 0
    for problem in task.problems("train", n, seed=seed):
        answers = task.demonstration(problem, m, rng).split(SEP)[:m]
        for answer, text in zip(answers, fmt.answer_texts(answers)):
            most_tokens = max(most_tokens, count_tokens(text) + fmt.closing)
            most_bytes = max(most_bytes, len(answer.encode()))
    slack = max(0, task.answer_tokens - most_bytes - 1)
    return most_tokens + slack, (most_tokens, slack)


def completion_budget(fmt, room, m):
    """max_completion_length of m answers: m rooms, the end of the turn, and room for a short preamble (the tag
    format's sentence before the answers, such as "Here are three routes:")."""
    return m * room + fmt.end_tokens + fmt.preamble_tokens

"""
The repository's tasks for a pretrained model in TRL (examples/trl_vpo.py): the prompt the model reads, the format
it writes its m answers in and how that maps back to the task's, and the room of a completion. Plain Python, no
TRL: a tokenizer is passed in where one is needed.

Two answer formats. NativeFormat is the task's own: the prompt is Task.prompt and the m answers are joined by the
separator <|sep|>, which the example's own tokenizers hold as a token (the tiny GPT-2 built in place). TagFormat is
for a pretrained model, which has no <|sep|> token and has never seen one: each answer between its own numbered
tags, as the repository's own trainer asks a chat model for them (tasks/chat.py: the prompt, the tags, answers_text
and the room of an answer in the model's tokens).

The completion's budget is m rooms; the tag format adds one token for the end of the turn and PREAMBLE_TOKENS for
a sentence an instruction model may write before its answers. TRL has one budget for the whole completion, not
a room per answer (docs/trl.md, "No room per answer in TRL").
"""
from tasks.chat import TAG, answers_text, task_instructions, user_text  # noqa: F401 (TAG, answers_text: verl_vpo's)
from tasks.chat import answer_room as room_of
from tasks.tokenizer import SEP

PREAMBLE_TOKENS = 32        # the tag format's budget for a sentence before the answers


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
        return user_text(task, problem, m)

    def answer_texts(self, answers):
        return [f"<answer{j}>{a}</answer{j}>\n" for j, a in enumerate(answers, 1)]

    def to_task(self, text, m):
        """The model's completion -> the task's format: the first m complete tag pairs' contents joined by <|sep|>."""
        return answers_text(text, m)


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


def answer_room(task, fmt, count_tokens, m, seed=0):
    """The room of one answer in the model's tokens, in the format fmt (tasks/chat.py:answer_room). -> (room,
    (longest demonstration answer's tokens, the task's slack)). ValueError where the task writes no demonstration
    of m answers."""
    return room_of(task, fmt.answer_texts, count_tokens, m, closing=fmt.closing, seed=seed)


def completion_budget(fmt, room, m):
    """max_completion_length of m answers: m rooms, the end of the turn, and room for a short preamble (the tag
    format's sentence before the answers, such as "Here are three routes:")."""
    return m * room + fmt.end_tokens + fmt.preamble_tokens

"""Our tasks on a chat model (tasks/chat.py): the conversation, the numbered tags, the newline that closes an answer,
each answer's room in the model's tokens, and the rollout and warm start through ChatTask. A byte-level tiktoken
with ChatML's special tokens stands in for a real model's tokenizer (tests/test_trl_smollm2_*.py: SmolLM2's)."""
import numpy as np
import pytest
import tiktoken
import torch

from model import GPT, GPTConfig
from sample import AnswerBudget, answer_budget, generate, rollout
from sft import SFTConfig, demonstration_batch
from tasks import get_task
from tasks.chat import ChatTask, answers_text, tagged, user_text
from tasks.tokenizer import SEP


class ByteChat:
    """A chat tokenizer of single bytes (0-255) and ChatML's two special tokens, with the interface ChatTask needs."""
    START, END = "<|im_start|>", "<|im_end|>"

    def __init__(self):
        self.enc = tiktoken.Encoding(name="byte-chat", pat_str=r"\S+|\s+",
                                     mergeable_ranks={bytes([b]): b for b in range(256)},
                                     special_tokens={self.START: 256, self.END: 257})
        self.eos_id, self.vocab_size = 257, 258

    def encode(self, text):
        return self.enc.encode_ordinary(text)

    def encode_special(self, text):
        return self.enc.encode(text, allowed_special="all")

    def decode(self, ids):
        return self.enc.decode(list(ids), errors="replace")

    def chat(self, user):
        return f"{self.START}user\n{user}{self.END}\n{self.START}assistant\n"


def test_a_demonstration_is_tagged_lines_and_reads_back_as_the_task_answers():
    """A demonstration: each answer in its numbered tags, one a line, then <|im_end|>; completion_text maps it back to
    the task's <|sep|>-joined answers, which score as the task scores them."""
    tk, task = ByteChat(), get_task("toy")
    chat = ChatTask(task, tk, 2)
    problem, rng = task.problems("train", 1, seed=0)[0], np.random.default_rng(0)
    answers = task.demonstration(problem, 2, np.random.default_rng(0)).split(SEP)
    ids = chat.demonstration_ids(problem, 2, rng)
    assert tk.decode(ids) == f"<answer1>{answers[0]}</answer1>\n<answer2>{answers[1]}</answer2><|im_end|>"
    assert chat.completion_text(ids) == SEP.join(answers)
    rewards, mask = chat.score_rollouts(problem, [chat.completion_text(ids)], 2)
    assert mask.all() and np.allclose(rewards[0], [task.score(problem, a) for a in answers])
    prompt = tk.decode(chat.prompt_ids(problem, 2))
    assert prompt == f"<|im_start|>user\n{user_text(task, problem, 2)}<|im_end|>\n<|im_start|>assistant\n"
    assert "<answer2>...</answer2>" in prompt and task.prompt(problem, 2).strip() in prompt
    assert chat.sep_id == 10 and chat.stop_id == 257


class JoinedChat(ByteChat):
    """A split that joins a closing ">" and the newline after it into one token (258), as Qwen2's does."""

    def __init__(self):
        self.enc = tiktoken.Encoding(name="joined-chat", pat_str=r"[^\n]*\n?",
                                     mergeable_ranks={**{bytes([b]): b for b in range(256)}, b">\n": 258},
                                     special_tokens={self.START: 256, self.END: 257})
        self.eos_id, self.vocab_size = 257, 259


def test_a_demonstration_closes_each_answer_with_the_newline_token_whatever_the_split():
    """Under a split that would join ">" and the newline, a demonstration still writes the newline's own token after
    each answer but the last, as the sampler's answer budget counts it, and reads back as the same text."""
    tk, task = JoinedChat(), get_task("maze")
    assert tk.encode("</answer1>\n<answer2>")[9] == 258                  # the plain encoding joins them
    chat = ChatTask(task, tk, 3)
    for problem in task.problems("train", 4, seed=0):
        ids = chat.demonstration_ids(problem, 3, np.random.default_rng(0))
        answers = task.demonstration(problem, 3, np.random.default_rng(0)).split(SEP)
        assert ids.count(10) == 2 and 258 not in ids and ids[-1] == 257
        assert tk.decode(ids[:-1]) == "\n".join(tagged(answers))


def test_a_tokenizer_without_an_end_token_or_the_chat_template_is_refused():
    """ChatTask refuses, as a ValueError (one line from train.py), a tokenizer that names no eos or cannot write
    the chat template, rather than failing later inside the warm start."""
    tk = ByteChat()
    tk.eos_id = None
    with pytest.raises(ValueError, match="end-of-text"):
        ChatTask(get_task("toy"), tk, 2)

    class NoTemplate(ByteChat):
        def chat(self, user):
            raise ValueError("this tokenizer has no ChatML tokens")
    with pytest.raises(ValueError, match="ChatML"):
        ChatTask(get_task("toy"), NoTemplate(), 2)


def test_answers_text_keeps_complete_pairs_and_model_text_cannot_split_an_answer():
    assert answers_text("Sure!\n<answer1>a</answer1>\n<answer2>b</answer2>", 2) == f"a{SEP}b"
    assert answers_text("<answer1>a</answer1>\n<answer2>bbb", 2) == "a"                 # left open: no answer
    assert answers_text(f"<answer1>a{SEP}b</answer1>", 2) == "a b"                       # no split inside an answer
    assert answers_text("<answer2>b</answer2><answer1>a</answer1>", 1) == "b"             # the order written
    assert answers_text(None, 2) == "" and answers_text("<answer1>" * 5000, 3) == ""


def test_the_room_fits_every_demonstration_and_is_the_task_slack_beyond_the_longest():
    """Room = the longest tagged demonstration answer in the model's tokens, its closing token, and the task's slack
    (answer_tokens minus the longest answer's bytes and its end); every demonstration fits it."""
    tk = ByteChat()
    for name, m in (("toy", 2), ("maze", 3), ("code", 3)):
        task = get_task(name)
        chat = ChatTask(task, tk, m)
        rng = np.random.default_rng(0)
        longest = max(len(a.encode()) for p in task.problems("train", 64, seed=0)
                      for a in task.demonstration(p, m, rng).split(SEP)[:m])
        # one byte a token: the tags of answer J cost len("<answerJ></answerJ>") = 19 tokens, the newline one more
        assert chat.answer_tokens == longest + 19 + 1 + max(0, task.answer_tokens - longest - 1), name
        assert chat.max_new_tokens(m) == m * chat.answer_tokens + m - 1
        assert answer_budget(chat, m) == AnswerBudget(m, chat.answer_tokens, 10)
        rng = np.random.default_rng(1)
        for p in task.problems("train", 16, seed=1):
            chat.check_demonstration(task.demonstration(p, m, rng), m)
    with pytest.raises(ValueError, match="room of"):
        ChatTask(get_task("toy"), tk, 2).check_demonstration("x" * 500, 1)


def test_a_full_answer_is_closed_by_a_forced_newline_and_scores_nothing():
    """A policy that never closes its tags: each non-final answer fills its room and gets a newline it did not
    sample, so its tag stays open; the completion then holds no answer, and scores zero, never an error."""
    tk = ByteChat()
    chat = ChatTask(get_task("toy"), tk, 2)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tk.vocab_size, block_size=512, n_layer=1, n_head=2, n_embd=32)).eval()
    with torch.no_grad():
        model.lm_head = torch.nn.Linear(32, tk.vocab_size)
        model.lm_head.weight.copy_(model.wte.weight)
        model.lm_head.bias.zero_()[ord("a")] = 30.0
    problem = chat.problems("test", 1, seed=0)[0]
    gen = generate(model, [chat.prompt_ids(problem, 2)], chat.max_new_tokens(2), 2, temperature=1.0,
                   stop_token=chat.stop_id, budget=answer_budget(chat, 2), generator=torch.Generator().manual_seed(0))
    row = gen.tokens[0][gen.mask[0]].tolist()
    R = chat.answer_tokens
    assert row == [ord("a")] * R + [10] + [ord("a")] * R and gen.forced[0].sum() == 1
    assert chat.completion_text(row) == ""
    rewards, mask = chat.score_rollouts(problem, [chat.completion_text(row)], 2)
    assert not mask.any() and not rewards.any()


def test_rollout_and_warm_start_batches_run_through_the_chat_task():
    """rollout scores a chat model's completions through ChatTask, and the warm start's batch holds the tagged
    demonstrations after the conversation, closed by <|im_end|>."""
    tk = ByteChat()
    chat = ChatTask(get_task("maze"), tk, 3)
    model = GPT(GPTConfig(vocab_size=tk.vocab_size, block_size=2048, n_layer=1, n_head=2, n_embd=32)).eval()
    problems = chat.problems("train", 2, seed=0)
    gen, prompts, texts, rewards, mask = rollout(model, chat, problems, 3, 2, 1.0,
                                                 generator=torch.Generator().manual_seed(0))
    assert rewards.shape == (2, 2, 3, chat.dim) and mask.shape == (2, 2, 3) and len(texts) == 4
    assert all(tk.decode(p).startswith("<|im_start|>user\n") for p in prompts)
    cfg = SFTConfig(steps=1, batch_size=4, lr=1e-3, num_answers=3, base_seed=0, style="routes", group=1)
    prompts, tokens, tmask = demonstration_batch(chat, cfg, 0)
    for row, keep in zip(tokens.tolist(), tmask.tolist()):
        text = tk.decode([t for t, k in zip(row, keep) if k])
        assert text.startswith("<answer1>") and text.endswith("<|im_end|>"), text

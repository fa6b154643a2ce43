"""examples/trl_vpo.py's modules without TRL (plain torch and the core): VPO's set reward as TRL's reward function
(vpo.set_rewards, and a brute force), the weights shared by a group even across calls, the tag format of a
pretrained model's answers and its map back to <|sep|>, the answer's room, and the evaluation's numbers, by hand and
against evaluate.evaluate on the same completions. The command line and the runs through TRL: tests/test_trl_vpo.py."""
import json
import os
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import evaluate  # noqa: E402
import vpo  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402
from tasks.toy import ToyProblem, ToyTask  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples"))  # importing them imports no trl
import trl_reward  # noqa: E402
import trl_tasks  # noqa: E402

VECTORS = {"left": (1.0, 0.0), "right": (0.0, 1.0), "middle": (0.6, 0.6)}  # the toy's r(y), written out again
COMPLETIONS = [f"left {SEP} right", f"right{SEP}left", f"middle {SEP} middle", "left", "", f"junk {SEP} right",
               f"left {SEP} right {SEP} middle", "left right"]  # 8 of them: repeats, missing, junk, extras, no sep


def brute_force(completion, weights, m):
    """R = (1/N) sum_n max over the completion's distinct non-empty answers (the first m) of w_n^T r, 0 if none."""
    answers = {a.strip() for a in completion.split(SEP)[:m]} - {""}
    if not answers:
        return 0.0
    return sum(max(w[0] * VECTORS.get(a, (0, 0))[0] + w[1] * VECTORS.get(a, (0, 0))[1] for a in answers)
               for w in weights.tolist()) / len(weights)


def batch(prompt_ids=(11, 12)):
    """Two groups of the 8 completions, each group's completions adjacent, as TRL hands them over."""
    task = ToyTask()
    prompts = [task.prompt(ToyProblem(i), 2) for i in prompt_ids for _ in COMPLETIONS]
    return prompts, COMPLETIONS * len(prompt_ids), [i for i in prompt_ids for _ in COMPLETIONS]


def as_tags(completion):
    """A completion of the task's format written as a pretrained model is asked to: numbered tags, with prose."""
    answers = completion.split(SEP)
    return "Here they are:\n" + "".join(f"<answer{j}> {a} </answer{j}>\n" for j, a in enumerate(answers, 1)) + "Done."


# --- without TRL: the rewards -------------------------------------------------------------------------------------

def test_the_rewards_are_the_set_rewards_of_vpo():
    """What the function hands TRL is vpo.set_rewards on Task.score_rollouts' answers, under the weights it drew,
    and equals a brute force over the answers (repeats once, missing and junk zero, answers past m ignored)."""
    task, m = ToyTask(), 2
    reward = trl_reward.SetReward(task, m, ToyProblem, num_weights=50, seed=1)
    prompts, completions, ids = batch()
    out = reward(prompts, completions, problem_id=ids, trainer_state=SimpleNamespace(global_step=7))
    W = reward.last_weights                                                          # (16, N, D)
    assert [round(x, 6) for x in out] == [round(brute_force(c, w, m), 6) for c, w in zip(completions, W)]
    for b, prompt in enumerate(dict.fromkeys(prompts)):
        rows = slice(b * len(COMPLETIONS), (b + 1) * len(COMPLETIONS))
        r, mask = task.score_rollouts(ToyProblem(ids[rows][0]), completions[rows], m)
        R = vpo.set_rewards(torch.from_numpy(r)[None], torch.from_numpy(mask)[None], reward.weights(7, ids[rows][0]))
        assert torch.equal(torch.tensor(out[rows]), R[0])
    assert out[0] == out[1] and out[0] > 0.6 and out[6] == out[0]   # {left, right}, in either order; 3rd ignored
    assert out[2] == pytest.approx(0.6) and out[4] == 0.0 and out[7] == 0.0


def test_grpo_rewards_the_first_answer_with_the_deployment_weights():
    reward = trl_reward.SetReward(ToyTask(), 1, ToyProblem, algo="grpo")
    out = reward(["p"] * 4, ["middle", "left", f"left {SEP} middle", "up"], problem_id=[1] * 4)
    assert out == pytest.approx([0.6, 0.5, 0.5, 0.0]) and reward.last_weights is None


def test_rows_are_grouped_and_scored_by_problem_id_not_by_prompt_text():
    """Two problems behind one prompt text (and one problem's rows split by another's): each row is scored against
    its own problem_id's problem, under that problem's weights."""
    task, m = ToyTask(), 2
    reward = trl_reward.SetReward(task, m, ToyProblem, num_weights=20, seed=1)
    out = reward(["same text"] * 4, [f"left {SEP} right"] * 4, problem_id=[3, 4, 3, 4],
                 trainer_state=SimpleNamespace(global_step=2))
    W = reward.last_weights
    assert torch.equal(W[0], W[2]) and torch.equal(W[1], W[3]) and not torch.allclose(W[0], W[1])
    assert torch.equal(W[0], reward.weights(2, 3)[0]) and torch.equal(W[1], reward.weights(2, 4)[0])
    assert out[0] == out[2] and out[1] == out[3] and out[0] != out[1]      # same answers, each problem's weights
    seen = []
    spy = trl_reward.SetReward(task, m, lambda pid: seen.append(pid) or ToyProblem(pid), num_weights=5)
    spy(["same text"] * 4, ["left"] * 4, problem_id=[3, 4, 3, 4])
    assert seen == [3, 4]


def test_the_reward_function_needs_vpo_py_alone():
    """trl_reward.py is the part to copy: it imports the standard library, torch and the repository's vpo.py only."""
    import ast
    with open(os.path.join(ROOT, "examples", "trl_reward.py")) as f:
        tree = ast.parse(f.read())
    imported = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"hashlib", "torch", "vpo"}, imported


def test_the_weights_are_shared_by_a_group_even_across_calls_and_differ_across_groups_and_steps():
    """Every completion of a group is scored under the same N weights, also when the group is cut across two calls
    (two processes each holding part of it); another prompt or another step has other weights."""
    reward = trl_reward.SetReward(ToyTask(), 2, ToyProblem, num_weights=50, seed=1)
    prompts, completions, ids = batch()
    G, step = len(COMPLETIONS), SimpleNamespace(global_step=7)
    out = reward(prompts, completions, problem_id=ids, trainer_state=step)
    W = reward.last_weights                                                          # (2G, N, D)
    assert all(torch.equal(W[i], W[0]) for i in range(G)) and all(torch.equal(W[i], W[G]) for i in range(G, 2 * G))
    assert not torch.allclose(W[0], W[G])
    assert out[:G] != out[G:]                                                        # same answers, other weights
    cut = G // 2 + 1                                                                 # a slice ends inside group 0
    head = reward(prompts[:cut], completions[:cut], problem_id=ids[:cut], trainer_state=step)
    tail = reward(prompts[cut:], completions[cut:], problem_id=ids[cut:], trainer_state=step)
    assert head + tail == pytest.approx(out, rel=1e-6)
    reward(prompts, completions, problem_id=ids, trainer_state=SimpleNamespace(global_step=8))
    assert not torch.allclose(reward.last_weights[0], W[0])
    assert torch.allclose(W.sum(-1), torch.ones(2 * G, W.shape[1])) and (W >= 0).all()           # on the simplex


def test_conversations_in_the_tag_format_get_the_rewards_of_the_same_answers_in_the_task_format():
    """A chat model's prompts and completions reach the reward function as conversations, its answers between tags:
    the rewards are those of the same answers joined by <|sep|>, and a group's weights are still shared across two
    calls (they hang on the problem_id, the same in every process)."""
    task, m, G = ToyTask(), 2, len(COMPLETIONS)
    prompts, completions, ids = batch()
    chats = [[{"role": "user", "content": p}] for p in prompts]
    said = [[{"role": "assistant", "content": as_tags(c)}] for c in completions]
    tags = trl_reward.SetReward(task, m, ToyProblem, num_weights=50, seed=1, to_task=trl_tasks.TagFormat().to_task)
    step = SimpleNamespace(global_step=3)
    out = tags(chats, said, problem_id=ids, trainer_state=step)
    W = tags.last_weights                                                            # (2G, N, D)
    for i in range(len(out)):   # the same answers in the task's format, under the same weights
        r, mask = task.score_rollouts(ToyProblem(ids[i]), [completions[i]], m)
        R = vpo.set_rewards(torch.from_numpy(r)[None], torch.from_numpy(mask)[None], W[i:i + 1])
        assert out[i] == pytest.approx(float(R[0, 0]), abs=1e-6)
        assert out[i] == pytest.approx(brute_force(completions[i], W[i], m), abs=1e-6)
    assert out[0] > 0.6 and out[2] == pytest.approx(0.6) and out[4] == 0.0 and out[7] == 0.0
    assert all(torch.equal(W[i], W[0]) for i in range(G)) and not torch.allclose(W[0], W[G])
    assert torch.equal(W[0], tags.weights(3, ids[0])[0])
    cut = G // 2 + 1
    head = tags(chats[:cut], said[:cut], problem_id=ids[:cut], trainer_state=step)
    tail = tags(chats[cut:], said[cut:], problem_id=ids[cut:], trainer_state=step)
    assert head + tail == pytest.approx(out, rel=1e-6)


# --- without TRL: the tag format, the room, the evaluation --------------------------------------------------------

def test_the_tag_format_maps_back_to_the_task_format():
    """The contents of the first m complete tag pairs, in order, joined by <|sep|>: prose outside the tags, a tag
    left open, a pair whose numbers differ and answers past m are no answers; a separator spelled inside an answer
    cannot split it."""
    to_task = trl_tasks.TagFormat().to_task
    text = ("Sure! Three routes:\n<answer1>RRDD</answer1>\nand <answer2> DDRR </answer2>\n<answer3>UU</answer3>\n"
            "<answer4>LL</answer4>")
    assert to_task(text, 3) == f"RRDD{SEP}DDRR{SEP}UU"
    assert get_task("maze").parse(to_task(text, 3), 3) == ["RRDD", "DDRR", "UU"]
    assert to_task(text, 2) == f"RRDD{SEP}DDRR"
    assert to_task("<answer1>RR</answer2><answer2>DD</answer2><answer3>LL", 3) == "DD"  # mismatched and open
    assert to_task(f"<answer1>left{SEP}right</answer1>", 2) == "left right"               # one answer, junk
    assert to_task("<answer>left</answer><answer>right</answer>", 2) == f"left{SEP}right"   # unnumbered: in order
    assert to_task("left\nright", 2) == "" and ToyTask().parse(to_task("no tags at all", 2), 2) == ["", ""]
    assert to_task("<answer1>multi\nline</answer1>", 1) == "multi\nline"


def test_the_tag_format_round_trips_the_demonstrations():
    """Every demonstration of every task, written in the tag format, parses back to the demonstration's answers."""
    fmt, rng = trl_tasks.TagFormat(), np.random.default_rng(0)
    for name in ("toy", "maze", "code"):
        task = get_task(name)
        for problem in task.problems("train", 8, seed=1):
            demo = task.demonstration(problem, 3, rng)
            written = "".join(fmt.answer_texts(demo.split(SEP)))
            assert task.parse(fmt.to_task(written, 3), 3) == task.parse(demo, 3)


def test_the_prompts_ask_for_m_answers_in_tags_and_show_the_task():
    task, fmt = get_task("maze"), trl_tasks.TagFormat()
    problem = task.problems("test", 1, seed=0)[0]
    text = fmt.prompt_text(task, problem, 3)
    assert task.prompt(problem, 3).rstrip() in text and f"first {problem.budget} moves" in text
    assert "3 genuinely different" in text and "<answer3>...</answer3>" in text and "<answer4>" not in text
    assert trl_tasks.render_prompt(fmt, task, problem, 3, chat=True) == [{"role": "user", "content": text}]
    assert trl_tasks.render_prompt(fmt, task, problem, 3, chat=False) == text
    native = trl_tasks.NativeFormat()
    assert trl_tasks.render_prompt(native, task, problem, 3, chat=False) == task.prompt(problem, 3)


def test_the_room_of_an_answer_is_measured_on_the_demonstrations():
    """One token a byte, the native format gives every task its own answer_tokens (the longest demonstration answer,
    its end and the task's slack); the tag format adds the tags and the newline: on the toy, the longest answer
    '<answer2>middle</answer2>\\n' is 26 characters, so 2 answers need 2 x 26 + 1 (the end of the turn) = 53."""
    count = lambda text: len(text.encode())  # noqa: E731
    for name in ("toy", "maze", "code"):
        task = get_task(name)
        room, (longest, slack) = trl_tasks.answer_room(task, trl_tasks.NativeFormat(), count, 3)
        assert room == task.answer_tokens and room == longest + slack, name
    toy = get_task("toy")
    room, parts = trl_tasks.answer_room(toy, trl_tasks.TagFormat(), count, 2)
    assert (room, parts) == (26, (26, 0)) and trl_tasks.completion_budget(trl_tasks.TagFormat(), room, 2) == 85
    wider = get_task("toy", answer_tokens=12)   # 5 bytes of room beyond the longest answer and its end
    assert trl_tasks.answer_room(wider, trl_tasks.TagFormat(), count, 2)[0] == 31
    assert trl_tasks.completion_budget(trl_tasks.NativeFormat(), 7, 3) == 21


def test_the_evaluation_by_hand_on_fixed_completions():
    """The toy, m = 2, two completions of one problem: {left, right} and {middle, middle} (a repeat).
    Deployment scores (w* = (1/2, 1/2)): 0.5 and 0.5 | 0.6 (the repeat masked out, but a slot of the pool).
      best@2 (one whole completion): (0.5 + 0.6) / 2 = 0.55; best@4 = 0.6.
      pooled best@1 = mean of the slots (0.5, 0.5, 0.6, 0.6) = 0.55; pooled best@2 = 0.6 (1 - 1/6) + 0.5 / 6.
      pass@k (solved: w*ᵀr >= 0.6, the compromise): pass@2 = 1/2 = metrics.pass_at_k(2, 1, 1); pass@4 = 1.
      E_w[best@2] under the weights (1, 0) and (0, 1): the completions score 1 and 0.6 under either, so 0.8.
      diversity of the valid answers (1, 0), (0, 1), (0.6, 0.6): L1 distances 2, 1, 1, mean 4/3.
      deploy reward: mean over slots 0.55; distinct 3 answers / 4 slots; valid 4 / 4."""
    from metrics import pass_at_k
    task, m = ToyTask(), 2
    texts = [as_tags(f"left{SEP}right"), as_tags(f"middle{SEP}middle")]
    mapped = [trl_tasks.TagFormat().to_task(t, m) for t in texts]
    weights = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    metrics = evaluate.evaluate_texts(task, [ToyProblem(5)], mapped, m, evaluate.default_ks(m, 4), weights=weights)
    assert evaluate.default_ks(m, 4) == [2, 4] and evaluate.default_ks(1, 96) == [1, 2, 4, 8, 16]
    assert metrics["best@k"] == pytest.approx({2: 0.55, 4: 0.6})
    assert metrics["pooled_best@k"] == pytest.approx({1: 0.55, 2: 0.6 * 5 / 6 + 0.5 / 6, 4: 0.6})
    assert metrics["pass@k"] == pytest.approx({2: pass_at_k(2, 1, 1), 4: 1.0}) and pass_at_k(2, 1, 1) == 0.5
    assert metrics["E_w[best@k]"] == pytest.approx({2: 0.8, 4: 1.0})
    assert metrics["diversity"] == pytest.approx(4 / 3)
    assert metrics["deploy_reward"] == pytest.approx(0.55) and metrics["distinct_rate"] == 0.75
    assert metrics["valid_rate"] == 1.0 and "pass_target@k" not in metrics
    assert (metrics["problems"], metrics["answers_per_problem"], metrics["m"]) == (1, 4, 2)


def test_the_evaluation_is_evaluate_py_on_the_same_completions(monkeypatch):
    """evaluate.evaluate, its sampler replaced by fixed completions, gives the numbers evaluate_texts gives: every
    metric both report, on the code task (pass_target@k, pass_hidden@k and the hack rates too) and on the maze."""
    for name, m in (("code", 2), ("maze", 3)):
        task = get_task(name)
        problems = task.problems("test", 3, seed=0)
        rng = np.random.default_rng(1)
        texts = []
        for p in problems:   # 4 completions a problem: demonstrations, a repeat, a missing answer, junk
            demos = [task.demonstration(p, m, rng) for _ in range(2)]
            first = demos[0].split(SEP)
            texts += demos + [SEP.join([first[0], first[0]]), SEP.join(["", "junk"] + first[2:])]

        def fake_rollout(model, task_, batch, m_, n_roll, temperature, **_):
            rows = [texts[problems.index(p) * 4:(problems.index(p) + 1) * 4] for p in batch]
            scored = [task_.score_rollouts(p, r, m_) for p, r in zip(batch, rows)]
            return (None, None, [t for r in rows for t in r], torch.from_numpy(np.stack([s[0] for s in scored])),
                    torch.from_numpy(np.stack([s[1] for s in scored])))
        monkeypatch.setattr(evaluate, "rollout", fake_rollout)
        ks = evaluate.default_ks(m, 4 * m)
        theirs, _ = evaluate.evaluate(torch.nn.Linear(1, 1), task, problems, m, ks, answers_per_problem=4 * m)
        ours = evaluate.evaluate_texts(task, problems, texts, m, ks)
        shared = set(ours) & set(theirs)
        assert shared >= {"best@k", "pooled_best@k", "pass@k", "E_w[best@k]", "diversity", "deploy_reward"}
        if name == "code":
            assert {"pass_target@k", "pass_hidden@k", "hack_rate"} <= shared
        assert max(theirs["pooled_best@k"].values()) > 0
        for key in sorted(shared):
            assert json.dumps(ours[key], sort_keys=True) == json.dumps(theirs[key], sort_keys=True), (name, key)

"""
A small veRL batch for tests/test_verl_*.py, built without veRL: four toy problems (uids) of G = 4 rollouts of
m = 3 answers, rows shuffled as veRL's balancing leaves them, each rollout's set reward on its last response token.
Group 0 has a rollout without a valid answer, group 1 is flat (every rollout writes the same answers, so A = 0),
group 2 has repeats, an open tag and answers past m. The reference is vpo.vpo_advantages on the same answers in the
task's own format (joined by <|sep|>, no tags), under the weights the reward function drew for each problem.
"""
import os
import sys
from dataclasses import dataclass

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
import verl_vpo  # noqa: E402
import vpo  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402
from tasks.toy import ToyProblem, ToyTask  # noqa: E402

M, N, T = 3, 64, 7                     # answers per rollout, weights per group, response tokens
SETTINGS = {"task": "toy", "task_opt": [], "num_answers": M, "num_weights": N, "alpha": 1.0, "seed": 3}
GROUPS = [  # each rollout's answers in the task's format; as_tags writes them the way the model is asked to
    [f"left{SEP}right", "", f"middle{SEP}left", "right"],                       # "": no valid answer
    [f"left{SEP}middle"] * 4,                                                    # flat: A = 0
    [f"left{SEP}left{SEP}left", f"right{SEP}middle{SEP}left{SEP}right", "middle", f"junk{SEP}right"],
    ["left", "right", f"right{SEP}left", f"middle{SEP}middle"],
]
PROBLEMS = [ToyProblem(i) for i in (5, 17, 40, 101)]


def as_tags(completion, open_last=False):
    """The answers between numbered tags with prose around them; open_last leaves the last tag open (cut)."""
    answers = [a for a in completion.split(SEP) if a] if completion else []
    text = "Sure.\n" + "".join(f"<answer{j}>{a}</answer{j}>\n" for j, a in enumerate(answers, 1))
    return text + ("<answer9>right" if open_last else "") + "That is all."


@dataclass
class Batch:
    texts: list                 # (rows,) the model's completions, shuffled
    ground_truths: list         # (rows,) each row's problem as reward_model.ground_truth
    uids: np.ndarray            # (rows,) object: the group of each row
    scores: torch.Tensor        # (rows,) compute_score's set reward of each row
    token_level_rewards: torch.Tensor   # (rows, T) the score on the last response token
    response_mask: torch.Tensor         # (rows, T)
    reference: torch.Tensor     # (rows,) vpo.vpo_advantages of each row's rollout
    reference_R: torch.Tensor   # (rows,) vpo.set_rewards of each row's rollout


def build(seed=0):
    task = ToyTask()
    G = len(GROUPS[0])
    ground_truths = [verl_vpo.problem_json(p) for p in PROBLEMS]
    weights = torch.cat([verl_vpo.group_weights(gt, task.dim, verl_vpo.Settings.of(None, SETTINGS))
                         for gt in ground_truths])                                   # (B, N, D)
    scored = [task.score_rollouts(p, group, M) for p, group in zip(PROBLEMS, GROUPS)]
    rewards = torch.stack([torch.from_numpy(r) for r, _ in scored])                 # (B, G, m, D)
    mask = torch.stack([torch.from_numpy(k) for _, k in scored])                    # (B, G, m)
    A, R = vpo.vpo_advantages(rewards, mask, weights=weights)                        # (B, G)
    order = np.random.default_rng(seed).permutation(len(GROUPS) * G)                # rows shuffled
    texts, gts, uids, scores, refs, ref_R = [], [], [], [], [], []
    for row in order:
        b, g = divmod(int(row), G)
        texts.append(as_tags(GROUPS[b][g], open_last=(b == 2 and g == 2)))
        gts.append(ground_truths[b])
        uids.append(f"uid-{b}")
        info = {"split": "train", "index": b, "vpo": dict(SETTINGS)}
        scores.append(verl_vpo.compute_score("vpo-toy", texts[-1], gts[-1], info)["score"])
        refs.append(A[b, g])
        ref_R.append(R[b, g])
    rows = len(order)
    lengths = torch.tensor([1 + (5 * i) % T for i in range(rows)])                  # 1..T response tokens
    response_mask = (torch.arange(T)[None] < lengths[:, None]).float()
    token_level_rewards = torch.zeros(rows, T)
    token_level_rewards[torch.arange(rows), lengths - 1] = torch.tensor(scores)
    return Batch(texts, gts, np.array(uids, dtype=object), torch.tensor(scores), token_level_rewards,
                 response_mask, torch.stack(refs), torch.stack(ref_R))

"""
VPO's set reward as a reward function for TRL's GRPOTrainer (examples/trl_vpo.py runs it; docs/trl.md has the
details). This file is the part to copy into a TRL run of one's own: it needs torch and the repository's vpo.py.

Each completion holds m answers (Task.parse), each answer gets a reward vector r(y) (Task.score_rollouts: missing
answers and repeats are masked out), and the function returns the set reward of vpo.set_rewards,

    R_g = (1/N) sum_n max_{y in completion g} w_n^T r(y),    w_1..w_N ~ Dir(alpha 1_D)  (vpo.sample_weights)

with the N weights shared by the G completions of one problem. Rows are grouped, and their problem found, by the
data set's problem_id column. The weights are a function of (seed, trainer step, problem_id), so every process
draws the same ones for a group, even one split between processes. The function returns the raw set reward, never
an advantage: TRL's group normalization (scale_rewards="group") is the one normalization.
"""
import hashlib

import torch

import vpo


def completion_text(completion):
    """What the model wrote: a plain completion, or the content of a conversational one's last message."""
    return completion if isinstance(completion, str) else completion[-1]["content"]


def weight_seed(seed, step, problem_id):
    """A 64-bit seed from (seed, step, problem_id), the same in every process and run (blake2b; Python's hash() is
    salted per process)."""
    key = f"{seed}/{step}/{problem_id}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


class SetReward:
    """A TRL reward function: VPO's set reward R_g of each completion (algo "vpo"), or GRPO's w*ᵀr(y_g) of its one
    answer (algo "grpo"). TRL calls it with the batch's prompts and completions (strings, or conversations), the
    data set's other columns (problem_id) and trainer_state, and normalizes the returned floats per group itself.

    task: a tasks.Task (score_rollouts, dim, deploy_weights). problem_of: the task's problem from a value of the
    problem_id column. to_task: the model's completion text -> the task's format (default: the text itself).
    last_weights: after a call, the weights each completion was scored under, (n, N, D) (vpo only).
    """

    def __init__(self, task, m, problem_of, algo="vpo", num_weights=100, alpha=1.0, seed=0, to_task=None):
        self.task, self.m, self.algo, self.problem_of = task, m, algo, problem_of
        self.num_weights, self.alpha, self.seed = num_weights, alpha, seed
        self.to_task = to_task or (lambda text, m: text)
        self.__name__ = f"{algo}_reward"  # TRL names the reward's log entries after it
        self.last_weights = None

    def weights(self, step, problem_id):
        """w_1..w_N ~ Dir(alpha 1_D) of one problem's group at one trainer step: (1, N, D)."""
        g = torch.Generator().manual_seed(weight_seed(self.seed, step, problem_id))
        return vpo.sample_weights(1, self.num_weights, self.task.dim, self.alpha, generator=g)

    def __call__(self, prompts, completions, problem_id, trainer_state=None, **_):
        step = 0 if trainer_state is None else trainer_state.global_step
        out = [0.0] * len(completions)
        used = torch.zeros(len(completions), self.num_weights, self.task.dim)
        texts = [self.to_task(completion_text(c), self.m) for c in completions]
        rows_of = {}  # problem_id -> its rows in this call (a group may be cut at the call's ends)
        for i, pid in enumerate(problem_id):
            rows_of.setdefault(pid, []).append(i)
        for pid, rows in rows_of.items():
            r, mask = self.task.score_rollouts(self.problem_of(pid), [texts[i] for i in rows], self.m)
            r, mask = torch.from_numpy(r)[None], torch.from_numpy(mask)[None]              # (1, G', m, D)
            if self.algo == "vpo":
                w = self.weights(step, pid)                                                 # (1, N, D)
                R = vpo.set_rewards(r, mask, w)[0]        # (1/N) sum_n max_y w_n^T r(y): (G',)
                used[rows] = w[0]
            else:
                R = r[0, :, 0] @ torch.as_tensor(self.task.deploy_weights, dtype=r.dtype)   # w*^T r(y_g): (G',)
            for i, value in zip(rows, R.tolist()):
                out[i] = value
        self.last_weights = used if self.algo == "vpo" else None
        return out

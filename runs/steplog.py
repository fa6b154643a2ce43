"""
The log row of one RL step of train.py (step_log): what log.jsonl holds for every step, each statistic reduced
over the torchrun processes. These rows are what a run reports, not the algorithm: train.py's rl_step computes
the advantages and the loss, then hands its rollouts, rewards and loss statistics here.
"""
import time

import numpy as np
import torch

import vpo
from metrics import diversity, hack_flags, hack_rates
from runs import dist
from sample import slot_rewards


def step_log(step, cfg, task, problems, gen, texts, m, rewards, mask, all_rewards, all_mask, scores, losses,
             log_weights, t0):
    """The log row of one RL step, with every reduction over torchrun processes the logs need. problems, rewards,
    mask: this process's b prompts, (b, G, m, D), (b, G, m); all_*: the whole batch's; losses: (policy_loss stats,
    share) per minibatch.
      deploy_reward  mean w*^T r per answer slot (a repeated answer earns its reward, a missing one 0)
      set_reward     E_w max over each rollout's valid answers, under the same 100 fixed Dir(1) weights for every
                     method and run (log_weights), so that curves compare; not the training reward of VPO
      diversity      mean pairwise L1 distance of a group's valid reward vectors; zero_var_frac: flat groups
      entropy, kl, clip_frac, ratio, loss: token-weighted over the processes, averaged over minibatches
      written_rate, answer_tokens: answer slots written and their mean length (this process's rollouts);
      forced_rate: answers the sampler closed because they filled their room, per non-final answer slot
      hack_<name>    for a task that names hacks (Task.hacks; code: hack_fits_shown, hack_pieces): the share of the
                     whole batch's written answer slots it flags, among those whose flag is not None (None where
                     none is); no such key for the other tasks, nor for a step without a written answer"""
    B, G = all_rewards.shape[:2]
    answers = [task.parse(t, m) for t in texts]
    per_slot = torch.cat([slot_rewards(rewards[b], mask[b], answers[b * G:(b + 1) * G],
                                       key=lambda y, p=problems[b]: task.canonical(p, y))[None]
                          for b in range(len(rewards))])                            # (b, G, m, D)
    per_slot = dist.gather_groups(per_slot, B, cfg.minibatches)
    stats = []
    for s, share in losses:                                                          # token-weighted sums
        summed = dist.all_sum(torch.tensor([v * share for v in s.values()], dtype=torch.float64))
        stats.append(dict(zip(s, summed.tolist())))
    w_star = torch.as_tensor(task.deploy_weights, dtype=torch.float32)
    deploy = (per_slot @ w_star).mean()                                             # missing answers count 0
    set_r = vpo.set_rewards(all_rewards, all_mask, log_weights.expand(B, -1, -1))
    flags = [f for b, p in enumerate(problems)                                      # the hacks' flags (Task.hacks)
             for f in hack_flags(task.hacks, p, [y for ys in answers[b * G:(b + 1) * G] for y in ys])]
    flags = dist.gather_objects(flags)                                               # of the whole batch
    tmask = gen.sampled
    n_tokens = float(dist.all_sum(tmask.sum()))
    seconds = time.perf_counter() - t0
    written = [task.count_tokens(a) for row in answers for a in row if a]                # non-empty answer slots
    return {"step": step + 1, "deploy_reward": float(deploy), "set_reward": float(set_r.mean()),
            "diversity": float(np.mean([diversity(all_rewards[b], mask=all_mask[b]) for b in range(B)])),
            **{k: float(np.mean([s[k] for s in stats])) for k in ("entropy", "kl", "clip_frac", "ratio", "loss")},
            "zero_var_frac": float((scores.std(dim=1, correction=0) < 1e-6).float().mean()),
            "valid_rate": float(all_mask.float().mean()), "completion_tokens": n_tokens / (B * G),
            "written_rate": len(written) / max(1, m * len(answers)), "answer_tokens": float(np.mean(written or [0])),
            "forced_rate": float(gen.forced.sum()) / max(1, (m - 1) * len(answers)),
            **{f"hack_{name}": rate for name, rate in hack_rates(flags).items()},
            "tokens_per_s": n_tokens / seconds, "step_seconds": seconds}

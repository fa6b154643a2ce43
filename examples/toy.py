"""
The authors' smallest demonstration of VPO (docs/paper.md, "The smallest demonstration"), in a few seconds on a CPU.

    python examples/toy.py

Three possible answers with reward vectors (1, 0), (0, 1) and the compromise (0.6, 0.6); deployment weights
w* = (0.5, 0.5). The policy is a table of logits, one categorical per answer slot, trained with this repository's
estimators and policy loss (vpo.py):
- GRPO: one answer per rollout, scalar reward w*ᵀr. The compromise scores 0.6 and each corner 0.5, so GRPO
  settles on the compromise.
- VPO: m answers per rollout, set reward (1/N) Σ_n max_{y in set} w_nᵀ r(y) over N weights w ~ Dir(1, 1). Two
  corners are worth E_w max(w1, w2) = 0.75 > 0.6, so VPO learns both corners (and, with a third slot, keeps the
  compromise too: E_w max(w1, w2, 0.6) = 0.76, the optimum).
The one line that differs is the advantage: vpo.grpo_advantages(rewards, w*) against
vpo.vpo_advantages(rewards, mask). The same toy through the real GPT: python train.py --task toy --algo vpo.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from anywhere
import vpo  # noqa: E402

ANSWERS = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])   # r(y) of the three possible answers
NAMES = ["corner (1, 0)", "corner (0, 1)", "compromise (0.6, 0.6)"]
W_STAR = torch.tensor([0.5, 0.5])


def train_table(method, m=3, steps=200, prompts=4, group=8, lr=0.1, seed=0):
    """A tabular policy (m slots x 3 answers) trained with GRPO (m = 1) or VPO. -> probabilities (m, 3)."""
    g = torch.Generator().manual_seed(seed)
    m = 1 if method == "grpo" else m
    logits = torch.zeros(m, 3, requires_grad=True)
    opt = torch.optim.Adam([logits], lr=lr)
    for _ in range(steps):
        logp_table = torch.log_softmax(logits, dim=-1)                              # (m, 3)
        picks = torch.multinomial(logp_table.detach().exp(), prompts * group, replacement=True, generator=g)
        picks = picks.T.reshape(prompts, group, m)                                  # one answer per slot
        rewards = ANSWERS[picks]                                                    # (B, G, m, D)
        if method == "grpo":    # A_g from the scalar w*ᵀ r(y_g)
            adv, _ = vpo.grpo_advantages(rewards, W_STAR)
        else:                   # A_g from the set reward E_w max_{y in rollout g} wᵀ r(y); a repeat counts once
            first = torch.ones_like(picks, dtype=torch.bool)
            for j in range(1, m):
                first[..., j] = (picks[..., j:j + 1] != picks[..., :j]).all(-1)
            adv, _ = vpo.vpo_advantages(rewards, first, generator=g)
        logp = logp_table[torch.arange(m), picks].reshape(-1, m)                    # each slot is one token
        loss, _ = vpo.policy_loss(logp, logp.detach(), adv.reshape(-1), torch.ones_like(logp, dtype=torch.bool))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.softmax(logits, dim=-1).detach()


def set_value(answer_ids, n=100_001):
    """E_w max_{y in the set} wᵀ r(y) for w = (u, 1 - u), u ~ U(0, 1) (Dir(1, 1)), by the midpoint rule."""
    u = (torch.arange(n, dtype=torch.float64) + 0.5) / n
    w = torch.stack([u, 1 - u], dim=-1)
    return float((w @ ANSWERS[sorted(answer_ids)].double().T).amax(-1).mean())


def main():
    print("answers: " + ", ".join(NAMES) + f"; deployment weights w* = {W_STAR.tolist()}")
    for method, m in (("grpo", 1), ("vpo", 2), ("vpo", 3)):
        probs = train_table(method, m)
        learned = sorted(set(probs.argmax(-1).tolist()))
        print(f"{method.upper():4s} m={m}: learns {', '.join(NAMES[i] for i in learned):<52s} "
              f"w*ᵀr of its best answer {max(float(ANSWERS[i] @ W_STAR) for i in learned):.2f}   "
              f"E_w[max over its answers] {set_value(learned):.2f}")


if __name__ == "__main__":
    main()

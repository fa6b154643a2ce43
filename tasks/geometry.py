"""
The reward's geometry: a reshaping of a task's reward vector r that the vector methods (VPO, random-weight GRPO,
GDPO) see, with the deployment scalar w*ᵀr unchanged, so that GRPO's training signal and best@k's score stay
what they were (train.py --reward_geometry; docs/when_vpo_helps.md). It moves a task along the axis the paper
leaves open (Bahlous-Boldi et al., arXiv 2605.22817, on UltraFeedback: VPO reduces to scalar RL where the
components are nearly collinear): more collinear dimensions, fewer, or a redundant one.

    geometry = parse_geometry("collinear=0.8", task.objectives, task.deploy_weights)
    seen, w_seen = geometry.apply(rewards, task.deploy_weights)     # (..., D'), (D',): w_seenᵀ seen = w*ᵀ rewards
"""
from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Geometry:
    """A reshaping of the reward vector r (D,) that the vector methods see, with the deployment scalar unchanged:
    w'ᵀr' = w*ᵀr for every r (train.py --reward_geometry; docs/when_vpo_helps.md). One of:
      collinear rho   r_rho = (1 − rho) r + rho (w*ᵀr) 1, w' = w*; for w* summing to 1, w*ᵀr_rho = w*ᵀr. rho = 0
                      is r itself; as rho -> 1 every dimension becomes the scalar (collinear dimensions)
      merge groups    each group g of dimensions becomes one, r_g = Σ_{j∈g} w*_j r_j / W_g with weight W_g =
                      Σ_{j∈g} w*_j, at the place of the group's first dimension (fewer dimensions)
      repeat j        dimension j twice, each copy with weight w*_j / 2, the copy last (a redundant dimension)
    merge and repeat are a linear map r' = r P (D, D'), w' its weights; collinear keeps D."""
    rho: float = 0.0
    merge: tuple = ()          # groups of dimension indices, each of two or more
    repeat: tuple = ()         # dimension indices repeated once

    @property
    def identity(self):
        return self.rho == 0.0 and not self.merge and not self.repeat

    def dim(self, D):
        """D' of the vector the methods see."""
        return D - sum(len(g) - 1 for g in self.merge) + len(self.repeat)

    def apply(self, rewards, w_star):
        """rewards (..., D) tensor, w_star (D,) -> (r' (..., D'), w' (D',) numpy): the vector and the deployment
        weights the methods see; the identity returns its inputs unchanged."""
        if self.identity:
            return rewards, w_star
        w = np.asarray(w_star, dtype=np.float64)
        P, w_new = self.matrix(w)
        r = rewards @ torch.as_tensor(P, dtype=rewards.dtype, device=rewards.device)
        if self.rho:
            scalar = (rewards @ torch.as_tensor(w, dtype=rewards.dtype, device=rewards.device))[..., None]
            r = (1.0 - self.rho) * r + self.rho * scalar
        return r, w_new.astype(np.asarray(w_star).dtype)

    def matrix(self, w):
        """(P (D, D'), w' (D',)) of merge and repeat (the identity for collinear)."""
        D = len(w)
        merged = {j: g for g in self.merge for j in g}
        columns, weights = [], []
        for j in range(D):
            col = np.zeros(D)
            if j in merged and merged[j][0] != j:
                continue                                     # merged into its group's first dimension
            group = merged.get(j, (j,))
            W = w[list(group)].sum()
            col[list(group)] = w[list(group)] / W
            columns.append(col)
            weights.append(W / (2 if j in self.repeat else 1))
        for j in self.repeat:
            col = np.zeros(D)
            col[j] = 1.0
            columns.append(col)
            weights.append(w[j] / 2)
        return np.stack(columns, 1), np.array(weights)


def parse_geometry(spec, objectives, w_star):
    """--reward_geometry's value -> Geometry. spec: "" (none), "collinear=RHO" (0 <= RHO < 1), "merge=A+B[,C+D]"
    or "repeat=A", with A, B, ... the task's objective names. w_star: the deployment weights (collinear needs them
    to sum to 1, merge a positive total per group). ValueError with a one-line reason."""
    if not spec:
        return Geometry()
    kind, sep, value = spec.partition("=")
    names = {name: j for j, name in enumerate(objectives)}

    def index(name):
        if name not in names:
            raise ValueError(f"no reward dimension {name!r} (the task's: {', '.join(objectives)})")
        return names[name]
    if not sep or kind not in ("collinear", "merge", "repeat"):
        raise ValueError(f"{spec!r}: expected collinear=RHO, merge=A+B[,C+D...] or repeat=A")
    if kind == "collinear":
        try:
            rho = float(value)
        except ValueError:
            raise ValueError(f"collinear={value}: rho must be a number in [0, 1)") from None
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"collinear={value}: rho must be in [0, 1)")
        if abs(float(np.sum(w_star)) - 1.0) > 1e-6:
            raise ValueError(f"collinear needs deployment weights summing to 1, not {float(np.sum(w_star)):g}")
        return Geometry(rho=rho)
    if kind == "repeat":
        j = index(value)
        return Geometry(repeat=(j,))
    groups = tuple(tuple(sorted(index(n) for n in group.split("+"))) for group in value.split(","))
    flat = [j for g in groups for j in g]
    if any(len(g) < 2 for g in groups) or len(set(flat)) != len(flat):
        raise ValueError(f"merge={value}: each group needs two or more dimensions, none in two groups")
    if len(flat) - len(groups) >= len(objectives) - 1:
        raise ValueError(f"merge={value}: leaves fewer than two dimensions")
    if any(float(np.sum(np.asarray(w_star)[list(g)])) <= 0 for g in groups):
        raise ValueError(f"merge={value}: a group's deployment weights sum to 0")
    return Geometry(merge=groups)

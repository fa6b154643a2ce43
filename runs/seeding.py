"""
The seeding rule of the whole repository: every random draw comes from an explicit generator seeded by where it
is used, e.g. (seed, stream, step, prompt index). Nothing random is carried from step to step, so a checkpoint
holds no RNG state, a resumed run continues bit for bit, and a prompt samples the same tokens whichever batch or
process it lands in. The streams in use: 1-2 warm-start problems and demonstrations, 3 RL problems, 4 rollout
sampling, 5 VPO / random weights, 6 goal-conditioned weights, 7 the route figure.
"""
import numpy as np
import torch

import vpo


def step_seed(*parts):
    """A deterministic 32-bit seed for one draw of one phase, e.g. (seed, stream, step, prompt index)."""
    return int(np.random.SeedSequence([abs(int(p)) for p in parts]).generate_state(1)[0])


def prompt_weights(seed, stream, step, B, N, D, alpha=1.0, sampler="iid"):
    """N weight vectors w ~ Dir(alpha) for each of the step's B prompts, prompt b's from its own seed
    (seed, stream, step, b): the same draws whichever process holds the prompt. -> (B, N, D)"""
    def generator(b):
        return torch.Generator().manual_seed(step_seed(seed, stream, step, b))
    return torch.cat([vpo.sample_weights(1, N, D, alpha, generator(b), sampler) for b in range(B)])

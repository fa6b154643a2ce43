"""
The seeding rule of the whole repository: every random draw comes from an explicit generator seeded by where it
is used, e.g. (seed, stream, step, prompt index). Nothing random is carried from step to step, so a checkpoint
holds no RNG state, a resumed run continues bit for bit, and a prompt samples the same tokens whichever batch or
process it lands in. The streams in use: 1-2 warm-start problems and demonstrations, 3 RL problems, 4 rollout
sampling, 5 VPO / random weights, 6 goal-conditioned weights, 7 the route figure.
"""
import numpy as np


def step_seed(*parts):
    """A deterministic 32-bit seed for one draw of one phase, e.g. (seed, stream, step, prompt index)."""
    return int(np.random.SeedSequence([abs(int(p)) for p in parts]).generate_state(1)[0])

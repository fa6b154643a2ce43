"""python tests/scripted_train.py ARGS: train.py with a scripted toy reward, so that rewards differ within every
group and RL moves the weights even from an untrained base (tests/test_runs.py kills it with SIGKILL)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import train  # noqa: E402
from tasks.toy import ToyTask  # noqa: E402


def score(self, problem, answer):
    """r(y) = (len(y) mod 2, (len(y) mod 3) / 2): answers of different lengths earn different rewards."""
    return np.array([len(answer) % 2, len(answer) % 3 / 2], dtype=np.float32)


if __name__ == "__main__":
    ToyTask.score = score
    sys.exit(train.main(sys.argv[1:]))

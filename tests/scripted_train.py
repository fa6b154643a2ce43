"""python tests/scripted_train.py ARGS: train.py with a scripted toy reward, so that rewards differ within every
group and RL moves the weights even from an untrained base (tests/test_runs.py kills it with SIGKILL).
With SCRIPTED_DUMP=DIR, every process also saves the weights it ends with to DIR/rankR.pt (tests/test_dist.py
launches it under torchrun and compares the ranks); with SCRIPTED_NO_FINISH=1, no final evaluation."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from runs import dist  # noqa: E402
import train  # noqa: E402
from tasks.toy import ToyTask  # noqa: E402


def score(self, problem, answer):
    """r(y) = (len(y) mod 2, (len(y) mod 3) / 2): answers of different lengths earn different rewards."""
    return np.array([len(answer) % 2, len(answer) % 3 / 2], dtype=np.float32)


def dumping(finish, directory):
    def wrapped(args, task, model, *rest):
        torch.save(model.state_dict(), os.path.join(directory, f"rank{dist.rank()}.pt"))
        return finish(args, task, model, *rest)
    return wrapped


if __name__ == "__main__":
    ToyTask.score = score
    if os.environ.get("SCRIPTED_NO_FINISH"):  # no final evaluation, plots or summary
        train.finish = lambda *a, **k: None
    if os.environ.get("SCRIPTED_DUMP"):
        train.finish = dumping(train.finish, os.environ["SCRIPTED_DUMP"])
    sys.exit(train.main(sys.argv[1:]))

"""One CPU thread for the whole suite and the processes it starts: the tests run tiny models, where a second
thread buys nothing, and two threads per process oversubscribe a 2-core machine as soon as a test starts a
subprocess (torchrun, the concurrency tests) or another job shares the machine (measured: 20-50x slower)."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


import pytest  # noqa: E402


@pytest.fixture(scope="session")
def done(tmp_path_factory):
    """A finished tiny run (refusals.TINY), trained once: its checkpoint is the input of the resume checks
    (test_runs.py) and of the command-line tools (test_tools.py)."""
    import train
    from refusals import TINY
    out = tmp_path_factory.mktemp("done")
    assert train.main(TINY + ["--out_dir", str(out)]) == 0
    return out / "vpo-toy-s0" / "ckpt.pt"

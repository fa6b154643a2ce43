"""One CPU thread for the whole suite and the processes it starts: the tests run tiny models, where a second
thread buys nothing, and two threads per process oversubscribe a 2-core machine as soon as a test starts a
subprocess (torchrun, the concurrency tests) or another job shares the machine (measured: 20-50x slower)."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

"""
Running train.py as jobs, shared by results/compare.py and results/reproduce.py: one run in a worker process with
one torch thread (train_job resumes a run with a checkpoint and overwrites a directory without one), the warm start
a run will start from (base_file) and its cache key, and an in-process executor for the tests.
"""
import concurrent.futures as cf
import contextlib
import os


def one_thread():
    import torch
    torch.set_num_threads(1)


class InProcess:
    """An executor that runs each job when it is submitted, in this process (tests: no worker to start)."""
    def submit(self, fn, *args):
        future = cf.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:   # as a worker would report it
            future.set_exception(e)
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def base_file(argv, out_dir):
    """The checkpoint a run starts from: its --init, or the cached warm start as train.py resolves it on the run's
    device."""
    import train
    from runs.checks import check_method
    from runs.cli import make_task, pick_device
    args = train.get_parser().parse_args(argv + ["--out_dir", out_dir])
    if args.init:
        return args.init
    check_method(args, make_task(args.task, args.task_opt))
    return train.base_path(args, pick_device(args.device))


def cache_key(path):
    """The warm-start cache key of a base's ckpt.pt path (runs.dirs.base_dir: TASK-DIGEST of what it was trained
    with, never where)."""
    return os.path.basename(os.path.dirname(path))


def train_job(argv, out_dir, log_path):
    """One train.py run in this (worker) process, its output in log_path; a run with a checkpoint is resumed, a
    directory without one overwritten. -> its exit code."""
    import train
    directory = os.path.join(out_dir, argv[argv.index("--run_name") + 1])
    if os.path.isfile(os.path.join(directory, "ckpt.pt")):
        argv = argv + ["--resume"]
    elif os.path.isdir(directory):
        argv = argv + ["--overwrite"]
    with open(log_path, "a") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        print(f"$ python train.py {' '.join(argv)} --out_dir {out_dir}", flush=True)
        return train.main(argv + ["--out_dir", out_dir])


@contextlib.contextmanager
def one_thread_env(on=True):
    """OMP_NUM_THREADS=1 (when on) while worker processes start: they inherit it before they import torch."""
    saved = os.environ.get("OMP_NUM_THREADS")
    if on:
        os.environ["OMP_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = saved

"""
Running a queue of jobs, shared by results/reproduce.py and results/compare.py: jobs start in order once the files
they need exist, and a run never starts while a running job trains the warm start it needs; in worker processes
with one torch thread each, or in this process (the tests).
"""
import concurrent.futures as cf
import multiprocessing
import os
import shutil

from results.jobs import base_file, cache_key, one_thread, one_thread_env


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


def train_entry(job, argv, runs, log):
    """The queue entry of one run: job(argv, runs, log) -> exit code (results.jobs.train_job: train.py with
    --out_dir runs), from the warm start train.py resolves for it."""
    return {"fn": job, "args": (argv, runs, log), "base": base_file(argv, runs)}


def run_pool(queue, slots, started, ended, poll, one=True, in_process=False):
    """run_queue in `slots` spawned worker processes, with one torch thread each where `one`, or in_process: in this
    process, one job after another. -> the jobs that could never start."""
    with one_thread_env(one), InProcess() if in_process else cf.ProcessPoolExecutor(
            slots, mp_context=multiprocessing.get_context("spawn"), initializer=one_thread if one else None) as pool:
        return run_queue(pool, queue, slots, started, ended, poll)


def share_base(path, paths):
    """A base missing at `path` that another group's directory already holds under the same cache key is copied
    there (atomically, with its log), so that each warm start is trained once per reproduction."""
    if os.path.isfile(path):
        return
    for other in paths:
        if other != path and cache_key(other) == cache_key(path) and os.path.isfile(other):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            log = os.path.join(os.path.dirname(other), "log.jsonl")
            if os.path.isfile(log):
                shutil.copyfile(log, os.path.join(os.path.dirname(path), "log.jsonl"))
            shutil.copyfile(other, path + ".tmp")
            os.replace(path + ".tmp", path)
            return


def run_queue(pool, queue, slots, started, ended, poll):
    """Run the jobs of `queue` in its order, at most `slots` at a time in `pool`. A job is a dict: fn and args (what
    runs), needs (files that must exist first; optional), base (the warm start's ckpt.pt it trains from; optional).
    A job whose warm start a running job is training waits for it (in a worker it would wait on train.py's lock).
    started(job) and ended(job, exit code, jobs not yet ended) are called as jobs start and end; poll: seconds
    between looks. -> the jobs that could never start (nothing ran and the files they need were missing)."""
    queue, running = list(queue), {}
    bases = [j["base"] for j in queue if j.get("base")]
    while queue or running:
        busy = {cache_key(j["base"]) for j in running.values() if j.get("base")}
        for j in list(queue):
            if len(running) >= slots:
                break
            if not all(os.path.isfile(p) for p in j.get("needs", ())):
                continue
            if j.get("base"):
                share_base(j["base"], bases)
                if cache_key(j["base"]) in busy and not os.path.isfile(j["base"]):
                    continue
                busy.add(cache_key(j["base"]))
            queue.remove(j)
            started(j)
            running[pool.submit(j["fn"], *j["args"])] = j
        if not running:
            return queue
        done, _ = cf.wait(running, timeout=poll, return_when=cf.FIRST_COMPLETED)
        for future in done:
            j = running.pop(future)
            ended(j, future.result() if future.exception() is None else repr(future.exception()),
                  len(queue) + len(running))
    return []

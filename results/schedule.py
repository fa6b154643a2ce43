"""
Running a queue of jobs, shared by results/reproduce.py and results/compare.py: jobs start in order once the files
they need exist, and a run never starts while a running job trains the warm start it needs.
"""
import concurrent.futures as cf
import os
import shutil

from results.jobs import cache_key


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

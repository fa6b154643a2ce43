"""
Running train.py as jobs for results/compare.py: a comparison as its configuration
describes it (read_config, Setup: every run's train.py command line, in the order the runs start), one run in a
worker process with one torch thread (train_job resumes a run with a checkpoint and overwrites a directory without
one), the warm start a run will start from (base_file) and its cache key, and a queue of jobs (run_queue): jobs
start in order once the files they need exist, and a run never starts while a running job trains the warm start
it needs; in worker processes, or in this process (the tests).
"""
import concurrent.futures as cf
import contextlib
import json
import multiprocessing
import os
import re
import subprocess
from dataclasses import dataclass
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWNED = ("algo", "seed", "run_name", "out_dir", "resume", "overwrite")   # train.py flags set per run, not shared


@dataclass(frozen=True)
class Arm:
    """One method of a comparison: its name in the tables, its run directories (SLUG-sSEED), its train.py flags
    (--algo among them), its seeds (None: the comparison's) and the directory --report reads its runs from (None:
    the comparison's; a configuration of record may read an arm from another experiment's directory)."""
    label: str
    slug: str
    flags: tuple
    seeds: tuple = None
    dir: str = None


@dataclass(frozen=True)
class Setup:
    """What a comparison trains: the arms (the first is the one every other is compared against), the seeds (run r
    of an arm uses --seed r), the train.py flags every run shares, where --report reads the runs (None: the runs/
    directory of --out), the headline metric (None: pooled best@k), the search evaluation (results/searched.py), the
    pairs (A label, B label) compared besides every arm against the first, and the arms stopped early ({"arm": label,
    "label": its name stopped early}: each run's weights at its best step on validation problems, validation.json)."""
    arms: tuple
    seeds: tuple
    train_args: tuple
    dir: str = None
    metric: str = None
    search: dict = None
    pairs: tuple = ()
    stopped: tuple = ()
    decide: dict = None

    def argv(self, arm, seed):
        """train.py's command line of one run, without --out_dir; an arm's first run also evaluates the base."""
        return [*self.train_args, *arm.flags, "--seed", str(seed), "--run_name", run_name(arm, seed),
                *([] if seed == self.seeds_of(arm)[0] else ["--no_base_eval"]), "--quiet"]

    def seeds_of(self, arm):
        return arm.seeds or self.seeds

    def runs(self):
        """[(arm, seed)] of every run, seed by seed (a comparison cut short has every arm for its first seeds)."""
        return [(arm, seed) for seed in sorted({s for arm in self.arms for s in self.seeds_of(arm)})
                for arm in self.arms if seed in self.seeds_of(arm)]


def run_name(arm, seed):
    return f"{arm.slug}-s{seed}"


KEYS = {"about": str, "task": str, "task_opt": list, "seeds": list, "steps": int, "eval_every": int, "flags": list,
        "arms": list, "dir": str, "metric": str, "search": dict, "pairs": list,
        "stopped": list, "decide": dict}
DECIDE_KEYS = {"about": str, "k": int, "matters": float, "pairs": list, "secondary": list, "growth": int}
METRICS = {"pooled_best@k": "pooled best@k", "best@k": "best@k (whole rollouts)", "pass@k": "pass@k (whole rollouts)",
           "E_w[best@k]": "E_w[best@k]", "solved": "problems solved by search"}   # the headlines --metric may choose
ARM_KEYS = {"label": str, "slug": str, "flags": list, "seeds": list, "dir": str}


def read_config(path):
    """A configuration file (JSON; docs/compare.md) as the comparison it describes. "dir" (of the file or of an arm)
    is where --report reads the runs, relative to the repository root. A mistake raises UsageError naming the file."""
    import train
    from runs.cli import UsageError, given_flags
    try:
        with open(path) as f:
            c = json.load(f)
    except OSError as e:
        raise UsageError(f"--config {path}: {e.strerror}")
    except ValueError as e:
        raise UsageError(f"--config {path}: not a JSON file ({e})")

    def checked(d, keys, where, needed):
        if not isinstance(d, dict):
            raise UsageError(f"--config {path}: {where} is not an object")
        for key in sorted(set(d) - set(keys)) + [k for k in needed if k not in d]:
            raise UsageError(f"--config {path}: {where}: " + (f"unknown key {key!r} (keys: {', '.join(keys)})"
                                                              if key not in keys else f"no {key!r}"))
        for key, kind in keys.items():
            if key in d and not isinstance(d[key], kind) or key in ("seeds", "flags", "task_opt") and not all(
                    isinstance(x, int if key == "seeds" else str) for x in d.get(key, [])):
                raise UsageError(f"--config {path}: {where}: {key!r} is not {kind.__name__}"
                                 + (" of " + ("integers" if key == "seeds" else "strings") if kind is list else ""))
        return d
    checked(c, KEYS, "the file", ("task", "seeds", "arms"))
    if len(set(c["seeds"])) < 2:
        raise UsageError(f"--config {path}: a comparison over runs needs at least two seeds, got {c['seeds']}")
    arms = []
    for i, a in enumerate(c["arms"]):
        a = checked(a, ARM_KEYS, f"arm {i}", ("label", "slug", "flags"))
        try:
            given = given_flags(train.get_parser(), a["flags"])
        except UsageError as e:
            raise UsageError(f"--config {path}: arm {a['label']!r}: {e}")
        if "algo" not in given or set(given) & set(OWNED[1:]) or not re.fullmatch(r"[\w.-]+", a["slug"]):
            raise UsageError(f"--config {path}: arm {a['label']!r} needs --algo, a slug of letters, digits, '_', '.' "
                             f"or '-', and none of --{', --'.join(OWNED[1:])}")
        arms.append(Arm(a["label"], a["slug"], tuple(a["flags"]), tuple(a.get("seeds", ())) or None,
                        a.get("dir") and os.path.join(ROOT, a["dir"])))
    if len(arms) < 2 or len({a.label for a in arms}) < len(arms) or len({a.slug for a in arms}) < len(arms):
        raise UsageError(f"--config {path}: a comparison needs two arms or more, with different labels and slugs")
    train_args = shared_args(c)
    try:
        owned = [k for k in OWNED if k in given_flags(train.get_parser(), train_args)]
    except UsageError as e:
        raise UsageError(f"--config {path}: {e}")
    if owned:
        raise UsageError(f"--config {path}: --{owned[0]} is set by results.compare for each run")
    if c.get("metric", "solved") not in METRICS or c.get("metric") == "solved" and "search" not in c:
        raise UsageError(f"--config {path}: \"metric\" is one of {', '.join(METRICS)}, and \"solved\" needs a "
                         f"\"search\"")
    if "search" in c:
        check_search(c["search"], [a.slug for a in arms], f"--config {path}")
    labels, stopped = {a.label for a in arms}, c.get("stopped", [])
    if not all(isinstance(s, dict) and set(s) == {"arm", "label"} and s["arm"] in labels for s in stopped) or \
            len(labels | {s["label"] for s in stopped}) < len(labels) + len(stopped):
        raise UsageError(f"--config {path}: \"stopped\" holds {{\"arm\": an arm's label, \"label\": a new label}}")
    labels |= {s["label"] for s in stopped}
    pairs = c.get("pairs", [])
    if not all(isinstance(p, list) and len(p) == 2 and set(p) <= labels and p[0] != p[1] for p in pairs):
        raise UsageError(f"--config {path}: \"pairs\" are [A, B] of two different arms' labels")
    decide = c.get("decide")
    if decide is not None:
        checked(decide, DECIDE_KEYS, "\"decide\"", ("k", "pairs"))
        if not all(isinstance(p, list) and len(p) in (2, 3) and set(p[:2]) <= labels and p[0] != p[1]
                   and p[2:] in ([], ["pooled_best@k"], ["best@k"], ["pass@k"], ["E_w[best@k]"])
                   for p in decide["pairs"] + decide.get("secondary", [])):
            raise UsageError(f"--config {path}: \"decide\" pairs are [A, B] or [A, B, metric] of two different arms' "
                             f"labels and one of {', '.join(m for m in METRICS if m != 'solved')}")
    return Setup(tuple(arms), tuple(c["seeds"]), tuple(train_args), c.get("dir") and os.path.join(ROOT, c["dir"]),
                 metric=c.get("metric"), search=c.get("search"), pairs=tuple(map(tuple, pairs)),
                 stopped=tuple(stopped), decide=decide)


SEARCH_KEYS = {"about": str, "budgets": list, "hard": str, "problems": int, "screen": int, "rule": str,
               "temperature": (int, float), "search_seed": int, "blocks": list, "arms": list, "pairs": list,
               "secondary": list, "screen_answers": int, "distinct": bool, "exclude": list, "stopped": dict,
               "matters": (int, float)}
STOPPED = "_stopped"   # the slug of an arm's runs stopped early, after the arm's: SLUG_stopped


def index_range(r):
    """Whether r is [first, end) of test indices: two integers, 0 <= first < end."""
    return isinstance(r, list) and len(r) == 2 and all(type(i) is int for i in r) and 0 <= r[0] < r[1]


def check_search(s, slugs, where):
    """A configuration's "search" as results.compare reads it; a mistake raises UsageError naming what is wrong."""
    from runs.cli import UsageError
    if not isinstance(s, dict) or set(s) - set(SEARCH_KEYS) or {"budgets", "pairs"} - set(s):
        raise UsageError(f"{where}: \"search\" needs budgets and pairs, and knows only {', '.join(SEARCH_KEYS)}")
    if not all(isinstance(s[k], kind) for k, kind in SEARCH_KEYS.items() if k in s) or not s["budgets"] or not all(
            isinstance(b, int) and b > 0 for b in s["budgets"]):
        raise UsageError(f"{where}: \"search\": budgets are positive integers; " + ", ".join(
            f"{k} is {'a number' if isinstance(t, tuple) else t.__name__}" for k, t in SEARCH_KEYS.items()))
    if "hard" not in s and not {"screen", "problems"} <= set(s):
        raise UsageError(f"{where}: \"search\" needs a committed \"hard\" set, or \"screen\" and \"problems\" to "
                         "choose one before any search")
    if "exclude" in s and not index_range(s["exclude"]) or s.get("screen_answers", 1) < 1:
        raise UsageError(f"{where}: \"search\": exclude is [first, end) of test indices, screen_answers positive")
    stop = s.get("stopped", {"validation": [0, 1], "k": [1]})
    if set(stop) != {"validation", "k"} or not index_range(stop["validation"]) or not stop["k"] or not all(
            type(k) is int and 1 <= k <= 48 for k in stop["k"]):
        raise UsageError(f"{where}: \"search\": \"stopped\" is {{\"validation\": [first, end) of test indices, "
                         "\"k\": [k, ...] from 1 to 48}")
    known = set(slugs) | {a.get("slug") for a in s.get("arms", []) if isinstance(a, dict)}
    known |= {slug + STOPPED for slug in slugs} if "stopped" in s else set()
    for a, b in s["pairs"] + s.get("secondary", []):
        if a not in known or b not in known:
            raise UsageError(f"{where}: search pair {a} − {b}: an arm not in the configuration")
    return s


def shared_args(c):
    """The train.py flags every run of a configuration (as its file has it) shares: the task and its options, the
    RL steps, the evaluation interval and the flags."""
    return ["--task", c["task"], *[a for o in c.get("task_opt", []) for a in ("--task_opt", o)],
            *[a for key in ("steps", "eval_every") if key in c for a in (f"--{key}", str(c[key]))], *c.get("flags", [])]


def git(*args):
    """git's output in the repository (stripped), or None where git or the checkout is missing."""
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def one_thread():
    import torch
    torch.set_num_threads(1)


def base_file(argv, out_dir):
    """The checkpoint a run starts from: its --init, or the cached warm start as train.py resolves it on the run's
    device."""
    import train
    from runs.checks import check_method
    from runs.cli import is_pretrained, make_task, pick_device
    args = train.get_parser().parse_args(argv + ["--out_dir", out_dir])
    if args.init and not is_pretrained(args.init):   # a pretrained model is warm-started first, as the GPT
        return args.init
    check_method(args, make_task(args.task, args.task_opt))
    return train.base_path(args, pick_device(args.device))


def committed(setup):
    """{(arm slug, seed): summary.json} of the runs a configuration of record has committed: in its arm's "dir" (an
    arm read from another experiment) or the configuration's."""
    found = {}
    for arm, seed in setup.runs():
        path = os.path.join(arm.dir or setup.dir, run_name(arm, seed), "summary.json") if arm.dir or setup.dir else ""
        if os.path.isfile(path):
            with open(path) as f:
                found[arm.slug, seed] = json.load(f)
    return found


def warm_start_line(runs):
    """Which warm starts the runs started from (summary.json's weights digest), each with its runs where they differ:
    a configuration's runs share one, and a report must show it if they do not."""
    by = {}
    for label, rs in runs.items():
        for r in rs:
            if "stopped_at" not in r:   # an arm stopped early is its arm's runs again
                by.setdefault(r["summary"].get("warm_start") or "none recorded", []).append(f"{label} s{r['seed']}")
    if len(by) <= 1:
        return f"- Warm start: every run from {next(iter(by), 'none')}."
    return "- Warm starts differ: " + "; ".join(f"{d}: {', '.join(names)}" for d, names in by.items()) + "."


def seed_digests(setup):
    """{seed: the weights digest of the warm start its committed runs started from}: a seed's runs are paired, so
    its remaining arms must start from the same warm start. Committed runs of one seed that disagree: UsageError."""
    from runs.cli import UsageError
    digests = {}
    for (slug, seed), summary in sorted(committed(setup).items(), key=lambda x: x[0][1]):
        d = summary.get("warm_start")
        if d and digests.setdefault(seed, d) != d:
            raise UsageError(f"{setup.dir}: seed {seed}'s committed runs started from different warm starts "
                             f"({digests[seed]}, {d}); they cannot be paired")
    return digests


def check_warm_starts(setup, out):
    """Where the warm start is already cached here, it must be the one of every seed still to train that has
    committed runs: otherwise one line, before anything runs (another kind of machine trains another warm start)."""
    from runs.cli import UsageError
    from runs.dirs import weights_digest
    digests, done = seed_digests(setup), committed(setup)
    todo = {seed for arm, seed in setup.runs() if (arm.slug, seed) not in done} & set(digests)
    first = setup.arms[0]
    base = base_file(setup.argv(first, setup.seeds_of(first)[0]), os.path.join(out, "runs"))
    if todo and os.path.isfile(base):
        here = weights_digest(base)
        wrong = sorted(seed for seed in todo if digests[seed] != here)
        if wrong:
            raise UsageError(f"the warm start here ({base}, digest {here}) is not the one seed {wrong[0]}'s committed "
                             f"runs in {setup.dir} started from ({digests[wrong[0]]}); train on a machine that "
                             f"rebuilds it, or leave that seed out of \"seeds\"")


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


def train_entry(job, argv, runs, log):
    """The queue entry of one run: job(argv, runs, log) -> exit code (results.jobs.train_job: train.py with
    --out_dir runs), from the warm start train.py resolves for it."""
    return {"fn": job, "args": (argv, runs, log), "base": base_file(argv, runs)}


class InProcess(cf.Executor):
    """An executor that runs each job when it is submitted, in this process (tests: no worker to start)."""
    def submit(self, fn, *args):
        future = cf.Future()
        try:
            future.set_result(fn(*args))
        except Exception as e:   # as a worker would report it
            future.set_exception(e)
        return future


def run_queue(queue, slots, ended, poll=1, in_process=False):
    """Run the jobs of `queue` in its order, at most `slots` at a time in spawned worker processes with one torch
    thread each (in_process: in this process, one job after another). A job is a dict: fn and args
    (what runs), needs (files that must exist first; optional), base (the warm start's ckpt.pt it trains from;
    optional). A job whose warm start a running job is training waits for it (in a worker it would wait on
    train.py's lock). ended(job, exit code, jobs not yet ended) is called as jobs end; poll: seconds between looks.
    -> the jobs that could never start (nothing ran and the files they need were missing)."""
    queue, running = list(queue), {}
    with mock.patch.dict(os.environ, {"OMP_NUM_THREADS": "1"}), InProcess() if in_process else \
            cf.ProcessPoolExecutor(slots, mp_context=multiprocessing.get_context("spawn"), initializer=one_thread) \
            as pool:   # workers inherit OMP_NUM_THREADS before they import torch
        while queue or running:
            busy = {cache_key(j["base"]) for j in running.values() if j.get("base")}
            for j in list(queue):
                if len(running) >= slots:
                    break
                if not all(os.path.isfile(p) for p in j.get("needs", ())):
                    continue
                if j.get("base"):
                    if cache_key(j["base"]) in busy and not os.path.isfile(j["base"]):
                        continue
                    busy.add(cache_key(j["base"]))
                queue.remove(j)
                running[pool.submit(j["fn"], *j["args"])] = j
            if not running:
                return queue
            done, _ = cf.wait(running, timeout=poll, return_when=cf.FIRST_COMPLETED)
            for future in done:
                j = running.pop(future)
                ended(j, future.result() if future.exception() is None else repr(future.exception()),
                      len(queue) + len(running))
    return []

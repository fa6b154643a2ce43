"""
What the checkpoints of the code comparisons on hidden tests wrote, since weights are never committed
(results/heldout.py --sample and --read). sample caches 12 answers per problem at T = 0.7 with fixed seeds from
every finished run's final weights (with hard, also from its weights at t*, on a search's first hard problems);
read_lines prints them beside each problem's shown tests and target, marked with the hack flags of tasks/code.py
(CodeTask.hacks); kept_lines prints the program each search kept.
"""
import glob
import json
import os

SAMPLE_PROBLEMS, SAMPLE_ANSWERS, STREAM = 4, 12, 8   # report problems 0-3; the sampling seeds' stream


def sample(out, into, hard=False):
    """Add to INTO/answers.json the answers of every finished run's final weights in OUT/runs (and of the warm start
    at m = 1 and 3) not yet there, on report problems 0-3. With hard, to INTO/answers-hard.json on the first four
    problems of OUT/hard.json, and also from each run's weights at t* (OUT/runs/validation-RUN.json; named
    SLUG_stopped-sSEED, as the search names them): the weights a search started from. -> the names added."""
    from results.figures import sample_answers
    from runs.cli import load_run
    path = os.path.join(into, "answers-hard.json" if hard else "answers.json")
    cache = json.load(open(path)) if os.path.isfile(path) else {}
    todo = {}
    for summary in sorted(glob.glob(os.path.join(out, "runs", "*", "summary.json"))):
        run = os.path.dirname(summary)
        name, m = os.path.basename(run), json.load(open(summary))["metrics"]["m"]
        todo[name] = (os.path.join(run, "ckpt.pt"), m)
        validation = os.path.join(out, "runs", f"validation-{name}.json")
        if hard and os.path.isfile(validation):
            slug, seed = name.rsplit("-s", 1)
            todo[f"{slug}_stopped-s{seed}"] = (os.path.join(out, "runs", json.load(open(validation))["ckpt"]), m)
    for base in glob.glob(os.path.join(out, "runs", "base", "*", "ckpt.pt")):
        todo.update({f"base-m{m}": (base, m) for m in (1, 3)})
    todo = {name: got for name, got in todo.items() if name not in cache and os.path.isfile(got[0])}
    if todo:
        task = load_run(next(iter(todo.values()))[0])[2]
        ids = json.load(open(os.path.join(out, "hard.json")))["unsolved"][:SAMPLE_PROBLEMS] if hard else \
            list(range(SAMPLE_PROBLEMS))
        problems = task.problems("test", max(ids) + 1, seed=0)
        problems = [problems[i] for i in ids]
        for name, (ckpt, m) in todo.items():
            cache[name] = {"m": m, "problems": ids,
                           "answers": sample_answers(ckpt, task, problems, m, SAMPLE_ANSWERS // m, STREAM)}
        os.makedirs(into, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(cache, f, indent=0)
        os.replace(path + ".tmp", path)
    return sorted(todo)


def mark(task, p, a):
    """An answer in backticks with its flags: = (the target), s (fits the shown tests, not the target), p (constant
    pieces)."""
    h = task.hacks(p, a)
    flags = ("=" if task.equals_target(p, a) else "") + ("s" if h["fits_shown"] else "") + ("p" if h["pieces"] else "")
    return f"`{a}`" + (f" ({flags})" if flags else "")


MARKS = "(=) equal to the target; (s) passes every shown test and is not the target; (p) constant pieces, where the " \
        "target is not."


def read_lines(into, task, name="answers.json"):
    """What every cached run wrote (INTO/NAME), per problem: shown tests, target, answers marked (`mark`)."""
    cache = json.load(open(os.path.join(into, name)))
    lines = []
    for run, got in cache.items():
        ids = got.get("problems", list(range(SAMPLE_PROBLEMS)))
        pool = task.problems("test", max(ids) + 1, seed=0)
        lines += [f"## {run} (m = {got['m']})", ""]
        for i, answers in zip(ids, got["answers"]):
            p = pool[i]
            lines += [f"- {i}: {p.family} `{p.target}`: {task.prompt(p, 1).split(': ', 1)[1].strip()}",
                      "  " + ", ".join(mark(task, p, a) for a in answers)]
        lines.append("")
    return lines + [MARKS]


def kept_lines(into, task, seeds=(0, 1)):
    """The program each search of INTO (evolve-SLUG-sSEED.json, the given seeds) kept, per hard problem: the solving
    one where solved, else the best by mean reward; marked as `mark` marks."""
    files = {os.path.basename(f)[len("evolve-"):-len(".json")]: json.load(open(f))
             for seed in seeds for f in sorted(glob.glob(os.path.join(into, f"evolve-*-s{seed}.json")))}
    if not files:
        return []
    ids = next(iter(files.values()))["problems"]
    pool = task.problems("test", max(ids) + 1, seed=0)
    lines = [f"## The programs the searches kept (seeds {', '.join(map(str, seeds))})", ""]
    for j, i in enumerate(ids):
        p = pool[i]
        lines += [f"- {i}: {p.family} `{p.target}`: {task.prompt(p, 1).split(': ', 1)[1].strip()}"]
        lines += [f"  {name}: " + (mark(task, p, f["results"][j]["best"]) if f["results"][j].get("best") else "none")
                  for name, f in files.items()]
    return lines + ["", MARKS]

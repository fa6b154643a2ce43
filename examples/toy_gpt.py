"""
The authors' toy through the real GPT: GRPO, VPO and Multi-RLVR with the max from one warm start, side by side.

    python examples/toy_gpt.py              # m = 2 answers a rollout, about a minute on 2 CPU cores
    python examples/toy_gpt.py --m 3        # three answers a rollout

Three answers with reward vectors (1, 0), (0, 1) and the compromise (0.6, 0.6); deployment weights w* = (½, ½).
The warm start (train.py's cached supervised base) is trained on demonstrations that write the compromise 60% of
the time and each corner 20%, so it does not already write VPO's optimum. Then train.py trains each method from it, and the script
samples every trained model on held-out problems and prints the set of answers it writes most often. At m = 2,
theory separates all three:
- GRPO scores one answer by w*ᵀr: the compromise wins (0.6 > 0.5).
- VPO scores the set by E_w[max over its answers of wᵀr], w ~ Dir(1, 1): the two corners win (0.75 > 0.6).
- Multi-RLVR with the max scores the set by its best answer under w*: the compromise plus anything scores 0.6, so
  it has no reason to leave the warm start's sets.
Every run writes its directory under --out (train.py's files: summary.json, eval.jsonl, the checkpoint).
"""
import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections import Counter

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from anywhere
import train  # noqa: E402
from runs.cli import load_run  # noqa: E402
from sample import rollout  # noqa: E402

METHODS = (("grpo", "GRPO"), ("vpo", "VPO"), ("multi_rlvr_max", "Multi-RLVR with the max"))
TASK_OPT = ("p_middle=0.6",)   # the warm start's demonstrations: the compromise 60% of the time, each corner 20%
MODEL = ("--n_layer", "2", "--n_head", "2", "--n_embd", "64", "--block_size", "96")
SFT = ("--sft_steps", "200", "--sft_batch_size", "32", "--sft_lr", "3e-3")
RL = ("--batch_size", "4", "--group_size", "8", "--lr", "5e-4", "--kl_coef", "1e-3", "--temperature", "1.0")
EVAL = ("--eval_problems", "4", "--eval_every", "0", "--no_base_eval", "--no_figures", "--ckpt_every", "0", "--quiet")
NAMES = {"left": "corner (1, 0)", "right": "corner (0, 1)", "middle": "compromise (0.6, 0.6)"}


def get_parser():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, default=2, choices=(2, 3), help="answers per rollout of VPO and Multi-RLVR")
    p.add_argument("--steps", type=int, default=200, help="RL steps of each method")
    p.add_argument("--seed", type=int, default=0, help="RL seed of every method (the warm start is shared)")
    p.add_argument("--out", default="out/toy-gpt", help="directory of the warm start and the three runs")
    p.add_argument("--read", metavar="RUNS", help="instead: the sets every checkpoint RUNS/*/ckpt.pt writes (a "
                   "results.compare runs directory), printed and written to RUNS/sets.json, then --summary of it")
    p.add_argument("--summary", metavar="SETS_JSON", help="instead: per arm, the set each run writes most often and "
                   "the shares of corners and of the compromise among each run's answers, from a --read sets.json")
    return p


def train_args(algo, m, steps, seed, out):
    """train.py's command line of one method's run."""
    return ["--task", "toy", *[a for o in TASK_OPT for a in ("--task_opt", o)], "--algo", algo, "--num_answers",
            str(m), "--steps", str(steps), "--seed", str(seed), "--eval_answers", str(16 * m), *MODEL, *SFT, *RL,
            *EVAL, "--out_dir", out, "--run_name", f"{algo}-m{m}-s{seed}", "--overwrite"]


def written_answers(path, m, problems=32, samples=8, seed=0):
    """Each rollout's valid answers, repeats kept, that a checkpoint writes on held-out problems at T = 0.7. The
    task is the checkpoint's own (runs.cli.load_run), so a pretrained model's run is read in its chat format."""
    model, _, task, _ = load_run(path)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        _, _, texts, _, _ = rollout(model, task, task.problems("test", problems, seed=0), m, samples, 0.7,
                                    generator=g)
    return [[a.strip() for a in task.parse(t, m) if a.strip() in NAMES] for t in texts]


def learned_sets(path, m, problems=32, samples=8, seed=0):
    """The sets of answers a checkpoint writes (written_answers): Counter of sorted tuples of each rollout's valid,
    distinct answers."""
    return sets_of(written_answers(path, m, problems, samples, seed))


def answer_counts(rollouts):
    """Counter of every valid answer the rollouts write, repeats within a rollout counted."""
    return Counter(a for answers in rollouts for a in answers)


def sets_of(rollouts):
    """Counter of each rollout's distinct answers, sorted: the set it writes."""
    return Counter(tuple(sorted(set(answers))) for answers in rollouts)


def set_value(words, u_points=100_001):
    """E_w[max over the set of wᵀr], w = (u, 1 − u), u ~ U(0, 1), by the midpoint rule; 0 for an empty set."""
    if not words:
        return 0.0
    r = torch.tensor([{"left": (1.0, 0.0), "right": (0.0, 1.0), "middle": (0.6, 0.6)}[w] for w in words],
                     dtype=torch.float64)
    u = (torch.arange(u_points, dtype=torch.float64) + 0.5) / u_points
    return float((torch.stack([u, 1 - u], -1) @ r.T).amax(-1).mean())


def line(label, m, sets):
    """One method's line: the set it writes most often, its share, w*ᵀr of its best answer, E_w of the set."""
    words, count = sets.most_common(1)[0]
    best = max((0.5 if w != "middle" else 0.6 for w in words), default=0.0)
    name = ", ".join(NAMES[w] for w in words) or "no valid answer"
    return (f"{label:<24s} m={m}: writes {name:<40s} in {count / sum(sets.values()):4.0%} of rollouts   "
            f"w*ᵀr of its best answer {best:.2f}   E_w[max over its answers] {set_value(words):.2f}")


def read_sets(runs):
    """{run name: {"m": m, "sets": [[answers, count], ...] most common first, "answers": {answer: count}}} of every
    run under runs (its summary.json's m), at the settings of learned_sets; written to runs/sets.json. A run of
    SmolLM2 (train.py --init smollm2) is read as the chat model it is."""
    found = {}
    for name in sorted(os.listdir(runs)):
        ckpt, summary = os.path.join(runs, name, "ckpt.pt"), os.path.join(runs, name, "summary.json")
        if os.path.isfile(ckpt) and os.path.isfile(summary):
            with open(summary) as f:
                m = json.load(f)["metrics"]["m"]
            rollouts = written_answers(ckpt, m)
            sets, answers = sets_of(rollouts), answer_counts(rollouts)
            found[name] = {"m": m, "sets": [[list(words), n] for words, n in sets.most_common()],
                           "answers": dict(answers.most_common())}   # every valid answer, repeats counted
            print(line(name, m, sets))
    with open(os.path.join(runs, "sets.json"), "w") as f:
        json.dump(found, f, indent=1)
    print("\n".join(sets_table(found)))
    return found


SET_NAMES = {("left", "right"): "both corners", ("left", "middle"): "a corner and the compromise",
             ("middle", "right"): "a corner and the compromise", ("middle",): "the compromise"}


def answer_shares(answers):
    """(corners, compromise): their shares among a run's valid answers ({answer: count}, repeats counted)."""
    n = sum(answers.values())
    return ((answers.get("left", 0) + answers.get("right", 0)) / n, answers.get("middle", 0) / n) if n else (0.0, 0.0)


def sets_table(found):
    """Lines of a table, one row per arm (a run's name before "-sN"): how many runs write each set most often, then
    the share of corners and of the compromise among each run's valid answers, seed by seed (a read_sets dict)."""
    arms = {}
    for name, run in sorted(found.items(), key=lambda x: (x[0].rsplit("-s", 1)[0], int(x[0].rsplit("-s", 1)[1]))):
        arms.setdefault(name.rsplit("-s", 1)[0], []).append(run)
    kinds = ("both corners", "a corner and the compromise", "the compromise", "other")
    lines = ["| arm | runs | " + " | ".join(kinds) + " | corners among its answers, per run | the compromise, per run |",
             "|---" * (len(kinds) + 4) + "|"]
    for arm, rs in arms.items():
        modal = Counter(SET_NAMES.get(tuple(sorted(r["sets"][0][0])), "other") for r in rs)
        shares = [answer_shares(r["answers"]) if "answers" in r else None for r in rs]
        per_run = [" ".join("-" if s is None else f"{s[i]:.2f}" for s in shares) for i in (0, 1)]
        lines.append(f"| {arm} | {len(rs)} | " + " | ".join(str(modal[k]) for k in kinds) + f" | {per_run[0]} | "
                     f"{per_run[1]} |")
    return lines


def main(argv=None):
    args = get_parser().parse_args(argv)
    torch.set_num_threads(1)   # as results.compare's runs train: seed s here is seed s of toy_sets_m2.json
    if args.read:
        read_sets(args.read)
        return 0
    if args.summary:
        with open(args.summary) as f:
            print("\n".join(sets_table(json.load(f))))
        return 0
    t0 = time.perf_counter()
    print(f"toy through the GPT: {args.steps} RL steps per method from one warm start, sampled at T = 0.7 on 32 "
          f"held-out problems")
    lines = []
    for algo, label in METHODS:   # the first run trains the warm start, the others find it cached
        m = 1 if algo == "grpo" else args.m   # --num_answers is m for every run: one warm start, trained at m
        with contextlib.redirect_stdout(io.StringIO()):
            code = train.main(train_args(algo, args.m, args.steps, args.seed, args.out))
        if code:
            return code
        lines.append(line(label, m, learned_sets(os.path.join(args.out, f"{algo}-m{args.m}-s{args.seed}", "ckpt.pt"),
                                                 m)))
    with open(os.path.join(args.out, f"{algo}-m{args.m}-s{args.seed}", "summary.json")) as f:
        base = json.load(f)["init"]   # the cached warm start every run started from
    print("\n".join([line("warm start", args.m, learned_sets(base, args.m))] + lines))
    print(f"{time.perf_counter() - t0:.0f} s; runs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

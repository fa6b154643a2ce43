"""
VPO in veRL 0.9.1 (docs/verl.md): a reward function that writes each rollout's set reward, and the advantage
estimator "vpo" that normalizes it per prompt group. Plain Python and torch; veRL is imported only by register().

    python examples/verl_vpo.py --task maze --num_answers 3 --out data/vpo-maze   # train.jsonl, test.jsonl

The design. veRL's reward functions score one rollout per call and see its problem, never its group; its
registered estimators see one scalar per rollout, never the per-answer vectors (docs/verl.md, "The design").
So the set reward is computed where the vectors are, in the reward function:

    compute_score   the rollout's m answers (numbered tags, as the TRL example asks for them) -> Task.score_rollouts
                    -> R_g = (1/N) sum_n max_y w_n^T r(y)  (vpo.set_rewards), w_1..w_N ~ Dir(alpha 1_D)
                    drawn from a seed that is a function of (seed, problem) only (group_weights): every rollout of
                    a group draws the same N weights, in whichever process and call it is scored
    vpo_advantage   veRL's estimator "vpo": A_g = group_normalize(R) per uid (vpo.group_normalize: population std,
                    eps 1e-6, a flat group gets 0), on every response token

The command writes the data set: one JSON line per problem with veRL's columns (prompt, data_source, reward_model,
extra_info). The problem travels as JSON in reward_model.ground_truth, the VPO settings in extra_info. A mistake is
one line, `error: ...`, exit code 2; the entry points raise ValueError with one line.
"""
import dataclasses
import hashlib
import json
import math
import numbers
import os
import sys
from functools import lru_cache

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the repository, to run from anywhere
sys.path.insert(0, HERE)                   # trl_tasks (the numbered tags' reader), beside this file
import torch  # noqa: E402

import vpo  # noqa: E402
from runs.cli import COUNT, SEED, Parser, UsageError, make_task, number, parse_task_options, task_name  # noqa: E402
from runs.seeding import step_seed  # noqa: E402
from tasks import get_task, is_task_name  # noqa: E402
from trl_tasks import TAG, answers_text  # noqa: E402,F401  (TAG: the pairs answers_text finds, for the tests)

NAME = "vpo"          # the estimator's name in veRL's registry: algorithm.adv_estimator=vpo
WEIGHT_STREAM = 5     # runs/seeding.py's stream of VPO's weights


# --- the settings: one place that checks them ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Settings:
    """What the reward function needs besides the rollout: the task (a name of tasks.TASKS or MODULE:CLASS, with
    its KEY=VALUE options), m answers per rollout, N weights per group, the Dirichlet alpha and the weights' seed."""
    task: str = "toy"
    task_opt: tuple = ()
    num_answers: int = 3
    num_weights: int = 100
    alpha: float = 1.0
    seed: int = 0

    def __post_init__(self):
        def whole(x):  # numpy's integers too (a row read back through pandas holds them)
            return isinstance(x, numbers.Integral) and not isinstance(x, bool)
        vpo.check_arg(isinstance(self.task, str) and is_task_name(self.task), "task",
                      "toy, maze, code or MODULE:CLASS", repr(self.task))
        vpo.check_arg(whole(self.num_answers) and self.num_answers >= 1, "num_answers", "an int >= 1",
                      repr(self.num_answers))
        vpo.check_arg(whole(self.num_weights) and self.num_weights >= 1, "num_weights", "an int >= 1",
                      repr(self.num_weights))
        vpo.check_arg(isinstance(self.alpha, numbers.Real) and not isinstance(self.alpha, bool)
                      and 0 < self.alpha < math.inf, "alpha", "finite and > 0", repr(self.alpha))
        vpo.check_arg(whole(self.seed) and self.seed >= 0, "seed", "an int >= 0", repr(self.seed))
        opts = (self.task_opt,) if isinstance(self.task_opt, str) else self.task_opt   # one KEY=VALUE, or several
        plain = {"task_opt": tuple(map(str, opts)), "num_answers": int(self.num_answers),
                 "num_weights": int(self.num_weights), "alpha": float(self.alpha), "seed": int(self.seed)}
        for name, value in plain.items():   # Python's own types, whatever the row was read with
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, extra_info=None, options=None):
        """The settings a data row carries (extra_info["vpo"]), overridden by the keyword arguments the reward
        function is given (veRL's reward_kwargs). ValueError for an unknown key or a bad value."""
        given = {**dict((extra_info or {}).get("vpo") or {}), **(options or {})}
        known = {f.name for f in dataclasses.fields(cls)}
        vpo.check_arg(set(given) <= known, "the VPO settings", f"among {', '.join(sorted(known))}",
                      ", ".join(sorted(set(given) - known)))
        return cls(**given)


@lru_cache(maxsize=16)
def cached_task(name, task_opt):
    """The task, built once per process: get_task(name, **options), task_opt's KEY=VALUE read as train.py reads
    them (runs.cli.parse_task_options). ValueError for an unknown task or a bad option."""
    try:
        return get_task(name, **parse_task_options(list(task_opt)))
    except (UsageError, TypeError) as e:
        raise ValueError(f"task {name}: {e}") from None


# --- the problem as text, and the rollout's answers ---------------------------------------------------------------

def problem_json(problem):
    """A task's problem (a dataclass) as JSON text, the row's ground truth: its class name and fields."""
    return json.dumps({"type": type(problem).__name__, "fields": dataclasses.asdict(problem)}, sort_keys=True)


def tuples(value):
    """JSON's lists back into the tuples the problem dataclasses hold."""
    return tuple(tuples(v) for v in value) if isinstance(value, list) else value


def problem_from_json(task, text):
    """problem_json's inverse: the problem class is looked up in the task's own module. ValueError if it is not
    there or the text is not a problem."""
    try:
        data = json.loads(text)
        cls = getattr(sys.modules[type(task).__module__], data["type"], None)
        vpo.check_arg(dataclasses.is_dataclass(cls), "ground_truth", f"a problem class of {type(task).__module__}",
                      repr(data["type"]))
        return cls(**{k: tuples(v) for k, v in data["fields"].items()})
    except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as e:
        raise ValueError(f"ground_truth must be problem_json's text of a {task.name} problem: {e}") from None


def prompt_text(task, problem, m):
    """What the model reads: the task's instructions where it defines instructions(problem, m), its prompt, and
    the request for m answers between numbered tags."""
    own = getattr(task, "instructions", None)
    about = own(problem, m) if callable(own) else ""
    tags = "\n".join(f"<answer{j}>...</answer{j}>" for j in range(1, m + 1))
    ask = (f"Write {m} genuinely different answers, each between its own numbered tags, one a line, and nothing "
           f"else inside the tags:" if m > 1 else "Write your answer between the tags, and nothing else inside them:")
    return "\n\n".join(x for x in (about, task.prompt(problem, m).rstrip("\n"), f"{ask}\n{tags}") if x)


# --- the reward function --------------------------------------------------------------------------------------------

def stable_hash(text):
    """A 64-bit hash of a string, the same in every process and run (blake2b; Python's hash() is salted)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def group_weights(ground_truth, dim, settings):
    """w_1..w_N ~ Dir(alpha 1_D) of the group of one problem: (1, N, D), a function of (seed, problem) only.
    The reward function sees no step, so a problem keeps its N weights across epochs (docs/verl.md)."""
    g = torch.Generator().manual_seed(step_seed(settings.seed, WEIGHT_STREAM, stable_hash(ground_truth)))
    return vpo.sample_weights(1, settings.num_weights, dim, settings.alpha, generator=g)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **options):
    """veRL's custom reward function (custom_reward_function.name=compute_score): one rollout's set reward.

    -> {"score": R_g, "answers": its valid answers, "best_deploy": max over them of w*^T r (0 if none)}; veRL puts
    "score" on the last response token and logs the others. Any text scores, junk as 0; the settings come from
    extra_info["vpo"] and reward_kwargs (Settings.of), and a bad one raises ValueError."""
    settings = Settings.of(extra_info, options)
    task = cached_task(settings.task, settings.task_opt)
    problem = problem_from_json(task, ground_truth)
    m = settings.num_answers
    r, mask = task.score_rollouts(problem, [answers_text(solution_str, m)], m)      # (1, m, D), (1, m)
    r, mask = torch.from_numpy(r), torch.from_numpy(mask)
    R = vpo.set_rewards(r[None], mask[None], group_weights(ground_truth, task.dim, settings))   # (1, 1)
    deploy = vpo.masked_max(r[0] @ torch.as_tensor(task.deploy_weights, dtype=r.dtype), mask[0])
    return {"score": float(R), "answers": int(mask.sum()), "best_deploy": float(deploy)}


# --- the estimator --------------------------------------------------------------------------------------------------

def vpo_advantage(token_level_rewards, response_mask, index=None, epsilon=1e-6, config=None, **_):
    """veRL's advantage estimator "vpo": R_g is the rollout's summed token rewards (the set reward where
    compute_score wrote it); A = vpo.group_normalize(R) within each uid of index (population std, a flat group
    and a group of one get 0); A on every response token. -> (advantages, returns), both (batch, tokens)."""
    vpo.check_arg(index is not None and len(index) == token_level_rewards.shape[0], "index",
                  "the uid of every rollout", None if index is None else len(index))
    with torch.no_grad():
        scores = token_level_rewards.sum(dim=-1)
        advantages = torch.zeros_like(scores)
        rows_of = {}
        for i, uid in enumerate(index):
            rows_of.setdefault(uid, []).append(i)
        for rows in rows_of.values():
            advantages[rows] = vpo.group_normalize(scores[rows][None], eps=epsilon)[0]
        advantages = advantages[:, None] * response_mask
    return advantages, advantages


def register():
    """Register vpo_advantage as veRL's estimator "vpo" in this process (again: nothing). veRL's trainer runs in
    a Ray actor, so the launch names this function as Ray's worker_process_setup_hook (docs/verl.md)."""
    from verl.trainer.ppo import core_algos
    try:
        held = core_algos.get_adv_estimator_fn(NAME)
    except ValueError:
        held = None
    if held is None:
        core_algos.register_adv_est(NAME)(vpo_advantage)
    elif getattr(held, "__qualname__", None) != vpo_advantage.__qualname__:
        raise ValueError(f"veRL already holds an estimator {NAME!r}: {held}")


# --- the data set ---------------------------------------------------------------------------------------------------

def rows(task, settings, split, n, seed):
    """n problems of a split as veRL's rows: prompt (one user message), data_source, reward_model (the problem's
    JSON as ground truth), extra_info (split, index, the settings as a dict)."""
    vpo_info = dataclasses.asdict(settings)
    vpo_info["task_opt"] = list(settings.task_opt)
    return [{"data_source": f"vpo-{settings.task}",
             "prompt": [{"role": "user", "content": prompt_text(task, problem, settings.num_answers)}],
             "ability": settings.task,
             "reward_model": {"style": "rule", "ground_truth": problem_json(problem)},
             "extra_info": {"split": split, "index": i, "vpo": vpo_info}}
            for i, problem in enumerate(task.problems(split, n, seed=seed))]


def get_parser():
    p = Parser(description="write a task's problems as veRL's JSON-lines data set for VPO (docs/verl.md)")
    p.add_argument("--task", default="toy", type=task_name, help="toy, maze, code, or MODULE:CLASS")
    p.add_argument("--task_opt", action="append", default=[], metavar="KEY=VALUE", help="task option (repeatable)")
    p.add_argument("--num_answers", type=COUNT, default=3, help="m: answers per rollout (the authors' 3)")
    p.add_argument("--num_weights", type=COUNT, default=100, help="N: weight vectors per prompt group")
    p.add_argument("--alpha", type=number(float, above=0), default=1.0, help="Dirichlet concentration")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the problems and of the weights")
    p.add_argument("--train", type=number(int, 0), default=1000, help="training problems (the authors' 1000)")
    p.add_argument("--test", type=number(int, 0), default=100, help="held-out problems (the authors' 100)")
    p.add_argument("--out", required=True, help="directory for train.jsonl and test.jsonl")
    return p


def main(argv=None):
    try:
        args = get_parser().parse_args(argv)
        task = make_task(args.task, args.task_opt)
        settings = Settings(args.task, tuple(args.task_opt), args.num_answers, args.num_weights, args.alpha,
                            args.seed)
        data = {split: rows(task, settings, split, n, args.seed) for split, n in (("train", args.train),
                                                                                  ("test", args.test))}
    except (UsageError, ValueError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    for split, lines in data.items():
        path = os.path.join(args.out, f"{split}.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in lines)
        print(f"{path}: {len(lines)} problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""results/compare.py: `python -m results.compare` end to end on a tiny model, on the toy (worker processes) and on
a task defined here (--task MODULE:CLASS, in this process); resuming skips finished runs and resumes interrupted
ones; every bad input is one `error:` line, exit code 2, nothing on disk changed."""
import os
import re

import numpy as np
import pytest

from results import compare
from tasks import Task, get_task, in_test_split

TINY = ["--algos", "grpo,vpo", "--runs", "2", "--steps", "2", "--eval_every", "1", "--n_layer", "1", "--n_head", "2",
        "--n_embd", "32", "--block_size", "96", "--sft_steps", "3", "--sft_batch_size", "8", "--batch_size", "2",
        "--group_size", "4", "--num_answers", "2", "--eval_problems", "2", "--eval_answers", "32", "--no_figures"]


class Lines(Task):
    """A task defined outside tasks/: name m of the words a, b, ab; a scores (1, 0), b (0, 1), ab (0.4, 0.4)."""
    name = "lines"
    objectives = ["a", "b"]
    deploy_weights = np.array([0.5, 0.5])
    VECTORS = {"a": (1.0, 0.0), "b": (0.0, 1.0), "ab": (0.4, 0.4)}

    def problems(self, split, n, seed):
        ids = [i for i in range(4000) if in_test_split(f"lines {i}") == (split == "test")]
        return [int(i) for i in np.random.default_rng([seed, split == "test"]).choice(ids, size=n, replace=False)]

    def prompt(self, problem, m):
        return f"lines {problem}: {m} of a/b/ab\n"

    def demonstration(self, problem, m, rng, style="diverse"):
        self.check_style(style)
        return self.format_answers([list(self.VECTORS)[rng.integers(3)] for _ in range(m)])

    def score(self, problem, answer):
        return np.array(self.VECTORS.get(answer.strip(), (0.0, 0.0)), dtype=np.float32)

    def solved(self, vector):
        return bool(vector @ self.deploy_weights >= 0.5 - 1e-6)

    def default_answer_tokens(self):
        return 3


LINES = f"{Lines.__module__}:Lines"   # whatever name pytest imported this file under


def snapshot(root):
    """{path: (size, mtime)} of every file under root (what a refused command must leave as it was)."""
    return {os.path.join(d, f): (os.stat(os.path.join(d, f)).st_size, os.stat(os.path.join(d, f)).st_mtime_ns)
            for d, _, files in os.walk(root) for f in files}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy, every run in this process (the worker pool: test_the_worker_pool_...)."""
    out = tmp_path_factory.mktemp("toy") / "cmp"
    assert compare.main(["--task", "toy", *TINY, "--out", str(out)], in_process=True) == 0
    return out


def test_the_toy_end_to_end(toy):
    text = (toy / "compare.md").read_text()
    assert text.startswith("# results.compare: grpo, vpo on toy, 2 runs each")
    assert re.search(r"^\| vpo − grpo \| 2 \| k=32 \| 2 \| [+-]\d\.\d{3} \| \[", text, re.M)   # the verdict row
    for algo in ("grpo", "vpo"):
        for step in (1, 2):
            assert re.search(rf"^\| {algo} \| {step} \| 2 \|", text, re.M), (algo, step)
    assert "### vpo − grpo, pooled best@k" in text and "| seed 0 | seed 1 |" in text
    assert "smallest possible value is 0.5" in text and "too few runs for a test" in text
    for name in ("best_at_k.png", "over_training.png"):
        assert (toy / name).stat().st_size > 2000
    assert len(os.listdir(toy / "runs" / "base")) == 1   # one warm start, shared
    assert "--seed 1 --run_name vpo-s1" in (toy / "logs" / "vpo-s1.log").read_text()


def fake_run(argv, out_dir, log):
    """A stand-in for train.py in a worker: a summary.json with the worker's pid and threads; seed 1 of vpo fails."""
    import json
    import torch
    name = argv[argv.index("--run_name") + 1]
    if name == "vpo-s1":
        return 3
    os.makedirs(os.path.join(out_dir, name))
    with open(os.path.join(out_dir, name, "summary.json"), "w") as f:
        json.dump({"metrics": {"pooled_best@k": {"1": 0.5}}, "args": {"steps": 2}, "pid": os.getpid(),
                   "threads": [torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")]}, f)
    return 0


def test_the_worker_pool_runs_each_run_in_a_worker_with_one_thread(tmp_path, capsys):
    import json
    setup, out, _, _ = compare.parse_command(["--task", "toy", *TINY, "--out", str(tmp_path)])
    assert compare.run_all(setup, out, 2, job=fake_run) == ["vpo-s1"]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and sum("FAILED (3)" in line for line in lines) == 1
    assert "grpo run 0: done: pooled best@1 0.500 at step 2" in "\n".join(lines)
    summaries = [json.loads((tmp_path / "runs" / n / "summary.json").read_text()) for n in ("grpo-s0", "grpo-s1")]
    assert all(s["pid"] != os.getpid() and s["threads"] == [1, "1"] for s in summaries)


@pytest.fixture
def launches(monkeypatch):
    """The argv of every train.py run compare launches (in this process)."""
    calls, train_job = [], compare.train_job

    def counted(argv, out_dir, log):
        calls.append(argv)
        return train_job(argv, out_dir, log)
    monkeypatch.setattr(compare, "train_job", counted)
    return calls


def test_a_task_defined_elsewhere_and_resuming(tmp_path, launches, capsys):
    """--task MODULE:CLASS trains and compares; a second call launches nothing; a run whose summary.json is gone
    (interrupted after its last checkpoint) is resumed, alone."""
    assert isinstance(get_task(LINES), Lines)
    argv = ["--task", LINES, *TINY, "--out", str(tmp_path)]
    assert compare.main(argv, in_process=True) == 0
    assert len(launches) == 4
    progress = [line for line in capsys.readouterr().out.splitlines() if " run " in line]
    assert len(progress) == 4 and all("done: pooled best@32" in line for line in progress)
    text = (tmp_path / "compare.md").read_text()
    assert f"on {LINES}, 2 runs each" in text and "### vpo − grpo, E_w[best@k]" in text
    assert compare.main(argv, in_process=True) == 0 and len(launches) == 4          # every run finished: none
    (tmp_path / "runs" / "vpo-s1" / "summary.json").unlink()
    assert compare.main(argv, in_process=True) == 0
    assert len(launches) == 5 and "vpo-s1" in launches[-1]
    commands = [line for line in (tmp_path / "logs" / "vpo-s1.log").read_text().splitlines() if line[:2] == "$ "]
    assert len(commands) == 2 and "--resume" in commands[-1]
    assert (tmp_path / "runs" / "vpo-s1" / "summary.json").is_file()


@pytest.mark.parametrize("extra, message", [
    (["--task", "chess"], "invalid choice"),
    (["--task", "no_such_module:Task"], "no module 'no_such_module'"),
    (["--task", "os:path"], "no Task subclass"),
    (["--task", "toy", "--algos", "grpo,ppo"], "unknown method 'ppo'"),
    (["--task", "toy", "--algos", "vpo"], "at least two different methods"),
    (["--task", "toy", "--runs", "1"], "at least two runs"),
    (["--task", "toy", "--frobnicate", "3"], "unrecognized arguments: --frobnicate 3"),
    (["--task", "toy", "--seed", "3"], "--seed is set by results.compare"),
    (["--task", "toy", "--n_head", "3"], "divisible by --n_head"),   # train.py's own checks, before anything runs
    (["--task", "toy", "--metric", "solved"], "--metric solved needs a configuration with a \"search\""),
    (["--task", "toy", "--metric", "best@3"], "invalid choice"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "cmp"
    assert compare.main([*TINY, *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_a_directory_of_another_comparison_is_refused_untouched(toy, tmp_path, capsys):
    before = snapshot(toy)
    assert compare.main(["--task", "toy", *TINY, "--steps", "3", "--out", str(toy)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--steps 2, here 3" in err and err.count("\n") == 1
    (tmp_path / "notes.txt").write_text("mine")   # a directory that is not a comparison's
    assert compare.main(["--task", "toy", *TINY, "--out", str(tmp_path)]) == 2
    assert "no config.json" in capsys.readouterr().err
    assert snapshot(toy) == before and os.listdir(tmp_path) == ["notes.txt"]


EXPERIMENTS = os.path.join(compare.ROOT, "results", "experiments")
RECORDS = sorted(os.path.join(EXPERIMENTS, f) for f in os.listdir(EXPERIMENTS))


@pytest.mark.parametrize("path", RECORDS, ids=os.path.basename)
def test_every_configuration_of_record_describes_its_committed_runs(path):
    """Each file of results/experiments loads, and every run it names is committed, trained with the arm's
    train.py settings as its summary.json records them. A configuration whose "about" says it is running checks the
    runs committed so far."""
    import train
    setup = compare.read_config(path)
    assert (setup.dir or setup.search) and len(setup.arms) >= 2
    about = compare.read_json(path)["about"]
    if setup.dir and not os.path.isdir(setup.dir) and "Not yet run" in about:
        pytest.skip(f"{os.path.basename(path)} is planned and has no committed runs yet")
    blocks = [os.path.join(compare.ROOT, b) for b in (setup.search or {}).get("blocks", [])]
    for arm in setup.arms:
        for seed in setup.seeds_of(arm):
            ds = [os.path.join(where, compare.run_name(arm, seed))
                  for where in [arm.dir or setup.dir] + blocks if where]
            d = next((d for d in ds if os.path.isfile(os.path.join(d, "summary.json"))), ds[0])
            if "Running" in about and not os.path.isfile(os.path.join(d, "summary.json")):
                continue
            recorded = compare.read_json(os.path.join(d, "summary.json"))["args"]
            parsed = vars(train.get_parser().parse_args(setup.argv(arm, seed) + ["--out_dir", "x"]))
            for key in ("task", "algo", "seed", "steps", "eval_every", "eval_problems", "eval_answers",
                        "num_answers", "match_budget", "reward_geometry", "ckpt_every", "keep_eval_ckpts"):
                assert recorded.get(key, parsed[key]) == parsed[key], (d, key)


def test_report_reads_the_maze_reproduction_as_results_md_reports_it(tmp_path):
    """--report on v3's configuration trains nothing, changes nothing committed, and gives results.md's numbers:
    VPO − GRPO, pooled best@48 at step 1000, per seed +0.155 / +0.135 / +0.112, mean +0.134 [+0.080, +0.187]."""
    runs = os.path.join(compare.ROOT, "results", "runs", "maze")
    before = snapshot(runs)
    out = tmp_path / "v3"
    assert compare.main(["--config", os.path.join(EXPERIMENTS, "maze_v3.json"), "--report", "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    assert "| VPO − GRPO | 1000 | k=48 | 3 | +0.134 | [+0.080, +0.187] | 0.25 | too few runs for a test |" in text
    assert "| 1000 | k=48 | +0.155 | +0.135 | +0.112 | +0.134 | [+0.080, +0.187] | 0.25 |" in text
    assert "| GRPO | 0 (base) | - | 0.024 | 0.068 | 0.126 | 0.217 | 0.335 | 0.456 |" in text   # results.md's row
    assert snapshot(runs) == before and sorted(os.listdir(out)) == ["best_at_k.png", "compare.md", "over_training.png"]



def test_report_reads_the_code_comparison_as_results_md_reports_it(tmp_path):
    """--report on code v2's configuration gives results.md's code verdict: VPO − GRPO, pass@12 at step 500, per
    seed +0.041 / +0.073 / +0.033, mean +0.049 [-0.003, +0.101]; and its pass@k table's base row."""
    out = tmp_path / "code"
    assert compare.main(["--config", os.path.join(EXPERIMENTS, "code_v2.json"), "--report", "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    vpo = text[text.index("### VPO − GRPO, pass@k"):]
    assert "| 500 | k=12 | +0.041 | +0.073 | +0.033 | +0.049 | [-0.003, +0.101] | 0.25 |" in vpo
    assert "| GRPO | 0 (base) | - | 0.285 | 0.420 | 0.502 | 0.574 | 0.643 | 0.719 |" in text   # results.md's row

def write_config(tmp_path, **change):
    """A copy of v3's configuration with some keys changed (None: removed), or the first arm's ("arm_KEY")."""
    import json
    c = compare.read_json(os.path.join(EXPERIMENTS, "maze_v3.json"))
    for key, value in change.items():
        where, key = (c["arms"][0], key[4:]) if key.startswith("arm_") else (c, key)
        where.pop(key) if value is None else where.__setitem__(key, value)
    (tmp_path / "c.json").write_text(json.dumps(c))
    return str(tmp_path / "c.json")


@pytest.mark.parametrize("change, extra, message", [
    ({}, ["--config", "no/such.json"], "No such file or directory"),
    ({"steps": "many"}, [], "'steps' is not int"),
    ({"stepz": 3}, [], "unknown key 'stepz'"),
    ({"arms": None}, [], "no 'arms'"),
    ({"seeds": [0]}, [], "at least two seeds"),
    ({"arm_flags": ["--algo", "grpo", "--frobnicate", "3"]}, [], "arm 'GRPO': unrecognized arguments: --frobnicate"),
    ({"arm_flags": ["--algo", "ppo"]}, [], "arm 'GRPO': argument --algo: invalid choice: 'ppo'"),
    ({"arm_flags": ["--lr", "1e-4"]}, [], "arm 'GRPO' needs --algo"),
    ({"arm_slug": "vpo"}, [], "different labels and slugs"),
    ({"flags": ["--seed", "3"]}, [], "--seed is set by results.compare"),
    ({}, ["--algos", "grpo,vpo"], "--algos is set by the configuration file"),
    ({"dir": "results/runs/nowhere"}, ["--report"], "results/runs/nowhere holds no runs"),
    ({}, ["--metric", "solved"], "has no \"search\""),
    ({"pairs": [["VPO", "PPO"]]}, [], "\"pairs\" are [A, B] of two different arms' labels"),
    ({"stopped": [{"arm": "PPO", "label": "early PPO"}]}, [], "\"stopped\" holds"),
    ({"stopped": [{"arm": "GRPO", "label": "VPO"}]}, [], "\"stopped\" holds"),
    ({"metric": "solved"}, [], "\"solved\" needs a \"search\""),
    ({"search": {"budgets": [8], "hard": "x", "pairs": [["vpo", "ppo"]]}}, [], "search pair vpo − ppo"),
    ({"decide": {"pairs": [["VPO", "GRPO"]]}}, [], "\"decide\": no 'k'"),
    ({"decide": {"k": 48, "pairs": [["VPO", "PPO"]]}}, [], "\"decide\" pairs are [A, B] or [A, B, metric]"),
    ({"decide": {"k": 48, "pairs": [["VPO", "GRPO", "solved"]]}}, [], "\"decide\" pairs are"),
    ({"decide": {"k": 48, "pairs": [], "matters": "a lot"}}, [], "'matters' is not float"),
])
def test_a_bad_configuration_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch, change, extra, message):
    monkeypatch.setattr(compare, "run_all", lambda *a, **k: pytest.fail("a bad configuration was trained"))
    out = tmp_path / "out"
    argv = extra if "--config" in extra else ["--config", write_config(tmp_path, **change), *extra]
    assert compare.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_every_arm_stopped_early_resumes_from_committed_runs_and_refuses_another_warm_start(tmp_path, capsys):
    """A configuration's "stopped" arms: each run's kept weights are validated once it has trained (validation.json:
    t*, the step of the best pooled best@k on the next problems), and the report reads each arm at its t*. Runs
    committed in the configuration's "dir" are not trained again. A seed whose committed runs started from another
    warm start (summary.json's digest) is refused in one line, exit 2, before anything runs; so is "stopped" without
    --keep_eval_ckpts."""
    import json
    import shutil
    from results.jobs import read_config
    flags = TINY[6:] + ["--keep_eval_ckpts", "--ckpt_every", "0"]
    config = {"task": "toy", "seeds": [0, 1], "steps": 2, "eval_every": 1, "flags": flags,
              "dir": str(tmp_path / "committed"),
              "stopped": [{"arm": "GRPO", "label": "GRPO stopped early"}, {"arm": "VPO", "label": "VPO stopped early"}],
              "pairs": [["VPO stopped early", "GRPO stopped early"]],
              "decide": {"k": 2, "matters": 0.02, "pairs": [["VPO", "GRPO"]], "growth": 1,
                         "secondary": [["VPO stopped early", "GRPO stopped early", "E_w[best@k]"]]},
              "arms": [{"label": "GRPO", "slug": "grpo", "flags": ["--algo", "grpo"]},
                       {"label": "VPO", "slug": "vpo", "flags": ["--algo", "vpo"]}]}
    path, out = tmp_path / "c.json", tmp_path / "out"
    path.write_text(json.dumps(config))
    assert compare.main(["--config", str(path), "--out", str(out)], in_process=True) == 0
    for name in ("grpo-s0", "vpo-s0", "grpo-s1", "vpo-s1"):
        validation = compare.read_json(str(out / "runs" / name / "validation.json"))
        assert validation["problems"] == [2, 4] and validation["step"] in (1, 2) and validation["commit"]
        assert set(validation["pooled_best@k"]) == {"1", "2"}
        summary = compare.read_json(str(out / "runs" / name / "summary.json"))
        assert summary["commit"] and len(summary["warm_start"]) == 8
    text = (out / "compare.md").read_text()
    assert "| VPO stopped early − GRPO stopped early |" in text and "GRPO's weights at its best step" in text
    decision = text[text.index("## The decision"):text.index("## Configuration")]
    assert "| VPO − GRPO | deciding | pooled_best@2 | 2 |" in decision
    assert "| VPO stopped early − GRPO stopped early | secondary | E_w[best@2] | 2 |" in decision
    assert "The gap's growth with k" in decision and (out / "differences.png").is_file()
    swapped = compare.read_json(str(out / "runs" / "vpo-s1" / "summary.json"))   # a GRPO run under VPO's name
    (out / "runs" / "vpo-s1" / "summary.json").write_text(json.dumps({**swapped, "algo": "grpo"}))
    with pytest.raises(compare.UsageError, match="vpo-s1: a run of grpo, where VPO trains --algo vpo"):
        compare.read_runs(read_config(str(path)), str(out))
    (out / "runs" / "vpo-s1" / "summary.json").write_text(json.dumps(swapped))
    assert "![early stopping](validation.png)" in text and (out / "validation.png").is_file()
    # seed 0 committed: a fresh --out trains seed 1 only
    for name in ("grpo-s0", "vpo-s0"):
        os.makedirs(tmp_path / "committed" / name)
        for f in ("summary.json", "eval.jsonl", "validation.json"):
            shutil.copy(out / "runs" / name / f, tmp_path / "committed" / name / f)
    capsys.readouterr()
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "out2")], in_process=True) == 0
    assert sorted(os.listdir(tmp_path / "out2" / "runs")) == ["base", "grpo-s1", "vpo-s1"]
    # an arm read from another experiment's directory (the arm's "dir"): its runs there are not trained again
    for name in ("grpo-s0", "grpo-s1"):
        shutil.copytree(out / "runs" / name, tmp_path / "elsewhere" / name,
                        ignore=shutil.ignore_patterns("*.pt"))
    path.write_text(json.dumps({**config, "arms": [{**config["arms"][0], "dir": str(tmp_path / "elsewhere")},
                                                   config["arms"][1]]}))
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "out4")], in_process=True) == 0
    assert sorted(os.listdir(tmp_path / "out4" / "runs")) == ["base", "vpo-s1"]
    path.write_text(json.dumps(config))
    # seed 0's VPO run to do, its GRPO run from another warm start: refused before anything runs
    shutil.rmtree(tmp_path / "committed" / "vpo-s0")
    summary = compare.read_json(str(tmp_path / "committed" / "grpo-s0" / "summary.json"))
    (tmp_path / "committed" / "grpo-s0" / "summary.json").write_text(json.dumps({**summary, "warm_start": "deadbeef"}))
    capsys.readouterr()
    assert compare.main(["--config", str(path), "--out", str(out)], in_process=True) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the warm start here") and "(deadbeef)" in err and err.count("\n") == 1, err
    assert sorted(os.listdir(out / "runs")) == ["base", "grpo-s0", "grpo-s1", "vpo-s0", "vpo-s1"]   # none deleted
    # without the kept weights there is nothing to stop at
    path.write_text(json.dumps({**config, "flags": TINY[6:]}))
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "out3")], in_process=True) == 2
    assert "needs --keep_eval_ckpts" in capsys.readouterr().err

"""results/compare.py: `python -m results.compare` end to end on a tiny model, on the toy (worker processes) and on
a task defined here (--task MODULE:CLASS, in this process); resuming skips finished runs and resumes interrupted
ones; runs are paired by seed; every bad input is one `error:` line, exit code 2, nothing on disk changed."""
import os
import re

import numpy as np
import pytest

from results import compare
from results.tables import paired_rows
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


def run(metrics_by_step, seed):
    """A hand-made finished run: {step: pooled best@k table}; the last step is the final evaluation."""
    steps = sorted(metrics_by_step)
    return {"seed": seed, "summary": {"args": {"steps": steps[-1]}, "metrics": {"pooled_best@k": metrics_by_step[
        steps[-1]], "m": 1}}, "evals": [{"step": s, "pooled_best@k": metrics_by_step[s]} for s in steps[:-1]]}


def test_runs_are_paired_by_seed():
    """GRPO finished seeds 0, 1, 2 and VPO only 1 and 2: VPO's run 1 is paired with GRPO's run 1, not its first."""
    grpo = [run({5: {"4": g}}, s) for s, g in enumerate([0.1, 0.2, 0.4])]
    vpo = [run({5: {"4": v}}, s) for s, v in ((1, 0.5), (2, 0.6))]
    seeds, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert seeds == [1, 2]
    # seed 1: 0.5 − 0.2; seed 2: 0.6 − 0.4; mean 0.25, exact p over 2 pairs 0.5 (both signs alike)
    assert rows == [["5", "k=4", "+0.300", "+0.200", "+0.250", rows[0][5], "0.5", "too few runs for a test", "-"]]
    lo, hi = (float(x) for x in rows[0][5].strip("[]").split(", "))
    half = 12.706205 * np.std([0.3, 0.2], ddof=1) / 2 ** 0.5   # t_.975,1 x sd / sqrt(n)
    assert (lo, hi) == (pytest.approx(0.25 - half, abs=1e-3), pytest.approx(0.25 + half, abs=1e-3))


def test_a_seed_missing_a_value_leaves_its_own_cell_blank():
    """Seed 0 lacks k=4 at step 5 and seed 2 has no step 3: every difference stays under its own seed's column."""
    grpo = [run({3: {"4": 0.1}, 5: {"4": None, "1": 0.1}}, 0), run({3: {"4": 0.2}, 5: {"4": 0.2, "1": 0.1}}, 1),
            run({5: {"4": 0.3, "1": 0.1}}, 2)]
    vpo = [run({3: {"4": 0.5}, 5: {"4": 0.5, "1": 0.2}}, 0), run({3: {"4": 0.6}, 5: {"4": 0.7, "1": 0.2}}, 1),
           run({5: {"4": 0.9, "1": 0.2}}, 2)]
    seeds, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert seeds == [0, 1, 2]
    assert [r[:5] for r in rows] == [["3", "k=4", "+0.400", "+0.400", ""], ["5", "k=1", "+0.100", "+0.100", "+0.100"],
                                     ["5", "k=4", "", "+0.500", "+0.600"]]
    assert rows[2][5] == "+0.550"


def test_six_runs_can_reach_a_reading():
    """With six pairs all of one sign the exact test gives 2/64 and a reading, and the detectable difference."""
    grpo = [run({3: {"1": 0.1 * s}}, s) for s in range(6)]
    vpo = [run({3: {"1": 0.1 * s + 0.05 + 0.01 * s}}, s) for s in range(6)]
    _, rows = paired_rows({"grpo": grpo, "vpo": vpo}, "vpo", "grpo", "pooled_best@k")
    assert rows[0][10:12] == ["0.0312", "vpo ahead"] and float(rows[0][12]) > 0


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


def scored(seed, best, ew=None, diversity=0.1, stopped_at=None):
    """A hand-made finished run scored at its last step: pooled best@k {k: value} (and E_w[best@k])."""
    r = {"seed": seed, "dir": "nowhere", "evals": [],
         "summary": {"args": {"steps": 10}, "metrics": {"pooled_best@k": best, "E_w[best@k]": ew or best, "m": 1,
                                                         "diversity": diversity}}}
    return {**r, "stopped_at": stopped_at} if stopped_at is not None else r


def exact_p(ds):
    """The sign-flip p by brute force: the share of the 2^n sign patterns whose |mean| reaches the observed one."""
    import itertools
    means = [abs(np.mean([s * d for s, d in zip(signs, ds)])) for signs in itertools.product((1, -1), repeat=len(ds))]
    return np.mean([m >= abs(np.mean(ds)) - 1e-12 for m in means])


def test_the_decision_holds_each_family_under_holm_as_by_hand():
    """decision_lines: the deciding pairs under Holm's rule, each p by brute force, Holm by hand (the smaller p times
    two, the larger at least that), the p with each seed left out, the readings (ahead, not separated after Holm,
    by less than what matters, within ±matters), the gap's growth with k and each arm's t*."""
    from results.tables import decision_lines, family_rows
    up = [0.05, 0.06, 0.04, 0.07, 0.03, 0.08, 0.05]            # VPO − GRPO at k = 48: 7 of one sign
    mixed = [0.01, -0.005, 0.02, 0.015, -0.01, 0.005, -0.02]   # VPO − Max@k
    grpo = [scored(s, {"3": 0.4, "48": 0.5}) for s in range(7)]
    vpo = [scored(s, {"3": 0.41, "48": 0.5 + up[s]}, diversity=0.3) for s in range(7)]
    mx = [scored(s, {"3": 0.41, "48": 0.5 + up[s] - mixed[s]}) for s in range(7)]
    runs = {"GRPO": grpo, "VPO": vpo, "Max@k": mx,
            "VPO stopped early": [{**r, "stopped_at": 250 * (1 + r["seed"] % 4)} for r in vpo]}
    decide = {"k": 48, "matters": 0.1, "pairs": [["VPO", "Max@k"], ["VPO", "GRPO"]], "growth": 3}
    rows = family_rows(runs, decide["pairs"], "pooled_best@k", 48, "deciding", 0.1)
    p_mixed, p_up = exact_p(mixed), exact_p(up)
    assert p_up == 2 / 128 and p_mixed > 0.25
    assert [r[0] for r in rows] == ["VPO − Max@k", "VPO − GRPO"] and rows[1][2:4] == ["pooled_best@48", "7"]
    assert rows[1][4] == f"{np.mean(up):+.3f}" and rows[1][6] == f"{p_up:.3g}"
    assert rows[1][7] == f"{2 * p_up:.3g}" and rows[0][7] == f"{max(p_mixed, 2 * p_up):.3g}"   # Holm by hand
    assert rows[1][8] == "VPO ahead, by less than what matters"   # the interval's upper end below 0.1
    assert rows[0][8] == "not separated; no difference that matters"   # the interval within ±0.1
    assert rows[1][9] == f"{2 / 64:.3g}-{2 / 64:.3g}"   # 6 seeds of one sign, whichever is left out
    left = [exact_p(mixed[:i] + mixed[i + 1:]) for i in range(7)]
    assert rows[0][9] == f"{min(left):.3g}-{max(left):.3g}"
    # p 0.031 alone rejects; beside a pair of p 0.5 Holm doubles it past 0.05
    six = {"A": [scored(s, {"48": 0.1 * s + 0.01 * (s + 1)}) for s in range(6)],
           "B": [scored(s, {"48": 0.1 * s}) for s in range(6)], "C": [scored(s, {"48": 0.1 * s - 0.01 * (-1) ** s})
                                                                     for s in range(6)]}
    alone = family_rows(six, [["A", "B"]], "pooled_best@k", 48, "secondary", None)
    both = family_rows(six, [["A", "B"], ["C", "B"]], "pooled_best@k", 48, "secondary", None)
    assert alone[0][6:9] == ["0.0312", "0.0312", "A ahead"]
    # under --metric, a pair naming the headline's metric is the same test as the bare pair: one row, Holm over one
    assert family_rows(six, [["A", "B"], ["A", "B", "pooled_best@k"]], "pooled_best@k", 48, "secondary", None) == alone
    assert both[0][6:9] == ["0.0312", "0.0625", "not separated (Holm)"] and both[1][6] == "1"
    text = "\n".join(decision_lines(runs, decide, "pooled_best@k"))
    growth = " ".join(f"{u:+.3f}" for u in up)   # VPO − GRPO at k = 3 is +0.01 in every seed
    assert f"| VPO − GRPO | {' '.join(f'{u - 0.01:+.3f}' for u in up)} | {np.mean(up) - 0.01:+.3f} |" in text, growth
    assert "| VPO stopped early | 7 | 0.300 ± 0.000 | s0:250 s1:500 s2:750 s3:1000 s4:250 s5:500 s6:750 |" in text


def test_two_arms_stopped_early_pair_by_seed_whatever_their_lengths(tmp_path):
    """The early-stop plan's grid check: GRPO stopped on a 5-step grid (50 steps) against GRPO stopped on the
    25-step grid (500 steps). The arms share no last step, yet each seed pairs at its t*; an arm stopped early
    against a trained one reads "t* / 500". A finished run with no t* is named, never dropped in silence."""
    import json
    from results.jobs import read_config
    from results.tables import metric_lines, pair_steps, paired_rows, verdict_lines

    def run(seed, best, steps, t=None):
        r = scored(seed, {"48": best}, stopped_at=t)
        r["summary"]["args"]["steps"] = steps
        r["summary"].update(train_seconds=1.0, eval_seconds=1.0)
        return r
    runs = {"GRPO": [run(s, 0.50, 500) for s in (8, 9, 10)],
            "fine": [run(s, 0.60 + 0.01 * s, 50, 5 * s - 35) for s in (8, 9, 10)],
            "coarse": [run(s, 0.60, 500, 25) for s in (8, 9, 10)]}
    assert pair_steps(runs, "fine", "coarse") == [(None, "t*")]
    assert pair_steps(runs, "fine", "GRPO") == [(None, "t* / 500")]
    text = "\n".join(verdict_lines(runs, [("GRPO", "GRPO"), ("fine", "coarse")]))
    assert "| fine − coarse | t* | k=48 | 3 | +0.090 |" in text, text
    seeds, rows = paired_rows(runs, "fine", "coarse", "pooled_best@k")
    assert seeds == [8, 9, 10] and rows[0][:5] == ["t*", "k=48", "+0.080", "+0.090", "+0.100"]
    table = "\n".join(metric_lines(runs, {}, {"pooled_best@k": "### pooled best@k"}))
    assert "| coarse | t* | 3 |" in table and "| GRPO | 500 | 3 |" in table, table   # stopped: each run at its t*
    config = {"task": "toy", "seeds": [8, 9, 10], "steps": 500, "eval_every": 25, "flags": [],
              "stopped": [{"arm": "GRPO", "label": "coarse"}],
              "arms": [{"label": "GRPO", "slug": "grpo", "flags": ["--algo", "grpo"]},
                       {"label": "fine", "slug": "fine", "flags": ["--algo", "grpo", "--steps", "50"]}]}
    (tmp_path / "c.json").write_text(json.dumps(config))
    setup = read_config(str(tmp_path / "c.json"))
    runs["coarse"] = [r for r in runs["coarse"] if r["seed"] != 9]          # seed 9: no validation.json
    lines = "\n".join(compare.configuration_lines(setup, str(tmp_path), runs, "cmd", 0, [], True))
    assert "t*: seed 8 step 25, seed 10 step 25), evaluated on the test problems. No t* for seed 9: left out." in lines
    assert "- Warm start: every run from none recorded." in lines
    runs["GRPO"][1]["summary"]["warm_start"] = "deadbeef"                     # one run from another warm start
    lines = "\n".join(compare.configuration_lines(setup, str(tmp_path), runs, "cmd", 0, [], True))
    assert "- Warm starts differ: none recorded: GRPO s8, GRPO s10; deadbeef: GRPO s9." \
        in lines, lines


def test_each_difference_keeps_its_own_seed_where_a_seed_lacks_the_k():
    """pair_values: a seed whose run has no value at k (another m) is left out, and the others keep their seeds."""
    from results.tables import pair_values
    runs = {"A": [scored(s, {"2": 0.5 + s / 10}) for s in (0, 1, 2)],
            "B": [scored(0, {"2": 0.5}), scored(1, {"4": 0.5}), scored(2, {"2": 0.5})]}
    assert pair_values(runs, ["A", "B"], "pooled_best@k", 2)[3] == pytest.approx({0: 0.0, 2: 0.2})


def test_the_figures_draw_an_arm_whose_base_was_not_evaluated(tmp_path):
    """An arm whose first seed is missing has no base evaluation; its runs' own step-0 evaluations (--eval_at_start)
    stand for the warm start, and over_training.png is drawn, not a traceback."""
    from results.figures import compare_figures

    def run(seed):
        r = scored(seed, {"1": 0.1, "48": 0.5})
        r["evals"] = [{"step": s, "pooled_best@k": {"1": 0.1, "48": 0.4 + s / 100}} for s in (0, 5)]
        return r
    compare_figures({"GRPO": [run(9), run(10)]}, {}, str(tmp_path), "no base")
    assert (tmp_path / "over_training.png").is_file() and (tmp_path / "best_at_k.png").is_file()


def test_what_each_arm_writes_is_read_from_the_coverage_files_of_its_weights(tmp_path):
    """written_lines: an arm's final weights read coverage-final.json, an arm stopped early coverage-stopped.json;
    the shares are means over runs; the first rollout's answers on the first problems, from the seed asked for."""
    import json
    from results.tables import written_lines
    for name, file, share, route in (("v0", "coverage-final.json", 0.2, "R"), ("v1", "coverage-final.json", 0.4, "U"),
                                     ("v0", "coverage-stopped.json", 0.9, "D")):
        routes = [{"problem": p, "rollout": r, "answers": [[f"{route}{p}{r}", [1.0, 0.0]]]} for p in range(6)
                  for r in range(2)]
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / file).write_text(json.dumps({"answers": {"exit": share, "gold": 0.5}, "routes": routes,
                                                        "completions_two_classes": share / 2}))
    runs = {"VPO": [{"seed": s, "dir": str(tmp_path / f"v{s}")} for s in (0, 1)],
            "VPO stopped early": [{"seed": 0, "dir": str(tmp_path / "v0"), "stopped_at": 250},
                                  {"seed": 1, "dir": str(tmp_path / "v1"), "stopped_at": 500}]}   # v1: none kept
    text = "\n".join(written_lines(runs, problems=2, seed=1))
    assert "| VPO | 2 | 0.30 | 0.50 | 0.15 ± 0.05 |" in text and "| VPO stopped early | 1 | 0.90 | 0.50 | 0.45 |" in text
    assert "| VPO | 1 | 1 | `U10` [1.0, 0.0] |" in text and "| VPO stopped early | 0 | 0 | `D00` [1.0, 0.0] |" in text
    assert "U20" not in text and "U11" not in text   # problems 0-1, rollout 0

"""Run management that loses nothing: run names and --overwrite, the warm-start cache under concurrent runs,
kill -9 then --resume, the resume checks and flag ranges (the other tools' refusals: test_tools.py).
Every refusal: exit code 2, one stderr line starting with 'error:', and the files on disk unchanged."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

import scripted_train
import train
from model import GPT, CheckpointError, GPTConfig, load_checkpoint, save_checkpoint
from refusals import TINY, assert_refused, tree
from runs.checks import check_method, prepare
from runs.cli import UsageError
from runs.dirs import RUN_FILES, check_overwritable
from tasks.toy import ToyTask

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One CPU thread here and in the subprocesses (OMP_NUM_THREADS): the same arithmetic in both, and much
    faster than two threads on a busy machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.fixture
def world(tmp_path):
    """An out_dir with a cached base and a finished sibling run, and a file next to out_dir: sentinels."""
    out = tmp_path / "out"
    for rel in ("base/toy-0123456789/ckpt.pt", "sibling/summary.json"):
        (out / rel).parent.mkdir(parents=True)
        (out / rel).write_text("precious")
    (tmp_path / "outside.txt").write_text("precious")
    return out


# ------------------------------------------------------------------------------------- train.py: bad input
@pytest.mark.parametrize("extra,needle", [
    (["--alpha", "inf"], "--alpha"), (["--alpha", "nan"], "--alpha"), (["--lr", "inf"], "--lr"),
    (["--lr", "5"], "--lr"),
    (["--sft_lr", "inf"], "--sft_lr"), (["--kl_coef", "inf"], "--kl_coef"), (["--kl_coef", "-1"], "--kl_coef"),
    (["--weight_decay", "nan"], "--weight_decay"), (["--weight_decay", "-5"], "--weight_decay"),
    (["--temperature", "inf"], "--temperature"), (["--temperature", "nan"], "--temperature"),
    (["--temperature", "0"], "--temperature"), (["--temperature", "1e-9"], ">= 0.01"),
    (["--eval_temperature", "inf"], "--eval_temperature"),
    (["--eval_temperature", "-1"], "--eval_temperature"), (["--clip", "inf"], "--clip"),
    (["--dual_clip", "nan"], "--dual_clip"), (["--dual_clip", "1"], "--dual_clip"),
    (["--grad_clip", "inf"], "--grad_clip"),
    (["--grad_clip", "0"], "--grad_clip"), (["--seed", "-1"], "--seed"), (["--base_seed", "-1"], "--base_seed"),
    (["--seed", str(2**40)], "--seed"), (["--steps", "1.5"], "--steps"), (["--ckpt_every", "-1"], "--ckpt_every"),
    (["--eval_every", "-1"], "--eval_every"), (["--eval_problems", "0"], "--eval_problems"),
    (["--eval_problems", "2000"], "n must be an int in [0, 1222]"),        # more than toy's test problems
    (["--batch_size", "9000"], "n must be an int in [0, 8778]"),          # more than toy's train problems
    (["--task_opt", "compromise=0.5", "--task_opt", "compromise=0.7"], "given twice"),
    (["--task_opt", "compromise=2"], "compromise must be in [0, 1]"),
    (["--task", "maze", "--task_opt", "max_moves=1"], "no valid maze"),  # refused when the task is built
    (["--task", "maze", "--task_opt", "size=21"], "--task_opt"),
    (["--task", "maze", "--task_opt", "slack=40"], "--task_opt"),          # both corners would fit the budget
    (["--task", "code", "--task_opt", "families=step+loop"], "families"),   # no such family: one line, exit 2
    (["--task", "code", "--task_opt", "inputs=sorted"], "inputs"),         # no such input choice
    (["--task", "code", "--block_size", "256", "--task_opt", "num_tests=12"], "exceed the block size 256"),
    (["--algo", "max_at_k", "--max_at_k", "4"], "--max_at_k"),             # k >= G = 4
    (["--algo", "max_at_k", "--group_size", "2"], "--max_at_k"),           # the default k = 2 >= G
    (["--algo", "max_at_k", "--max_at_k", "0"], "--max_at_k"),
    (["--warm_start", "routes"], "--warm_start"),                          # the toy task has diverse only
    (["--warm_start", "blind"], "invalid choice"),
    (["--run_name", "a/b"], "--run_name"), (["--run_name", ".."], "--run_name"), (["--run_name", "."], "--run_name"),
    (["--run_name", "base"], "--run_name"), (["--run_name", "BASE"], "--run_name"), (["--run_name", ""], "--run_name"),
    (["--run_name", "x" * 300], "--run_name"), (["--run_name", "..", "--overwrite"], "--run_name"),
    (["--run_name", "base", "--overwrite"], "--run_name"), (["--run_name", ".", "--overwrite"], "--run_name"),
    (["--run_name", "sibling", "--resume", "--overwrite"], "exclude"),
    (["--run_name", "sibling"], "exists"),
])
def test_bad_flags_are_refused_before_anything_is_written_or_deleted(world, capsys, extra, needle):
    before = tree(world.parent)
    assert_refused(capsys, train.main(TINY + ["--out_dir", str(world), *extra]), needle)
    assert tree(world.parent) == before


def test_an_out_dir_that_is_a_file_is_refused(world, capsys):
    before = tree(world.parent)
    for out in (world.parent / "outside.txt", world.parent / "outside.txt" / "sub"):
        assert_refused(capsys, train.main(TINY + ["--out_dir", str(out)]), "is not a directory")
    assert tree(world.parent) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_an_unwritable_out_dir_is_refused(world, capsys):
    world.chmod(0o500)
    try:
        assert_refused(capsys, train.main(TINY + ["--out_dir", str(world)]), "not writable")
    finally:
        world.chmod(0o700)


def test_overwrite_deletes_only_a_run_directory(world, capsys):
    """--overwrite refuses a directory holding a file a run does not write, a symbolic link, and a file."""
    (world / "sibling" / "notes.txt").write_text("mine")
    (world / "link").symlink_to(world / "base")
    (world / "file").write_text("precious")
    before = tree(world.parent)
    for name, needle in (("sibling", "notes.txt"), ("link", "not a run directory"), ("file", "not a run directory")):
        assert_refused(capsys, train.main(TINY + ["--out_dir", str(world), "--run_name", name, "--overwrite"]), needle)
    assert tree(world.parent) == before


def test_overwrite_refuses_to_delete_the_init_it_starts_from(done, tmp_path, capsys):
    """--init inside the run directory --overwrite would empty: refused before anything is deleted."""
    out = tmp_path / "out"
    shutil.copytree(done.parent, out / "vpo-toy-s0")
    before = tree(tmp_path)
    init = out / "vpo-toy-s0" / "ckpt.pt"
    assert_refused(capsys, train.main(TINY + ["--out_dir", str(out), "--init", str(init), "--overwrite"]), "--init")
    assert tree(tmp_path) == before


def test_a_run_from_init_records_the_shape_of_its_model(done, tmp_path):
    """The flags' model shape gives way to --init's: the saved arguments describe the model that trains."""
    args, _, model, *_ = prepare(TINY + ["--out_dir", str(tmp_path), "--init", str(done), "--n_layer", "3",
                                        "--n_embd", "64", "--block_size", "128"],
                                 train.get_parser, train.RESUMABLE, lambda a: [a.num_answers])
    config = model.config
    assert (args.n_layer, args.n_head, args.n_embd, args.block_size) == (1, 2, 32, 96) == \
        (config.n_layer, config.n_head, config.n_embd, config.block_size)
    assert not os.listdir(tmp_path)


def test_the_files_a_run_writes_may_be_overwritten_and_nothing_else(tmp_path):
    """--keep_eval_ckpts' ckpt-step<N>.pt and save_checkpoint's temp files are a run's own; near misses are not."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("ckpt.pt", "ckpt.pt.tmp123", "ckpt-step55.pt", "ckpt-step110.pt.tmp9", "log.jsonl"):
        (run / name).write_text("x")
    check_overwritable(str(run))
    for foreign in ("ckpt-stepX.pt", "ckpt-step55.pt.bak", "my-ckpt.pt"):
        (run / foreign).write_text("mine")
        with pytest.raises(UsageError, match=re.escape(repr(foreign))):
            check_overwritable(str(run))
        (run / foreign).unlink()


def test_a_run_directory_that_appears_during_the_warm_start_is_kept(tmp_path, capsys, monkeypatch):
    """Another run with the same name finishes while this one trains its warm start: without --overwrite it is
    not deleted (the directory is claimed with mkdir, which fails if it exists)."""
    real = train.warm_start

    def warm_start_while_another_run_finishes(*a, **k):
        path = real(*a, **k)
        (tmp_path / "vpo-toy-s0").mkdir()
        (tmp_path / "vpo-toy-s0" / "summary.json").write_text("finished")
        return path

    monkeypatch.setattr(train, "warm_start", warm_start_while_another_run_finishes)
    assert_refused(capsys, train.main(TINY + ["--out_dir", str(tmp_path)]), "exists")
    assert os.listdir(tmp_path / "vpo-toy-s0") == ["summary.json"]


# ------------------------------------------------------------------------------------- the warm-start cache
def test_the_cache_key_covers_every_setting_the_warm_start_reads():
    """The warm start reads its model (GPTConfig), its task and options, and sft.SFTConfig, a frozen dataclass, and
    nothing else (sft.warm_start's arguments): every field of both changes the cache key (bf16 on CUDA only: it
    changes the rounding of the base)."""
    from dataclasses import fields, replace
    from runs.dirs import base_dir
    from sft import SFTConfig
    cpu, cuda = torch.device("cpu"), torch.device("cuda")  # base_dir reads only the device's type
    config, cfg = GPTConfig(block_size=96, n_layer=1, n_head=2, n_embd=32), SFTConfig()
    key = lambda c=config, s=cfg, device=cpu, task="toy", opt=(): base_dir("out", task, list(opt), c, s, device)  # noqa
    changed = {"style": "routes", "goal_prompts": True, "amp": False, "lr": 1e-3, "grad_clip": 0.5}
    for f in fields(SFTConfig):
        other = replace(cfg, **{f.name: changed[f.name] if f.name in changed else getattr(cfg, f.name) + 1})
        assert key(s=other, device=cuda) != key(device=cuda), f.name
    for name in ("n_layer", "n_head", "n_embd", "block_size"):
        assert key(c=replace(config, **{name: getattr(config, name) * 2})) != key(), name
    assert key(task="maze") != key() and key(opt=["compromise=0.5"]) != key()
    assert key(s=replace(cfg, amp=False)) == key()   # fp32 on the CPU either way


DRIVER = """import os, sys, time
import train
open(sys.argv[1] + ".ready" + str(os.getpid()), "w").close()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
sys.exit(train.main(sys.argv[2:]))"""


def test_two_runs_started_together_train_one_base_and_both_finish(tmp_path):
    """Both processes import first, then start train.main at the same moment: one trains the shared base, the
    other waits for it; one base directory, its log written once, both runs complete."""
    go = str(tmp_path / "go")
    argv = TINY + ["--sft_steps", "8", "--out_dir", str(tmp_path / "out")]
    procs = [subprocess.Popen([sys.executable, "-c", DRIVER, go, *argv, "--run_name", name], cwd=ROOT, env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    deadline = time.time() + 120
    while len(glob.glob(go + ".ready*")) < 2 and time.time() < deadline:
        time.sleep(0.01)
    open(go, "w").close()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert sum("training it" in out for out, _ in outs) == 1, [out for out, _ in outs]
    (base,) = os.listdir(tmp_path / "out" / "base")
    entry = tmp_path / "out" / "base" / base
    assert sorted(os.listdir(entry)) == [".lock", "ckpt.pt", "log.jsonl"]
    assert [json.loads(x)["step"] for x in (entry / "log.jsonl").read_text().splitlines()] == list(range(1, 9))
    for name in ("a", "b"):
        assert load_checkpoint(str(tmp_path / "out" / name / "ckpt.pt"))[1]["step"] == 2
        assert (tmp_path / "out" / name / "summary.json").exists()


# ---------------------------------------------------------------------------------------- kill -9 and resume
def kill_when(cmd, ready, log, timeout=300):
    """Start cmd (stdout to log), SIGKILL it as soon as ready() holds; it must not have finished by then.
    -> what it printed."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while not ready():
            assert proc.poll() is None, f"finished before the kill: {open(log).read()}"
            assert time.time() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return open(log).read()


def test_kill_9_in_the_warm_start_and_in_rl_then_resume_ends_bit_equal(tmp_path, monkeypatch):
    """Scripted rewards make every group's advantages nonzero, so the weights move. Killed after the warm start's
    first checkpoint, started again (the warm start resumes from it), killed after RL's first checkpoint,
    then --resume: the base, the final weights and the logs equal those of an uninterrupted run."""
    monkeypatch.setattr(ToyTask, "score", scripted_train.score)
    argv = TINY + ["--sft_steps", "10", "--steps", "8", "--ckpt_every", "2", "--eval_every", "5", "--lr", "1e-3"]
    assert train.main(argv + ["--out_dir", str(tmp_path / "straight")]) == 0
    out = tmp_path / "killed"
    cmd = [sys.executable, os.path.join(ROOT, "tests", "scripted_train.py"), *argv, "--out_dir", str(out)]
    kill_when(cmd, lambda: glob.glob(str(out / "base" / "*" / "partial.pt")), tmp_path / "1.txt")
    (partial,) = glob.glob(str(out / "base" / "*" / "partial.pt"))
    assert load_checkpoint(partial)[1]["step"] < 10 and not glob.glob(str(out / "base" / "*" / "ckpt.pt"))
    run = out / "vpo-toy-s0"
    printed = kill_when(cmd, lambda: (run / "ckpt.pt").exists(), tmp_path / "2.txt")
    assert "resuming at step" in printed  # the warm start went on from its checkpoint
    assert load_checkpoint(str(run / "ckpt.pt"))[1]["step"] < 8 and not (run / "summary.json").exists()
    assert train.main(argv + ["--out_dir", str(out), "--resume"]) == 0

    def same_run(a, b, moved_from=None):
        wa, wb = (load_checkpoint(str(p))[0].state_dict() for p in (a / "ckpt.pt", b / "ckpt.pt"))
        assert all(torch.equal(wa[k], wb[k]) for k in wa)
        if moved_from is not None:
            w0 = load_checkpoint(str(moved_from / "ckpt.pt"))[0].state_dict()
            assert not all(torch.equal(wa[k], w0[k]) for k in wa), "the weights never moved: the test shows nothing"
        timing = ("seconds", "step_seconds", "tokens_per_s")
        for name in ("log.jsonl", "eval.jsonl"):
            if (a / name).exists() or (b / name).exists():
                ra, rb = ([{k: v for k, v in json.loads(x).items() if k not in timing}
                           for x in (d / name).read_text().splitlines()] for d in (a, b))
                assert ra == rb, name
    (base_a,), (base_b,) = (glob.glob(str(d / "base" / "*")) for d in (tmp_path / "straight", out))
    same_run(tmp_path / "straight" / "base" / os.path.basename(base_a), out / "base" / os.path.basename(base_b))
    same_run(tmp_path / "straight" / "vpo-toy-s0", run, moved_from=out / "base" / os.path.basename(base_b))


def test_weights_that_turn_non_finite_are_never_checkpointed(tmp_path, capsys, monkeypatch):
    real = train.rl_step

    def diverging_rl_step(model, *args):
        row = real(model, *args)
        if row["step"] == 2:
            next(model.parameters()).data.fill_(float("nan"))
        return row

    monkeypatch.setattr(train, "rl_step", diverging_rl_step)
    rc = train.main(TINY + ["--out_dir", str(tmp_path), "--steps", "4", "--ckpt_every", "1"])
    assert_refused(capsys, rc, "no longer finite at step 2")
    model, state = load_checkpoint(str(tmp_path / "vpo-toy-s0" / "ckpt.pt"))
    assert state["step"] == 1


@pytest.mark.parametrize("extra,needle", [
    (["--steps", "1"], "below the checkpoint's step 2"), (["--overwrite"], "exclude"), (["--lr", "0.001"], "--lr"),
    (["--algo", "grpo"], "--algo"), (["--task", "maze"], "--task"), (["--task_opt", "compromise=0.5"], "--task_opt"),
    (["--init", "x.pt"], "--init"), (["--steps", "nan"], "--steps"),
])
def test_resume_refuses_a_lower_step_count_and_conflicting_flags(done, tmp_path, capsys, extra, needle):
    before = tree(done.parent.parent)
    rc = train.main(TINY + ["--out_dir", str(done.parent.parent), "--run_name", "vpo-toy-s0", "--resume", *extra])
    assert_refused(capsys, rc, needle)
    assert tree(done.parent.parent) == before


def test_the_docs_name_every_file_of_a_run_and_what_resume_may_change():
    text = open(os.path.join(ROOT, "docs", "runs.md")).read()
    assert all(f"`--{flag}`" in text for flag in train.RESUMABLE), train.RESUMABLE
    assert all(f"`{name}`" in text for name in RUN_FILES), RUN_FILES


def test_resume_needs_a_complete_run_checkpoint(done, tmp_path, capsys):
    run = tmp_path / "vpo-toy-s0"
    shutil.copytree(done.parent, run)
    state = torch.load(run / "ckpt.pt", weights_only=True)
    del state["optimizer"]
    torch.save(state, run / "ckpt.pt")
    before = tree(tmp_path)
    assert_refused(capsys, train.main(TINY + ["--out_dir", str(tmp_path), "--resume"]), "no optimizer")
    assert tree(tmp_path) == before


def test_resume_drops_a_partial_last_log_line(done, tmp_path, capsys):
    """A write cut short (a kill or a full disk during an append) leaves a partial last line: --resume drops it
    and the rows past the checkpoint's step; a corrupt line before the last is refused."""
    run = tmp_path / "vpo-toy-s0"
    shutil.copytree(done.parent, run)
    with open(run / "log.jsonl", "a") as f:
        f.write('{"step": 3, "deploy_rew')
    (run / "eval.jsonl").write_text('{"step": 2, "m": 3}\n{"st')
    assert train.main(TINY + ["--out_dir", str(tmp_path), "--resume", "--steps", "3"]) == 0
    assert [json.loads(x)["step"] for x in (run / "log.jsonl").read_text().splitlines()] == [1, 2, 3]
    assert [json.loads(x)["step"] for x in (run / "eval.jsonl").read_text().splitlines()] == [2]
    (run / "eval.jsonl").write_text('{"st\n{"step": 1}\n')
    before = tree(tmp_path)
    rc = train.main(TINY + ["--out_dir", str(tmp_path), "--resume", "--steps", "3"])
    assert_refused(capsys, rc, "line 1 is corrupt")
    assert tree(tmp_path) == before


# ---------------------------------------------------------------------------------------------- checkpoints
def test_load_checkpoint_rejects_non_finite_weights(tmp_path, capsys):
    model = GPT(GPTConfig(block_size=96, n_layer=1, n_head=2, n_embd=32))
    with torch.no_grad():
        model.lm_head.weight[3, 4] = float("inf")
    save_checkpoint(str(tmp_path / "inf.pt"), model)
    with pytest.raises(CheckpointError, match="non-finite"):
        load_checkpoint(str(tmp_path / "inf.pt"))
    before = tree(tmp_path)
    assert_refused(capsys, train.main(TINY + ["--out_dir", str(tmp_path / "o"), "--init", str(tmp_path / "inf.pt")]),
                   "non-finite")
    assert tree(tmp_path) == before


def test_weight_drawing_methods_need_two_reward_dimensions():
    """goal_cond, random_weight and vpo draw w over the D reward dimensions: a task with D = 1 is refused."""
    class OneDim:
        dim, demo_styles, objectives, deploy_weights = 1, ("diverse",), ("score",), (1.0,)
    for algo in ("goal_cond", "random_weight", "vpo"):
        args = train.get_parser().parse_args(TINY + ["--algo", algo])
        with pytest.raises(UsageError, match="--algo"):
            check_method(args, OneDim())
    check_method(train.get_parser().parse_args(TINY + ["--algo", "grpo"]), OneDim())


def test_machine_names_the_cpus_family_model_and_kernels(tmp_path, monkeypatch):
    """Two VMs named "AMD EPYC" train different warm starts: the first processor's family and model and torch's
    CPU capability tell them apart."""
    import builtins, torch  # noqa: E401
    from runs import dirs
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu family\t: 23\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n\n"
                       "processor\t: 1\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9004\n")
    real_open, real_isfile = builtins.open, os.path.isfile
    monkeypatch.setattr(builtins, "open", lambda p, *a, **k: real_open(cpuinfo if p == "/proc/cpuinfo" else p, *a, **k))
    monkeypatch.setattr(dirs.os.path, "isfile", lambda p: p == "/proc/cpuinfo" or real_isfile(p))
    assert dirs.machine() == (f"AMD EPYC (family 23, model 1, {torch.backends.cpu.get_cpu_capability()}), "
                              f"{os.cpu_count()} cores, torch {torch.__version__}")

"""What the tests of run management (test_runs.py) and of the command-line tools (test_tools.py) share: a tiny toy
run's flags, and the check that a refusal is one `error:` line with exit code 2 that leaves the files on disk as
they were. conftest.py's `done` fixture trains the tiny run once for both."""
import os

TINY = ["--task", "toy", "--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--block_size", "96",
        "--sft_steps", "3", "--sft_batch_size", "8", "--batch_size", "2", "--group_size", "4", "--steps", "2",
        "--eval_problems", "2", "--eval_answers", "48", "--eval_every", "0", "--quiet", "--no_figures"]


def tree(path):
    """Every file and directory under path with its size and modification time: what a refusal must not change."""
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            out[os.path.relpath(os.path.join(root, name), path)] = (st.st_size, st.st_mtime_ns)
    return out


def assert_refused(capsys, rc, needle=""):
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error:") and "\n" not in err and needle in err, (rc, err)

"""
Vector-reward tasks: the toy (the authors' smallest example), the paper-style maze, and code synthesis with
per-test rewards. The interface every task implements is tasks/base.py (Task); build one by name:

    task = get_task("maze")                       # get_task("code", num_tests=8), get_task("toy"), ...
"""
from tasks.base import Task, in_test_split  # noqa: F401 (the interface, importable as tasks.Task)


def get_task(name: str, answer_tokens: int = None, **options) -> Task:
    """Build a task by name: "toy", "maze" or "code". answer_tokens: the room of one answer (every task; default
    the task's); the other options go to the task's constructor."""
    if name == "toy":
        from tasks.toy import ToyTask as cls
    elif name == "maze":
        from tasks.maze import MazeTask as cls
    elif name == "code":
        from tasks.code import CodeTask as cls
    else:
        raise ValueError(f"unknown task {name!r}; known tasks: toy, maze, code")
    task = cls(**options)
    if answer_tokens is not None:
        task.set_answer_tokens(answer_tokens)
    return task


TASKS = ("toy", "maze", "code")

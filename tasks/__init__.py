"""
Vector-reward tasks: the toy (the authors' smallest example), the paper-style maze, and code synthesis with
per-test rewards. The interface every task implements is tasks/base.py (Task); build one by name:

    task = get_task("maze")                       # get_task("code", num_tests=8), get_task("toy"), ...
    task = get_task("mytasks:Lines")              # a Task subclass defined elsewhere, as MODULE:CLASS
"""
import importlib
import re

from tasks.base import Task, in_test_split  # noqa: F401 (the interface, importable as tasks.Task)

TASKS = ("toy", "maze", "code")
ELSEWHERE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # MODULE:CLASS, a task defined outside tasks/


def get_task(name: str, answer_tokens: int = None, **options) -> Task:
    """Build a task by name: "toy", "maze" or "code", or "MODULE:CLASS" for a Task subclass defined elsewhere
    (imported from the Python path). answer_tokens: the room of one answer (every task; default the task's); the
    other options go to the task's constructor."""
    if name == "toy":
        from tasks.toy import ToyTask as cls
    elif name == "maze":
        from tasks.maze import MazeTask as cls
    elif name == "code":
        from tasks.code import CodeTask as cls
    elif ELSEWHERE.fullmatch(name):
        cls = task_class(name)
    else:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}, or MODULE:CLASS")
    task = cls(**options)
    if answer_tokens is not None:
        task.set_answer_tokens(answer_tokens)
    return task


def task_class(spec: str) -> type:
    """The Task subclass named by "MODULE:CLASS" (e.g. "mytasks:Lines" for class Lines in mytasks.py on the Python
    path). ValueError if the module cannot be found or holds no such Task subclass."""
    module, _, attr = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr, None)
    except ModuleNotFoundError as e:
        raise ValueError(f"task {spec!r}: no module {e.name!r} on the Python path") from None
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ValueError(f"task {spec!r}: module {module} has no Task subclass {attr!r}")
    return cls


def is_task_name(name: str) -> bool:
    """Whether name can name a task: one of TASKS, or of the form MODULE:CLASS (checked when the task is built)."""
    return name in TASKS or bool(ELSEWHERE.fullmatch(name))

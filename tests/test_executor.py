"""Tests for the code task's executor (tasks/executor.py): our own interpreter of one Python expression in x,
which never calls eval on model output. Its semantics against Python's, and its limits."""
import ast
import warnings

import numpy as np
import pytest

from tasks.code import execute
from tasks.executor import BOUND, MAX_DEPTH, MAX_NODES, MAX_SOURCE_CHARS


# --- executor semantics --------------------------------------------------------------------------------------
@pytest.mark.parametrize("source, inputs, expected", [
    ("x+3", [2, -5], [5, -2]), ("x-3", [2], [-1]), ("x*3", [-4], [-12]), ("3-x*2+1", [5], [-6]),
    # floor division and modulo round toward minus infinity, as in Python
    ("x//3", [7, -7, -9], [2, -3, -3]), ("x%3", [7, -7, -9], [1, 2, 0]),
    ("7//x", [-2, 2], [-4, 3]), ("7%x", [-2, 2], [-1, 1]), ("x%-3", [7], [-2]),
    ("-x", [4], [-4]), ("+x", [4], [4]), ("--x", [4], [4]), ("-(x-1)", [4], [-3]),
    ("0x1f+0b11+0o7+1_000", [0], [1041]),
    # comparisons give bools, and bools are ints
    ("x<3", [2, 3], [1, 0]), ("x<=3", [3, 4], [1, 0]), ("x>3", [4, 3], [1, 0]), ("x>=3", [3, 2], [1, 0]),
    ("x==3", [3, 2], [1, 0]), ("x!=3", [3, 2], [0, 1]), ("(x>3)+1", [0, 5], [1, 2]), ("(x>3)*x", [2, 5], [0, 5]),
    ("0<=x<5", [-1, 0, 4, 5], [0, 1, 1, 0]), ("1<x<=3==x", [2, 3], [0, 1]), ("3>x>1", [2, 3], [1, 0]),
    ("not x", [0, 5], [1, 0]), ("not x<3", [2, 3], [0, 1]),
    # and/or return an operand and short-circuit
    ("x and 10//x", [0, 2], [0, 5]), ("x==0 or 10//x", [0, 5], [1, 2]), ("x or 7", [0, 3], [7, 3]),
    ("x and 7", [0, 3], [0, 7]), ("x>0 and x<5 and 9", [3, 6], [9, 0]), ("0 or 0 or x", [4], [4]),
    ("0 if x==0 else 10//x", [0, 5], [0, 2]), ("1 if x<0 else 2 if x<5 else 3", [-1, 0, 5], [1, 2, 3]),
    ("2*x+1 if x<3 else 5", [0, 3, 7], [1, 5, 5]),
    ("min(x,3)", [1, 5], [1, 3]), ("max(x,3)", [1, 5], [3, 5]), ("max(x,3,-x)", [-7, 1, 5], [7, 3, 5]),
    ("min(x,x*x,4,9)", [-2, 3], [-2, 3]), ("abs(x-4)", [1, 6], [3, 2]), ("(abs)(x)", [-2], [2]),
    ("abs(min(x,-x))", [-3, 3], [3, 3]),
])
def test_executor_semantics(source, inputs, expected):
    out = execute(source, inputs)
    assert out == expected
    assert all(type(v) is int for v in out)  # plain ints: True comes back as 1


def test_executor_failures_are_per_input():
    assert execute("10//x", [-2, 0, 5]) == [-5, None, 2]
    assert execute("x%(x-1)", [1, 3]) == [None, 1]
    assert execute("10//x and 1", [0, 3]) == [None, 1]  # the left operand runs, so it fails
    # every intermediate |v| <= BOUND, not just the result
    assert execute("x*x", [31622, 31623]) == [999950884, None]
    assert execute("x*1000000000", [1, 2, -1, -2]) == [BOUND, None, -BOUND, None]
    assert execute("x*x*x//x//x", [1000, 2000]) == [1000, None]
    assert execute("x-1000000000", [0, -1]) == [-BOUND, None]
    assert execute("x", [BOUND, BOUND + 1, -BOUND - 1, 1.5, True, None]) == [BOUND, None, None, None, None, None]


@pytest.mark.parametrize("source", [
    "", " ", "y", "X", "x.real", "x**2", "x/2", "x<<1", "x>>1", "x&1", "x|1", "x^1", "~x", "x@x", "1.5", "1e3",
    "1j", "True", "False", "None", "'a'", "b'a'", "...", "abs(x,1)", "abs()", "min(x)", "max()", "min(*[x])",
    "max(x,*x)", "max(x,key=abs)", "int(x)", "pow(x,2)", "round(x)", "(x,1)", "[x]", "{x}", "{x:1}", "x[0]",
    "lambda: 1", "(x:=1)", "x if 1 else", "f'{x}'", "x is 1", "x in (1,)", "x not in (1,)", "abs", "min",
    "__import__('os')", "x.__class__", "().__class__", "[i for i in range(3)]", "print(1)", "x;1", "x\n1",
    "x=1", "1000000001", "-1000000001+x", "abs(x)(1)", "x if x else", "yield x", "await x",
    "x+1 # comment", "\tx", "x\x00", "(x for x in x)", "{**x}", "min(x,3)()", "not", "1 +", "0 if x else 1e1",
])
def test_executor_rejects_everything_outside_the_language(source):
    assert execute(source, [0, 1, -3]) == [None, None, None]


def test_executor_size_limits():
    assert execute(f"max({','.join(['x'] * (MAX_NODES - 1))})", [1]) == [1]  # a call and 63 names: 64 nodes
    assert execute(f"max({','.join(['x'] * MAX_NODES)})", [1]) == [None]      # 65 nodes
    assert execute("-" * (MAX_DEPTH - 1) + "x", [3]) == [(-1) ** (MAX_DEPTH - 1) * 3]
    assert execute("-" * MAX_DEPTH + "x", [3]) == [None]                     # depth MAX_DEPTH + 1
    assert execute("x" + " " * (MAX_SOURCE_CHARS - 1), [3]) == [3]
    assert execute("x" + " " * MAX_SOURCE_CHARS, [3]) == [None]              # one char too long


def test_executor_ignores_the_warnings_filter():
    # Python warns about "1if" ("invalid decimal literal"); under an "error" filter that would be a SyntaxError
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert execute("1if x<3 else 2 ", [0, 5]) == [1, 2]
    assert execute("1if x<3 else 2  ", [0, 5]) == [1, 2]


def random_expression(rng, depth):
    """A random program of the language; literals and inputs in [-9, 9] and depth <= 3 keep every
    intermediate below 9**8 < BOUND, so the executor must agree with Python exactly."""
    if depth == 0 or rng.random() < 0.25:
        return "x" if rng.random() < 0.5 else str(int(rng.integers(-9, 10)))
    sub = [random_expression(rng, depth - 1) for _ in range(3)]
    kind = int(rng.integers(8))
    if kind == 0:
        return f"({sub[0]}{rng.choice(['+', '-', '*', '//', '%'])}{sub[1]})"
    if kind == 1:
        return f"({rng.choice(['-', '+', 'not '])}{sub[0]})"
    if kind == 2:
        ops = rng.choice(["<", "<=", ">", ">=", "==", "!="], 2)
        chain = f"{ops[0]}{sub[1]}" + (f"{ops[1]}{sub[2]}" if rng.random() < 0.5 else "")
        return f"({sub[0]}{chain})"
    if kind == 3:
        return f"({sub[0]} {rng.choice(['and', 'or'])} {sub[1]})"
    if kind == 4:
        return f"({sub[0]} if {sub[1]} else {sub[2]})"
    if kind == 5:
        return f"abs({sub[0]})"
    return f"{rng.choice(['min', 'max'])}({','.join(sub[: int(rng.integers(2, 4))])})"


def test_executor_matches_python_on_random_programs():
    # the reference is Python itself, run on programs this test generated (never on model text)
    rng = np.random.default_rng(0)
    inputs = list(range(-9, 10))
    checked = 0
    for _ in range(1500):
        source = random_expression(rng, 3)
        nodes = sum(isinstance(n, ast.expr) for n in ast.walk(ast.parse(source, mode="eval")))
        out = execute(source, inputs)
        if len(source) > MAX_SOURCE_CHARS or nodes > MAX_NODES:
            assert out == [None] * len(inputs)
            continue
        for x, got in zip(inputs, out):
            try:
                want = int(eval(source, {"__builtins__": {}, "abs": abs, "min": min, "max": max, "x": x}))
            except ZeroDivisionError:
                want = None
            assert got == want, (source, x)
        checked += 1
    assert checked > 1000

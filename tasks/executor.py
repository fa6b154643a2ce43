"""
A tiny, safe interpreter for integer expressions in one variable x: the executor of the code task.

    execute("2*x+1 if x<3 else 5", [0, 3, 7])  ->  [1, 5, 5]

Model output is untrusted, so nothing here hands model text to eval, exec or compile. The source is parsed
with ast.parse(mode="eval") (which builds a syntax tree and runs nothing), every node is checked against a
whitelist, and the checked tree is translated once into nested Python closures that are then called per input.

The language (a subset of Python, with Python's meaning):
    int literals (not bool, float, complex, str, bytes), |literal| <= BOUND, and the name x
    binary  + - * // %          unary  - + not
    comparisons < <= > >= == != (chained, e.g. 0 <= x < 5)
    boolean and / or (short-circuit; they return an operand, as in Python)
    conditional  a if cond else b
    calls abs(a), min(a, b, ...), max(a, b, ...) by bare name, positional arguments only (min/max >= 2)

Booleans are ints, as in Python: a comparison yields True or False, which arithmetic treats as 1 or 0, so
(x > 3) + 1 is legal, and a program whose value is True outputs the integer 1. Outputs are always plain ints.

Failure is per input: division or modulo by zero, or any intermediate value with |v| > BOUND, gives None for
that input only. A source that is too long, does not parse, has a node outside the whitelist, more than
MAX_NODES nodes or nesting deeper than MAX_DEPTH gives None for every input. execute never raises.
Inputs must be ints with |x| <= BOUND (others give None).

Speed: a source with a character no program can contain is rejected before parsing, and compiled programs
are cached by source (LRU), since the same answer recurs across the G rollouts of a group.
"""
import ast
import functools
import operator
import warnings

BOUND = 10**9          # every literal, input and intermediate value v must satisfy |v| <= BOUND
MAX_SOURCE_CHARS = 200
MAX_NODES = 64         # expression nodes (operators and contexts are not counted)
MAX_DEPTH = 24         # nesting depth of expression nodes
# every character a legal program can contain; anything else is rejected before parsing
_ALLOWED_CHARS = frozenset("0123456789_ x+-*/%<>=!(),abcdefilmnorstX")

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLS = {"abs": abs, "min": min, "max": max}


class Rejected(Exception):
    """The source is not a program of the language."""


class _OutOfBounds(Exception):
    """An intermediate value left [-BOUND, BOUND]."""


def execute(source: str, inputs) -> list:
    """Run the program `source` on each of the inputs (a sequence of ints): one int per input, or None where
    evaluation failed."""
    try:
        program = compile_program(source)
        if program is None:
            return [None] * len(inputs)
        try:  # fast path, when every input is valid and succeeds; int() turns True into 1
            if all(type(x) is int and -BOUND <= x <= BOUND for x in inputs):
                return [int(program(x)) for x in inputs]
        except Exception:
            pass
        return [_run(program, x) for x in inputs]
    except Exception:  # belt and braces: nothing above should raise
        return [None] * len(inputs)


def _run(program, x):
    if type(x) is not int or not -BOUND <= x <= BOUND:
        return None
    try:
        return int(program(x))
    except Exception:  # ZeroDivisionError, _OutOfBounds, RecursionError, MemoryError, ...
        return None


@functools.lru_cache(maxsize=4096)
def _compile_cached(source: str):
    try:
        return translate(parse(source), depth=1, count=[0])
    except Exception:  # Rejected, SyntaxError, ValueError, RecursionError, MemoryError, ...
        return None


def compile_program(source: str):
    """source -> a function of x (which may raise on bad inputs), or None if the source is rejected."""
    if type(source) is not str or len(source) > MAX_SOURCE_CHARS or not _ALLOWED_CHARS.issuperset(source):
        return None
    return _compile_cached(source)


def parse(source: str) -> ast.expr:
    """The expression tree of source; SyntaxError if it is not one Python expression. Runs nothing."""
    # Python warns about some legal sources (e.g. "1if x else 2": "invalid decimal literal"); under an
    # "error" warnings filter those warnings would become SyntaxErrors, so scoring would depend on the
    # caller's warning settings. Ignoring them here makes the result the same everywhere.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, mode="eval").body


def translate(node: ast.expr, depth: int, count: list):
    """Check the tree against the whitelist and the size limits (else raise Rejected) and turn it into
    nested closures f(x) that compute it with Python's semantics, raising when a value leaves the bound."""
    count[0] += 1
    if depth > MAX_DEPTH or count[0] > MAX_NODES:
        raise Rejected("program too large")
    kind, sub = type(node), lambda child: translate(child, depth + 1, count)
    if kind is ast.Constant:
        value = node.value
        if type(value) is not int or abs(value) > BOUND:
            raise Rejected("only int literals within the bound")
        return lambda x: value
    if kind is ast.Name and node.id == "x":
        return _identity
    if kind is ast.BinOp and type(node.op) in _BINARY:
        return _binary(_BINARY[type(node.op)], sub(node.left), sub(node.right), node.right)
    if kind is ast.UnaryOp and type(node.op) in _UNARY:
        op, operand = _UNARY[type(node.op)], sub(node.operand)
        return lambda x: op(operand(x))  # -v, +v and not v stay within the bound
    if kind is ast.Compare and all(type(op) in _COMPARE for op in node.ops):
        return _compare([_COMPARE[type(op)] for op in node.ops], sub(node.left), [sub(c) for c in node.comparators])
    if kind is ast.BoolOp:  # And, Or: the only two
        return _boolean(type(node.op) is ast.And, [sub(v) for v in node.values])
    if kind is ast.IfExp:
        test, body, orelse = sub(node.test), sub(node.body), sub(node.orelse)
        return lambda x: body(x) if test(x) else orelse(x)
    if kind is ast.Call and _is_allowed_call(node):
        return _call(_CALLS[node.func.id], [sub(a) for a in node.args])
    raise Rejected(f"{kind.__name__} is not allowed")


def _is_allowed_call(node: ast.Call) -> bool:
    if type(node.func) is not ast.Name or node.func.id not in _CALLS or node.keywords:
        return False
    if any(type(a) is ast.Starred for a in node.args):
        return False
    return len(node.args) == 1 if node.func.id == "abs" else len(node.args) >= 2


def _identity(x):
    return x


def _binary(op, left, right, right_node):
    if type(right_node) is ast.Constant:  # the common `x*2`, `x%3`: skip one call per evaluation
        c = right_node.value

        def f(x):
            v = op(left(x), c)
            if -BOUND <= v <= BOUND:
                return v
            raise _OutOfBounds
        return f

    def f(x):
        v = op(left(x), right(x))  # ZeroDivisionError for // 0 and % 0
        if -BOUND <= v <= BOUND:
            return v
        raise _OutOfBounds
    return f


def _call(fn, args):  # abs, min and max of bounded values stay bounded
    if len(args) == 1:
        a, = args
        return lambda x: fn(a(x))
    if len(args) == 2:
        a, b = args
        return lambda x: fn(a(x), b(x))
    return lambda x: fn([a(x) for a in args])


def _compare(ops, left, rights):
    if len(ops) == 1:
        op, right = ops[0], rights[0]
        return lambda x: op(left(x), right(x))

    def f(x):  # a < b < c == (a < b) and (b < c), each operand evaluated once, left to right
        a = left(x)
        for op, right in zip(ops, rights):
            b = right(x)
            if not op(a, b):
                return False
            a = b
        return True
    return f


def _boolean(is_and, values):
    def f(x):  # `and` returns the first falsy operand (else the last); `or` the first truthy one
        for value in values[:-1]:
            v = value(x)
            if bool(v) != is_and:
                return v
        return values[-1](x)
    return f

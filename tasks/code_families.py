"""
The code task's grammar of targets (tasks/code.py): each family draws a target f(x) and a list of related programs,
equivalent rewrites and natural partial solutions, likeliest first. Which related program is which is decided by
running it on the whole domain (CodeTask), not trusted here.
"""
import numpy as np


def affine(a: int, b: int) -> str:
    """Compact source of a*x+b: 'x', '-x+3', '2*x-1', '4'."""
    if a == 0:
        return str(b)
    head = "x" if a == 1 else "-x" if a == -1 else f"{a}*x"
    return head if b == 0 else f"{head}{b:+d}"


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _draw_affine(rng, slopes=(-2, -1, 0, 1, 2, 3)):
    return _pick(rng, slopes), int(rng.integers(-9, 10))


def step(rng):
    """E1 if x<c else E2, with affine or constant branches."""
    (a1, b1), (a2, b2), c = _draw_affine(rng), _draw_affine(rng), int(rng.integers(-8, 9))
    e1, e2 = affine(a1, b1), affine(a2, b2)
    target = f"{e1} if x<{c} else {e2}"
    related = [e1, e2, f"{e1} if x<{c + 1} else {e2}", f"{e1} if x<{c - 1} else {e2}",
               f"{e2} if x>={c} else {e1}", f"{e1} if x<={c - 1} else {e2}", f"{e2} if x>{c - 1} else {e1}",
               f"{e1} if {c}>x else {e2}", f"min({e1},{e2})", f"max({e1},{e2})",
               f"{e2} if x<{c} else {e1}", f"{e1} if x>{c} else {e2}"]
    return target, related


def step3(rng):
    """Three constant levels: p if x<c1 else q if x<c2 else r. The off-by-one thresholds on both sides of c1 and
    of c2 are partial programs, so the shown inputs include c1 - 1, c1, c2 - 1 and c2: the thresholds are pinned."""
    c1 = int(rng.integers(-8, 5))
    c2 = c1 + int(rng.integers(2, 8))
    p, q, r = (int(v) for v in rng.choice(np.arange(-9, 10), 3, replace=False))
    target = f"{p} if x<{c1} else {q} if x<{c2} else {r}"
    related = [f"{p} if x<{c1} else {q}", f"{q} if x<{c2} else {r}", f"{p} if x<{c1} else {r}",
               f"{r} if x>={c2} else {q} if x>={c1} else {p}", f"{q} if {c1}<=x<{c2} else {p} if x<{c1} else {r}",
               f"{p} if x<{c1 + 1} else {q} if x<{c2} else {r}", f"{p} if x<{c1} else {q} if x<{c2 - 1} else {r}",
               f"{p} if x<{c1 - 1} else {q} if x<{c2} else {r}", f"{p} if x<{c1} else {q} if x<{c2 + 1} else {r}",
               str(q)]
    return target, related


def clamp(rng):
    """max(E, c) or min(E, c): a line cut off by a constant."""
    a, b = _draw_affine(rng, slopes=(-2, -1, 1, 2))
    c, fn = int(rng.integers(-6, 7)), _pick(rng, ("max", "min"))
    other = "min" if fn == "max" else "max"
    cmp = ">" if fn == "max" else "<"
    e = affine(a, b)
    target = f"{fn}({e},{c})"
    related = [e, str(c), f"{fn}({e},{c + 1})", f"{fn}({e},{c - 1})", f"{fn}({c},{e})",
               f"{e} if {e}{cmp}{c} else {c}", f"{c} if {c}{cmp}{e} else {e}", f"{other}({e},{c})"]
    if a == 1 and b != 0:
        related.append(f"{fn}(x,{c - b}){b:+d}")
    return target, related


def distance(rng):
    """abs(a*x-c) (+ d): a V shape."""
    a, c, d = _pick(rng, (1, 2, -1)), int(rng.integers(-7, 8)), _pick(rng, (0, 0, *range(-5, 6)))
    e, neg = affine(a, -c), affine(-a, c)
    tail = f"{d:+d}" if d else ""
    target = f"abs({e}){tail}"
    related = [f"{e}{tail}" if d == 0 else affine(a, d - c), affine(-a, c + d), f"abs({affine(a, 1 - c)}){tail}",
               f"abs({affine(a, -1 - c)}){tail}", f"abs({neg}){tail}", f"max({e},{neg}){tail}",
               f"{e} if {e}>0 else {neg}" if d == 0 else f"max({affine(a, d - c)},{affine(-a, c + d)})"]
    return target, related


def remainder(rng):
    """x%k + b: a sawtooth, with Python's floor semantics for negative x."""
    k, b = int(rng.integers(2, 6)), int(rng.integers(-5, 6))
    tail = f"{b:+d}" if b else ""
    target = f"x%{k}{tail}"
    related = [affine(1, b), str(b), f"abs(x)%{k}{tail}", f"x%{k + 1}{tail}", f"x%{k - 1}{tail}",
               f"(x+{k})%{k}{tail}", f"x-x//{k}*{k}{tail}", f"(x-{k})%{k}{tail}"]
    if b:
        related.append(f"{b}+x%{k}")
    return target, related


def on_remainder(rng):
    """E1 if x%k==0 else E2: one rule on the multiples of k, another elsewhere."""
    k = int(rng.integers(2, 5))
    (a1, b1), (a2, b2) = _draw_affine(rng, slopes=(0, 0, 1, 2, -1)), _draw_affine(rng, slopes=(0, 0, 1, -1))
    e1, e2 = affine(a1, b1), affine(a2, b2)
    target = f"{e1} if x%{k}==0 else {e2}"
    related = [e1, e2, f"{e2} if x%{k} else {e1}", f"{e2} if x%{k}>0 else {e1}", f"{e1} if x%{k}<1 else {e2}",
               f"{e1} if x%{k}==1 else {e2}", f"{e1} if x%{k + 1}==0 else {e2}", f"{e2} if x%{k}==0 else {e1}"]
    return target, related


def clip(rng):
    """min(max(x, lo), hi): x held between two bounds."""
    lo = int(rng.integers(-9, 5))
    hi = lo + int(rng.integers(3, 10))
    target = f"min(max(x,{lo}),{hi})"
    related = [f"max(x,{lo})", f"min(x,{hi})", "x", f"max(min(x,{hi}),{lo})", f"max({lo},min({hi},x))",
               f"{lo} if x<{lo} else min(x,{hi})", f"min(max(x,{lo + 1}),{hi})", f"min(max(x,{lo}),{hi - 1})",
               str(lo), str(hi)]
    return target, related


FAMILIES = (step, step3, clamp, distance, remainder, on_remainder, clip)

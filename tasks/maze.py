"""
The maze task: the paper's maze (a 9x9 maze with gold, diamonds and lava) in miniature.

A problem is a small grid maze, one row per line, so that a move up or down is a fixed offset in tokens.
The prompt (81 bytes), and the legend:

    maze: 3 routes, budget 5        #  wall      .  floor
    #######                          S  start     E  exit
    #G.~.G#                          G  gold      *  diamond     ~  lava
    #S#~#.#
    #.E...#          The letters D and L are moves, so diamonds and lava get symbols of their own.
    #*#####          Here: "DR" = (1, 0, 0, 1), "UDDR" = (1, 1/2, 0, 1), "DDUR" = (1, 0, 1, 1);
    #.....#          gold and diamond together take 6 moves > 5.
    #######

An answer is a route: a string over U/D/L/R (up, down, left, right), nothing else but surrounding whitespace.
It is walked from S one move at a time:
  - a move into a wall or off the grid leaves the agent in place and still costs a step;
  - only the first `budget` moves are executed;
  - the walk stops on reaching E: moves after it are ignored, and items count only before E.
Reward vector r in [0,1]^4 (the paper's): [reached E, fraction of gold, fraction of diamonds,
1 - fraction of lava stepped on], fractions over distinct cells; all zero unless the walk reaches E within
the budget, and for any other string. Deployment scalar w*ᵀr with w* = (1/4, 1/4, 1/4, 1/4).

Budget (the paper's rule, checked exactly): let d(C) be the length of the shortest route that reaches E having
collected at least one item of every kind in C (an exact breadth-first search over (cell, collected) states,
E absorbing). A generated maze is kept only if d(gold) and d(diamond) fit in max_moves and
d(gold + diamond) > max(d(gold), d(diamond)); its budget is

    budget = min(max(d(gold), d(diamond)) + slack, d(gold + diamond) - 1, max_moves)

so the direct, via-gold and via-diamond routes all fit and no route collects both gold and diamonds:
the Pareto front has real corners. Mazes: randomized Prim on the odd-coordinate cells, plus a few knocked-out
walls so that several routes exist; S, E and the items go on random floor cells.

Default size 7x7 with the border (3x3 Prim cells), 1-2 of each item: prompts of 81-82 bytes, budgets of 4-14
moves (mostly 6-12), about 1,400 train problems a second in pure Python (1 in 4 candidates is kept), so a
~1M-parameter GPT can learn it on a CPU in minutes. A hand-built grid may lack the border (the grid's edge
blocks too) or an item kind (an absent gold or diamond kind scores 0, absent lava 1).
Demonstrations: one random shortest route for every set of items that can be collected on the way to E within
the budget (the whole front and the dominated points: direct, via gold, via diamonds, through lava), plus
imperfect ones (a route cut short of E, a route with a detour past the budget); m distinct ones, random order.
"""
import math
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tasks import Task, in_test_split

WALL, FLOOR, START, EXIT, GOLD, DIAMOND, LAVA = "#", ".", "S", "E", "G", "*", "~"
CELLS = WALL + FLOOR + START + EXIT + GOLD + DIAMOND + LAVA
MOVES = "UDLR"
_DELTA = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_BACK = {"U": "D", "D": "U", "L": "R", "R": "L"}
_ROUTE = re.compile(r"[UDLR]+")


@dataclass(frozen=True)
class MazeProblem:
    grid: str    # the rows joined by "\n", one character of CELLS per cell
    budget: int  # moves executed at most

    def __post_init__(self):
        rows = self.grid.split("\n") if isinstance(self.grid, str) else None
        if not rows or not rows[0] or any(len(r) != len(rows[0]) for r in rows) \
                or set(self.grid) - set(CELLS + "\n") or self.grid.count(START) != 1 or self.grid.count(EXIT) != 1:
            raise ValueError(f"grid must be equal-length rows of {CELLS!r} with one S and one E, got {self.grid!r}")
        if not isinstance(self.budget, int) or self.budget < 1:
            raise ValueError(f"budget must be a positive int, got {self.budget!r}")

    @property
    def key(self) -> str:
        """Canonical key: the grid (for one MazeTask configuration the grid fixes the budget)."""
        return self.grid

    @cached_property
    def layout(self) -> "Layout":
        return Layout(self.grid)


class Layout:
    """A grid as a move table over flat cell indices: step[cell][k] = where move MOVES[k] leads (cell if blocked)."""

    def __init__(self, grid: str):
        rows = grid.split("\n")
        H, W = len(rows), len(rows[0])
        flat = "".join(rows)
        self.step = []
        for i in range(H * W):
            r, c = divmod(i, W)
            targets = []
            for mv in MOVES:
                r2, c2 = r + _DELTA[mv][0], c + _DELTA[mv][1]
                open_ = 0 <= r2 < H and 0 <= c2 < W and flat[r2 * W + c2] != WALL
                targets.append(r2 * W + c2 if open_ else i)
            self.step.append(tuple(targets))
        self.start, self.exit = flat.index(START), flat.index(EXIT)
        self.gold, self.diamonds, self.lava = (frozenset(i for i, ch in enumerate(flat) if ch == kind)
                                               for kind in (GOLD, DIAMOND, LAVA))

    def vector(self, reached: bool, visited) -> np.ndarray:
        """r = [reached, |G ∩ visited|/|G|, |D ∩ visited|/|D|, 1 - |L ∩ visited|/|L|] for the gold, diamond and
        lava cells G, D, L; zeros unless reached."""
        if not reached:
            return np.zeros(4, dtype=np.float32)
        frac = lambda items: len(items & visited) / max(len(items), 1)  # noqa: E731
        return np.array([1.0, frac(self.gold), frac(self.diamonds), 1.0 - frac(self.lava)], dtype=np.float32)


def walk(problem: MazeProblem, route: str) -> tuple[bool, set]:
    """Walk a move string (already validated) from S: (reached E within the budget, distinct cells entered)."""
    lay = problem.layout
    pos, visited = lay.start, set()
    for mv in route[:problem.budget]:
        pos = lay.step[pos][MOVES.index(mv)]
        visited.add(pos)
        if pos == lay.exit:
            return True, visited
    return False, visited


def search(lay: Layout, bit_of: dict, max_depth: int):
    """Exact breadth-first search over states (cell, mask), mask = OR of bit_of[c] over the item cells c entered.

    E is absorbing. Wall bumps are not followed: they cost a step and change no state, so they never make a
    state reachable sooner. Returns ({mask: fewest moves to reach (E, mask)} within max_depth moves,
    parents: state -> [(previous state, move)] on shortest routes).
    """
    start = (lay.start, bit_of.get(lay.start, 0))
    depth_of, parents, frontier = {start: 0}, {start: []}, [start]
    for depth in range(1, max_depth + 1):
        nxt = []
        for state in frontier:
            cell, mask = state
            if cell == lay.exit:
                continue
            for k, cell2 in enumerate(lay.step[cell]):
                if cell2 == cell:
                    continue
                state2 = (cell2, mask | bit_of.get(cell2, 0))
                seen = depth_of.get(state2)
                if seen is None:
                    depth_of[state2], parents[state2] = depth, []
                    nxt.append(state2)
                if seen is None or seen == depth:
                    parents[state2].append((state, MOVES[k]))
        frontier = nxt
    exits = {mask: d for (cell, mask), d in depth_of.items() if cell == lay.exit}
    return exits, parents


def random_shortest_route(parents: dict, state, rng: np.random.Generator) -> str:
    """Walk the parents table back from state to the start, picking uniformly among the shortest predecessors."""
    moves = []
    while parents[state]:
        state, mv = parents[state][rng.integers(len(parents[state]))]
        moves.append(mv)
    return "".join(reversed(moves))


def _count_range(name, value):
    lo, hi = (value, value) if isinstance(value, int) else tuple(value)
    if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi):
        raise ValueError(f"{name} must be an int or an inclusive (lo, hi) range of non-negative ints, got {value!r}")
    return lo, hi


class MazeTask(Task):
    name = "maze"
    objectives = ["exit", "gold", "diamonds", "no_lava"]
    deploy_weights = np.full(4, 0.25)  # w*: the mean of the four

    def __init__(self, size: int = 7, n_gold=(1, 2), n_diamonds=(1, 2), n_lava=(1, 2), openings: int = 2,
                 slack: int = 2, max_moves: int = 14, p_imperfect: float = 0.15):
        """size: grid side incl. the border (odd, >= 5); n_*: item counts, an int or an inclusive (lo, hi) range;
        openings: walls knocked out after Prim; slack: budget moves beyond the longer of the via-gold and
        via-diamond routes (as far as the no-both rule allows); max_moves: the largest budget (mazes needing
        more are rejected); p_imperfect: chance that a demonstration answer is an imperfect route."""
        if not isinstance(size, int) or size < 5 or size % 2 == 0:
            raise ValueError(f"size must be an odd int >= 5, got {size!r}")
        self.size = size
        self.n_gold, self.n_diamonds, self.n_lava = (
            _count_range(arg, v) for arg, v in (("n_gold", n_gold), ("n_diamonds", n_diamonds), ("n_lava", n_lava)))
        if self.n_gold[0] < 1 or self.n_diamonds[0] < 1:
            raise ValueError(f"n_gold and n_diamonds must be at least 1, got {n_gold!r} and {n_diamonds!r}")
        floor = 2 * ((size - 1) // 2) ** 2 - 1  # floor cells of a Prim maze: the cells and the tree's passages
        if 2 + self.n_gold[1] + self.n_diamonds[1] + self.n_lava[1] > floor:
            raise ValueError(f"S, E and up to {self.n_gold[1]}, {self.n_diamonds[1]}, {self.n_lava[1]} items "
                             f"do not fit the {floor} floor cells of size={size}")
        for arg, v, lo in (("openings", openings, 0), ("slack", slack, 0), ("max_moves", max_moves, 1)):
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"{arg} must be an int >= {lo}, got {v!r}")
        if not 0.0 <= p_imperfect <= 1.0:
            raise ValueError(f"p_imperfect must be in [0, 1], got {p_imperfect!r}")
        self.openings, self.slack, self.max_moves, self.p_imperfect = openings, slack, max_moves, p_imperfect

    # --- problems --------------------------------------------------------------------------------------------
    def problems(self, split: str, n: int, seed: int) -> list[MazeProblem]:
        """n distinct mazes of the split, drawn from a Generator seeded with (seed, split)."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        rng = np.random.default_rng([seed, int(split == "test")])
        out, seen = [], set()
        for _ in range(1000 * (n + 1)):
            if len(out) == n:
                break
            grid = self._random_grid(rng)
            if grid in seen or in_test_split(grid) != (split == "test"):
                continue
            budget = self._budget(Layout(grid))
            if budget is not None:
                seen.add(grid)
                out.append(MazeProblem(grid, budget))
        if len(out) < n:
            raise RuntimeError(f"found only {len(out)} of {n} mazes; loosen the MazeTask options")
        return out

    def _random_grid(self, rng: np.random.Generator) -> str:
        """Prim's maze with `openings` extra passages, and S, E, gold, diamonds, lava on distinct floor cells."""
        grid = prim_maze(self.size, rng)
        closed = [(r, c) for r in range(1, self.size - 1) for c in range(1, self.size - 1)
                  if (r + c) % 2 == 1 and grid[r][c] == WALL]  # walls between two Prim cells
        for i in rng.permutation(len(closed))[:self.openings]:
            r, c = closed[i]
            grid[r][c] = FLOOR
        counts = [rng.integers(lo, hi + 1) for lo, hi in (self.n_gold, self.n_diamonds, self.n_lava)]
        kinds = [START, EXIT] + [GOLD] * counts[0] + [DIAMOND] * counts[1] + [LAVA] * counts[2]
        floor = [(r, c) for r in range(self.size) for c in range(self.size) if grid[r][c] == FLOOR]
        for i, kind in zip(rng.permutation(len(floor)), kinds):
            r, c = floor[i]
            grid[r][c] = kind
        return "\n".join("".join(row) for row in grid)

    def _budget(self, lay: Layout):
        """The budget rule of the module docstring, or None when the maze has no gold/diamond trade-off."""
        bit_of = {c: 1 for c in lay.gold} | {c: 2 for c in lay.diamonds}
        exits, _ = search(lay, bit_of, self.max_moves)
        d_gold = min((d for mask, d in exits.items() if mask & 1), default=math.inf)
        d_diamond = min((d for mask, d in exits.items() if mask & 2), default=math.inf)
        d_both = exits.get(3, math.inf)
        longer = max(d_gold, d_diamond)
        if longer > self.max_moves or d_both <= longer:
            return None
        return int(min(longer + self.slack, d_both - 1, self.max_moves))

    # --- prompt and answers ----------------------------------------------------------------------------------
    def prompt(self, problem: MazeProblem, m: int) -> str:
        return f"maze: {m} routes, budget {problem.budget}\n{problem.grid}\n"

    def max_new_tokens(self, m: int) -> int:
        # an answer has at most max_moves + 2 moves (a demonstration's over-budget detour), then a separator
        # or <|end|>: m (max_moves + 2) + (m - 1) + 1
        return m * (self.max_moves + 3)

    def score(self, problem: MazeProblem, answer: str) -> np.ndarray:
        """r(x, y) of one route; zeros for anything that is not a string of U/D/L/R."""
        route = answer.strip() if isinstance(answer, str) else ""
        if not _ROUTE.fullmatch(route):
            return np.zeros(4, dtype=np.float32)
        return problem.layout.vector(*walk(problem, route))

    def plot_axes(self, vectors: np.ndarray):
        """The trade-off the budget forces: gold against diamonds."""
        return np.asarray(vectors)[:, [1, 2]], ("gold", "diamonds")

    def solved(self, vector: np.ndarray) -> bool:
        """Reached the exit within the budget (pass@k then counts routes that reach E at all)."""
        return bool(vector[0] >= 1.0)

    # --- demonstrations --------------------------------------------------------------------------------------
    def routes(self, problem: MazeProblem, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
        """Candidate answers with the reward vector each must score: one random shortest route per set of items
        that can be collected on the way to E within the budget (vector from the search's item set, not from
        walking the route), then one route cut short of E and one with a detour past the budget (zeros)."""
        lay = problem.layout
        items = sorted(lay.gold) + sorted(lay.diamonds) + sorted(lay.lava)
        bit_of = {c: 1 << i for i, c in enumerate(items)}
        exits, parents = search(lay, bit_of, problem.budget)
        good = []
        for mask in sorted(exits):
            route = random_shortest_route(parents, (lay.exit, mask), rng)
            collected = {c for c in items if bit_of[c] & mask}
            good.append((route, lay.vector(True, collected)))
        zero = np.zeros(4, dtype=np.float32)
        bad = []
        long_enough = [r for r, _ in good if len(r) >= 2]
        if long_enough:
            route = long_enough[rng.integers(len(long_enough))]
            bad.append((route[:rng.integers(1, len(route))], zero))  # stops short of E
        if good:
            detour = self._detour(problem, good[rng.integers(len(good))][0], rng)
            if detour is not None:
                bad.append((detour, zero))
        return good + bad

    def _detour(self, problem: MazeProblem, route: str, rng: np.random.Generator):
        """route with back-and-forth steps inserted so that it reaches E only after the budget (or None)."""
        lay, pos, options = problem.layout, problem.layout.start, []
        for i, mv in enumerate(route):  # before move i the agent is at pos, which is not E
            options += [(i, d) for k, d in enumerate(MOVES) if lay.step[pos][k] not in (pos, lay.exit)]
            pos = lay.step[pos][MOVES.index(mv)]
        if not options:
            return None
        i, d = options[rng.integers(len(options))]
        pairs = (problem.budget - len(route)) // 2 + 1  # len(route) + 2 pairs > budget
        return route[:i] + (d + _BACK[d]) * pairs + route[i:]

    def demonstration(self, problem: MazeProblem, m: int, rng: np.random.Generator) -> str:
        """m distinct candidate routes in random order: each an imperfect one with probability p_imperfect,
        else one from the front; repeats only when there are fewer than m candidates."""
        cands = self.routes(problem, rng)
        good = [r for r, v in cands if v[0] == 1.0]
        bad = [r for r, v in cands if v[0] == 0.0]
        answers = []
        for _ in range(m):
            pool = bad if bad and (not good or rng.random() < self.p_imperfect) else good
            if pool:
                answers.append(pool.pop(rng.integers(len(pool))))
            else:  # fewer than m candidates: repeat one
                answers.append(answers[rng.integers(len(answers))])
        return self.format_answers(answers)


def prim_maze(size: int, rng: np.random.Generator) -> list[list[str]]:
    """Randomized Prim on the odd-coordinate cells of a size x size grid of walls: a spanning tree of passages."""
    grid = [[WALL] * size for _ in range(size)]
    cells = [(r, c) for r in range(1, size - 1, 2) for c in range(1, size - 1, 2)]
    r, c = cells[rng.integers(len(cells))]
    grid[r][c] = FLOOR
    frontier = [((r, c), (r + 2 * dr, c + 2 * dc)) for dr, dc in _DELTA.values()]
    while frontier:
        i = rng.integers(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        (r, c), (r2, c2) = frontier.pop()
        if not (0 < r2 < size - 1 and 0 < c2 < size - 1) or grid[r2][c2] != WALL:
            continue
        grid[(r + r2) // 2][(c + c2) // 2] = grid[r2][c2] = FLOOR
        frontier += [((r2, c2), (r2 + 2 * dr, c2 + 2 * dc)) for dr, dc in _DELTA.values()]
    return grid

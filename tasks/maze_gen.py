"""
The maze generators of tasks/maze.py: a design draws candidate grids and keeps those whose move budget meets its
rule. Two designs, their options and defaults in DESIGNS; MazeTask (tasks/maze.py) checks the split and repeats,
and holds the prompt, the reward and the demonstrations. The grid legend is defined here, the one the generators
draw with: # wall, . floor, S start, E exit, G gold, * diamond, ~ lava, + bonus.

design="corners" (default; the paper's generator, docs/paper.md "Tasks"):
  - Prim's maze on the cells at even coordinates of a size x size grid (size 9: 5x5 cells, no border, the grid
    edge blocks), then `openings` (18-28) wall cells, drawn uniformly among all walls, opened to make cycles.
    Every even-coordinate cell is open, so the four corners and the centre always are.
  - S and E on opposite corners of a random diagonal (4 choices), gold and diamond corners the other two
    (2 choices); the centre is the bonus tile +.
  - n_gold (3-5) gold tiles at random among the open cells within Manhattan distance `radius` (2) of the gold
    corner, n_diamonds (3-5) likewise around the diamond corner, n_lava (3-5) lava tiles among the open
    interior cells (rows and columns 2..size-3); items never go on S, E or the bonus tile. When a zone has
    fewer open cells than the count drawn, every open cell of it gets an item (the options are checked so that
    the lower bound always fits: the corner and the even-coordinate cells of a zone are always open).
  - budget = max(len S->gold corner->E, len S->diamond corner->E) + slack (7), shortest walks that enter E only
    at their end. A maze is kept only if (a) a route S->E that avoids every lava cell fits the budget, (b) the
    shortest walk S->gold corner->diamond corner->E, in either order, does not fit, and (c) budget <= max_moves.
  What is and is not guaranteed. No route within the budget enters both corner cells, and each corner alone
  can be reached; a lava-free route fits. But the items lie around the corners, not only on them, so a route can
  collect some gold and some diamonds without entering both corners: on 500 train mazes (seed 1) an exact
  search over (cell, got gold, got diamond) states finds such a route in 329 (66%; tests/test_tasks_maze.py
  checks the share on 300 mazes). Such mixed routes are poor, though: the best of them collects fractions
  g + d = 0.51 on average, more than one whole corner (g + d > 1) in 48 of the 500, and no route collects all
  gold and all diamonds (0 of 500). The paper's rule is the rule: we do not tighten it.
  With cells at even coordinates a 9x9 grid has 32 walls after Prim, so 18-28 openings leave 4-14: an open
  field with a few obstacles, where the shortest route from corner to corner is 16 moves (Manhattan) and the
  budget 23-37 moves (27 on average). Mazes above max_moves (33) are rejected: 0.2% of them, so that the prompt
  (116 bytes + <|bos|>) and 3 answers (max_new_tokens(3) = 110) fit a block of 227 <= 256 tokens.
  About 1,400 train mazes a second in pure Python (99% of the candidates are kept; test split 1 in 8).

design="small" (the 7x7 maze of the earlier tables, `--task_opt design=small`): a 7x7 grid with a wall border
(Prim on the 3x3 odd-coordinate cells, 2 extra openings), S, E and 1-2 of each item on random floor cells,
no bonus tile. Its budget is checked exactly: let d(C) be the length of the shortest route that reaches E having
collected at least one item of every kind in C (a breadth-first search over (cell, collected) states, E
absorbing: Layout.search in tasks/maze.py). A maze is kept only if d(gold) and d(diamond) fit in max_moves and
d(gold + diamond) > max(d(gold), d(diamond)); its budget is

    budget = min(max(d(gold), d(diamond)) + slack, d(gold + diamond) - 1, max_moves)

so no route collects both gold and diamonds. Prompts of 81-82 bytes, budgets of 4-14 moves.
"""
import math
import re

import numpy as np

WALL, FLOOR, START, EXIT, GOLD, DIAMOND, LAVA, BONUS = "#", ".", "S", "E", "G", "*", "~", "+"
_NEIGHBOURS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right: the order Prim draws them in


DESIGNS = {  # the generator options of each design, and their defaults
    "corners": dict(size=9, n_gold=(3, 5), n_diamonds=(3, 5), n_lava=(3, 5), openings=(18, 28), radius=2,
                    slack=7, max_moves=33),
    "small": dict(size=7, n_gold=(1, 2), n_diamonds=(1, 2), n_lava=(1, 2), openings=2, slack=2, max_moves=14),
}


class MazeGenerator:
    """One design with its options checked: grid(rng) draws a candidate grid, budget(lay) keeps or rejects it."""

    def __init__(self, design: str = "corners", **options):
        """Options override the design's defaults (DESIGNS); see MazeTask. Options that cannot be met raise
        ValueError (MazeTask then checks that they can produce a maze at all)."""
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
        unknown = set(options) - set(DESIGNS[design])
        if unknown:
            raise ValueError(f"design={design!r} has no option(s) {', '.join(sorted(unknown))}; "
                             f"its options: {', '.join(DESIGNS[design])}")
        self.design = design
        opts = {**DESIGNS[design], **options}
        size = opts["size"]
        if not isinstance(size, int) or size < 5 or size % 2 == 0:
            raise ValueError(f"size must be an odd int >= 5, got {size!r}")
        self.size = size
        self.n_gold, self.n_diamonds, self.n_lava = (
            _count_range(arg, opts[arg]) for arg in ("n_gold", "n_diamonds", "n_lava"))
        if self.n_gold[0] < 1 or self.n_diamonds[0] < 1:
            raise ValueError(f"n_gold and n_diamonds must be at least 1, got {opts['n_gold']!r} and "
                             f"{opts['n_diamonds']!r}")
        for arg, lo in (("slack", 0), ("max_moves", 1)):
            if not isinstance(opts[arg], int) or opts[arg] < lo:
                raise ValueError(f"{arg} must be an int >= {lo}, got {opts[arg]!r}")
        self.slack, self.max_moves = opts["slack"], opts["max_moves"]
        if design == "small":
            self._check_small(opts)
        else:
            self._check_corners(opts)

    def _check_small(self, opts):
        floor = 2 * ((self.size - 1) // 2) ** 2 - 1  # floor cells of a Prim maze: the cells and the tree's passages
        if 2 + self.n_gold[1] + self.n_diamonds[1] + self.n_lava[1] > floor:
            raise ValueError(f"S, E and up to {self.n_gold[1]}, {self.n_diamonds[1]}, {self.n_lava[1]} items "
                             f"do not fit the {floor} floor cells of size={self.size}")
        if not isinstance(opts["openings"], int) or opts["openings"] < 0:
            raise ValueError(f"openings must be an int >= 0, got {opts['openings']!r}")
        self.openings = opts["openings"]

    def _check_corners(self, opts):
        self.openings = _count_range("openings", opts["openings"])
        radius, n = opts["radius"], self.size
        if not isinstance(radius, int) or not 0 <= 2 * radius < n - 1:
            raise ValueError(f"radius must be an int in [0, {(n - 2) // 2}] for size={n} (the gold and diamond "
                             f"zones must not meet), got {radius!r}")
        self.radius = radius
        # from a corner: (a, b) steps in, a + b <= radius; the cells with a, b both even are Prim cells, always open
        zone = [(a, b) for a in range(radius + 1) for b in range(radius + 1 - a)]
        zone_open = sum(a % 2 == 0 and b % 2 == 0 for a, b in zone)
        for arg in ("n_gold", "n_diamonds"):
            lo, hi = getattr(self, arg)
            if hi > len(zone) or lo > zone_open:
                raise ValueError(f"{arg}={opts[arg]!r} does not fit a zone of radius {radius}: {len(zone)} cells, "
                                 f"{zone_open} of them always open (need lo <= {zone_open}, hi <= {len(zone)})")
        near_corner = lambda r, c: min(r, n - 1 - r) + min(c, n - 1 - c) <= radius  # noqa: E731
        inner = [(r, c) for r in range(2, n - 2) for c in range(2, n - 2) if (r, c) != (n // 2, n // 2)]
        inner_open = sum(r % 2 == 0 and c % 2 == 0 and not near_corner(r, c) for r, c in inner)
        if self.n_lava[1] > len(inner) or self.n_lava[0] > inner_open:
            raise ValueError(f"n_lava={opts['n_lava']!r} does not fit the interior of size={n}: {len(inner)} cells, "
                             f"{inner_open} of them always free (need lo <= {inner_open}, hi <= {len(inner)})")

    # --- grids and budgets -----------------------------------------------------------------------------------
    def grid(self, rng: np.random.Generator) -> str:
        """A candidate grid of the design (its rows joined by "\\n"); budget() keeps or rejects it."""
        return self._small_grid(rng) if self.design == "small" else self._corners_grid(rng)

    def budget(self, lay):
        """The maze's budget under the design's rule (module docstring), or None if the maze is rejected.
        lay: the grid's tasks.maze.Layout (its move table, distances and exact search)."""
        return self._small_budget(lay) if self.design == "small" else self._corners_budget(lay)

    def _small_grid(self, rng: np.random.Generator) -> str:
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

    def _small_budget(self, lay):
        """d(gold), d(diamond), d(both) by the exact search; None when the maze has no gold/diamond trade-off."""
        bit_of = {c: 1 for c in lay.gold} | {c: 2 for c in lay.diamonds}
        exits, _ = lay.search(bit_of, self.max_moves)
        d_gold = min((d for mask, d in exits.items() if mask & 1), default=math.inf)
        d_diamond = min((d for mask, d in exits.items() if mask & 2), default=math.inf)
        d_both = exits.get(3, math.inf)
        longer = max(d_gold, d_diamond)
        if longer > self.max_moves or d_both <= longer:
            return None
        return int(min(longer + self.slack, d_both - 1, self.max_moves))

    def _corners_grid(self, rng: np.random.Generator) -> str:
        """Prim on the even cells, openings, S/E on a random diagonal, bonus at the centre, items in their zones."""
        n, last = self.size, self.size - 1
        grid = prim_maze(n, rng, border=False)
        walls = [(r, c) for r in range(n) for c in range(n) if grid[r][c] == WALL]
        for i in rng.permutation(len(walls))[:rng.integers(self.openings[0], self.openings[1] + 1)]:
            r, c = walls[i]
            grid[r][c] = FLOOR
        corners = [(0, 0), (0, last), (last, last), (last, 0)]  # around the square: i and i + 2 are opposite
        i = int(rng.integers(4))
        gold, diamond = (corners[(i + 1) % 4], corners[(i + 3) % 4])[::1 - 2 * int(rng.integers(2))]
        for (r, c), kind in ((corners[i], START), (corners[(i + 2) % 4], EXIT), ((n // 2, n // 2), BONUS)):
            grid[r][c] = kind
        for kind, (r0, c0), count in ((GOLD, gold, self.n_gold), (DIAMOND, diamond, self.n_diamonds)):
            zone = [(r, c) for r in range(max(0, r0 - self.radius), min(n, r0 + self.radius + 1))
                    for c in range(max(0, c0 - self.radius), min(n, c0 + self.radius + 1))
                    if abs(r - r0) + abs(c - c0) <= self.radius]
            _place(grid, zone, kind, count, rng)
        _place(grid, [(r, c) for r in range(2, n - 2) for c in range(2, n - 2)], LAVA, self.n_lava, rng)
        return "\n".join("".join(row) for row in grid)

    def _corners_budget(self, lay):
        """max(S->gold corner->E, S->diamond corner->E) + slack, if a lava-free route fits it, both corners do not
        and it is at most max_moves; else None (also for a grid whose S and E are not opposite corners)."""
        H, W = lay.H, lay.W
        if lay.start + lay.exit != H * W - 1 or lay.start not in (0, W - 1, (H - 1) * W, H * W - 1):
            return None
        a, b = sorted({0, W - 1, (H - 1) * W, H * W - 1} - {lay.start, lay.exit})  # the other two corners
        s, e = lay.from_start, lay.to_exit
        budget = max(s[a] + e[a], s[b] + e[b]) + self.slack
        if budget > self.max_moves or lay.distances(lay.start, lay.lava)[lay.exit] > budget:
            return None
        ab = lay.distances(a, {lay.exit})[b]  # = b -> a
        both = min(s[a] + ab + e[b], s[b] + ab + e[a])
        return int(budget) if both > budget else None


def _count_range(name, value):
    """An int n -> (n, n); (lo, hi), or the text "lo,hi" that --task_opt gives -> (lo, hi); ValueError otherwise."""
    given = value
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*,\s*\d+\s*", value):
        value = tuple(int(part) for part in value.split(","))
    if isinstance(value, int):
        value = (value, value)
    if not (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(x, int) for x in value)
            and 0 <= value[0] <= value[1]):
        raise ValueError(f"{name} must be an int or an inclusive range lo,hi of non-negative ints, got {given!r}")
    return tuple(value)


def _place(grid: list, cells: list, kind: str, count: tuple, rng: np.random.Generator):
    """Put a count drawn from the range (lo, hi) of `kind` on distinct random floor cells among `cells`
    (all of them when fewer are floor)."""
    floor = [(r, c) for r, c in cells if grid[r][c] == FLOOR]
    n = min(int(rng.integers(count[0], count[1] + 1)), len(floor))
    for i in rng.choice(len(floor), size=n, replace=False):
        r, c = floor[i]
        grid[r][c] = kind


def prim_maze(size: int, rng: np.random.Generator, border: bool = True) -> list[list[str]]:
    """Randomized Prim on a size x size grid of walls: a spanning tree of passages between the cells, which are
    the odd coordinates inside a wall border (border=True) or the even coordinates from edge to edge."""
    lo, hi = (1, size - 2) if border else (0, size - 1)  # the cells' coordinate range, inclusive
    grid = [[WALL] * size for _ in range(size)]
    cells = [(r, c) for r in range(lo, hi + 1, 2) for c in range(lo, hi + 1, 2)]
    r, c = cells[rng.integers(len(cells))]
    grid[r][c] = FLOOR
    frontier = [((r, c), (r + 2 * dr, c + 2 * dc)) for dr, dc in _NEIGHBOURS]
    while frontier:
        i = rng.integers(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        (r, c), (r2, c2) = frontier.pop()
        if not (lo <= r2 <= hi and lo <= c2 <= hi) or grid[r2][c2] != WALL:
            continue
        grid[(r + r2) // 2][(c + c2) // 2] = grid[r2][c2] = FLOOR
        frontier += [((r2, c2), (r2 + 2 * dr, c2 + 2 * dc)) for dr, dc in _NEIGHBOURS]
    return grid

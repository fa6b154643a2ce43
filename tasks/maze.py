"""
The maze task: the paper's maze (a 9x9 maze with gold, diamonds and lava), in two designs.

A problem is a grid maze, one row per line, so that a move up or down is a fixed offset in tokens. Legend:

    #  wall     .  floor     S  start     E  exit
    G  gold     *  diamond   ~  lava      +  bonus      (D and L are moves, so diamonds and lava get symbols)

An answer is a route: a string over U/D/L/R (up, down, left, right), nothing else but surrounding whitespace.
It is walked from S one move at a time:
  - a move into a wall or off the grid leaves the agent in place and still costs a step;
  - only the first `budget` moves are executed;
  - the walk stops on reaching E: moves after it are ignored, and items count only before E.
Reward vector r in [0,1]^4 (the paper's): all zero unless the walk reaches E within the budget, and for any
other string; else, with g, d, l the fractions of gold, diamond and lava cells entered (distinct cells),
    reward="linear" (default, the paper's):  r = [1, g, d, 1 - l]
    reward="convex_bonus" (the authors' released generator): r = [1, min(1, b g²), min(1, b d²), min(1, b (1-l)²)],
        b = 1.5 if the bonus cell + was entered before E, else 1.
An item kind the grid lacks scores 0 (gold, diamonds) or 1 (lava). Deployment scalar w*ᵀr, w* = (1/4, 1/4, 1/4, 1/4).

design="corners" (default; the paper's generator, ../shared/VPO.md "The authors' setup in detail"). The first
train maze of seed 0 (its prompt, 116 bytes, is this grid under "maze: 3 routes, budget 27"), and render() of an
all-gold route RDDDDDDDLDRRRRRRRR, r = (1, 1, 0, 1), and an all-diamond one RDRDRRRUURRDRDDDDDDD, r = (1, 0, 1, 0.8):

    S..#..**.   >v.#..**.   >v.#.>>v.
    #..#...**   #v.#...**   #>v#.^.>v
    ..~......   .v~......   ..>>>^..v
    ....#.~#.   .v..#.~#.   ....#.~#v
    ....+....   .v..+....   ....+...v
    #...~~...   #v..~~...   #...~~..v
    .....#~..   .v...#~..   .....#~.v
    .G.......   v<.......   .G......v
    GGG.....E   >>>>>>>>E   GGG.....E

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
  (116 bytes + <|bos|>) and 3 answers (max_new_tokens(3) = 108) fit a block of 225 <= 256 tokens.
  About 1,400 train mazes a second in pure Python (99% of the candidates are kept; test split 1 in 8).

design="small" (the 7x7 maze of the earlier tables, `--task_opt design=small`): a 7x7 grid with a wall border
(Prim on the 3x3 odd-coordinate cells, 2 extra openings), S, E and 1-2 of each item on random floor cells,
no bonus tile. Its budget is checked exactly: let d(C) be the length of the shortest route that reaches E having
collected at least one item of every kind in C (a breadth-first search over (cell, collected) states, E
absorbing). A maze is kept only if d(gold) and d(diamond) fit in max_moves and
d(gold + diamond) > max(d(gold), d(diamond)); its budget is

    budget = min(max(d(gold), d(diamond)) + slack, d(gold + diamond) - 1, max_moves)

so no route collects both gold and diamonds. Prompts of 81-82 bytes, budgets of 4-14 moves.

Demonstrations for the warm start, two styles (`demonstration(problem, m, rng, style)`):
  - "diverse": one random shortest route for every set of items that can be collected on the way to E within
    the budget (the whole front and the dominated points; "corners" tracks gold and diamonds, see routes()),
    plus imperfect ones (a route cut short of E, a route with a detour past the budget). They teach the
    trade-offs.
  - "routes": chosen without looking at items (only walls, S, E and the budget): random shortest walks
    S -> w1 [-> w2] -> E through one or two random waypoints that fit the budget (blind_routes), plus the same
    imperfect ones. They teach the format and walking to the exit, not which routes score well.
Each demonstration answer is imperfect with probability p_imperfect; m distinct answers, repeats only when a
maze has fewer than m candidates. On the corners design (300 mazes x 3 answers, p_imperfect = 0) "routes"
answers all reach E, 44% are longer than the shortest route, 15% collect some gold, 19% some diamonds, 40%
avoid all lava (w*ᵀr 0.49 on average); "diverse" answers: 56%, 51%, 58% (w*ᵀr 0.61).
"""
import math
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tasks import Task, in_test_split

WALL, FLOOR, START, EXIT, GOLD, DIAMOND, LAVA, BONUS = "#", ".", "S", "E", "G", "*", "~", "+"
CELLS = WALL + FLOOR + START + EXIT + GOLD + DIAMOND + LAVA + BONUS
MOVES = "UDLR"
_DELTA = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_BACK = {"U": "D", "D": "U", "L": "R", "R": "L"}
_ROUTE = re.compile(r"[UDLR]+")
REWARDS = ("linear", "convex_bonus")
BONUS_FACTOR = 1.5  # convex_bonus: the item and safety terms are multiplied by this after visiting the bonus tile
PROBE_TRIES = 300   # candidates a new MazeTask draws to check that its options can produce a maze at all


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
        self.H, self.W = H, W = len(rows), len(rows[0])
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
        self.gold, self.diamonds, self.lava, self.bonus = (
            frozenset(i for i, ch in enumerate(flat) if ch == kind) for kind in (GOLD, DIAMOND, LAVA, BONUS))

    def vector(self, reached: bool, visited, reward: str = "linear") -> np.ndarray:
        """r = [reached, g, d, 1 - l] with g = |G ∩ visited|/|G| etc. for the gold, diamond and lava cells G, D, L
        (reward="linear"), or the convex_bonus terms of the module docstring; zeros unless reached."""
        if not reached:
            return np.zeros(4, dtype=np.float32)
        frac = lambda items: len(items & visited) / max(len(items), 1)  # noqa: E731
        terms = [frac(self.gold), frac(self.diamonds), 1.0 - frac(self.lava)]
        if reward == "convex_bonus":
            b = BONUS_FACTOR if self.bonus & visited else 1.0
            terms = [min(1.0, b * t * t) for t in terms]
        return np.array([1.0] + terms, dtype=np.float32)

    @cached_property
    def to_exit(self) -> list:
        """Fewest moves from every cell to E."""
        return self.distances(self.exit)

    @cached_property
    def from_start(self) -> list:
        """Fewest moves from S to every cell without entering E on the way (a walk ends there)."""
        return self.distances(self.start, {self.exit})

    def distances(self, source: int, blocked=frozenset()) -> list:
        """Fewest moves from source to every cell (math.inf if unreachable), never entering a blocked cell."""
        dist = [math.inf] * len(self.step)
        dist[source], frontier = 0, [source]
        while frontier:
            nxt = []
            for cell in frontier:
                for cell2 in self.step[cell]:
                    if dist[cell2] == math.inf and cell2 not in blocked:
                        dist[cell2] = dist[cell] + 1
                        nxt.append(cell2)
            frontier = nxt
        return dist


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
    state reachable sooner. States from which E is out of reach within max_depth are pruned. Returns
    ({mask: fewest moves to reach (E, mask)} within max_depth moves, parents: state -> [(previous state, move)]
    on shortest routes).
    """
    to_exit = lay.to_exit
    start = (lay.start, bit_of.get(lay.start, 0))
    depth_of, parents, frontier = {start: 0}, {start: []}, [start]
    for depth in range(1, max_depth + 1):
        nxt = []
        for state in frontier:
            cell, mask = state
            if cell == lay.exit:
                continue
            for k, cell2 in enumerate(lay.step[cell]):
                if cell2 == cell or depth + to_exit[cell2] > max_depth:
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


DESIGNS = {  # the generator options of each design, and their defaults
    "corners": dict(size=9, n_gold=(3, 5), n_diamonds=(3, 5), n_lava=(3, 5), openings=(18, 28), radius=2,
                    slack=7, max_moves=33),
    "small": dict(size=7, n_gold=(1, 2), n_diamonds=(1, 2), n_lava=(1, 2), openings=2, slack=2, max_moves=14),
}


class MazeTask(Task):
    name = "maze"
    objectives = ["exit", "gold", "diamonds", "no_lava"]
    deploy_weights = np.full(4, 0.25)  # w*: the mean of the four
    demo_styles = ("diverse", "routes")

    def __init__(self, design: str = "corners", reward: str = "linear", p_imperfect: float = 0.15, **options):
        """design: "corners" (the paper's 9x9 maze) or "small" (the earlier 7x7 one); options override the
        design's defaults (DESIGNS): size (odd grid side), n_gold / n_diamonds / n_lava (an int or an inclusive
        (lo, hi) range), openings (extra walls opened after Prim: an int, or a range for "corners"), radius
        ("corners": the item zones' Manhattan radius), slack (budget moves beyond the longer of the via-gold and
        via-diamond routes), max_moves (the largest budget: mazes needing more are rejected). reward: "linear"
        or "convex_bonus". p_imperfect: chance that a demonstration answer is an imperfect route.
        Options that cannot produce a maze raise ValueError here, not later in problems()."""
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}, got {design!r}")
        unknown = set(options) - set(DESIGNS[design])
        if unknown:
            raise ValueError(f"design={design!r} has no option(s) {', '.join(sorted(unknown))}; "
                             f"its options: {', '.join(DESIGNS[design])}")
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        if not isinstance(p_imperfect, (int, float)) or not 0.0 <= p_imperfect <= 1.0:
            raise ValueError(f"p_imperfect must be in [0, 1], got {p_imperfect!r}")
        self.design, self.reward, self.p_imperfect = design, reward, p_imperfect
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
        self._probe()

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

    def _probe(self):
        """Draw PROBE_TRIES candidates (a fixed seed); ValueError unless one of them is a valid maze."""
        rng = np.random.default_rng(0)
        for _ in range(PROBE_TRIES):
            if self._budget(Layout(self._random_grid(rng))) is not None:
                return
        raise ValueError(f"no valid maze in {PROBE_TRIES} tries with design={self.design!r}, slack={self.slack}, "
                         f"max_moves={self.max_moves}: the budget must fit one corner (gold or diamond) and not both")

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
        return self._small_grid(rng) if self.design == "small" else self._corners_grid(rng)

    def _budget(self, lay: Layout):
        """The maze's budget under the design's rule (module docstring), or None if the maze is rejected."""
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

    def _small_budget(self, lay: Layout):
        """d(gold), d(diamond), d(both) by the exact search; None when the maze has no gold/diamond trade-off."""
        bit_of = {c: 1 for c in lay.gold} | {c: 2 for c in lay.diamonds}
        exits, _ = search(lay, bit_of, self.max_moves)
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

    def _corners_budget(self, lay: Layout):
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
        return problem.layout.vector(*walk(problem, route), self.reward)

    def plot_axes(self, vectors: np.ndarray):
        """The trade-off the budget forces: gold against diamonds."""
        return np.asarray(vectors)[:, [1, 2]], ("gold", "diamonds")

    def solved(self, vector: np.ndarray) -> bool:
        """Reached the exit within the budget (pass@k then counts routes that reach E at all)."""
        return bool(vector[0] >= 1.0)

    # --- demonstrations --------------------------------------------------------------------------------------
    def routes(self, problem: MazeProblem, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
        """Candidate answers with the reward vector each scores: one random shortest route per set of tracked items
        that can be collected on the way to E within the budget, then one route cut short of E and one with a
        detour past the budget (zeros). Tracked: every item in the small design; gold and diamonds (and the bonus
        under convex_bonus) in the corners design, where tracking its 3-5 lava cells too makes the search about
        15x slower (~50 ms a maze): there a route crosses lava or not as its random shortest path happens to."""
        lay = problem.layout
        tracked = sorted(lay.gold) + sorted(lay.diamonds)
        tracked += sorted(lay.lava) if self.design == "small" else []
        tracked += sorted(lay.bonus) if self.reward == "convex_bonus" else []
        bit_of = {c: 1 << i for i, c in enumerate(tracked)}
        exits, parents = search(lay, bit_of, problem.budget)
        good = [random_shortest_route(parents, (lay.exit, mask), rng) for mask in sorted(exits)]
        zero = np.zeros(4, dtype=np.float32)
        return [(route, self.score(problem, route)) for route in good] \
            + [(route, zero) for route in self._imperfect(problem, good, rng)]

    def blind_routes(self, problem: MazeProblem, m: int, rng: np.random.Generator) -> list[str]:
        """Up to m distinct routes that reach E within the budget, chosen without looking at items (at most 4m
        draws). Each is a random shortest walk S -> w1 [-> w2] -> E through one waypoint, or two with probability
        1/2: w1 uniform among the cells such a walk can visit within the budget, w2 uniform among the cells that
        still fit after w1. In an open grid every cell lies on a shortest route from corner to corner, so one
        waypoint mostly gives a shortest route; the second one makes the detours."""
        lay = problem.layout
        s, e = lay.from_start, lay.to_exit
        cells = [c for c in range(len(lay.step)) if c != lay.exit]
        ways = [c for c in cells if s[c] + e[c] <= problem.budget]
        out = []
        for _ in range(4 * m):
            w = ways[rng.integers(len(ways))]
            route = _ascend(lay, w, s, rng)  # S -> w
            if rng.random() < 0.5:
                from_w = lay.distances(w, {lay.exit})
                ways2 = [c for c in cells if s[w] + from_w[c] + e[c] <= problem.budget]
                w2 = ways2[rng.integers(len(ways2))]
                route, w = route + _ascend(lay, w2, from_w, rng), w2  # w -> w2
            route += _descend(lay, w, e, rng)  # w -> E
            if route not in out:
                out.append(route)
            if len(out) == m:
                break
        return out

    def _imperfect(self, problem: MazeProblem, good: list[str], rng: np.random.Generator) -> list[str]:
        """A good route cut short of E, and a good route with a detour that reaches E only past the budget."""
        bad = []
        long_enough = [r for r in good if len(r) >= 2]
        if long_enough:
            route = long_enough[rng.integers(len(long_enough))]
            bad.append(route[:rng.integers(1, len(route))])  # stops short of E
        if good:
            detour = self._detour(problem, good[rng.integers(len(good))], rng)
            if detour is not None:
                bad.append(detour)
        return bad

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

    def demonstration(self, problem: MazeProblem, m: int, rng: np.random.Generator, style: str = "diverse") -> str:
        """m distinct candidate routes in random order: each an imperfect one with probability p_imperfect,
        else a good one (style "diverse": one per reachable item set; "routes": reward-blind, blind_routes);
        repeats only when there are fewer than m candidates."""
        self.check_style(style)
        if style == "diverse":
            cands = self.routes(problem, rng)
            good = [r for r, v in cands if v[0] == 1.0]
            bad = [r for r, v in cands if v[0] == 0.0]
        else:
            good = self.blind_routes(problem, m, rng)
            bad = self._imperfect(problem, good, rng)
        answers = []
        for _ in range(m):
            pool = bad if bad and (not good or rng.random() < self.p_imperfect) else good
            if pool:
                answers.append(pool.pop(rng.integers(len(pool))))
            else:  # fewer than m candidates: repeat one
                answers.append(answers[rng.integers(len(answers))])
        return self.format_answers(answers)


def _place(grid: list, cells: list, kind: str, count: tuple, rng: np.random.Generator):
    """Put a count drawn from the range (lo, hi) of `kind` on distinct random floor cells among `cells`
    (all of them when fewer are floor)."""
    floor = [(r, c) for r, c in cells if grid[r][c] == FLOOR]
    n = min(int(rng.integers(count[0], count[1] + 1)), len(floor))
    for i in rng.choice(len(floor), size=n, replace=False):
        r, c = floor[i]
        grid[r][c] = kind


def _descend(lay: Layout, cell: int, dist: list, rng: np.random.Generator) -> str:
    """Moves of a random shortest walk from cell down the distance table dist to its source (dist 0)."""
    moves = []
    while dist[cell] > 0:
        steps = [(k, c2) for k, c2 in enumerate(lay.step[cell]) if dist[c2] == dist[cell] - 1]
        k, cell = steps[rng.integers(len(steps))]
        moves.append(MOVES[k])
    return "".join(moves)


def _ascend(lay: Layout, cell: int, dist: list, rng: np.random.Generator) -> str:
    """Moves of a random shortest walk from the source of the distance table dist (dist 0) up to cell."""
    return "".join(_BACK[mv] for mv in reversed(_descend(lay, cell, dist, rng)))


def render(problem: MazeProblem, route: str, reward: str = "linear") -> str:
    """The maze, and beside it the same maze with the route drawn: every cell the walk leaves shows the arrow of
    the move made there (^ v < >; the last one when a cell is left twice), then the route and its reward vector."""
    lay, arrows = problem.layout, {}
    ok = isinstance(route, str) and _ROUTE.fullmatch(route.strip())
    pos = lay.start
    for mv in (route.strip() if ok else "")[:problem.budget]:
        nxt = lay.step[pos][MOVES.index(mv)]
        if nxt != pos:
            arrows[pos] = "^v<>"[MOVES.index(mv)]
        pos = nxt
        if pos == lay.exit:
            break
    rows = problem.grid.split("\n")
    drawn = ["".join(arrows.get(r * lay.W + c, ch) for c, ch in enumerate(row)) for r, row in enumerate(rows)]
    vec = lay.vector(*walk(problem, route.strip()), reward) if ok else np.zeros(4, dtype=np.float32)
    text = "\n".join(f"{a}   {b}" for a, b in zip(rows, drawn))
    return text + f"\nroute {route.strip() if ok else route!r} (budget {problem.budget}): r = " \
                  f"({', '.join(f'{x:.2f}' for x in vec)})"


def prim_maze(size: int, rng: np.random.Generator, border: bool = True) -> list[list[str]]:
    """Randomized Prim on a size x size grid of walls: a spanning tree of passages between the cells, which are
    the odd coordinates inside a wall border (border=True) or the even coordinates from edge to edge."""
    lo, hi = (1, size - 2) if border else (0, size - 1)  # the cells' coordinate range, inclusive
    grid = [[WALL] * size for _ in range(size)]
    cells = [(r, c) for r in range(lo, hi + 1, 2) for c in range(lo, hi + 1, 2)]
    r, c = cells[rng.integers(len(cells))]
    grid[r][c] = FLOOR
    frontier = [((r, c), (r + 2 * dr, c + 2 * dc)) for dr, dc in _DELTA.values()]
    while frontier:
        i = rng.integers(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        (r, c), (r2, c2) = frontier.pop()
        if not (lo <= r2 <= hi and lo <= c2 <= hi) or grid[r2][c2] != WALL:
            continue
        grid[(r + r2) // 2][(c + c2) // 2] = grid[r2][c2] = FLOOR
        frontier += [((r2, c2), (r2 + 2 * dr, c2 + 2 * dc)) for dr, dc in _DELTA.values()]
    return grid

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

Problems come from tasks/maze_gen.py (the generators: grids, Prim's maze and the budget rules), in two designs:
design="corners" (default; the paper's generator, docs/paper.md "Tasks"), a 9x9 open
field with gold and diamonds around two opposite corners and a budget that fits one corner, not both; and
design="small" (the 7x7 maze of the earlier tables, `--task_opt design=small`). The first train maze of seed 0
of "corners" (its prompt, 116 bytes, is this grid under "maze: 3 routes, budget 27"), and render() of an
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

from tasks.base import Task, in_test_split
from tasks.maze_gen import BONUS, DIAMOND, EXIT, FLOOR, GOLD, LAVA, START, WALL, MazeGenerator

CELLS = WALL + FLOOR + START + EXIT + GOLD + DIAMOND + LAVA + BONUS
MOVES = "UDLR"
_DELTA = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_BACK = {"U": "D", "D": "U", "L": "R", "R": "L"}
ROUTE = re.compile(r"[UDLR]+")
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

    def search(self, bit_of: dict, max_depth: int):
        """Exact breadth-first search over states (cell, mask), mask = OR of bit_of[c] over the item cells c
        entered.

        E is absorbing. Wall bumps are not followed: they cost a step and change no state, so they never make a
        state reachable sooner. States from which E is out of reach within max_depth are pruned. Returns
        ({mask: fewest moves to reach (E, mask)} within max_depth moves, parents: state -> [(previous state, move)]
        on shortest routes).
        """
        to_exit = self.to_exit
        start = (self.start, bit_of.get(self.start, 0))
        depth_of, parents, frontier = {start: 0}, {start: []}, [start]
        for depth in range(1, max_depth + 1):
            nxt = []
            for state in frontier:
                cell, mask = state
                if cell == self.exit:
                    continue
                for k, cell2 in enumerate(self.step[cell]):
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
        exits = {mask: d for (cell, mask), d in depth_of.items() if cell == self.exit}
        return exits, parents


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


def random_shortest_route(parents: dict, state, rng: np.random.Generator) -> str:
    """Walk the parents table back from state to the start, picking uniformly among the shortest predecessors."""
    moves = []
    while parents[state]:
        state, mv = parents[state][rng.integers(len(parents[state]))]
        moves.append(mv)
    return "".join(reversed(moves))


class MazeTask(Task):
    name = "maze"
    objectives = ["exit", "gold", "diamonds", "no_lava"]
    deploy_weights = np.full(4, 0.25)  # w*: the mean of the four
    demo_styles = ("diverse", "routes")

    def __init__(self, design: str = "corners", reward: str = "linear", p_imperfect: float = 0.15, **options):
        """design: "corners" (the paper's 9x9 maze) or "small" (the earlier 7x7 one); options override the
        design's defaults (tasks.maze_gen.DESIGNS): size (odd grid side), n_gold / n_diamonds / n_lava (an int or
        an inclusive (lo, hi) range), openings (extra walls opened after Prim: an int, or a range for "corners"),
        radius ("corners": the item zones' Manhattan radius), slack (budget moves beyond the longer of the via-gold and
        via-diamond routes), max_moves (the largest budget: mazes needing more are rejected). reward: "linear"
        or "convex_bonus". p_imperfect: chance that a demonstration answer is an imperfect route.
        Options that cannot produce a maze raise ValueError here, not later in problems()."""
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        if not isinstance(p_imperfect, (int, float)) or not 0.0 <= p_imperfect <= 1.0:
            raise ValueError(f"p_imperfect must be in [0, 1], got {p_imperfect!r}")
        self.generator = MazeGenerator(design, **options)  # checks the design and its options
        self.design, self.reward, self.p_imperfect = design, reward, p_imperfect
        self._probe()

    @property
    def max_moves(self) -> int:
        """The largest budget (the generator's option): it sizes answer_tokens."""
        return self.generator.max_moves

    def _probe(self):
        """Draw PROBE_TRIES candidates (a fixed seed); ValueError unless one of them is a valid maze."""
        rng, gen = np.random.default_rng(0), self.generator
        for _ in range(PROBE_TRIES):
            if gen.budget(Layout(gen.grid(rng))) is not None:
                return
        raise ValueError(f"no valid maze in {PROBE_TRIES} tries with design={self.design!r}, slack={gen.slack}, "
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
            grid = self.generator.grid(rng)
            if grid in seen or in_test_split(grid) != (split == "test"):
                continue
            budget = self.generator.budget(Layout(grid))
            if budget is not None:
                seen.add(grid)
                out.append(MazeProblem(grid, budget))
        if len(out) < n:
            raise RuntimeError(f"found only {len(out)} of {n} mazes; loosen the MazeTask options")
        return out

    # --- prompt and answers ----------------------------------------------------------------------------------
    def prompt(self, problem: MazeProblem, m: int) -> str:
        return f"maze: {m} routes, budget {problem.budget}\n{problem.grid}\n"

    def default_answer_tokens(self) -> int:
        # a demonstration's answer has at most max_moves + 2 moves (an over-budget detour), then its end; one
        # token more leaves the policy a move past every demonstration
        return self.max_moves + 3

    def score(self, problem: MazeProblem, answer: str) -> np.ndarray:
        """r(x, y) of one route; zeros for anything that is not a string of U/D/L/R."""
        route = answer.strip() if isinstance(answer, str) else ""
        if not ROUTE.fullmatch(route):
            return np.zeros(4, dtype=np.float32)
        return problem.layout.vector(*walk(problem, route), self.reward)

    def canonical(self, problem: MazeProblem, answer: str):
        """The walk a route makes: the cells entered in order, up to E or the budget, a move into a wall (which
        changes nothing) left out; moves after E or past the budget are not walked. Not a route: its own string."""
        route = answer.strip() if isinstance(answer, str) else ""
        if not ROUTE.fullmatch(route):
            return answer
        lay, pos, cells = problem.layout, problem.layout.start, []
        for mv in route[:problem.budget]:
            nxt = lay.step[pos][MOVES.index(mv)]
            if nxt != pos:
                cells.append(nxt)
            pos = nxt
            if pos == lay.exit:
                break
        return ("walk", tuple(cells))

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
        exits, parents = lay.search(bit_of, problem.budget)
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
    ok = isinstance(route, str) and ROUTE.fullmatch(route.strip())
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

"""Tests of the paper's maze (MazeTask design "corners", the default): the generator's guarantees against an
independent exact search, item zones and counts, both reward modes on hand-made routes, splits, option checks,
both demonstration styles, and render. The earlier 7x7 design is pinned by tests/test_tasks_toy_maze.py."""
import re

import numpy as np
import pytest

from tasks import in_test_split
from tasks.code import CodeTask
from tasks.maze import MazeProblem, MazeTask, render
from tasks.tokenizer import END, SEP, encode_special
from tasks.toy import ToyTask

CORNERS = MazeTask()
PROBLEMS = CORNERS.problems("train", 250, seed=11) + CORNERS.problems("test", 50, seed=11)


def vec(*xs):
    return np.array(xs, dtype=np.float32)


# --- the generator, checked independently ---------------------------------------------------------------------
def corner_search(problem):
    """Independent of tasks.maze: expand all walks level by level over states (cell, entered corner A, entered
    corner B, entered gold, entered a diamond, entered lava), the exit absorbing; A and B are the two corners
    that are not S or E. Returns {flags at E: fewest moves} within the budget."""
    rows = problem.grid.split("\n")
    H, W = len(rows), len(rows[0])
    cells = {(r, c): rows[r][c] for r in range(H) for c in range(W)}
    start, exit_ = (next(p for p, ch in cells.items() if ch == kind) for kind in "SE")
    a, b = sorted({(0, 0), (0, W - 1), (H - 1, 0), (H - 1, W - 1)} - {start, exit_})
    flags = lambda p: (p == a, p == b, cells[p] == "G", cells[p] == "*", cells[p] == "~")  # noqa: E731
    frontier, seen, done = {(start, flags(start))}, set(), {}
    for depth in range(1, problem.budget + 1):
        nxt = set()
        for (r, c), got in frontier:
            for p in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if cells.get(p, "#") == "#":
                    continue
                state = (p, tuple(x or y for x, y in zip(got, flags(p))))
                if cells[p] == "E":
                    done.setdefault(state[1], depth)
                elif state not in seen:
                    seen.add(state)
                    nxt.add(state)
        frontier = nxt
    return done


def fewest(done, want):
    """Fewest moves to E with every flag i in want set (inf if none within the budget)."""
    return min((d for got, d in done.items() if all(got[i] for i in want)), default=np.inf)


def test_generated_mazes_fit_one_corner_never_both_and_have_a_lava_free_route():
    both_kinds = 0
    for p in PROBLEMS:
        done = corner_search(p)
        d_a, d_b = fewest(done, [0]), fewest(done, [1])
        assert p.budget == max(d_a, d_b) + CORNERS.generator.slack <= CORNERS.max_moves, p.grid   # paper's budget
        assert fewest(done, [0, 1]) == np.inf, p.grid                                     # both corners never fit
        assert any(not got[4] for got in done), p.grid                                    # a lava-free route fits
        both_kinds += fewest(done, [2, 3]) < np.inf
    # a route with some gold and some diamonds (not entering both corners): the docstring's measured share
    assert 0.55 < both_kinds / len(PROBLEMS) < 0.75, both_kinds


def manhattan(p, q):
    return abs(p[0] - q[0]) + abs(p[1] - q[1])


def test_generated_mazes_place_corners_items_and_bonus_as_specified():
    seen = {"start, gold corner": set(), "n_gold": set(), "n_lava": set()}
    for p in PROBLEMS:
        rows = p.grid.split("\n")
        assert len(rows) == 9 and all(len(r) == 9 for r in rows)
        at = {ch: [(r, c) for r in range(9) for c in range(9) if rows[r][c] == ch] for ch in "SEG*~+"}
        (s,), (e,) = at["S"], at["E"]
        assert s in {(0, 0), (0, 8), (8, 0), (8, 8)} and e == (8 - s[0], 8 - s[1])   # opposite corners
        assert at["+"] == [(4, 4)]                                                        # bonus at the centre
        others = {(0, 0), (0, 8), (8, 0), (8, 8)} - {s, e}
        gold = min(others, key=lambda q: manhattan(q, at["G"][0]))
        (diamond,) = others - {gold}
        assert 3 <= len(at["G"]) <= 5 and all(manhattan(q, gold) <= 2 for q in at["G"])
        assert 3 <= len(at["*"]) <= 5 and all(manhattan(q, diamond) <= 2 for q in at["*"])
        assert 3 <= len(at["~"]) <= 5 and all(2 <= r <= 6 and 2 <= c <= 6 for r, c in at["~"])
        walls = p.grid.count("#")
        assert 4 <= walls <= 14, walls   # 32 walls after Prim on 5x5 cells, 18-28 of them opened
        seen["start, gold corner"].add((s, gold))
        seen["n_gold"].add(len(at["G"])), seen["n_lava"].add(len(at["~"]))
    assert len(seen["start, gold corner"]) == 8   # 4 corners for S, then either other corner for the gold
    assert seen["n_gold"] == seen["n_lava"] == {3, 4, 5}


def test_splits_are_disjoint_and_deterministic():
    train = [p.key for s in range(2) for p in CORNERS.problems("train", 150, seed=s)]
    test = [p.key for s in range(2) for p in CORNERS.problems("test", 20, seed=s)]
    assert not set(train) & set(test)
    assert not any(in_test_split(k) for k in train) and all(in_test_split(k) for k in test)
    assert CORNERS.problems("train", 50, seed=0) == CORNERS.problems("train", 50, seed=0)
    assert CORNERS.problems("train", 50, seed=0) != CORNERS.problems("train", 50, seed=1)
    assert len({p.key for p in PROBLEMS}) == len(PROBLEMS)


# --- rewards on a hand-made grid --------------------------------------------------------------------------------
GRID = MazeProblem("SGG+E\n"
                   "G*.~.\n"
                   "*~...", budget=9)   # 3 gold, 2 diamonds, 2 lava, the bonus next to E


@pytest.mark.parametrize("route, linear, convex", [
    # G G + E: g = 2/3, bonus -> 1.5 (2/3)^2 = 2/3, safety min(1, 1.5) = 1
    ("RRRR", (1, 2 / 3, 0, 1), (1, 2 / 3, 0, 1)),
    # G * G G + E: g = 1 -> min(1, 1.5) = 1, d = 1/2 -> 1.5 / 4
    ("DRURRR", (1, 1, 1 / 2, 1), (1, 1, 3 / 8, 1)),
    # G * ~ . . ~ + E: g = 1/3, d = 1/2, both lava -> safety 0
    ("DDRRRUUR", (1, 1 / 3, 1 / 2, 0), (1, 1.5 / 9, 3 / 8, 0)),
    # G * ~ . . . . E, no bonus: plain squares
    ("DDRRRRUU", (1, 1 / 3, 1 / 2, 1 / 2), (1, 1 / 9, 1 / 4, 1 / 4)),
    # G * . ~ . E, then L onto the bonus after E: it does not count
    ("DRRRRUL", (1, 1 / 3, 1 / 2, 1 / 2), (1, 1 / 9, 1 / 4, 1 / 4)),
    # the bonus before E, two bumps into the top edge on the way: 6 moves
    ("UURRRR", (1, 2 / 3, 0, 1), (1, 2 / 3, 0, 1)),
    # E on move 10 > budget 9, and junk: zero in both modes
    ("LLLLLLRRRR", (0, 0, 0, 0), (0, 0, 0, 0)),
    ("RRRX", (0, 0, 0, 0), (0, 0, 0, 0)),
])
def test_linear_and_convex_bonus_rewards_on_hand_made_routes(route, linear, convex):
    np.testing.assert_allclose(MazeTask().score(GRID, route), vec(*linear), rtol=1e-6)
    np.testing.assert_allclose(MazeTask(reward="convex_bonus").score(GRID, route), vec(*convex), rtol=1e-6)


def test_render_draws_the_route_and_its_reward():
    assert render(GRID, "DRURRR") == ("SGG+E   v>>>E\n"
                                      "G*.~.   >^.~.\n"
                                      "*~...   *~...\n"
                                      "route 'DRURRR' (budget 9): r = (1.00, 1.00, 0.50, 1.00)")
    assert render(GRID, "UUD").endswith("route 'UUD' (budget 9): r = (0.00, 0.00, 0.00, 0.00)")
    assert render(GRID, "go").split("\n")[0] == "SGG+E   SGG+E"


# --- options ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("opts", [
    dict(design="huge"), dict(size=8), dict(size=3), dict(radius=4), dict(radius=-1),
    dict(n_gold=(3, 7)), dict(n_diamonds=(4, 5)), dict(n_gold=0), dict(n_lava=(9, 10)), dict(n_lava=(5, 3)),
    dict(openings=(28, 18)), dict(slack=-1), dict(max_moves=0), dict(reward="convex"), dict(p_imperfect=1.5),
    dict(slack=40, max_moves=100),  # both corners always fit
    dict(max_moves=20),             # below every budget
    dict(design="small", radius=2), dict(colour="red"),
])
def test_options_that_cannot_make_a_maze_raise_value_error(opts):
    with pytest.raises(ValueError):
        MazeTask(**opts)


def test_count_ranges_from_the_command_line():
    task = MazeTask(n_gold="3,4", n_lava=" 4, 5", openings=20)   # --task_opt n_gold=3,4 gives the text
    gen = task.generator
    assert (gen.n_gold, gen.n_diamonds, gen.n_lava, gen.openings) == ((3, 4), (3, 5), (4, 5), (20, 20))
    for bad in ("3-5", "5,3", "3,x", 2.5, (1, 2, 3)):
        with pytest.raises(ValueError, match="n_gold"):
            MazeTask(n_gold=bad)


def test_problems_stop_after_bounded_attempts(monkeypatch):
    task = MazeTask()
    monkeypatch.setattr(task.generator, "grid", lambda rng: PROBLEMS[0].grid)  # a cheap candidate ...
    monkeypatch.setattr(task.generator, "budget", lambda lay: None)              # ... that is never valid
    with pytest.raises(RuntimeError, match="found only 0 of 2"):
        task.problems("train", 2, seed=0)


def test_other_sizes_and_a_larger_slack_still_keep_the_rule():
    for task in (MazeTask(size=7, n_lava=(2, 3)), MazeTask(size=11, max_moves=60), MazeTask(slack=11)):
        for p in task.problems("train", 20, seed=3):
            done = corner_search(p)
            assert p.budget == max(fewest(done, [0]), fewest(done, [1])) + task.generator.slack
            assert fewest(done, [0, 1]) == np.inf and any(not got[4] for got in done)


# --- demonstrations ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["diverse", "routes"])
def test_demonstrations_parse_are_distinct_and_fit_the_token_budget(style):
    rng = np.random.default_rng(0)
    for m in (1, 3):
        for p in PROBLEMS[:60]:
            demo = CORNERS.demonstration(p, m, rng, style=style)
            assert END not in demo and demo.count(SEP) == m - 1
            assert len(encode_special(demo)) + 1 <= CORNERS.max_new_tokens(m)
            assert all(len(encode_special(a)) + 1 <= CORNERS.answer_tokens for a in demo.split(SEP))
            answers = CORNERS.parse(demo, m)
            assert len(set(answers)) == m and all(re.fullmatch("[UDLR]+", a) for a in answers)


def test_routes_style_reaches_the_exit_within_the_budget():
    clean = MazeTask(p_imperfect=0.0)
    rng = np.random.default_rng(1)
    lengths, shortest = [], []
    for p in PROBLEMS[:100]:
        for route in clean.parse(clean.demonstration(p, 3, rng, style="routes"), 3):
            assert clean.score(p, route)[0] == 1, (p.grid, route)   # every reward-blind route reaches E in time
            lengths.append(len(route))
            shortest.append(p.layout.to_exit[p.layout.start])
    detours = np.mean(np.array(lengths) > np.array(shortest))
    assert 0.3 < detours < 0.9, detours                                   # shortest routes and detours both
    rng = np.random.default_rng(2)
    exits = [CORNERS.score(p, a)[0] for p in PROBLEMS[:200]
             for a in CORNERS.parse(CORNERS.demonstration(p, 3, rng, style="routes"), 3)]
    assert 0.78 < np.mean(exits) < 0.92, np.mean(exits)                   # 1 - p_imperfect = 0.85


def move_items(problem, rng):
    """The same walls, S, E and budget with every item moved to other random floor cells."""
    chars = list(problem.grid)
    items = [i for i, ch in enumerate(chars) if ch in "G*~+"]
    kinds = [chars[i] for i in items]
    for i in items:
        chars[i] = "."
    free = [i for i, ch in enumerate(chars) if ch == "."]
    for i, kind in zip(rng.choice(free, len(kinds), replace=False), kinds):
        chars[i] = kind
    return MazeProblem("".join(chars), problem.budget)


def test_routes_style_does_not_look_at_items():
    rng = np.random.default_rng(3)
    demo = lambda q, seed, style: CORNERS.demonstration(q, 3, np.random.default_rng(seed), style)  # noqa: E731
    diverse_changed = 0
    for i, p in enumerate(PROBLEMS[:30]):
        moved = move_items(p, rng)
        assert moved.grid != p.grid
        for seed in range(3):
            assert demo(p, seed, "routes") == demo(moved, seed, "routes")
        if i < 10:
            diverse_changed += demo(p, 0, "diverse") != demo(moved, 0, "diverse")
    assert diverse_changed >= 8   # the item-aware style does change: the comparison can fail


def test_diverse_style_routes_score_as_labelled_and_cover_both_corners():
    rng = np.random.default_rng(4)
    for task in (CORNERS, MazeTask(reward="convex_bonus")):
        for p in PROBLEMS[:40]:
            routes = task.routes(p, rng)
            for route, label in routes:
                assert np.array_equal(task.score(p, route), label), (p.grid, route)
            good = [v for _, v in routes if v[0] == 1]
            assert any(v[1] == 1 for v in good) and any(v[2] == 1 for v in good)   # all gold; all diamonds
            assert all(len(r) <= p.budget for r, v in routes if v[0] == 1)


def test_styles_are_checked_for_every_task():
    assert MazeTask.demo_styles == ("diverse", "routes")
    rng = np.random.default_rng(0)
    for task in (CORNERS, ToyTask(), CodeTask()):
        p = task.problems("train", 1, seed=0)[0]
        assert task.parse(task.demonstration(p, 1, rng), 1)[0]          # "diverse" is the default
        with pytest.raises(ValueError, match="style"):
            task.demonstration(p, 1, rng, style="shortest")
    for task in (ToyTask(), CodeTask()):
        p = task.problems("train", 1, seed=0)[0]
        with pytest.raises(ValueError, match="style"):
            task.demonstration(p, 1, rng, style="routes")


def test_prompt_and_token_budget():
    p = PROBLEMS[0]
    assert CORNERS.prompt(p, 3) == f"maze: 3 routes, budget {p.budget}\n{p.grid}\n"
    assert max(len(CORNERS.prompt(q, 3)) for q in PROBLEMS) == 116
    assert CORNERS.answer_tokens == 36 and CORNERS.max_new_tokens(1) == 36 and CORNERS.max_new_tokens(3) == 110
    assert 1 + 116 + CORNERS.max_new_tokens(3) <= 256   # <|bos|> + prompt + 3 answers fit the default block

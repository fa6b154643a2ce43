"""Tests of the toy and maze tasks: reward semantics on hand-built grids, the budget rule against an independent
search and exhaustive enumeration, demonstrations, splits, parsing, and junk input."""
import itertools
import re

import numpy as np
import pytest

from tasks import get_task
from tasks.maze import MazeProblem, MazeTask
from tasks.tokenizer import BOS, END, PAD, SEP, encode_special
from tasks import in_test_split
from tasks.toy import ToyTask

MAZE = MazeTask(design="small")  # the earlier 7x7 design: these tests pin its behaviour
TOY = ToyTask()


def vec(*xs):
    return np.array(xs, dtype=np.float32)


def maze_score(grid, budget, route):
    return MAZE.score(MazeProblem("\n".join(grid), budget), route)


# --- maze rewards on hand-built grids ------------------------------------------------------------------------
def test_walls_block_and_bumps_cost_a_step():
    grid = ["#####",
            "#S#E#",
            "#...#",
            "#####"]
    assert np.array_equal(maze_score(grid, 4, "DRRU"), vec(1, 0, 0, 1))
    assert np.array_equal(maze_score(grid, 4, "RR"), vec(0, 0, 0, 0))      # R into the wall twice: stays at S
    assert np.array_equal(maze_score(grid, 5, "RDRRU"), vec(1, 0, 0, 1))   # the bump costs one step ...
    assert np.array_equal(maze_score(grid, 4, "RDRRU"), vec(0, 0, 0, 0))   # ... so it no longer fits 4


def test_borders_block_on_a_grid_without_walls():
    grid = ["S.E"]
    assert np.array_equal(maze_score(grid, 4, "ULRR"), vec(1, 0, 0, 1))
    assert np.array_equal(maze_score(grid, 3, "ULRR"), vec(0, 0, 0, 0))
    assert np.array_equal(maze_score(grid, 9, "DDDD"), vec(0, 0, 0, 0))


def test_item_fractions_count_distinct_cells():
    grid = ["S.G.E",
            "G*..."]
    assert np.array_equal(maze_score(grid, 9, "RRRR"), vec(1, 0.5, 0, 1))
    assert np.array_equal(maze_score(grid, 9, "RRLRRR"), vec(1, 0.5, 0, 1))   # the same gold twice
    assert np.array_equal(maze_score(grid, 9, "DRURRR"), vec(1, 1, 1, 1))


def test_lava_counted_once_per_distinct_cell():
    grid = ["S~.E",
            "~..."]
    assert np.array_equal(maze_score(grid, 9, "RLRRR"), vec(1, 0, 0, 0.5))    # one lava cell, stepped on twice
    assert np.array_equal(maze_score(grid, 9, "DURRR"), vec(1, 0, 0, 0))      # both lava cells
    assert np.array_equal(maze_score(grid, 9, "DRRRU"), vec(1, 0, 0, 0.5))


def test_walk_stops_at_exit_and_later_items_do_not_count():
    grid = ["S.E*G"]
    assert np.array_equal(maze_score(grid, 9, "RR"), vec(1, 0, 0, 1))
    assert np.array_equal(maze_score(grid, 9, "RRRR"), vec(1, 0, 0, 1))
    assert np.array_equal(maze_score(grid, 9, "RRLLRRRR"), vec(1, 0, 0, 1))


def test_exit_required_and_budget_enforced():
    grid = ["S.G.E"]
    assert np.array_equal(maze_score(grid, 9, "RR"), vec(0, 0, 0, 0))       # gold but no exit: all zero
    assert np.array_equal(maze_score(grid, 4, "RRRR"), vec(1, 1, 0, 1))
    assert np.array_equal(maze_score(grid, 4, "RRRRRR"), vec(1, 1, 0, 1))   # moves after E are ignored
    assert np.array_equal(maze_score(grid, 3, "RRRR"), vec(0, 0, 0, 0))
    assert np.array_equal(maze_score(grid, 4, "LRRRR"), vec(0, 0, 0, 0))    # E on move 5 > budget


@pytest.mark.parametrize("answer", ["RRx", "rrrr", "RR RR", "RIGHT", "", "   ", "R\nR", "RR<|sep|>", "RR<|end|>",
                                    "ＲＲＲＲ", None, b"RRRR", 7])
def test_invalid_answers_score_zero(answer):
    assert np.array_equal(maze_score(["S.G.E"], 9, answer), vec(0, 0, 0, 0))


def test_surrounding_whitespace_is_allowed():
    assert np.array_equal(maze_score(["S.G.E"], 9, " \tRRRR\n"), vec(1, 1, 0, 1))


def test_bad_grids_and_options_raise_value_error():
    for grid, budget in [("S.E\nS.E", 3), ("S..", 3), ("S.E\n..", 3), ("S.X.E", 3), ("", 3), ("S.E", 0)]:
        with pytest.raises(ValueError):
            MazeProblem(grid, budget)
    for opts in [dict(size=6), dict(size=3), dict(n_gold=0), dict(n_lava=(2, 1)), dict(slack=-1), dict(p_imperfect=2),
                 dict(size=5, n_gold=2, n_diamonds=2, n_lava=2)]:
        with pytest.raises(ValueError):
            MazeTask(design="small", **opts)
    with pytest.raises(ValueError):
        MAZE.problems("valid", 3, 0)
    with pytest.raises(ValueError):
        MAZE.problems("train", 3, -1)


def test_budget_rule_on_the_docstring_maze():
    grid = "\n".join(["#######",
                      "#G.~.G#",
                      "#S#~#.#",
                      "#.E...#",
                      "#*#####",
                      "#.....#",
                      "#######"])
    # d(gold) = 4 (UDDR), d(diamond) = 4 (DDUR), d(both) = 6 (UDDDUR): budget = min(4 + slack, 5, max_moves)
    assert MAZE.generator.budget(MazeProblem(grid, 1).layout) == 5
    assert MazeTask(design="small", slack=0).generator.budget(MazeProblem(grid, 1).layout) == 4
    with pytest.raises(ValueError):  # no generated maze fits 3 moves: rejected when the task is built
        MazeTask(design="small", max_moves=3)
    tight = MazeTask(design="small")
    tight.generator.max_moves = 3
    assert tight.generator.budget(MazeProblem(grid, 1).layout) is None
    p = MazeProblem(grid, 5)
    assert np.array_equal(MAZE.score(p, "DR"), vec(1, 0, 0, 1))
    assert np.array_equal(MAZE.score(p, "UDDR"), vec(1, 0.5, 0, 1))
    assert np.array_equal(MAZE.score(p, "DDUR"), vec(1, 0, 1, 1))
    assert np.array_equal(MAZE.score(p, "UDDDUR"), vec(0, 0, 0, 0))          # both kinds: 6 moves > 5
    assert np.array_equal(MAZE.score(MazeProblem(grid, 6), "UDDDUR"), vec(1, 0.5, 1, 1))


# --- the budget rule, checked independently -------------------------------------------------------------------
def reachable_vectors(problem):
    """Independent of tasks.maze: every reward vector a route can score, by expanding all walks level by level
    over states (row, col, item cells entered), bumps included, the exit absorbing."""
    rows = problem.grid.split("\n")
    H, W = len(rows), len(rows[0])
    cells = {(r, c): rows[r][c] for r in range(H) for c in range(W)}
    items = {k: {p for p, ch in cells.items() if ch == k} for k in "G*~"}
    start = next(p for p, ch in cells.items() if ch == "S")
    frontier, done = {(start, frozenset())}, set()
    for _ in range(problem.budget):
        nxt = set()
        for (r, c), got in frontier:
            for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                p = (r + dr, c + dc)
                if cells.get(p, "#") == "#":
                    p = (r, c)
                state = (p, got | {p} if cells[p] in "G*~" else got)
                (done if cells[p] == "E" else nxt).add(state)
        frontier = nxt
    frac = lambda k, got: len(items[k] & got) / len(items[k]) if items[k] else 0.0  # noqa: E731
    return {(1.0, frac("G", got), frac("*", got), 1.0 - frac("~", got)) for _, got in done}


def test_generated_mazes_have_the_budget_property():
    problems = MAZE.problems("train", 150, seed=1) + MAZE.problems("test", 30, seed=1)
    for p in problems:
        rows = p.grid.split("\n")
        assert len(rows) == 7 and all(len(r) == 7 for r in rows)
        assert set(rows[0] + rows[-1] + "".join(r[0] + r[-1] for r in rows)) == {"#"}
        assert 1 <= p.grid.count("G") <= 2 and 1 <= p.grid.count("*") <= 2 and 1 <= p.grid.count("~") <= 2
        assert 1 <= p.budget <= MAZE.max_moves
        vectors = reachable_vectors(p)
        assert not any(g > 0 and d > 0 for _, g, d, _ in vectors), p.grid   # never both kinds
        assert any(g > 0 for _, g, _, _ in vectors) and any(d > 0 for _, _, d, _ in vectors), p.grid
        # the candidate routes of the demonstrations cover every reachable reward vector, and nothing else
        good = {tuple(v.tolist()) for _, v in MAZE.routes(p, np.random.default_rng(0)) if v[0] == 1}
        assert good == {tuple(np.float32(x) for x in v) for v in vectors}


def test_budget_property_by_enumerating_every_route():
    small = [p for p in MAZE.problems("train", 100, seed=2) if p.budget <= 7][:3]
    assert len(small) == 3
    for p in small:
        scores = {tuple(MAZE.score(p, "".join(s)).tolist()) for s in itertools.product("UDLR", repeat=p.budget)}
        reached = {s for s in scores if s[0] == 1}
        assert reached == {tuple(np.float32(x) for x in v) for v in reachable_vectors(p)}
        assert not any(g > 0 and d > 0 for _, g, d, _ in reached)
        assert any(g > 0 for _, g, _, _ in reached) and any(d > 0 for _, _, d, _ in reached)


# --- demonstrations -------------------------------------------------------------------------------------------
def test_maze_routes_score_as_labelled():
    rng = np.random.default_rng(0)
    for p in MAZE.problems("train", 100, seed=3):
        routes = MAZE.routes(p, rng)
        for route, label in routes:
            assert np.array_equal(MAZE.score(p, route), label), (p.grid, route)
        strings = [r for r, _ in routes]
        assert len(set(strings)) == len(strings)
        good = [(r, v) for r, v in routes if v[0] == 1]
        assert any(v[1] > 0 for _, v in good) and any(v[2] > 0 for _, v in good)
        assert sum(v[0] == 0 for _, v in routes) == 2                        # one cut short, one over budget
        shortest = min(len(r) for r, _ in good)
        assert any(len(r) > p.budget for r, _ in routes)
        assert all(len(r) <= p.budget for r, _ in good) and shortest >= 1


def test_routes_break_ties_at_random():
    p = MazeProblem("S..\n...\n..E", 4)   # six shortest routes from corner to corner
    drawn = {MAZE.routes(p, np.random.default_rng(s))[0][0] for s in range(60)}
    assert drawn == {"".join(x) for x in set(itertools.permutations("RRDD"))}


@pytest.mark.parametrize("task", [MAZE, TOY])
def test_demonstrations_fit_the_token_budget(task):
    rng = np.random.default_rng(0)
    for m in (1, 3):
        limit = task.max_new_tokens(m)
        for p in task.problems("train", 50, seed=4):
            demo = task.demonstration(p, m, rng)
            assert END not in demo and demo.count(SEP) == m - 1
            assert len(encode_special(demo)) + 1 <= limit     # + <|end|>
            # every answer and its closing token fit the answer's own room
            assert all(len(encode_special(a)) + 1 <= task.answer_tokens for a in demo.split(SEP))
            task.check_demonstration(demo, m)


def test_maze_demonstrations_are_distinct_and_cover_the_front():
    rng = np.random.default_rng(5)
    seen = np.zeros(4)
    for p in MAZE.problems("train", 100, seed=5):
        answers = MAZE.parse(MAZE.demonstration(p, 3, rng), 3)
        assert len(set(answers)) == 3 and all(re.fullmatch("[UDLR]+", a) for a in answers)
        vs = np.stack([MAZE.score(p, a) for a in answers])
        seen += [(vs[:, 0] == 0).any(), (vs[:, 1] > 0).any(), (vs[:, 2] > 0).any(), (vs[:, 3] < 1).any()]
    assert (seen >= 5).all(), seen   # imperfect, gold, diamond and lava routes all appear


def test_toy_demonstrations_propose_all_words():
    rng, p = np.random.default_rng(0), TOY.problems("train", 1, seed=0)[0]
    words = [a for _ in range(300) for a in TOY.parse(TOY.demonstration(p, 3, rng), 3)]
    counts = {w: words.count(w) for w in ("left", "right", "middle")}
    assert all(250 < c < 350 for c in counts.values()), counts
    assert 10 < 900 - sum(counts.values()) < 100                           # ~5% invalid


def test_toy_demonstrations_lean_to_the_compromise_with_p_middle():
    """p_middle: the share of "middle" among valid demonstration words (examples/toy_gpt.py's warm start: 0.6);
    the default, 1/3, draws exactly as the uniform demonstrations always did; out of [0, 1] is refused."""
    from tasks.toy import ToyTask
    p = TOY.problems("train", 1, seed=0)[0]
    task, rng = ToyTask(p_middle=0.6, p_invalid=0.0), np.random.default_rng(1)
    words = [a for _ in range(600) for a in task.parse(task.demonstration(p, 2, rng), 2)]
    assert 660 < words.count("middle") < 780 and 180 < words.count("left") < 300 and 180 < words.count("right") < 300
    def uniform(rng):   # the demonstrations before p_middle existed
        from tasks.toy import INVALID_WORDS, WORDS
        return TOY.format_answers([INVALID_WORDS[rng.integers(len(INVALID_WORDS))] if rng.random() < TOY.p_invalid
                                   else WORDS[rng.integers(len(WORDS))] for _ in range(3)])
    assert [TOY.demonstration(p, 3, np.random.default_rng(s)) for s in range(20)] == \
        [uniform(np.random.default_rng(s)) for s in range(20)]
    with pytest.raises(ValueError, match="p_middle must be in"):
        ToyTask(p_middle=1.5)


# --- toy scores -----------------------------------------------------------------------------------------------
def test_toy_scores_and_solved():
    p = TOY.problems("train", 1, seed=0)[0]
    assert np.array_equal(TOY.score(p, "left"), vec(1, 0))
    assert np.array_equal(TOY.score(p, " right\n"), vec(0, 1))
    assert np.array_equal(TOY.score(p, "middle"), vec(0.6, 0.6))
    for junk in ["Left", "mid", "left right", "", "leftt", None]:
        assert np.array_equal(TOY.score(p, junk), vec(0, 0))
    assert TOY.solved(TOY.score(p, "middle"))
    assert not TOY.solved(TOY.score(p, "left")) and not TOY.solved(TOY.score(p, "nope"))
    low = ToyTask(compromise=0.4)                                          # then the corners are optimal
    assert low.solved(low.score(p, "left")) and not low.solved(low.score(p, "middle"))
    assert TOY.answer_tokens == 7 and TOY.max_new_tokens(1) == 7 and TOY.max_new_tokens(3) == 3 * 7 + 2
    assert TOY.prompt(p, 3) == f"toy {p.id}: name 3 of left/right/middle\n"


def test_maze_solved_and_prompt():
    p = MAZE.problems("train", 1, seed=0)[0]
    assert MAZE.solved(vec(1, 0, 0, 0)) and not MAZE.solved(vec(0, 0, 0, 0))
    text = MAZE.prompt(p, 3)
    assert text == f"maze: 3 routes, budget {p.budget}\n{p.grid}\n" and len(text) < 120
    assert MAZE.answer_tokens == MAZE.max_moves + 3 and MAZE.max_new_tokens(3) == 3 * (MAZE.max_moves + 3) + 2


# --- splits, determinism, parsing -----------------------------------------------------------------------------
@pytest.mark.parametrize("task", [MAZE, TOY])
def test_splits_are_disjoint_and_deterministic(task):
    train = [p.key for s in range(3) for p in task.problems("train", 100, seed=s)]
    test = [p.key for s in range(3) for p in task.problems("test", 20, seed=s)]
    assert not set(train) & set(test)
    assert not any(in_test_split(k) for k in train) and all(in_test_split(k) for k in test)
    one = task.problems("train", 100, seed=0)
    assert len({p.key for p in one}) == 100
    assert one == task.problems("train", 100, seed=0)
    assert one != task.problems("train", 100, seed=1)


def test_toy_split_sizes():
    n_test = len(TOY._ids["test"])
    assert 1000 < n_test < 1500 and len(TOY._ids["train"]) + n_test == 10_000
    assert len(TOY.problems("test", n_test, seed=0)) == n_test
    with pytest.raises(ValueError):
        TOY.problems("test", n_test + 1, seed=0)


@pytest.mark.parametrize("task", [MAZE, TOY])
@pytest.mark.parametrize("m", [1, 3])
def test_parse_format_round_trip(task, m):
    rng = np.random.default_rng(m)
    for p in task.problems("train", 20, seed=6):
        answers = task.parse(task.demonstration(p, m, rng), m)
        assert len(answers) == m
        assert task.parse(task.format_answers(answers), m) == answers
    assert task.parse("", m) == [""] * m


def test_score_rollouts_masks_duplicates_and_missing():
    p = MazeProblem("S.G.E\n*....", 9)
    completions = ["RRRR<|sep|>RRRR<|sep|>DRRRRU", "RRRR", "", "xx<|sep|> DRRRRU <|sep|>DRRRRU<|sep|>RRRR"]
    rewards, mask = MAZE.score_rollouts(p, completions, m=3)
    assert rewards.shape == (4, 3, 4) and rewards.dtype == np.float32
    assert mask.tolist() == [[True, False, True], [True, False, False], [False, False, False], [True, True, False]]
    gold, diamond = vec(1, 1, 0, 1), vec(1, 0, 1, 1)
    assert np.array_equal(rewards[0], np.stack([gold, 0 * gold, diamond]))
    assert np.array_equal(rewards[3], np.stack([0 * gold, diamond, 0 * gold]))   # junk kept in the mask, scored 0
    assert not rewards[1:3, 1:].any() and not rewards[2].any()


# --- junk -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["toy", "maze"])
def test_score_never_raises_on_junk(name):
    task = get_task(name)
    p = task.problems("train", 1, seed=7)[0]
    rng = np.random.default_rng(7)
    alphabet = list("UDLRudlr \n\t.#SEG*~xyz0123!?") + [BOS, END, SEP, PAD, "left", "right", "middle"]
    alphabet += ["é", "\x00", "\ud800", "\u2028"]
    junk = ["".join(rng.choice(alphabet, size=rng.integers(0, 40))) for _ in range(300)]
    junk += [BOS, END, SEP, PAD, "U" * 100_000, None, 3.5, ["U"], b"UD"]
    for answer in junk:
        r = task.score(p, answer)
        assert r.shape == (task.dim,) and r.dtype == np.float32 and ((0 <= r) & (r <= 1)).all()
    rewards, mask = task.score_rollouts(p, [SEP.join(junk[i:i + 3]) for i in range(0, 300, 3)], m=3)
    assert rewards.shape == (100, 3, task.dim)

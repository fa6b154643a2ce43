"""One answer written two ways counts once: the de-duplication of a rollout's answers is by Task.canonical (code:
the expression tree; maze: the walk), so a summed set reward (Multi-RLVR) cannot be paid twice for one answer."""
from collections import deque

import numpy as np
import torch

import vpo
from sample import slot_rewards
from tasks import get_task
from tasks.maze import MOVES, walk
from tasks.tokenizer import SEP


def test_code_answers_that_differ_in_spacing_or_parentheses_are_one_program():
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    same = ["5 if x<-5 else 2 if x<1 else 2", "5 if x<-5else 2 if x<1else 2", "(5 if x<-5 else (2 if x<1 else 2))"]
    assert len({task.canonical(p, a) for a in same}) == 1
    assert task.canonical(p, "5 if x<-5 else 3 if x<1 else 2") != task.canonical(p, same[0])
    assert task.canonical(p, "x+1") != task.canonical(p, "1+x")          # another tree, though the same function
    assert task.canonical(p, "__import__('os')") == "__import__('os')"    # rejected: its own string, never run


def shortest_route(problem):
    lay = problem.layout
    back, todo = {lay.start: None}, deque([lay.start])
    while todo:
        pos = todo.popleft()
        for i, nxt in enumerate(lay.step[pos]):
            if nxt not in back:
                back[nxt] = (pos, MOVES[i])
                todo.append(nxt)
    moves, pos = [], lay.exit
    while back[pos]:
        pos, mv = back[pos]
        moves.append(mv)
    return "".join(reversed(moves))


def test_maze_routes_that_walk_the_same_cells_are_one_route():
    task = get_task("maze")
    p = next(q for q in task.problems("test", 20, seed=0) if len(shortest_route(q)) < q.budget - 2)
    route = shortest_route(p)
    assert walk(p, route)[0]                                              # reaches E
    lay = p.layout
    wall = next((mv for mv in MOVES if lay.step[lay.start][MOVES.index(mv)] == lay.start), None)
    variants = [route, route + "UD", route + "LLLL", (wall or "") + route]  # moves after E, a bump into a wall
    assert len({task.canonical(p, v) for v in variants}) == 1
    assert task.canonical(p, route[:-1]) != task.canonical(p, route)      # stops one short of E
    assert task.canonical(p, "UXD") == "UXD"                              # not a route
    assert all(np.array_equal(task.score(p, v), task.score(p, route)) for v in variants)


def test_a_rollout_pays_once_for_one_program_written_three_ways():
    """score_rollouts masks the variants; Multi-RLVR's summed scalar then scores the three variants as one answer,
    and slot_rewards still gives each written variant its reward for per-answer statistics."""
    task = get_task("code")
    p = task.problems("test", 1, seed=0)[0]
    a = p.target
    variants = [a, a.replace(",", ", "), f"({a})"]
    assert len(set(variants)) == 3
    rewards, mask = task.score_rollouts(p, [SEP.join(variants), a], 3)
    assert mask.tolist() == [[True, False, False], [True, False, False]]
    r, m = torch.as_tensor(rewards)[None], torch.as_tensor(mask)[None]
    _, scores = vpo.multi_rlvr_advantages(r, m, task.deploy_weights)
    assert scores[0, 0] == scores[0, 1] == 1.0                             # not 3 for the three ways of writing it
    slots = slot_rewards(torch.as_tensor(rewards), torch.as_tensor(mask), [variants, [a, "", ""]],
                         key=lambda y: task.canonical(p, y))
    assert slots[0].sum(-1).tolist() == [8.0, 8.0, 8.0] and slots[1].sum(-1).tolist() == [8.0, 0.0, 0.0]

"""The import structure: no cycle, no library module importing a command, vpo.py and tasks/ leaves, no private
name across modules; and a planted cycle and private import that the check must find."""
import ast
import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


COMMANDS = {"train", "search", "results.compare", "results.audit", "bench.bench", "bench.peer_trl_grpo",
            "bench.peer_generate", "examples.toy_gpt",    # examples.toy_gpt runs train.py for three methods
            "runs.export"}
LEAVES = {"vpo": set(), "tasks": {"tasks"}}  # vpo.py and tasks/ import nothing else of ours


def module_graph():
    """{module: {(imported module, imported name or None), ...}} for every Python file of the repository but the
    tests, with every import counted, including those inside functions."""
    files = glob.glob("*.py", root_dir=ROOT) + glob.glob("*/*.py", root_dir=ROOT)
    ours = {f[:-3].replace("/", ".").removesuffix(".__init__") for f in files if not f.startswith("tests/")}
    graph = {}
    for f in files:
        if f.startswith("tests/"):
            continue
        mod, edges = f[:-3].replace("/", ".").removesuffix(".__init__"), set()
        for node in ast.walk(ast.parse(open(os.path.join(ROOT, f)).read())):
            if isinstance(node, ast.Import):
                edges |= {(a.name, None) for a in node.names if a.name.split(".")[0] in {o.split(".")[0] for o in ours}}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    edges.add((full, None) if full in ours else (node.module, a.name))
        graph[mod] = {(m, n) for m, n in edges if m in ours}
    return graph


def test_the_import_structure():
    """No import cycle among our modules; no library module imports a command (train, search, the reproduction,
    the benchmarks); vpo.py and tasks/ import nothing else of ours; no private name is imported across modules."""
    graph = module_graph()
    assert {"vpo", "model", "kv_cache", "sample", "train", "sft", "evaluate", "metrics", "search", "tasks", "runs.cli",
            "runs.dirs", "runs.dist", "results.compare", "results.searched", "results.figures", "results.tables"} <= set(graph)
    for mod, edges in graph.items():
        targets = {m for m, _ in edges}
        if mod not in COMMANDS and not mod.startswith(("results.", "bench.")):
            assert not targets & COMMANDS, (mod, targets & COMMANDS)
        for leaf, allowed in LEAVES.items():
            if mod == leaf or mod.startswith(leaf + "."):
                assert all(t.split(".")[0] in allowed for t in targets), (mod, targets)
        private = [(m, n) for m, n in edges if n and n.startswith("_")]
        assert not private, (mod, private)
    # no cycle: a depth-first search over module -> imported module
    state = {}

    def visit(mod, path):
        state[mod] = "open"
        for target in sorted({m for m, _ in graph.get(mod, ())}):
            assert state.get(target) != "open", f"import cycle: {' -> '.join(path + [target])}"
            if target not in state:
                visit(target, path + [target])
        state[mod] = "done"
    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])


def test_the_layering_test_finds_a_cycle_and_a_private_name(tmp_path, monkeypatch):
    """The test above can fail: a cycle and a private import planted in a copy of the graph are found."""
    graph = module_graph()
    graph["vpo"] = graph["vpo"] | {("train", None)}                     # vpo -> train -> vpo
    monkeypatch.setattr(sys.modules[__name__], "module_graph", lambda: graph)
    with pytest.raises(AssertionError):
        test_the_import_structure()
    graph["vpo"] = set()
    graph["sample"] = graph["sample"] | {("model", "_place")}
    with pytest.raises(AssertionError, match="_place"):
        test_the_import_structure()



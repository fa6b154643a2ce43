"""reproduce.py's machinery end to end on a micro configuration: tables, figures, the evolutionary search."""
import json

import reproduce

MICRO = {"steps": 2, "seeds": [0, 1], "eval_problems": 2, "sft_steps": 2, "evolve_budget": 9,
         "extra": ["--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "2",
                   "--sft_batch_size", "4", "--eval_answers", "48", "--quiet"]}


def test_reproduce_writes_tables_figures_and_respects_the_search_budget(tmp_path):
    lines = reproduce.reproduce(["code"], MICRO, str(tmp_path), "test")
    text = (tmp_path / "results.md").read_text()
    assert text.strip().splitlines()[:len(lines)] == lines
    rows = [line for line in lines if line.startswith("| ") and "±" in line]
    assert len(rows) == len(reproduce.METHODS)  # one row per method, mean ± std over the 2 seeds
    for row in rows:
        assert len(row.split("|")) - 2 == 2 + 5 + 4 and "| 2 |" in row  # method, seeds, 5 k values, 4 more
    for name in ("best_at_k_code.png", "pass_at_k_code.png", "diversity_code.png", "scatter_code.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    evo = json.loads((tmp_path / "evolve_code.json").read_text())
    assert set(evo["methods"]) == set(reproduce.METHODS)
    for r in evo["methods"].values():
        assert all(0 < used <= MICRO["evolve_budget"] for used in r["used"])
        assert len(r["used"]) == len(evo["hard_problems"])
        counts = [r["solved_by_budget"][str(b)] for b in evo["budgets"]]
        assert counts == sorted(counts) and counts[-1] == len(r["solved"])
    # a second invocation re-uses every finished run: nothing is trained again
    before = {p: p.stat().st_mtime for p in tmp_path.glob("runs/code/*/ckpt.pt")}
    reproduce.reproduce(["code"], MICRO, str(tmp_path), "test")
    assert before == {p: p.stat().st_mtime for p in tmp_path.glob("runs/code/*/ckpt.pt")}


def test_slope_of_best_at_k_per_doubling():
    assert abs(reproduce.slope([3, 6, 12, 24, 48], [0.1, 0.2, 0.3, 0.4, 0.5]) - 0.1) < 1e-12

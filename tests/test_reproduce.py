"""reproduce.py's machinery end to end on a micro configuration: tables, figures, the evolutionary search."""
import json

import reproduce

MICRO = {"steps": 2, "seeds": [0, 1], "eval_problems": 2, "sft_steps": 2, "evolve_budget": {"answers": 9, "samples": 4},
         "extra": ["--n_layer", "1", "--n_head", "2", "--n_embd", "32", "--batch_size", "2", "--group_size", "2",
                   "--sft_batch_size", "4", "--eval_answers", "48", "--quiet"]}


def test_reproduce_writes_tables_figures_and_respects_the_search_budget(tmp_path):
    lines = reproduce.reproduce(["code"], MICRO, str(tmp_path), "test")
    text = (tmp_path / "results.md").read_text()
    assert text.strip().splitlines()[:len(lines)] == lines
    rows = [line for line in lines if line.startswith("| ") and "±" in line]
    best = [r for r in rows if len(r.split("|")) - 2 == 2 + 5 + 4]  # method, seeds, 5 k values, 4 more
    passes = [r for r in rows if len(r.split("|")) - 2 == 1 + 5]    # method, 5 k values
    assert len(best) == len(passes) == len(reproduce.METHODS) and len(rows) == 2 * len(reproduce.METHODS)
    assert all("| 2 |" in r for r in best)  # mean ± std over the 2 seeds
    for name in ("best_at_k_code.png", "pass_at_k_code.png", "diversity_code.png", "scatter_code.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    evo = json.loads((tmp_path / "evolve_code.json").read_text())
    for unit, entry in evo["units"].items():
        assert set(entry["methods"]) == set(reproduce.METHODS)
        for r in entry["methods"].values():
            assert all(0 < used <= MICRO["evolve_budget"][unit] for used in r["used"])
            assert len(r["used"]) == len(evo["hard_problems"])
            counts = [r["solved_by_budget"][str(b)] for b in entry["budgets"]]
            assert counts == sorted(counts) and counts[-1] == len(r["solved"])
    assert "Compute in the runs" in lines[-1]
    # a second invocation re-uses every finished run: nothing is trained again
    before = {p: p.stat().st_mtime for p in tmp_path.glob("runs/code/*/ckpt.pt")}
    reproduce.reproduce(["code"], MICRO, str(tmp_path), "test")
    assert before == {p: p.stat().st_mtime for p in tmp_path.glob("runs/code/*/ckpt.pt")}


def test_slope_of_best_at_k_per_doubling():
    assert abs(reproduce.slope([3, 6, 12, 24, 48], [0.1, 0.2, 0.3, 0.4, 0.5]) - 0.1) < 1e-12

"""Stage 1's grid reader (results/heldout.py): the criterion by hand and the plan's rule of choice."""
import json
import os

import pytest

from results import heldout


def metrics(counts, n=4, m=1):
    return {"m": m, "answers_per_problem": n, "problems": len(counts), "solved_target_per_problem": counts}


def test_pass_target_by_hand():
    """Three problems with 0, 2 and 4 of 4 answers equal to the target."""
    got = metrics([0, 2, 4])
    assert heldout.pass_target(got, range(3), 1) == pytest.approx((0 + 0.5 + 1) / 3)
    assert heldout.pass_target(got, range(3), 2) == pytest.approx((0 + (1 - 1 / 6) + 1) / 3)   # 1 - C(2,2)/C(4,2)
    assert heldout.pass_target(got, [1], 2) == pytest.approx(5 / 6)
    with pytest.raises(ValueError, match="m = 1"):
        heldout.pass_target(metrics([0, 2, 4], m=3), range(3), 1)


def test_the_rule_of_choice():
    assert heldout.choose({(3e-5, 1e-3): 0.50, (1e-5, 1e-3): 0.495, (3e-6, 1e-2): 0.40}) == (1e-5, 1e-3)
    assert heldout.choose({(3e-5, 1e-3): 0.50, (1e-5, 1e-3): 0.489}) == (3e-5, 1e-3)
    assert heldout.choose({(1e-5, 1e-3): 0.50, (1e-5, 1e-2): 0.495, (3e-5, 1e-2): 0.6}) == (3e-5, 1e-2)
    assert heldout.choose({(1e-5, 1e-3): 0.50, (1e-5, 1e-2): 0.495}) == (1e-5, 1e-2)


def test_grid_table_and_choice_from_run_files(tmp_path, capsys):
    """Six fake grid runs, 128 problems of 48 answers: the run whose validation problems solve most is chosen."""
    setup = heldout.read_config(heldout.GRID)
    for i, arm in enumerate(setup.arms):
        lr, kl = (float(arm.flags[arm.flags.index(f) + 1]) for f in ("--lr", "--kl_coef"))
        counts = [0] * 64 + [i * 4] * 64          # report problems unsolved; validation solved i*4 of 48 times
        m = {**metrics(counts, n=48), "pooled_pass_target@k": {"48": sum(c > 0 for c in counts) / 128}}
        d = tmp_path / "runs" / f"{arm.slug}-s100"
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({"args": {"lr": lr, "kl_coef": kl}, "metrics": m,
                                                    "base_metrics": None}))
    assert heldout.main(["--grid", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    last = setup.arms[-1]
    lr, kl = last.flags[last.flags.index("--lr") + 1], last.flags[last.flags.index("--kl_coef") + 1]
    assert f"Chosen by the plan's rule: lr {float(lr):g}, KL coefficient {float(kl):g}." in out
    assert out.count("| GRPO lr") == 6
    os.remove(tmp_path / "runs" / f"{last.slug}-s100" / "summary.json")
    assert heldout.main(["--grid", "--out", str(tmp_path)]) == 0
    assert "5 of 6 grid runs have finished: no choice yet." in capsys.readouterr().out
    assert heldout.main(["--grid", "--out", str(tmp_path / "missing")]) == 2

"""evaluate.py, sample.py and search.py on a finished run's checkpoint: every mistake on their command lines is one
`error:` line, exit code 2 and the files unchanged; --temperature 0 is greedy; a goal-conditioned run is prompted
with w*, as its training evaluated it."""
import json
import os

import pytest
import torch

import evaluate
import sample
import search
from model import GPT, GPTConfig, load_checkpoint, save_checkpoint
from refusals import assert_refused, tree
from tasks import get_task


@pytest.fixture(scope="module")
def checkpoints(done, tmp_path_factory):
    """The finished run's checkpoint, one whose task options are invalid, one without train.py's args, one of
    another vocabulary, and the run as if goal-conditioned (its prompts carry w*)."""
    d = tmp_path_factory.mktemp("ckpts")
    state = torch.load(done, weights_only=True)
    state["args"]["task_opt"] = ["compromise=2"]
    torch.save(state, d / "bad_opts.pt")
    state["args"]["task_opt"], state["args"]["algo"] = [], "goal_cond"
    torch.save(state, d / "goal.pt")
    save_checkpoint(str(d / "no_args.pt"), load_checkpoint(str(done))[0])
    save_checkpoint(str(d / "vocab64.pt"), GPT(GPTConfig(vocab_size=64, block_size=96, n_layer=1, n_head=2, n_embd=32)),
                    args=state["args"])
    return {"run": str(done), "bad_opts": str(d / "bad_opts.pt"), "no_args": str(d / "no_args.pt"),
            "missing": str(d / "missing.pt"), "vocab64": str(d / "vocab64.pt"), "goal": str(d / "goal.pt")}


TOOL_CASES = [
    (evaluate, ["--ckpt", "run", "--problems", "0"], "--problems"),
    (evaluate, ["--ckpt", "run", "--problems", "-3"], "--problems"),
    (evaluate, ["--ckpt", "run", "--problems", "100000"], "--problems"),
    (evaluate, ["--ckpt", "run", "--problems", "2000"], "n must be an int in [0, 1222]"),
    (evaluate, ["--ckpt", "run", "--temperature", "nan"], "--temperature"),
    (evaluate, ["--ckpt", "run", "--temperature", "inf"], "--temperature"),
    (evaluate, ["--ckpt", "run", "--answers", "0"], "--answers"),
    (evaluate, ["--ckpt", "run", "--seed", "-1"], "--seed"),
    (evaluate, ["--ckpt", "run", "--json", "/nonexistent/m.json"], "--json"),
    (evaluate, ["--ckpt", "run", "--json", "/tmp"], "--json"),
    (evaluate, ["--ckpt", "run", "--json", "run"], "not overwriting"),          # the checkpoint itself
    (evaluate, ["--ckpt", "vocab64"], "not the tokenizer's 260"),
    (evaluate, ["--ckpt", "bad_opts"], "compromise must be in [0, 1]"),
    (evaluate, ["--ckpt", "no_args"], "not a train.py run checkpoint"),
    (evaluate, ["--ckpt", "missing"], "not found"),
    (evaluate, [], "--ckpt"),
    (sample, ["--ckpt", "run", "--problem", "-1"], "--problem"),
    (sample, ["--ckpt", "run", "--problem", "5000"], "n must be an int in [0, 1222]"),
    (sample, ["--ckpt", "run", "--temperature", "nan"], "--temperature"),
    (sample, ["--ckpt", "run", "--temperature", "inf"], "--temperature"),
    (sample, ["--ckpt", "run", "--top_p", "0"], "--top_p"),
    (sample, ["--ckpt", "run", "--num_samples", "0"], "--num_samples"),
    (sample, ["--ckpt", "bad_opts"], "compromise must be in [0, 1]"),
    (sample, ["--ckpt", "missing"], "not found"),
    (sample, ["--ckpt", "vocab64"], "not the tokenizer's 260"),
    (search, ["bestofk", "--ckpt", "run", "--temperature", "nan"], "--temperature"),
    (search, ["bestofk", "--ckpt", "run", "--temperature", "inf"], "--temperature"),
    (search, ["bestofk", "--ckpt", "run", "--problems", "0"], "--problems"),
    (search, ["bestofk", "--ckpt", "run", "--problems", "2000"], "n must be an int in [0, 1222]"),
    (search, ["bestofk", "--ckpt", "run", "--k", "-1"], "--k"),
    (search, ["evolve", "--ckpt", "run", "--budget", "0"], "--budget"),
    (search, ["evolve", "--ckpt", "run", "--budget", "8"], "below one round"),            # 9 samples at least
    (search, ["evolve", "--ckpt", "run", "--budget", "26", "--unit", "answers"], "below one round"),  # 27 at m = 3
    (search, ["evolve", "--ckpt", "bad_opts"], "compromise must be in [0, 1]"),
    (search, ["bestofk", "--ckpt", "no_args"], "not a train.py run checkpoint"),
    (search, ["sideways", "--ckpt", "run"], "invalid choice"),
]


@pytest.mark.parametrize("tool,argv,needle", TOOL_CASES,
                         ids=[f"{t.__name__}-{'-'.join(a)}" for t, a, _ in TOOL_CASES])
def test_every_tool_refuses_bad_input_in_one_line(checkpoints, capsys, tool, argv, needle):
    argv = [checkpoints.get(a, a) for a in argv]
    before = {p: tree(os.path.dirname(p)) for p in (checkpoints["run"], checkpoints["bad_opts"])}
    assert_refused(capsys, tool.main(argv), needle)
    assert {p: tree(os.path.dirname(p)) for p in before} == before


def test_search_honours_temperature_zero(checkpoints, monkeypatch):
    """--temperature 0 is greedy, not the default (it used to become 0.7 through `or`)."""
    seen = []
    monkeypatch.setattr(search, "best_of_k", lambda *a, **kw: seen.append(a[5]) or [("", torch.zeros(2).numpy(), 0.0)])
    monkeypatch.setattr(search, "evolve", lambda *a, **kw: seen.append(kw["temperature"]) or [])
    assert search.main(["bestofk", "--ckpt", checkpoints["run"], "--problems", "1", "--temperature", "0"]) == 0
    assert search.main(["evolve", "--ckpt", checkpoints["run"], "--problems", "1", "--temperature", "0"]) == 0
    assert search.main(["evolve", "--ckpt", checkpoints["run"], "--problems", "1"]) == 0
    assert seen == [0.0, 0.0, 1.0]


def test_the_tools_prompt_a_goal_conditioned_run_with_w_star(checkpoints, tmp_path, capsys, monkeypatch):
    """A goal-conditioned policy never saw a prompt without its weights line: every tool writes w* into it, as
    train.py's own evaluation does; other runs get the plain prompt."""
    w_star = list(get_task("toy").deploy_weights)
    for name, weights in (("goal", w_star), ("run", None)):
        out = tmp_path / f"{name}.json"
        argv = ["--ckpt", checkpoints[name], "--problems", "1", "--answers", "8", "--json", str(out)]
        assert evaluate.main(argv) == 0
        assert json.loads(out.read_text())["prompt_weights"] == weights
        assert sample.main(["--ckpt", checkpoints[name], "--num_samples", "1", "--max_new_tokens", "4"]) == 0
        assert ("\nweights 0." in capsys.readouterr().out) == (weights is not None)
        seen = []
        monkeypatch.setattr(search, "evolve", lambda *a, **kw: seen.append(kw["weights"]) or [])
        monkeypatch.setattr(search, "best_of_k",
                            lambda *a, **kw: seen.append(kw["weights"]) or [("", torch.zeros(2).numpy(), 0.0)])
        assert search.main(["evolve", "--ckpt", checkpoints[name], "--problems", "1"]) == 0
        assert search.main(["bestofk", "--ckpt", checkpoints[name], "--problems", "1"]) == 0
        assert [None if w is None else list(w) for w in seen] == [weights, weights]

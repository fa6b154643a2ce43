"""examples/trl_vpo.py: VPO's set reward as a reward function for TRL's GRPOTrainer.

The reward function itself is plain torch and is tested everywhere: its rewards are the set rewards of
vpo.set_rewards (and a brute force), and its weights are shared by a group, even one cut across two calls, and
differ across groups and steps. The tests that run TRL (a trainer step, the example end to end) need trl and
transformers, which are no dependency of the project (docs/trl.md): they are skipped where those are missing."""
import importlib.util
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "trl_vpo.py")
sys.path.insert(0, ROOT)
import vpo  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402
from tasks.toy import ToyProblem, ToyTask  # noqa: E402

_spec = importlib.util.spec_from_file_location("trl_vpo", SCRIPT)
trl_vpo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trl_vpo)  # imports no trl: that happens in main() and build_trainer()

VECTORS = {"left": (1.0, 0.0), "right": (0.0, 1.0), "middle": (0.6, 0.6)}  # the toy's r(y), written out again
COMPLETIONS = [f"left {SEP} right", f"right{SEP}left", f"middle {SEP} middle", "left", "", f"junk {SEP} right",
               f"left {SEP} right {SEP} middle", "left right"]  # 8 of them: repeats, missing, junk, extras, no sep


def run_script(args, shim=""):
    """The script as `python examples/trl_vpo.py ARGS`, after the Python statement shim."""
    code = (f"import runpy, sys; {shim or 'pass'}; sys.argv = {[SCRIPT] + list(args)!r}; "
            f"runpy.run_path({SCRIPT!r}, run_name='__main__')")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def brute_force(completion, weights, m):
    """R = (1/N) sum_n max over the completion's distinct non-empty answers (the first m) of w_n^T r, 0 if none."""
    answers = {a.strip() for a in completion.split(SEP)[:m]} - {""}
    if not answers:
        return 0.0
    return sum(max(w[0] * VECTORS.get(a, (0, 0))[0] + w[1] * VECTORS.get(a, (0, 0))[1] for a in answers)
               for w in weights.tolist()) / len(weights)


def batch(prompt_ids=(11, 12)):
    """Two groups of the 8 completions, each group's completions adjacent, as TRL hands them over."""
    task = ToyTask()
    prompts = [task.prompt(ToyProblem(i), 2) for i in prompt_ids for _ in COMPLETIONS]
    return prompts, COMPLETIONS * len(prompt_ids), [i for i in prompt_ids for _ in COMPLETIONS]


# --- without TRL --------------------------------------------------------------------------------------------------

def test_without_trl_the_script_prints_one_line_and_exits_2():
    """`import trl` fails (a None in sys.modules, as where trl is not installed): one line naming the install."""
    p = run_script(["--steps", "1"], shim="sys.modules['trl'] = None")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: ") and "pip install trl" in lines[0], lines


@pytest.mark.parametrize("args, words", [(["--num_answers", "0"], "--num_answers"),
                                         (["--algo", "grpo", "--num_answers", "2"], "grpo"),
                                         (["--minibatches", "3"], "--minibatches"),
                                         (["--steps", "x"], "--steps"), (["--n_embd", "63"], "--n_embd")])
def test_a_mistake_on_the_command_line_is_one_line_and_exit_2(args, words, capsys):
    assert trl_vpo.main(args) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], err


def test_the_rewards_are_the_set_rewards_of_vpo():
    """What the function hands TRL is vpo.set_rewards on Task.score_rollouts' answers, under the weights it drew,
    and equals a brute force over the answers (repeats once, missing and junk zero, answers past m ignored)."""
    task, m = ToyTask(), 2
    reward = trl_vpo.SetReward(task, m, num_weights=50, seed=1)
    prompts, completions, ids = batch()
    out = reward(prompts, completions, problem_id=ids, trainer_state=SimpleNamespace(global_step=7))
    W = reward.last_weights                                                          # (16, N, D)
    assert [round(x, 6) for x in out] == [round(brute_force(c, w, m), 6) for c, w in zip(completions, W)]
    for b, prompt in enumerate(dict.fromkeys(prompts)):
        rows = slice(b * len(COMPLETIONS), (b + 1) * len(COMPLETIONS))
        r, mask = task.score_rollouts(ToyProblem(ids[rows][0]), completions[rows], m)
        R = vpo.set_rewards(torch.from_numpy(r)[None], torch.from_numpy(mask)[None], reward.weights(7, prompt))
        assert torch.equal(torch.tensor(out[rows]), R[0])
    assert out[0] == out[1] and out[0] > 0.6 and out[6] == out[0]   # {left, right}, in either order; 3rd ignored
    assert out[2] == pytest.approx(0.6) and out[4] == 0.0 and out[7] == 0.0


def test_grpo_rewards_the_first_answer_with_the_deployment_weights():
    reward = trl_vpo.SetReward(ToyTask(), 1, algo="grpo")
    out = reward(["p"] * 4, ["middle", "left", f"left {SEP} middle", "up"], problem_id=[1] * 4)
    assert out == pytest.approx([0.6, 0.5, 0.5, 0.0]) and reward.last_weights is None


def test_the_weights_are_shared_by_a_group_even_across_calls_and_differ_across_groups_and_steps():
    """Every completion of a group is scored under the same N weights, also when the group is cut across two calls
    (two processes each holding part of it); another prompt or another step has other weights."""
    reward = trl_vpo.SetReward(ToyTask(), 2, num_weights=50, seed=1)
    prompts, completions, ids = batch()
    G, step = len(COMPLETIONS), SimpleNamespace(global_step=7)
    out = reward(prompts, completions, problem_id=ids, trainer_state=step)
    W = reward.last_weights                                                          # (2G, N, D)
    assert all(torch.equal(W[i], W[0]) for i in range(G)) and all(torch.equal(W[i], W[G]) for i in range(G, 2 * G))
    assert not torch.allclose(W[0], W[G])
    assert out[:G] != out[G:]                                                        # same answers, other weights
    cut = G // 2 + 1                                                                 # a slice ends inside group 0
    head = reward(prompts[:cut], completions[:cut], problem_id=ids[:cut], trainer_state=step)
    tail = reward(prompts[cut:], completions[cut:], problem_id=ids[cut:], trainer_state=step)
    assert head + tail == pytest.approx(out, rel=1e-6)
    reward(prompts, completions, problem_id=ids, trainer_state=SimpleNamespace(global_step=8))
    assert not torch.allclose(reward.last_weights[0], W[0])
    assert torch.allclose(W.sum(-1), torch.ones(2 * G, W.shape[1])) and (W >= 0).all()           # on the simplex


# --- with TRL -----------------------------------------------------------------------------------------------------

def need_trl():
    pytest.importorskip("trl")
    pytest.importorskip("transformers")
    pytest.importorskip("datasets")


def test_trl_advantages_are_vpo_advantages_up_to_the_std_convention(tmp_path):
    """One generation batch through a real GRPOTrainer (2 prompts x 8 completions, 2 updates). TRL hands the reward
    function each group adjacent; the advantages it then computes, read from the inputs of its compute_loss, are
    VPO's up to the std: A_TRL (std_1 + 1e-4) = R - mean_group R = A_VPO (std_0 + 1e-6), std_1 the group's sample
    std (ddof 1, TRL's nanstd), std_0 its population std (ddof 0, vpo.group_normalize)."""
    need_trl()
    args = trl_vpo.check_args(trl_vpo.get_parser().parse_args(
        ["--steps", "1", "--prompts", "2", "--group", "8", "--minibatches", "2", "--seed", "3"]))
    calls = []

    class Recorded(trl_vpo.SetReward):
        def __call__(self, prompts, completions, **kw):
            out = super().__call__(prompts, completions, **kw)
            calls.append(dict(prompts=prompts, completions=completions, ids=kw["completion_ids"], out=out,
                              problem_id=kw["problem_id"], step=kw["trainer_state"].global_step))
            return out

    task, m, G = ToyTask(), 2, 8
    trainer, tk, _ = trl_vpo.build_trainer(args, Recorded(task, m, num_weights=100, seed=3), str(tmp_path))
    rows = []
    compute_loss = trainer.compute_loss

    def capture(model, inputs, *a, **kw):
        for p, pm, c, cm, adv in zip(inputs["prompt_ids"], inputs["prompt_mask"], inputs["completion_ids"],
                                     inputs["completion_mask"], inputs["advantages"]):
            rows.append(((tuple(p[pm.bool()].tolist()), tuple(c[cm.bool()].tolist())), float(adv)))
        return compute_loss(model, inputs, *a, **kw)
    trainer.compute_loss = capture
    trainer.train()

    assert len(calls) == 1 and len(rows) == 2 * G                  # one generation, split into 2 updates of 8 rows
    call = calls[0]
    distinct = list(dict.fromkeys(call["prompts"]))
    assert call["prompts"] == [p for p in distinct for _ in range(G)]                # groups adjacent, B = 2
    # VPO's side, from the recorded completions and the weights of each group
    groups = [slice(b * G, (b + 1) * G) for b in range(len(distinct))]
    r, mask = zip(*(task.score_rollouts(ToyProblem(call["problem_id"][g.start]), call["completions"][g], m)
                    for g in groups))
    r, mask = torch.from_numpy(np.stack(r)), torch.from_numpy(np.stack(mask))          # (B, G, m, D), (B, G, m)
    w = torch.cat([trainer.reward_funcs[0].weights(call["step"], p) for p in distinct])               # (B, N, D)
    A_vpo, R = vpo.vpo_advantages(r, mask, weights=w)                                                 # (B, G) each
    assert torch.equal(torch.tensor(call["out"]).view(-1, G), R)                      # the rewards handed over
    std0, std1 = R.std(dim=1, correction=0), R.std(dim=1, correction=1)                               # (B,)
    assert (std0 > 1e-3).any(), "no group with a signal: the comparison below would be vacuous"
    index = {}
    for i, (prompt, ids) in enumerate(zip(call["prompts"], call["ids"])):
        index[(tuple(tk(prompt)["input_ids"]), tuple(ids))] = divmod(i, G)
    for key, a_trl in rows:
        b, g = index[key]
        assert a_trl * float(std1[b] + 1e-4) == pytest.approx(float(A_vpo[b, g] * (std0[b] + 1e-6)), abs=1e-5)
    # so where the group has a signal, A_TRL = A_VPO * (std_0 + 1e-6) / (std_1 + 1e-4): sqrt(7/8) of it for G = 8
    b, g = divmod(max(range(2 * G), key=lambda i: abs(float(A_vpo.view(-1)[i]))), G)
    a_trl = dict(rows)[next(k for k, v in index.items() if v == (b, g))]
    assert a_trl == pytest.approx(float(A_vpo[b, g]) * (7 / 8) ** 0.5, rel=1e-2)


def test_the_example_runs_end_to_end_and_prints_what_it_learned():
    need_trl()
    p = run_script(["--steps", "2", "--log_every", "1", "--eval_prompts", "2", "--eval_samples", "4"])
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    assert lines[0].startswith("VPO m=2 through TRL") and "step    2: mean reward" in p.stdout
    assert lines[-1].startswith("VPO  m=2: learns ") and "E_w[max over its answers]" in lines[-1]

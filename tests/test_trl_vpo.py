"""examples/trl_vpo.py, the command: its mistakes (one line, exit 2, before anything loads), everywhere; and, where
trl and transformers are installed (no dependency of the project: docs/trl.md), a trainer step's advantages, a tiny
Qwen2 with a chat template built here (the rendered prompt, two training steps on the maze, a budget or a context
too small, LoRA), and the toy end to end. The rewards, the tag format and the evaluation without TRL:
tests/test_trl_rewards.py."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "trl_vpo.py")
sys.path.insert(0, ROOT)
import vpo  # noqa: E402
from tasks.tokenizer import SEP  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples"))  # importing them imports no trl: main() and build_trainer() do
import trl_eval  # noqa: E402
import trl_reward  # noqa: E402
import trl_tasks  # noqa: E402
import trl_vpo  # noqa: E402


def run_script(args, shim=""):
    """The script as `python examples/trl_vpo.py ARGS`, after the Python statement shim."""
    code = (f"import runpy, sys; {shim or 'pass'}; sys.argv = {[SCRIPT] + list(args)!r}; "
            f"runpy.run_path({SCRIPT!r}, run_name='__main__')")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def one_error_line(p):
    """The stderr of a run that must have failed with one line and exit code 2."""
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and p.stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), \
        (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    return lines[0]



# --- without TRL: the command line --------------------------------------------------------------------------------

def test_without_trl_the_script_prints_one_line_and_exits_2():
    """`import trl` fails (a None in sys.modules, as where trl is not installed): one line naming the install."""
    line = one_error_line(run_script(["--steps", "1"], shim="sys.modules['trl'] = None"))
    assert "pip install trl" in line, line


def test_lora_without_peft_is_one_line_naming_peft():
    line = one_error_line(run_script(["--lora", "8", "--steps", "1"], shim="sys.modules['peft'] = None"))
    assert "peft" in line and "pip install" in line, line


def test_help_lists_the_model_the_task_and_lora():
    p = run_script(["--help"])
    assert p.returncode == 0, p.stderr[-2000:]
    for flag in ("--model", "--task", "--task_opt", "--lora", "--max_completion_length", "--eval_temperature"):
        assert re.search(rf"(?<![\w-]){flag}(?![\w-])", p.stdout), flag


@pytest.mark.parametrize("args, words", [(["--num_answers", "0"], "--num_answers"),
                                         (["--algo", "grpo", "--num_answers", "2"], "grpo"),
                                         (["--minibatches", "3"], "--minibatches"),
                                         (["--steps", "x"], "--steps"), (["--n_embd", "63"], "--n_embd"),
                                         (["--task", "chess"], "chess"),
                                         (["--task", "nosuchmodule:Task"], "nosuchmodule"),
                                         (["--task", "maze", "--task_opt", "size"], "--task_opt"),
                                         (["--task", "maze", "--task_opt", "design=round"], "design"),
                                         (["--model", "/no/such/model"], "/no/such/model"),
                                         (["--model", "./no-such-dir"], "no-such-dir"),
                                         (["--lora", "0"], "--lora"),
                                         (["--eval_ks", "2,3"], "multiple of m = 2"),
                                         (["--eval_ks", "64"], "at most the 32 answers"),
                                         (["--eval_ks", "a,b"], "--eval_ks")])
def test_a_mistake_on_the_command_line_is_one_line_and_exit_2(args, words, capsys):
    assert trl_vpo.main(args) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], err


@pytest.mark.parametrize("args, words", [(["--task", "nosuchmodule:Task"], "nosuchmodule"),
                                         (["--model", "/no/such/model"], "/no/such/model")])
def test_mistakes_are_found_before_trl_or_transformers_is_imported(args, words):
    """Where neither can be imported, a mistake is still reported as itself: it is found first."""
    line = one_error_line(run_script(args, shim="sys.modules['trl'] = sys.modules['transformers'] = None"))
    assert words in line and "pip install" not in line, line


def test_a_directory_that_holds_no_model_is_refused(tmp_path, capsys):
    (tmp_path / "weights.bin").write_bytes(b"")
    assert trl_vpo.main(["--model", str(tmp_path)]) == 2
    assert "config.json" in capsys.readouterr().err


# --- with TRL -----------------------------------------------------------------------------------------------------

def need_trl():
    pytest.importorskip("trl")
    pytest.importorskip("transformers")
    pytest.importorskip("datasets")


def parse(argv):
    return trl_vpo.check_args(trl_vpo.get_parser().parse_args(argv))


def tiny_qwen(path, context=2048, weights=True):
    """A Qwen2 causal LM of 2 layers, 32 wide, random weights, and a byte-level tokenizer without merges (one token a
    byte, as Qwen2Tokenizer reads it back) with a chat template in Qwen's style (<|im_start|>role ... <|im_end|>, the
    end of turn as EOS), both built here and saved to path."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    special = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
    vocab = {t: i for i, t in enumerate(special + tuple(sorted(pre_tokenizers.ByteLevel.alphabet())))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([AddedToken(t, special=True) for t in special])
    tk = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|endoftext|>", eos_token="<|im_end|>")
    tk.chat_template = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                        "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tk), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=context, tie_word_embeddings=True,
        eos_token_id=tk.eos_token_id, pad_token_id=tk.pad_token_id))
    tk.save_pretrained(path)
    if weights:
        model.save_pretrained(path)
    else:
        model.config.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    need_trl()
    return tiny_qwen(tmp_path_factory.mktemp("tiny-qwen2"))


def test_trl_advantages_are_vpo_advantages_up_to_the_std_convention(tmp_path):
    """One generation batch through a real GRPOTrainer (2 prompts x 8 completions, 2 updates). TRL hands the reward
    function each group adjacent; the advantages it then computes, read from the inputs of its compute_loss, are
    VPO's up to the std: A_TRL (std_1 + 1e-4) = R - mean_group R = A_VPO (std_0 + 1e-6), std_1 the group's sample
    std (ddof 1, TRL's nanstd), std_0 its population std (ddof 0, vpo.group_normalize)."""
    need_trl()
    args = parse(["--steps", "1", "--prompts", "2", "--group", "8", "--minibatches", "2", "--seed", "3"])
    run = trl_vpo.prepare(args)
    calls = []

    class Recorded(trl_reward.SetReward):
        def __call__(self, prompts, completions, **kw):
            out = super().__call__(prompts, completions, **kw)
            calls.append(dict(prompts=prompts, completions=completions, ids=kw["completion_ids"], out=out,
                              problem_id=kw["problem_id"], step=kw["trainer_state"].global_step))
            return out

    task, m, G = run.task, 2, 8
    reward = Recorded(task, m, run.problems.__getitem__, num_weights=100, seed=3)
    trainer = trl_vpo.build_trainer(args, run, reward, str(tmp_path))
    tk = run.tk
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
    r, mask = zip(*(task.score_rollouts(run.problems[call["problem_id"][g.start]], call["completions"][g], m)
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


def test_a_chat_model_gets_a_conversation_rendered_with_its_template(qwen_dir):
    """With a tokenizer that has a chat template, the dataset's prompts are conversations of one user message (the
    task explained, its prompt, the tags asked for), and their ids are the template applied, generation prompt
    included; the budget is m rooms measured in this tokenizer's tokens (one a byte) and the end of the turn."""
    args = parse(["--model", qwen_dir, "--task", "maze", "--num_answers", "3", "--steps", "2", "--prompts", "2"])
    run = trl_vpo.prepare(args)
    assert run.chat and run.fmt.name == "tags" and len(run.prompts) == 4
    task, problem, prompt = run.task, run.problems[0], run.prompts[0]
    assert prompt == [{"role": "user", "content": trl_tasks.TagFormat().prompt_text(task, problem, 3)}]
    text = run.tk.decode(trl_tasks.prompt_ids(run.tk, prompt))
    assert text == f"<|im_start|>user\n{prompt[0]['content']}<|im_end|>\n<|im_start|>assistant\n"
    assert task.prompt(problem, 3).rstrip() in text and "<answer3>...</answer3>" in text
    room = trl_tasks.answer_room(task, trl_tasks.TagFormat(), len, 3)[0]      # bytes = tokens here
    assert (run.room, run.budget) == (room, 3 * room + 1) and run.budget < run.context == 2048


def test_two_training_steps_on_the_maze_with_a_chat_model(qwen_dir, tmp_path):
    """The tiny Qwen2 trains two steps of VPO on the maze through GRPOTrainer. TRL generates from the rendered
    conversation (the prompt ids of its loss are the template applied) and hands the reward function conversations
    and assistant messages. Half the completions are replaced by a demonstration of their maze written in tags (a
    random model writes no route), so the rewards, the set rewards of the tags mapped to the task's format, are not
    all zero, and the policy gradient moves the weights. Then the evaluation samples the held-out mazes."""
    args = parse(["--model", qwen_dir, "--task", "maze", "--steps", "2", "--prompts", "2", "--group", "4",
                  "--minibatches", "2", "--lr", "1e-2", "--eval_prompts", "2", "--eval_samples", "2"])
    run = trl_vpo.prepare(args)
    task, m, tk, calls = run.task, run.m, run.tk, []
    trainer = trl_vpo.build_trainer(args, run, None, str(tmp_path))
    reward = trainer.reward_funcs[0]                                    # the example's own SetReward

    def recorded(prompts, completions, **kw):
        out = reward(prompts, completions, **kw)
        calls.append((prompts, completions, kw["problem_id"], kw["trainer_state"].global_step, out))
        return out
    trainer.reward_funcs[0] = recorded
    model, rng = trainer.model, np.random.default_rng(0)
    generate = model.generate

    def scripted(input_ids, attention_mask, **kw):
        out = generate(input_ids=input_ids, attention_mask=attention_mask, **kw)
        P = input_ids.shape[1]
        for i in range(0, len(out), 2):   # row i answers prompt i (TRL repeats them) or i // K (num_return_sequences)
            src = i * len(input_ids) // len(out)
            prompt = tk.decode(input_ids[src][attention_mask[src].bool()])
            problem = next(p for p in run.problems if p.grid in prompt)
            text = "".join(run.fmt.answer_texts(task.demonstration(problem, m, rng).split(SEP)))
            ids = tk(text, add_special_tokens=False)["input_ids"] + [tk.eos_token_id]
            assert len(ids) <= run.budget
            if P + len(ids) > out.shape[1]:
                out = torch.cat([out, out.new_full((len(out), P + len(ids) - out.shape[1]), tk.pad_token_id)], 1)
            out[i, P:] = tk.pad_token_id
            out[i, P:P + len(ids)] = torch.tensor(ids)
        return out
    model.generate = scripted
    before = {k: v.clone() for k, v in model.state_dict().items()}
    seen = []
    compute_loss = trainer.compute_loss

    def capture(model, inputs, *a, **kw):
        seen.extend(tk.decode(p[pm.bool()]) for p, pm in zip(inputs["prompt_ids"], inputs["prompt_mask"]))
        return compute_loss(model, inputs, *a, **kw)
    trainer.compute_loss = capture
    trainer.train()
    assert trainer.state.global_step == 2 * args.minibatches and len(calls) == 2
    templated = {tk.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in run.prompts}
    assert len(seen) == 2 * 2 * 4 and set(seen) <= templated
    for prompts, completions, ids, step, out in calls:
        assert all(isinstance(p, list) and p[0]["role"] == "user" for p in prompts)
        assert all(c[0]["role"] == "assistant" and isinstance(c[0]["content"], str) for c in completions)
        texts = [run.fmt.to_task(c[0]["content"], m) for c in completions]
        for g in (slice(0, 4), slice(4, 8)):   # the call's two groups
            r, mask = task.score_rollouts(run.problems[ids[g.start]], texts[g], m)
            R = vpo.set_rewards(torch.from_numpy(r)[None], torch.from_numpy(mask)[None],
                                reward.weights(step, prompts[g.start]))[0]
            assert out[g] == pytest.approx(R.tolist())
            assert max(out[g]) > 0.2 and min(out[g]) == 0.0                 # demonstrations against random text
    assert [c[3] for c in calls] == [0, args.minibatches]
    moved = max(float((model.state_dict()[k] - v).abs().max()) for k, v in before.items())
    assert moved > 1e-3, moved                      # Adam's steps of about lr; weight decay alone moves < 1e-5
    run.problems = run.problems + run.eval_problems   # the scripted rows of the evaluation: its mazes' demonstrations
    texts = trl_eval.sample_completions(model.eval(), run, args.eval_samples, args.eval_temperature, args.seed)
    # 2 held-out mazes x 2 samples
    assert len(texts) == 4 and SEP in texts[0] and "<answer" not in texts[0]    # mapped to the task's format
    metrics = trl_tasks.evaluate_texts(task, run.eval_problems, texts, m, [2, 4], trl_tasks.eval_weights(task), 0.7)
    assert set(metrics["best@k"]) == {2, 4} and metrics["answers_per_problem"] == 4
    assert metrics["pooled_best@k"][4] > 0 and 0 < metrics["valid_rate"] <= 0.5


def test_m_answers_that_do_not_fit_are_refused_before_the_model_loads(tmp_path, capsys):
    """A saved model without its weights: the budget and the context are checked on the tokenizer and the config
    alone, so the run stops with one line and exit 2 before loading any weights (there are none to load)."""
    need_trl()
    path = tiny_qwen(tmp_path / "short", context=256, weights=False)

    def error(argv):
        assert trl_vpo.main(argv) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), (out, err)
        return lines[0]
    line = error(["--model", path, "--task", "maze", "--num_answers", "3", "--max_completion_length", "50"])
    assert "--max_completion_length 50" in line and "3 answers need" in line, line
    line = error(["--model", path, "--task", "maze", "--num_answers", "3"])
    assert "context of 256 tokens" in line, line
    fits = tiny_qwen(tmp_path / "long", context=4096, weights=False)
    line = error(["--model", fits, "--task", "maze", "--num_answers", "3", "--steps", "1"])
    assert "cannot load it as a causal LM" in line, line                        # past the checks: no weights


def test_lora_trains_an_adapter_and_saves_it(qwen_dir, tmp_path):
    pytest.importorskip("peft")
    p = run_script(["--model", qwen_dir, "--task", "code", "--lora", "4", "--steps", "1", "--prompts", "2",
                    "--group", "4", "--eval_prompts", "1", "--eval_samples", "2", "--out_dir", str(tmp_path)])
    assert p.returncode == 0, p.stderr[-3000:]
    assert "(LoRA rank 4)" in p.stdout and "pass_target@k" in p.stdout
    assert os.path.isfile(tmp_path / "final" / "adapter_config.json")


def test_the_example_runs_end_to_end_and_prints_what_it_learned():
    need_trl()
    p = run_script(["--steps", "2", "--log_every", "1", "--eval_prompts", "2", "--eval_samples", "4"])
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    assert lines[0].startswith("VPO m=2 through TRL") and "step    2: mean reward" in p.stdout
    assert "best@k pooled" in p.stdout and "E_w[best@k]" in p.stdout
    assert lines[-1].startswith("VPO  m=2: learns ") and "E_w[max over its answers]" in lines[-1]


def test_zero_steps_evaluate_the_model_as_loaded(capsys):
    """--steps 0: no trainer; the table of the model as loaded (the base), at the k's asked for."""
    need_trl()
    assert trl_vpo.main(["--steps", "0", "--eval_prompts", "2", "--eval_samples", "3", "--eval_ks", "2,6"]) == 0
    out = capsys.readouterr().out
    assert "trained in" not in out and "step " not in out
    header = next(line for line in out.splitlines() if line.startswith("base "))
    assert header.split() == ["base", "k=1", "k=2", "k=6"], header


def test_the_toy_learns_its_corners_with_the_default_model():
    """The default run (100 steps, the tiny GPT-2): the set written most often is the two corners."""
    need_trl()
    p = run_script([])
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1].startswith("VPO  m=2: learns left (1, 0), right (0, 1)"), p.stdout

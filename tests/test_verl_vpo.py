"""examples/verl_vpo.py through veRL's own entry points, on CPU: the registry (get_adv_estimator_fn), the dispatch of
ray_trainer.compute_advantage on a DataProto, the v1 trainer's advantage step (PPOTrainer._compute_advantage, its
TransferQueue replaced by a dictionary), the custom reward function's loader, and the launch's Ray hook. The batch
(tests/verl_batch.py) is grouped by uid and shuffled, with a rollout without a valid answer and a flat group; the
reference is vpo.vpo_advantages. Skipped without veRL, unless VPO_REQUIRE_INTEGRATIONS is set (CI): then a missing
veRL fails."""
import importlib
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

verl = importlib.import_module("verl") if os.environ.get("VPO_REQUIRE_INTEGRATIONS") else pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.config import AlgoConfig  # noqa: E402
from verl.trainer.ppo import core_algos, ray_trainer  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402
from verl.trainer.ppo.v1 import trainer_base  # noqa: E402
from verl.utils import tensordict_utils  # noqa: E402

from verl_batch import SETTINGS, build  # noqa: E402
import verl_vpo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
verl_vpo.register()


def expected(batch):
    """The reference advantage of each row on each of its response tokens, 0 off them."""
    return batch.reference[:, None] * batch.response_mask


def data_proto(batch):
    return DataProto.from_dict(tensors={"token_level_rewards": batch.token_level_rewards.clone(),
                                        "response_mask": batch.response_mask.clone()},
                               non_tensors={"uid": batch.uids.copy()})


def test_the_registry_holds_vpo_and_it_is_vpos_estimator():
    """get_adv_estimator_fn("vpo") is the example's estimator (registering again changes nothing); called as veRL
    calls it, it gives vpo.vpo_advantages on every response token: a flat group and a lone rollout 0."""
    verl_vpo.register()
    fn = core_algos.get_adv_estimator_fn("vpo")
    assert fn is verl_vpo.vpo_advantage
    batch = build(seed=1)
    adv, ret = fn(token_level_rewards=batch.token_level_rewards, response_mask=batch.response_mask,
                  index=batch.uids, config=AlgoConfig(adv_estimator="vpo"))
    assert torch.allclose(adv, expected(batch), atol=1e-5) and torch.equal(adv, ret)
    flat = batch.uids == "uid-1"
    assert (adv[torch.from_numpy(flat)] == 0).all() and (adv[torch.from_numpy(~flat)] != 0).any()
    lone, _ = fn(batch.token_level_rewards[:1], batch.response_mask[:1], index=batch.uids[:1])
    assert (lone == 0).all()
    with pytest.raises(ValueError, match="index"):
        fn(batch.token_level_rewards, batch.response_mask)


def test_compute_advantage_dispatches_vpo_on_a_data_proto():
    """ray_trainer.compute_advantage(DataProto, "vpo") reaches the estimator with the uids and writes
    vpo.vpo_advantages; veRL's own "grpo" on the same rewards divides by the sample std instead (ddof = 1), so its
    advantages are sqrt(G / (G - 1)) times smaller on every group that is not flat."""
    batch = build(seed=2)
    out = ray_trainer.compute_advantage(data_proto(batch), "vpo", config=AlgoConfig(adv_estimator="vpo"))
    assert torch.allclose(out.batch["advantages"], expected(batch), atol=1e-5)
    assert torch.equal(out.batch["returns"], out.batch["advantages"])
    grpo = ray_trainer.compute_advantage(data_proto(batch), core_algos.AdvantageEstimator.GRPO,
                                         config=AlgoConfig(adv_estimator="grpo"))
    G = 4
    assert torch.allclose(grpo.batch["advantages"] * (G / (G - 1)) ** 0.5, expected(batch), atol=1e-4)
    assert not torch.allclose(grpo.batch["advantages"], expected(batch), atol=1e-3)


class Store:
    """TransferQueue's kv_batch_get and kv_batch_put over one dictionary of fields (the v1 trainer's data plane)."""

    def __init__(self, fields):
        self.fields, self.put = fields, {}

    def kv_batch_get(self, keys, partition_id, select_fields):
        return TensorDict({k: self.fields[k] for k in select_fields if k in self.fields.keys()},
                          batch_size=len(keys))

    def kv_batch_put(self, keys, partition_id, fields):
        self.put.update(fields.items())
        return SimpleNamespace(keys=keys, partition_id=partition_id)


class Meta(SimpleNamespace):
    def __len__(self):
        return len(self.keys)


def test_the_v1_trainer_computes_vpo(monkeypatch):
    """The v1 trainer's advantage step (PPOTrainer._compute_advantage: rm_scores and uids fetched as nested tensors,
    padded, dispatched, written back nested) with algorithm.adv_estimator=vpo gives vpo.vpo_advantages."""
    batch = build(seed=3)
    lengths = batch.response_mask.sum(-1).long().tolist()
    nested = [torch.nested.as_nested_tensor([row[:n] for row, n in zip(x, lengths)], layout=torch.jagged)
              for x in (batch.response_mask.long(), batch.token_level_rewards)]
    store = Store(tensordict_utils.get_tensordict({"response_mask": nested[0], "rm_scores": nested[1],
                                                   "uid": batch.uids.tolist()}))
    monkeypatch.setattr(trainer_base, "tq", store)
    config = OmegaConf.create({"algorithm": {"adv_estimator": "vpo", "use_kl_in_reward": False, "gamma": 1.0,
                                             "lam": 1.0, "norm_adv_by_std_in_grpo": True},
                               "actor_rollout_ref": {"rollout": {"n": 4}}})
    keys = [f"{uid}_0_{i}" for i, uid in enumerate(batch.uids)]                      # {uid}_{session}_{index}
    trainer_base.PPOTrainer._compute_advantage(SimpleNamespace(config=config), Meta(keys=keys, partition_id="train"),
                                               {})
    got = store.put["advantages"].to_padded_tensor(0.0)
    assert got.shape == batch.response_mask.shape
    assert torch.allclose(got, expected(batch), atol=1e-5)


def test_veRLs_loader_calls_the_reward_function_with_the_reward_kwargs():
    """get_custom_reward_fn loads compute_score from the file with reward_kwargs, and called as veRL's naive reward
    manager calls it (data_source, solution_str, ground_truth, extra_info) it gives the set reward of the batch."""
    batch = build(seed=4)
    kwargs = {k: v for k, v in SETTINGS.items() if k != "task_opt"}
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": os.path.join(ROOT, "examples", "verl_vpo.py"), "name": "compute_score", "reward_kwargs": kwargs}}})
    fn = get_custom_reward_fn(config)
    got = [fn(data_source="vpo-toy", solution_str=text, ground_truth=gt, extra_info={"num_turns": None})["score"]
           for text, gt in zip(batch.texts, batch.ground_truths)]
    assert np.allclose(got, batch.reference_R.numpy(), atol=1e-6)


HOOK = """
import ray
ray.init(num_cpus=1, include_dashboard=False, runtime_env={"worker_process_setup_hook": "verl_vpo.register"})

@ray.remote
class Runner:  # where veRL's trainer runs: a Ray actor, in a process of its own
    def estimator(self):
        from verl.trainer.ppo import core_algos
        fn = core_algos.get_adv_estimator_fn("vpo")
        return fn.__module__ + "." + fn.__qualname__

print(ray.get(Runner.remote().estimator.remote()))
ray.shutdown()
"""


def test_the_launch_hook_registers_vpo_in_a_ray_actor():
    """docs/verl.md's launch: with examples/ on PYTHONPATH and verl_vpo.register as Ray's worker_process_setup_hook,
    an actor (where veRL's TaskRunner runs the trainer) finds "vpo" in its registry. A local Ray on CPU."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "examples"), ROOT]), OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", HOOK], capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert p.returncode == 0 and p.stdout.strip().splitlines()[-1] == "verl_vpo.vpo_advantage", p.stderr[-2000:]

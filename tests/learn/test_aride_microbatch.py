"""A-RIDE with gradient micro-batches takes the same step as with one pass (the path a
VLM on one GPU uses), on the UI-tree policy and its step cache."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from distrl_sdk.learn import ARIDEConfig, ARIDETrainer
from tests.learn.test_aride_toy import BanditPolicy, collect


# the actor buffer's batch (its own draw from the filtered replay) goes the same way
@pytest.mark.parametrize("actor", [{}, {"traj_filter_quantile": 0.5}], ids=["batch", "buffer"])
def test_micro_batched_update_equals_the_one_pass_update(actor: dict[str, float]) -> None:
    base = dict(actor_lr=1e-2, critic_lr=3e-3, min_episodes=8, batch_episodes=8,
                refresh_every=0, seed=3, **actor)
    policy_a, policy_b = BanditPolicy(seed=5), BanditPolicy(seed=5)
    one = ARIDETrainer(policy_a, ARIDEConfig(**base))
    micro = ARIDETrainer(policy_b, ARIDEConfig(**base, micro_batch=3))
    rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
    behaviour = copy.deepcopy(policy_a)
    for _ in range(3):
        for ep in collect(copy.deepcopy(behaviour), one.version, 6, rng_a):
            one.add_episode(ep)
        for ep in collect(copy.deepcopy(behaviour), micro.version, 6, rng_b):
            micro.add_episode(ep)
        ma, mb = one.update(), micro.update()
        assert abs(ma["actor_loss"] - mb["actor_loss"]) < 1e-5
    wa, wb = policy_a.weights(), policy_b.weights()
    moved = any(not torch.equal(wa[k], BanditPolicy(seed=5).weights()[k]) for k in wa)
    assert moved
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=1e-5, atol=1e-6)

"""A-RIDE's ``normalize_advantage`` on the test toys (5 seeds each, ≈ 2 min on 2 cores):
updates until a 4-state chain is learned (π(good) > 0.8 everywhere, lagged behaviour),
and a contextual bandit's expected reward after 60 updates.

    .venv/bin/python bench/advantage_normalisation.py
"""

from __future__ import annotations

import copy

import _common  # noqa: F401 - puts the repo on sys.path
import numpy as np
import torch

from distrl_sdk.learn import ARIDEConfig, ARIDETrainer
from tests.learn.test_aride_toy import BanditPolicy, expected_reward, train
from tests.learn.toys import GOOD, Chain, TablePolicy, rollout

torch.set_num_threads(1)  # tiny models; the box is shared


def chain_run(norm: bool, seed: int, lr: float) -> int:
    """Updates until π(good) > 0.8 in every state (400 = not learned)."""
    chain = Chain(length=4, gamma=0.9)
    policy = TablePolicy(4)
    tr = ARIDETrainer(policy, ARIDEConfig(
        gamma=0.9, actor_lr=lr, critic_lr=1e-2, batch_episodes=16, capacity=512,
        max_policy_lag=20, critic_hidden=32, min_episodes=1, seed=seed,
        normalize_advantage=norm))
    rng = np.random.default_rng(seed)
    behaviour, b_version = copy.deepcopy(policy), 0
    for ep in rollout(chain, behaviour, 32, rng):
        tr.add_episode(ep)
    for u in range(400):
        if tr.version - b_version >= 4:
            behaviour, b_version = copy.deepcopy(policy), tr.version
        for ep in rollout(chain, behaviour, 4, rng, b_version):
            tr.add_episode(ep)
        tr.update()
        if policy.probs()[:, GOOD].min() > 0.8:
            return u + 1
    return 400


def bandit_run(norm: bool, seed: int) -> float:
    """Expected reward after 60 updates."""
    policy = BanditPolicy(seed=seed)
    tr = ARIDETrainer(policy, ARIDEConfig(
        actor_lr=1e-2, critic_lr=3e-3, traj_critic_lr=3e-3, min_episodes=16,
        batch_episodes=16, max_policy_lag=20, normalize_advantage=norm, seed=seed))
    train(tr, policy, updates=60, seed=seed)
    return expected_reward(policy)


def main() -> None:
    for lr in (0.01, 0.05):
        for norm in (False, True):
            runs = [chain_run(norm, s, lr) for s in range(5)]
            print(f"chain, actor lr {lr}, normalize_advantage={norm}: updates to learn "
                  f"{runs}, mean {np.mean(runs):.0f}", flush=True)
    for norm in (False, True):
        rewards = [round(bandit_run(norm, s), 3) for s in range(5)]
        print(f"bandit, normalize_advantage={norm}: expected reward after 60 updates "
              f"{rewards}, mean {np.mean(rewards):.3f}", flush=True)


if __name__ == "__main__":
    main()

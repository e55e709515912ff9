"""A-RIDE's bounds and stabilisers: lagged data leaves, the entropy floor holds, a step
cost and advantage normalisation do what they say (bandit toy of test_aride_toy)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn import ARIDEConfig, ARIDETrainer
from distrl_sdk.learn.aride import (
    EpisodeBatch,
    _normalise,
    discounted_returns,
    doubly_robust_advantage,
)
from tests.learn.test_aride_toy import BanditPolicy, collect, expected_reward
from tests.learn.toys import GOOD, TablePolicy, episode, step


def _entropy(policy: BanditPolicy) -> float:
    p = policy.probs()
    return float(-(p * p.log()).sum(-1).mean())


def test_stale_episodes_leave_replay_and_bound_the_batches_stale_share() -> None:
    """The behaviour policy never refreshes (version 0 forever, no version bound) while
    the learner sharpens: episodes whose steps π no longer takes (ρ < 0.1) are evicted
    when measured, so batches stay useful; without the bound they pile up."""
    shares = {}
    for bound in (0.5, None):
        policy = BanditPolicy(seed=1)
        tr = ARIDETrainer(policy, ARIDEConfig(actor_lr=3e-2, critic_lr=3e-3, min_episodes=16,
                                              max_policy_lag=None, max_stale_share=bound,
                                              refresh_every=2, refresh_size=16,
                                              entropy_target=None))
        behaviour = copy.deepcopy(policy)
        rng = np.random.default_rng(0)
        for ep in collect(behaviour, 0, 64, rng):
            tr.add_episode(ep)
        metrics = []
        for _ in range(80):
            for ep in collect(behaviour, 0, 4, rng):
                tr.add_episode(ep)
            metrics.append(tr.update())
        assert expected_reward(policy) > 0.6  # the learner really moved away from μ
        shares[bound] = float(np.mean([m["rho_stale_share"] for m in metrics[-20:]]))
        if bound is not None:
            assert tr.evicted["stale"] > 0 and sum(m["stale_evicted"] for m in metrics) > 0
            assert metrics[-1]["rho_ess"] > 0
    assert shares[None] > 0.3
    assert shares[0.5] < shares[None] - 0.1


def test_entropy_floor_prevents_collapse() -> None:
    """A large learning rate and no base entropy bonus collapse the policy onto its best
    arms; with entropy_target = 0.6 nats the adaptive β holds entropy near the target
    and reports the higher coefficient."""
    results = {}
    for target in (None, 0.6):
        policy = BanditPolicy(seed=1)
        tr = ARIDETrainer(policy, ARIDEConfig(actor_lr=5e-2, critic_lr=3e-3, entropy_coef=0.0,
                                              entropy_target=target, entropy_coef_lr=0.05,
                                              min_episodes=16, max_policy_lag=None))
        rng = np.random.default_rng(0)
        for ep in collect(policy, 0, 32, rng):
            tr.add_episode(ep)
        metrics = []
        for _ in range(150):
            for ep in collect(copy.deepcopy(policy), tr.version, 4, rng):
                tr.add_episode(ep)
            metrics.append(tr.update())
        results[target] = (_entropy(policy), metrics[-1]["entropy_coef"])
    assert results[None][0] < 0.3 and results[None][1] == 0.0
    assert results[0.6][0] > 0.45 and results[0.6][1] > 0.0


def test_step_cost_lowers_every_steps_advantage() -> None:
    """One-step episodes, frozen critic: a cost c per step lowers A = r − c − V by c, seen
    in the gradient that reaches log π."""
    grads = {}
    for cost in (0.0, 0.25):
        policy = TablePolicy(1, p_good=[0.5], probe=True)
        tr = ARIDETrainer(policy, ARIDEConfig(step_cost=cost, critic_lr=0.0, actor_lr=0.0,
                                              entropy_target=None, min_episodes=1,
                                              batch_episodes=1, refresh_every=0))
        tr.add_episode(episode([step(0, GOOD, 1.0, math.log(0.5))], reward=1.0))
        tr.update()
        grads[cost] = policy.last_grads()[0][1]
    assert -grads[0.25] == pytest.approx(-grads[0.0] - 0.25, abs=1e-5)


def test_advantage_normalisation() -> None:
    adv = torch.tensor([[1.0, 3.0, 0.0], [5.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    out = _normalise(adv, mask)
    real = out[mask > 0]
    assert float(real.mean()) == pytest.approx(0.0, abs=1e-6)
    assert float(real.pow(2).mean()) == pytest.approx(1.0, abs=1e-5)
    assert torch.all(out[mask == 0] == 0)
    const = _normalise(torch.ones(1, 2), torch.ones(1, 2))
    assert torch.isfinite(const).all() and torch.all(const == 0)
    # and through the trainer: same data, different update
    tables = []
    for norm in (False, True):
        policy = TablePolicy(1, p_good=[0.5], probe=True)
        tr = ARIDETrainer(policy, ARIDEConfig(normalize_advantage=norm, critic_lr=0.0,
                                              entropy_target=None, min_episodes=1,
                                              batch_episodes=2, alpha=0.0, refresh_every=0))
        tr.add_episode(episode([step(0, GOOD, 1.0, math.log(0.5))], reward=1.0, eid="a"))
        tr.add_episode(episode([step(0, 0, 0.0, math.log(0.5))], reward=0.0, eid="b"))
        tr.update()
        tables.append([g for _, g in policy.last_grads()])
    assert tables[0] != tables[1]


def _one_step_pull(reward: float, mu: float = 0.5,
                   **config: object) -> tuple[float, dict[str, float]]:
    """One update on a one-step episode (the good action, π = 0.5, recorded with
    probability ``mu``) with both critics at
    zero (V ≡ 0, so A = the step's own return) and nothing else moving: the gradient it
    leaves on log π(good) and the update's stats."""
    policy = TablePolicy(1, p_good=[0.5], probe=True)
    tr = ARIDETrainer(policy, ARIDEConfig(
        critic_lr=0.0, actor_lr=0.0, entropy_coef=0.0, entropy_target=None,
        min_episodes=1, batch_episodes=1, refresh_every=0, **config))  # type: ignore[arg-type]
    with torch.no_grad():
        for p in tr.critic.parameters():
            p.zero_()
    tr.add_episode(episode([step(0, GOOD, reward, math.log(mu))], reward=reward))
    stats = tr.update()
    return policy.last_grads()[0][1], stats


def test_advantage_floor_stops_only_the_push_away_from_worse_actions() -> None:
    """advantage_floor = 0: a step that did worse than V expected (a failure, A < 0) no
    longer moves log π; one that did better (A > 0) moves it exactly as before."""
    grads = {(floor, reward): _one_step_pull(reward, advantage_floor=floor, step_cost=0.25)[0]
             for floor in (None, 0.0) for reward in (0.0, 1.0)}
    assert grads[(None, 0.0)] != 0.0 and grads[(0.0, 0.0)] == pytest.approx(0.0, abs=1e-7)
    assert grads[(0.0, 1.0)] == pytest.approx(grads[(None, 1.0)], abs=1e-7) != 0.0


def test_binarized_advantage_pulls_by_its_sign_not_its_size() -> None:
    """binarize_advantage: one step that did better than V expected (A = 1 − 0.25 with a
    step cost, V ≡ 0) pulls log π with weight 1 instead of 0.75; one that did worse
    (A = −0.25) does not move it, as with the floor at 0."""
    grads: dict[tuple[bool, float], float] = {}
    for binary in (False, True):
        for reward in (0.0, 1.0):
            grads[(binary, reward)], stats = _one_step_pull(
                reward, binarize_advantage=binary, step_cost=0.25)
            if binary:
                assert stats["mean_advantage"] == reward  # the share of steps with A > 0
    assert grads[(True, 1.0)] == pytest.approx(grads[(False, 1.0)] / 0.75, rel=1e-5) != 0.0
    assert grads[(False, 0.0)] != 0.0 and grads[(True, 0.0)] == pytest.approx(0.0, abs=1e-7)


def test_actor_ratio_none_pulls_a_drifted_success_as_hard_as_a_fresh_one() -> None:
    """A success recorded when μ(good) was 0.9 and π(good) is now 0.5 (ρ = 5/9): the
    paper's truncated ratio scales its pull by 5/9; actor_ratio "none" pulls it exactly
    as a success recorded at μ = π does."""
    fresh = _one_step_pull(1.0, mu=0.5)[0]
    truncated = _one_step_pull(1.0, mu=0.9)[0]
    ratio_free = _one_step_pull(1.0, mu=0.9, actor_ratio="none")[0]
    assert fresh != 0.0
    assert truncated == pytest.approx(fresh * 0.5 / 0.9, rel=1e-5)
    assert ratio_free == pytest.approx(fresh, rel=1e-5)


def test_self_imitation_pulls_only_steps_of_episodes_that_beat_the_critic() -> None:
    """sil_coef = 1 with V ≡ 0: a success (G = 1 > V) adds (G − V)·∂log π to the actor's
    pull — the policy-gradient term's own size here (A = 1, ρ = 1), so the gradient
    doubles; a failure (G = 0, not above V) is left exactly as without the term."""
    grads: dict[tuple[float, float], float] = {}
    for sil in (0.0, 1.0):
        for reward in (0.0, 1.0):
            grads[(sil, reward)], stats = _one_step_pull(reward, sil_coef=sil)
            if sil:
                assert stats["sil_share"] == reward
    assert grads[(1.0, 1.0)] == pytest.approx(2 * grads[(0.0, 1.0)], rel=1e-5) != 0.0
    assert grads[(1.0, 0.0)] == pytest.approx(grads[(0.0, 0.0)], abs=1e-7)


def test_discounted_returns_stop_at_each_episode_end() -> None:
    rewards = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    g = discounted_returns(rewards, mask, 0.5)
    assert torch.allclose(g, torch.tensor([[0.25, 0.5, 1.0], [1.0, 0.0, 0.0]]))


def test_new_knobs_are_validated() -> None:
    for bad in ({"v_target": "q"}, {"vtrace_rho_max": 0.0}, {"max_stale_share": 1.0},
                {"entropy_target": -1.0}, {"horizon_updates": 0}, {"step_cost": -0.1},
                {"entropy_coef": 0.5, "entropy_coef_max": 0.1}, {"sil_coef": -1.0},
                {"actor_ratio": "clipped"}):
        with pytest.raises(ConfigError):
            ARIDEConfig(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("keep", [False, True])
def test_keep_successes_spares_stale_successes_and_still_evicts_stale_failures(
        keep: bool) -> None:
    """Every stored episode took an action π now gives 0.05 where μ gave 0.9 (ρ ≈ 0.06,
    all steps stale): re-scoring evicts them all — unless ``keep_successes``, which
    spares exactly the successes (and reaches the replay's version bound too)."""
    policy = TablePolicy(1, p_good=[0.05])
    tr = ARIDETrainer(policy, ARIDEConfig(max_policy_lag=None, max_stale_share=0.5,
                                          keep_successes=keep, refresh_every=0))
    assert tr.replay.keep_successes is keep
    for i in range(8):  # the same stale action; half of the episodes succeeded
        tr.add_episode(episode([step(0, GOOD, float(i % 2), math.log(0.9))],
                               reward=float(i % 2), eid=f"e{i}"))
    evicted = tr.refresh_priorities(tr.replay.filled())
    left = sorted(tr.replay.episode(int(s)).id for s in tr.replay.filled())
    assert evicted == (4 if keep else 8) and tr.evicted["stale"] == evicted
    assert left == (["e1", "e3", "e5", "e7"] if keep else [])


def test_doubly_robust_advantage_mixes_the_last_reward_and_the_td_error() -> None:
    """By hand: rewards (0, 0, 1), V (0.2, 0.5, 0.8), γ = λ = 0.5 — mixes 1/4, 1/2, 1 of
    r_H with TD errors 0.05, −0.1, 0.2; a padded one-step failure gets its reward, 0."""
    rewards = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    values = torch.tensor([[0.2, 0.5, 0.8], [0.3, 0.9, 0.9]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    adv = doubly_robust_advantage(rewards, values, mask, gamma=0.5, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.2875, 0.45, 1.0], [0.0, 0.0, 0.0]]))


def test_mc_classifier_step_critic_learns_the_replays_success_probability() -> None:
    """One state, one-step episodes, 80 % of them successes: DigiRL's classifier critic
    converges to σ(V) ≈ 0.8 and the actor's (doubly-robust) advantage of each step is
    its episode's reward — 1 for a success, 0 for a failure — whatever V says."""
    policy = TablePolicy(1, p_good=[0.8])
    tr = ARIDETrainer(policy, ARIDEConfig(step_critic="mc_classifier", gamma=0.5,
                                          critic_lr=1e-2, actor_lr=0.0, min_episodes=1,
                                          max_policy_lag=None, entropy_target=None))
    for i in range(20):
        good = i % 10 < 8
        tr.add_episode(episode([step(0, GOOD if good else 1 - GOOD, float(good),
                                     math.log(0.8 if good else 0.2))],
                               reward=float(good), eid=f"e{i}"))
    for _ in range(300):
        tr.update()
    with torch.no_grad():
        v = float(torch.sigmoid(tr.critic(policy._features(torch.tensor([0])))).squeeze())
    assert v == pytest.approx(0.8, abs=0.04)  # a regression critic: σ(0.8) = 0.69
    batch = EpisodeBatch.build([tr.replay.episode(int(s)) for s in tr.replay.filled()])
    with torch.no_grad():
        values = batch.pad(tr._values(policy._features(torch.zeros(len(batch.steps),
                                                                   dtype=torch.long))))
    _, _, _, adv, _ = tr._targets(batch, batch.rewards, values, batch.log_mu)
    assert adv[:, 0].tolist() == batch.final_reward.tolist()
    with pytest.raises(ConfigError):
        ARIDEConfig(step_critic="td")  # type: ignore[arg-type]


@pytest.mark.parametrize("end", [1.0, 0.1])
def test_actor_lr_decays_linearly_over_the_planned_run(end: float) -> None:
    """horizon 10 updates: the actor's Adam steps with actor_lr·(1 − f·(1 − end)), f the
    fraction of the run done (1 from update 10 on); end = 1 keeps it constant."""
    policy = BanditPolicy(seed=1)
    tr = ARIDETrainer(policy, ARIDEConfig(actor_lr=1e-2, actor_lr_end_fraction=end,
                                          horizon_updates=10, min_episodes=8))
    rng = np.random.default_rng(0)
    for ep in collect(policy, 0, 16, rng):
        tr.add_episode(ep)
    lrs = [tr.update()["actor_lr"] for _ in range(12)]
    expected = [1e-2 * (1 - min(i / 10, 1.0) * (1 - end)) for i in range(12)]
    assert lrs == pytest.approx(expected)
    assert tr.actor_opt.param_groups[0]["lr"] == pytest.approx(1e-2 * end)
    with pytest.raises(ConfigError):
        ARIDEConfig(actor_lr_end_fraction=1.5)

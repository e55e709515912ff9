"""A-RIDE's machinery, each part pinned at the trainer level on small MDPs.

The tabular policy of ``toys`` reports the gradient that reached each step's log π
(the actor loss's per-step coefficient −w·f·ρ̄·A/N), so IS weights, ρ̄, the trajectory
filter and the advantage are checked through a real ``update()``, not by retyping
its formulas. Each test names the mechanism it pins; ``bench/mutations.py`` breaks
each mechanism in a copy of the package and checks that a test here fails.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn import ARIDEConfig, ARIDETrainer
from tests.learn.toys import BAD, GOOD, Chain, TablePolicy, episode, rollout, step

# the machinery under test, without the entropy floor (a separate test) moving β
BASE = {"entropy_coef": 0.0, "entropy_target": None, "invalid_penalty": 0.0,
        "critic_hidden": 32, "refresh_every": 0, "min_episodes": 1, "max_policy_lag": None}


def trainer_for(policy: TablePolicy, **kw: object) -> ARIDETrainer:
    return ARIDETrainer(policy, ARIDEConfig(**{**BASE, **kw}))  # type: ignore[arg-type]


def grads_by_tag(policy: TablePolicy) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for st, g in policy.last_grads():
        out.setdefault(st.obs.get("tag", ""), []).append(g)
    return out


# -- importance sampling and prioritized sampling -------------------------------------
def test_is_weights_scale_each_episodes_gradient_and_sampling_follows_priority() -> None:
    """Two identical one-step episodes at priorities 1 and 4 (α = 1, β = 1): a stratified
    batch of 5 draws them 1 : 4, and the frequent one's gradient is scaled by its IS
    weight (N·P)^−1 / max = 0.25 — so their total contributions are equal (unbiased)."""
    policy = TablePolicy(1, p_good=[0.5], probe=True)
    tr = trainer_for(policy, alpha=1.0, is_beta_start=1.0, is_beta_end=1.0, batch_episodes=5,
                     priority_eps=0.0, actor_lr=0.1, max_stale_share=None)
    lm = math.log(0.5)
    for tag in ("rare", "often"):
        tr.add_episode(episode([step(0, GOOD, 1.0, lm, tag=tag)], reward=1.0, eid=tag))
    tr.replay.update_priorities([0, 1], [1.0, 4.0])
    tr.update()
    g = grads_by_tag(policy)
    assert (len(g["rare"]), len(g["often"])) == (1, 4)  # sampled ∝ priority, not uniformly
    assert g["rare"][0] < 0  # a positive advantage: the loss pushes log π up
    for x in g["often"]:
        assert x == pytest.approx(0.25 * g["rare"][0], rel=1e-5)


def test_is_weights_change_the_update() -> None:
    """Same data, same first draws (sampling depends on α only): β = 0 and β = 1 give
    different actor and critic weights after a few updates (Adam's first step is
    sign-like, so one update is not enough to see a scale)."""
    results = []
    for beta in (0.0, 1.0):
        policy = TablePolicy(2, p_good=[0.5, 0.5])
        tr = trainer_for(policy, alpha=1.0, is_beta_start=beta, is_beta_end=beta,
                         batch_episodes=6, actor_lr=0.05, critic_lr=0.05, seed=3)
        for i, (s, r) in enumerate([(0, 1.0), (1, 0.0), (0, 0.0), (1, 1.0)]):
            tr.add_episode(episode([step(s, GOOD, r, math.log(0.5))], reward=r, eid=f"e{i}"))
        tr.replay.update_priorities([0, 1, 2, 3], [0.5, 1.0, 4.0, 8.0])
        m = tr.update()
        for _ in range(3):
            tr.update()
        results.append((policy.table.detach().clone(), tr.critic.state_dict(), m))
    assert results[0][2]["is_weight_min"] == 1.0 and results[1][2]["is_weight_min"] < 0.2
    assert not torch.allclose(results[0][0], results[1][0])
    assert any(not torch.equal(results[0][1][k], results[1][1][k]) for k in results[0][1])


# -- truncated ratios in the actor loss ------------------------------------------------
def test_actor_gradient_is_scaled_by_the_truncated_ratio() -> None:
    """Identical one-step episodes but for log μ: ρ = 1, 0.05 and 20. A step π would
    rarely take teaches it 0.05 as much; a ratio above ρ_max = 1 is truncated to 1."""
    policy = TablePolicy(1, p_good=[0.5], probe=True)
    tr = trainer_for(policy, batch_episodes=3, alpha=0.0, is_beta_start=0.0, is_beta_end=0.0,
                     max_stale_share=None)
    lp = math.log(0.5)
    for tag, lm in (("on", lp), ("rare", lp + math.log(20)), ("often", lp - math.log(20))):
        tr.add_episode(episode([step(0, GOOD, 1.0, lm, tag=tag)], reward=1.0, eid=tag))
    m = tr.update()
    g = {k: v[0] for k, v in grads_by_tag(policy).items()}
    assert g["on"] != 0.0
    assert g["rare"] == pytest.approx(0.05 * g["on"], rel=1e-4)
    assert g["often"] == pytest.approx(g["on"], rel=1e-4)
    assert m["rho_clipped_high"] == pytest.approx(1 / 3)
    assert m["rho_stale_share"] == pytest.approx(1 / 3)
    # (Σρ)² / (N Σρ²) with ρ = (1, 0.05, 20)
    assert m["rho_ess"] == pytest.approx(21.05**2 / (3 * (1 + 0.0025 + 400)), rel=1e-4)


# -- multi-step credit assignment --------------------------------------------------------
def test_first_step_is_credited_with_the_episodes_outcome() -> None:
    """Two on-policy episodes share their first two steps (GOOD from states 0 and 1),
    then one reaches the goal and the other bails. With λ = 1 the first step's advantage
    is its Monte Carlo return minus V(s_0): they differ by γ²·(goal − bail), before the
    critic has learned anything (its learning rate is 0). A one-step TD advantage
    r_0 + γV(s_1) − V(s_0) would give both first steps the same credit."""
    chain = Chain(length=3, gamma=0.9)
    policy = TablePolicy(3, p_good=[0.5, 0.5, 0.5], probe=True)
    tr = trainer_for(policy, gamma=chain.gamma, critic_lr=0.0, actor_lr=0.0,
                     batch_episodes=2, alpha=0.0, is_beta_start=0.0, is_beta_end=0.0)
    lm = math.log(0.5)
    win = [step(0, GOOD, 0.0, lm, tag="win"), step(1, GOOD, 0.0, lm),
           step(2, GOOD, chain.goal, lm)]
    lose = [step(0, GOOD, 0.0, lm, tag="lose"), step(1, GOOD, 0.0, lm),
            step(2, BAD, chain.bail, lm)]
    tr.add_episode(episode(win, reward=1.0, eid="win"))
    tr.add_episode(episode(lose, reward=0.0, eid="lose"))
    tr.update()
    g = grads_by_tag(policy)
    n_steps = 6  # the actor loss averages over the batch's steps
    adv_win, adv_lose = -g["win"][0] * n_steps, -g["lose"][0] * n_steps
    assert adv_win - adv_lose == pytest.approx(chain.gamma**2 * (chain.goal - chain.bail),
                                               rel=1e-4)


def test_critic_learns_the_off_policy_value_of_pi_on_a_chain() -> None:
    """π fixed (actor lr 0), data from μ ≠ π, uniform replay (PER's own bias at β < 1 is
    not under test here): the step critic converges to V^π solved from the MDP, not
    to V^μ. A REINFORCE-style learner has no critic to pass this."""
    chain = Chain(length=3, gamma=0.9)
    mu, pi = [0.5, 0.5, 0.5], [0.9, 0.8, 0.9]
    v_pi, v_mu = chain.values(pi), chain.values(mu)
    policy = TablePolicy(3, p_good=pi)
    behaviour = TablePolicy(3, p_good=mu)
    tr = trainer_for(policy, gamma=chain.gamma, actor_lr=0.0, critic_lr=3e-3,
                     batch_episodes=16, capacity=256, seed=1, alpha=0.0)
    rng = np.random.default_rng(0)
    for ep in rollout(chain, behaviour, 64, rng):
        tr.add_episode(ep)
    for _ in range(300):
        for ep in rollout(chain, behaviour, 4, rng):
            tr.add_episode(ep)
        tr.update()
    with torch.no_grad():
        v = tr.critic(policy._features(torch.arange(3))).numpy()
    assert np.abs(v - v_pi).max() < 0.07, (v, v_pi)
    assert np.abs(v - v_mu).min() > 0.15


@pytest.mark.parametrize(("form", "expect"), [("vtrace", 0.9), ("retrace_q", 0.2)])
def test_the_issues_example_through_the_trainer(form: str, expect: float) -> None:
    """μ(good) = 0.2, π(good) = 0.9, reward 1 for good, one step: the critic trained on
    μ's data learns V^π = 0.9; the uncorrected Q-style form learns V^μ = 0.2 (the
    0.199 of issue 14). Sampling noise of ratios up to 4.5: tolerance 0.1."""
    chain = Chain(length=1, gamma=0.9, goal=1.0, bail=0.0)
    policy, behaviour = TablePolicy(1, p_good=[0.9]), TablePolicy(1, p_good=[0.2])
    tr = trainer_for(policy, gamma=0.9, actor_lr=0.0, critic_lr=3e-3, batch_episodes=16,
                     capacity=256, alpha=0.0, v_target=form)
    rng = np.random.default_rng(0)
    for ep in rollout(chain, behaviour, 64, rng):
        tr.add_episode(ep)
    for _ in range(200):
        for ep in rollout(chain, behaviour, 4, rng):
            tr.add_episode(ep)
        tr.update()
    with torch.no_grad():
        v = float(tr.critic(policy._features(torch.arange(1))).detach()[0])
    assert v == pytest.approx(expect, abs=0.1)


def test_aride_learns_a_chain_from_lagged_data() -> None:
    """Reward only at the end of four GOODs (bailing pays 0.1 now): from a uniform policy,
    with behaviour snapshots lagging by up to 4 versions, A-RIDE learns to walk."""
    chain = Chain(length=4, gamma=0.9)
    policy = TablePolicy(4)
    tr = trainer_for(policy, gamma=chain.gamma, actor_lr=0.05, critic_lr=1e-2,
                     batch_episodes=16, capacity=512, max_policy_lag=20)
    rng = np.random.default_rng(0)
    behaviour, b_version = copy.deepcopy(policy), 0
    for ep in rollout(chain, behaviour, 32, rng):
        tr.add_episode(ep)
    for _ in range(150):
        if tr.version - b_version >= 4:
            behaviour, b_version = copy.deepcopy(policy), tr.version
        for ep in rollout(chain, behaviour, 4, rng, b_version):
            tr.add_episode(ep)
        tr.update()
    p_good = policy.probs()[:, GOOD].numpy()
    assert p_good.min() > 0.8, p_good


# -- priorities and refresh -------------------------------------------------------------
def _filled_trainer(n: int, **kw: object) -> tuple[ARIDETrainer, TablePolicy]:
    policy = TablePolicy(3, p_good=[0.5, 0.5, 0.5])
    tr = trainer_for(policy, **kw)
    rng = np.random.default_rng(1)
    for ep in rollout(Chain(), policy, n, rng):
        assert tr.add_episode(ep)
    return tr, policy


def test_priorities_of_sampled_episodes_move_after_an_update() -> None:
    tr, _ = _filled_trainer(8, batch_episodes=4, alpha=0.0)
    slots = tr.replay.filled()
    assert not tr.replay.measured(slots).any()
    assert np.all(tr.replay.priorities(slots) == pytest.approx(1.0))  # the entry priority
    tr.update()
    measured = tr.replay.measured(slots)
    assert 1 <= measured.sum() <= 4
    moved = tr.replay.priorities(slots[measured])
    assert np.all(np.abs(moved - 1.0) > 1e-3)
    # a new episode now enters at the highest *measured* priority, not the old 1.0
    new = tr.replay.add(rollout(Chain(), tr.policy, 1, np.random.default_rng(2))[0])  # type: ignore[arg-type]
    assert tr.replay.priorities([new])[0] == pytest.approx(moved.max())


def test_the_stalest_episodes_are_rescored_every_refresh() -> None:
    """Batch of 1, refresh 3 every update: after one update the sampled episode and the
    three oldest-scored others carry measured priorities; the rest still wait."""
    tr, _ = _filled_trainer(8, batch_episodes=1, refresh_every=1, refresh_size=3,
                            max_stale_share=None)
    tr.update()
    measured = [int(s) for s in tr.replay.filled() if tr.replay.measured([s])[0]]
    assert len(measured) == 4
    assert len(set(measured) & {0, 1, 2, 3}) >= 3  # added (so scored) first: the stalest


# -- trajectory critic and filter ----------------------------------------------------
def _filter_replay(q: float, mode: str = "batch", critic_lr: float = 0.0
                   ) -> tuple[ARIDETrainer, TablePolicy]:
    """Instruction "easy" succeeds 4 of 5 times, "hard" 1 of 5 (one-step episodes)."""
    policy = TablePolicy(1, p_good=[0.5], probe=True)
    tr = trainer_for(policy, traj_filter_quantile=q, traj_filter_mode=mode, alpha=0.0,
                     is_beta_start=0.0, is_beta_end=0.0, batch_episodes=10, actor_lr=0.0,
                     traj_critic_lr=0.05, critic_lr=critic_lr, max_stale_share=None)
    lm = math.log(0.5)
    spec = [("easy", 1.0)] * 4 + [("easy", 0.0)] + [("hard", 0.0)] * 4 + [("hard", 1.0)]
    for i, (instr, r) in enumerate(spec):
        tag = f"{instr}-{'win' if r else 'fail'}-{i}"
        tr.add_episode(episode([step(0, GOOD, r, lm, tag=tag)], reward=r,
                               instruction=instr, eid=tag))
    return tr, policy


def test_trajectory_critic_learns_each_instructions_success_rate() -> None:
    tr, _ = _filter_replay(0.0)
    before = tr.instruction_values(["easy", "hard"])
    for _ in range(150):
        tr.update()
    easy, hard = tr.instruction_values(["easy", "hard", "easy"])[:2]
    assert easy == pytest.approx(0.8, abs=0.08) and hard == pytest.approx(0.2, abs=0.08)
    assert abs(before[0] - before[1]) < 0.2  # it was learned, not built in
    assert tr.instruction_values([]) == []


def test_trajectory_filter_drops_the_failure_the_critic_expected_to_succeed() -> None:
    """After V_traj has learned easy ≈ 0.8, hard ≈ 0.2, r − V_traj is ≈ −0.8 for the easy
    failure, −0.2 for hard failures, +0.2 / +0.8 for the successes. The 0.1-quantile
    of those ten lies between −0.8 and −0.2: only the easy failure leaves the policy
    gradient (its steps get no gradient); every other episode keeps its gradient."""
    tr, policy = _filter_replay(0.1)
    for _ in range(150):
        m = tr.update()
    assert m["traj_filter_kept"] == pytest.approx(0.9)
    assert -0.8 < m["traj_filter_threshold"] < -0.2
    g = {k: v[0] for k, v in grads_by_tag(policy).items()}
    assert len(g) == 10
    dropped = {k for k, v in g.items() if v == 0.0}
    assert dropped == {"easy-fail-4"}


def test_the_actor_buffer_trains_the_actor_on_the_filtered_episodes_only() -> None:
    """The released code's actor buffer (mode "buffer", q = 0.9): once V_traj has learned
    easy ≈ 0.8, hard ≈ 0.2, the top 10 % of r − V_traj is the one success of the hard
    instruction (+0.8; the easy successes are +0.2). Every step of the actor's batch is
    that episode, pulled up, while the step critic still fits the whole replay (the
    critic batch of 10 covers all of it: V moves toward the mean reward 0.5)."""
    tr, policy = _filter_replay(0.9, mode="buffer", critic_lr=0.05)
    v0 = float(tr.critic(policy._features(torch.arange(1))).detach()[0])
    for _ in range(150):
        m = tr.update()
    assert m["traj_filter_kept"] == pytest.approx(0.1)
    assert 0.2 < m["traj_filter_threshold"] < 0.8
    g = grads_by_tag(policy)
    assert set(g) == {"hard-win-9"} and len(g["hard-win-9"]) == 10
    assert all(x < 0 for x in g["hard-win-9"])  # −(pull)/N: log π of the win goes up
    v = float(tr.critic(policy._features(torch.arange(1))).detach()[0])
    assert abs(v - 0.5) < 0.1 and abs(v0 - 0.5) > abs(v - 0.5)


def test_the_actor_buffer_needs_episodes_to_draw_from() -> None:
    with pytest.raises(ConfigError, match="traj_filter_sample"):
        ARIDEConfig(traj_filter_quantile=0.9, traj_filter_sample=0)
    with pytest.raises(ConfigError, match="traj_filter_mode"):
        ARIDEConfig(traj_filter_mode="sometimes")  # type: ignore[arg-type]
    ARIDEConfig(traj_filter_quantile=0.9, traj_filter_mode="batch", traj_filter_sample=0)


@pytest.mark.parametrize("knob", ["max_policy_lag", "entropy_target", "max_stale_share",
                                  "advantage_floor", "horizon_updates", "micro_batch"])
def test_none_spelled_as_text_turns_an_optional_knob_off(knob: str) -> None:
    # a learner file is TOML, which has no null: "none" (any case) must mean None
    assert getattr(ARIDEConfig(**{knob: "None"}), knob) is None  # type: ignore[arg-type]


def test_none_as_text_is_no_value_for_a_knob_that_needs_one() -> None:
    with pytest.raises(ConfigError, match="entropy_coef must be a number, not 'none'"):
        ARIDEConfig(entropy_coef="none")  # type: ignore[arg-type]
    assert ARIDEConfig(actor_ratio="none").actor_ratio == "none"  # a mode, not "off"


def test_the_digirl_baselines_config_reads_text_knobs_the_same_way() -> None:
    from distrl_sdk.learn.digirl import DigiRLConfig

    with pytest.raises(ConfigError, match="DigiRL config: gamma must be a number"):
        DigiRLConfig(gamma="none")  # type: ignore[arg-type]


def test_the_filter_modes_differ_only_where_the_actor_trains() -> None:
    """Same replay and q: mode "batch" leaves every kept episode of the critics' batch in
    the actor's gradient; mode "buffer" gives the actor its own batch of kept ones."""
    batch_tr, batch_policy = _filter_replay(0.9, mode="batch")
    buffer_tr, buffer_policy = _filter_replay(0.9, mode="buffer")
    for _ in range(150):
        batch_tr.update()
        buffer_tr.update()
    in_batch = {k for k, v in grads_by_tag(batch_policy).items() if any(x != 0 for x in v)}
    assert in_batch == {"hard-win-9"}  # nine of the ten steps carry no gradient
    assert len(batch_policy.last_grads()) == 10 and len(buffer_policy.last_grads()) == 10
    assert {k for k, _ in grads_by_tag(buffer_policy).items()} == {"hard-win-9"}


# -- IS β over the run's real length -------------------------------------------------
def test_is_beta_reaches_its_end_at_the_planned_horizon() -> None:
    tr, _ = _filled_trainer(4, batch_episodes=2, horizon_updates=10, is_beta_start=0.4)
    assert tr.is_beta() == pytest.approx(0.4)
    betas = [tr.update()["is_beta"] for _ in range(11)]
    assert betas[5] == pytest.approx(0.4 + 0.6 * 5 / 10)
    assert betas[10] == pytest.approx(1.0) and tr.is_beta() == 1.0
    tr.set_horizon(40)  # a longer run than planned: β goes back along the new schedule
    assert tr.is_beta() == pytest.approx(0.4 + 0.6 * 11 / 40)
    tr.set_horizon(None, seconds=100.0)
    tr.train_seconds = 50.0
    assert tr.is_beta() == pytest.approx(0.7)
    default = ARIDETrainer(TablePolicy(1))  # no horizon known: is_beta_anneal_updates
    default.updates = default.config.is_beta_anneal_updates
    assert default.is_beta() == pytest.approx(default.config.is_beta_end)
    with pytest.raises(ValueError):
        tr.set_horizon(0)

"""A-RIDE and the DigiRL baseline learn on a contextual bandit, with real torch.

The toy policy is a real :class:`TrainablePolicy`: a softmax over K arms given a fake
observation (a one-hot context), so expected reward is exact: mean over contexts of
π(correct arm | context). Episodes hold 1–3 pulls; arm K−1 is "an action that did not
parse" (invalid, reward 0). Data is collected by a behaviour snapshot that lags the
learner by a few versions, so the off-policy machinery is exercised.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from distrl_sdk.learn import (
    ARIDEConfig,
    ARIDETrainer,
    DigiRLConfig,
    DigiRLTrainer,
    EpisodeRecord,
    PolicyOutput,
    StepRecord,
    TrainablePolicy,
    Trainer,
)
from distrl_sdk.policy import Decision, Observation

N_CTX, K = 4, 5
INVALID = K - 1
CORRECT = [0, 1, 2, 3]  # the rewarded arm per context (never the invalid one)


class BanditPolicy:
    """Softmax over K arms from a one-hot context; features are the hidden layer."""

    kind = "toy-bandit"

    def __init__(self, seed: int = 0, hidden: int = 16, peaked_arm: int | None = None) -> None:
        g = torch.Generator().manual_seed(seed)
        self.feature_dim = hidden
        self.body = nn.Sequential(nn.Linear(N_CTX, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, K)
        with torch.no_grad():
            for p in [*self.body.parameters(), *self.head.parameters()]:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            if peaked_arm is not None:  # start far from uniform
                self.head.bias[peaked_arm] = 3.0
        # instruction features are fixed, not learned: the same for every seed
        self._instr = torch.randn(64, hidden, generator=torch.Generator().manual_seed(64))
        self.gen = torch.Generator().manual_seed(seed)  # sampling: no global RNG involved

    def _logits(self, ctx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(nn.functional.one_hot(ctx, N_CTX).float())
        return self.head(h), h

    def probs(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.softmax(self._logits(torch.arange(N_CTX))[0], -1)

    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        ctx = torch.tensor([int(o.instruction.split()[-1]) for o in observations])
        with torch.no_grad():
            logp = torch.log_softmax(self._logits(ctx)[0], -1)
        arms = (logp.argmax(-1) if greedy
                else torch.multinomial(logp.exp(), 1, generator=self.gen).squeeze(-1))
        return [Decision(action=int(a), log_prob=float(logp[i, a]), obs={"ctx": int(c)},
                         choice={"arm": int(a)})
                for i, (a, c) in enumerate(zip(arms, ctx, strict=True))]

    def evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput:
        ctx = torch.tensor([s.obs["ctx"] for s in steps])
        arm = torch.tensor([s.choice["arm"] for s in steps])
        logits, h = self._logits(ctx)
        logp = torch.log_softmax(logits, -1)
        entropy = -(logp.exp() * logp).sum(-1)
        return PolicyOutput(logp.gather(1, arm[:, None]).squeeze(1), entropy, h)

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        return self._instr[[zlib.crc32(i.encode()) % 64 for i in instructions]]

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [*self.body.parameters(), *self.head.parameters()]

    def weights(self) -> dict[str, torch.Tensor]:
        return {**{f"body.{k}": v for k, v in self.body.state_dict().items()},
                **{f"head.{k}": v for k, v in self.head.state_dict().items()}}

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None:
        self.body.load_state_dict({k[5:]: v for k, v in weights.items() if k[:5] == "body."})
        self.head.load_state_dict({k[5:]: v for k, v in weights.items() if k[:5] == "head."})

    def config_dict(self) -> dict[str, Any]:
        return {"hidden": self.feature_dim}


def expected_reward(policy: BanditPolicy) -> float:
    p = policy.probs()
    return float(np.mean([float(p[c, CORRECT[c]]) for c in range(N_CTX)]))


def collect(behaviour: BanditPolicy, version: int, n: int, rng: np.random.Generator,
            *, reward_scale: float = 1.0, frames: bool = False) -> list[EpisodeRecord]:
    """``n`` episodes of 1–3 pulls; step reward = correct/H, final reward = fraction correct."""
    behaviour.gen.manual_seed(int(rng.integers(1 << 62)))
    episodes = []
    for _ in range(n):
        length = int(rng.integers(1, 4))
        ctxs = rng.integers(0, N_CTX, size=length)
        obs = [Observation(instruction=f"pick for context {c}", elements=[],
                           screen_size=(1, 1), step=t) for t, c in enumerate(ctxs)]
        decisions = behaviour.decide(obs)
        steps, correct = [], 0
        for c, d in zip(ctxs, decisions, strict=True):
            ok = d.choice is not None and d.choice["arm"] == CORRECT[int(c)]
            correct += ok
            assert d.obs is not None and d.choice is not None and d.log_prob is not None
            steps.append(StepRecord(obs=d.obs, choice=d.choice, log_mu=d.log_prob,
                                    reward=reward_scale * ok / length, policy_version=version,
                                    invalid=d.choice["arm"] == INVALID,
                                    frame=bytes(rng.integers(0, 256, 7, dtype=np.uint8))
                                    if frames else None))
        episodes.append(EpisodeRecord(id=f"e{rng.integers(1 << 62)}", task="bandit",
                                      instruction=f"pick for context {int(ctxs[0])}",
                                      steps=steps, success=correct == length,
                                      reward=reward_scale * correct / length))
    return episodes


def train(trainer: Trainer, policy: BanditPolicy, *, updates: int, seed: int = 0,
          lag: int = 4, per_update: int = 4, reward_scale: float = 1.0) -> list[dict[str, float]]:
    """Async-style loop: a behaviour copy refreshed every ``lag`` updates feeds replay."""
    rng = np.random.default_rng(seed)
    behaviour, b_version = copy.deepcopy(policy), 0
    for ep in collect(behaviour, 0, 32, rng, reward_scale=reward_scale):
        trainer.add_episode(ep)
    metrics = []
    for _ in range(updates):
        if trainer.version - b_version >= lag:
            behaviour, b_version = copy.deepcopy(policy), trainer.version
        for ep in collect(behaviour, b_version, per_update, rng, reward_scale=reward_scale):
            trainer.add_episode(ep)
        assert trainer.ready()
        metrics.append(trainer.update())
    return metrics


def test_toy_policy_meets_the_contract() -> None:
    assert isinstance(BanditPolicy(), TrainablePolicy)


@pytest.mark.slow
def test_aride_improves_expected_reward() -> None:
    policy = BanditPolicy(seed=1)
    before = expected_reward(policy)
    trainer = ARIDETrainer(policy, ARIDEConfig(actor_lr=1e-2, critic_lr=3e-3,
                                               traj_critic_lr=3e-3, min_episodes=16,
                                               batch_episodes=16, max_policy_lag=20))
    metrics = train(trainer, policy, updates=120)
    after = expected_reward(policy)
    assert before < 0.3
    assert after > 0.7, f"expected reward {before:.2f} → {after:.2f}"
    assert trainer.version == 120
    last = metrics[-1]
    for key in ("actor_loss", "critic_loss", "traj_critic_loss", "entropy", "mean_rho",
                "mean_priority", "policy_lag_min", "policy_lag_avg", "policy_lag_max",
                "replay_size"):
        assert np.isfinite(last[key]), key
    assert 0 <= last["policy_lag_min"] <= last["policy_lag_avg"] <= last["policy_lag_max"]
    assert max(m["policy_lag_max"] for m in metrics) >= 3  # the behaviour really lagged
    # the bound K = 20 held: nothing older was left in replay after an update
    assert max(trainer.replay.lags(trainer.version)) <= 20


def test_aride_priorities_follow_the_td_error() -> None:
    """Episodes the critic cannot yet explain (large |δ|) get higher priority."""
    policy = BanditPolicy(seed=2)
    trainer = ARIDETrainer(policy, ARIDEConfig(min_episodes=1, batch_episodes=8,
                                               refresh_every=0, w2=0.0, w3=0.0))
    rng = np.random.default_rng(0)
    quiet = collect(policy, 0, 8, rng, reward_scale=0.0)  # all rewards 0: V ≈ 0 fits
    loud = collect(policy, 0, 8, rng, reward_scale=5.0)
    loud = [e for e in loud if e.reward > 0] or loud
    for ep in quiet + loud:
        trainer.add_episode(ep)
    trainer.refresh_priorities(trainer.replay.filled())
    pri = {trainer.replay.episode(int(s)).id: p for s, p in
           zip(trainer.replay.filled(), trainer.replay.priorities(trainer.replay.filled()),
               strict=True)}
    assert min(pri[e.id] for e in loud) > max(pri[e.id] for e in quiet)


def test_digirl_baseline_trains() -> None:
    policy = BanditPolicy(seed=1)
    before = expected_reward(policy)
    trainer = DigiRLTrainer(policy, DigiRLConfig(actor_lr=1e-2, critic_lr=3e-3,
                                                 traj_critic_lr=3e-3, min_episodes=16))
    metrics = train(trainer, policy, updates=120)
    after = expected_reward(policy)
    assert after > before + 0.2, f"expected reward {before:.2f} → {after:.2f}"
    assert trainer.version == 120 and metrics[-1]["replay_size"] > 0


def _entropy(policy: BanditPolicy) -> float:
    p = policy.probs()
    return float(-(p * p.log()).sum(-1).mean())


@pytest.mark.parametrize("reward_scale", [0.0])
def test_entropy_bonus_raises_entropy(reward_scale: float) -> None:
    """No reward signal: only the β·H term moves a peaked policy, towards uniform."""
    results = {}
    for beta in (0.0, 0.5):
        policy = BanditPolicy(seed=3, peaked_arm=0)
        start = _entropy(policy)
        trainer = ARIDETrainer(policy, ARIDEConfig(actor_lr=1e-2, entropy_coef=beta,
                                                   invalid_penalty=0.0, min_episodes=8))
        train(trainer, policy, updates=30, reward_scale=reward_scale)
        results[beta] = _entropy(policy)
    assert results[0.5] > start + 0.3
    assert results[0.5] > results[0.0] + 0.3


def test_invalid_action_penalty_suppresses_invalid_actions() -> None:
    results = {}
    for kappa in (0.0, 1.0):
        policy = BanditPolicy(seed=4, peaked_arm=INVALID)
        start = float(policy.probs()[:, INVALID].mean())
        trainer = ARIDETrainer(policy, ARIDEConfig(actor_lr=1e-2, entropy_coef=0.0,
                                                   invalid_penalty=kappa, min_episodes=8))
        train(trainer, policy, updates=30, reward_scale=0.0)
        results[kappa] = float(policy.probs()[:, INVALID].mean())
    assert results[1.0] < start - 0.2
    assert results[1.0] < results[0.0] - 0.2


def test_lag_bound_refuses_stale_episodes() -> None:
    policy = BanditPolicy()
    trainer = ARIDETrainer(policy, ARIDEConfig(max_policy_lag=2, min_episodes=1))
    rng = np.random.default_rng(0)
    trainer.add_episode(collect(policy, 0, 1, rng)[0])
    for _ in range(3):
        trainer.update()
    assert trainer.version == 3
    assert not trainer.add_episode(collect(policy, 0, 1, rng)[0])  # 3 versions behind
    assert trainer.add_episode(collect(policy, 1, 1, rng)[0])
    assert len(trainer.replay) == 1  # the version-0 episode was pruned on the way


UI_DUMP = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="p"
 content-desc="" clickable="false" bounds="[0,0][1080,2400]">
 <node index="0" text="Bluetooth" resource-id="android:id/title" class="android.widget.Button"
  package="p" content-desc="" clickable="true" bounds="[0,500][1080,700]"/>
 <node index="1" text="Display" resource-id="android:id/title" class="android.widget.Button"
  package="p" content-desc="" clickable="true" bounds="[0,700][1080,900]"/>
</node></hierarchy>"""


def _bluetooth_episodes(policy: Any, n: int) -> list[EpisodeRecord]:
    """``n`` three-step episodes the policy plays on UI_DUMP; every other one succeeds."""
    from distrl_sdk.uitree import parse_ui_dump

    elements = parse_ui_dump(UI_DUMP)
    episodes = []
    for e in range(n):
        obs = [Observation("Turn on Bluetooth", elements, (1080, 2400), t) for t in range(3)]
        steps = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                            reward=float(e % 2 and t == 2), policy_version=0)
                 for t, d in enumerate(policy.decide(obs))]
        episodes.append(EpisodeRecord(id=f"u{e}", task="t", instruction="Turn on Bluetooth",
                                      steps=steps, success=bool(e % 2), reward=float(e % 2)))
    return episodes


@pytest.mark.parametrize("algo", ["aride", "digirl"])
def test_trainers_take_the_uitree_policy(algo: str) -> None:
    """The real UI-tree policy through a few updates: weights move, metrics are finite."""
    from distrl_sdk.policies.uitree import UITreePolicy

    policy = UITreePolicy.from_config({"buckets": 2048, "embed_dim": 16, "hidden": 32})
    episodes = _bluetooth_episodes(policy, 6)
    trainer: ARIDETrainer | DigiRLTrainer = (
        ARIDETrainer(policy, ARIDEConfig(min_episodes=4, batch_episodes=4, actor_lr=1e-2))
        if algo == "aride" else
        DigiRLTrainer(policy, DigiRLConfig(min_episodes=4, batch_episodes=4,
                                           actor_batch_episodes=4, actor_lr=1e-2)))
    for ep in episodes:
        assert trainer.add_episode(ep)
    before = policy.weights()
    metrics = [trainer.update() for _ in range(3)]
    after = policy.weights()
    assert trainer.version == 3
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert all(np.isfinite(v) for m in metrics for v in m.values())


@pytest.mark.parametrize("algo", ["aride", "digirl"])
def test_a_hostile_episode_cannot_poison_the_weights(algo: str) -> None:
    """A reward of 1e30 makes A-RIDE's squared critic error overflow: the step is skipped
    and counted; the weights stay finite (DigiRL only sees r > 0, so it never overflows)."""
    policy = BanditPolicy()
    trainer: ARIDETrainer | DigiRLTrainer = (
        ARIDETrainer(policy, ARIDEConfig(min_episodes=1, batch_episodes=4)) if algo == "aride"
        else DigiRLTrainer(policy, DigiRLConfig(min_episodes=1, batch_episodes=4,
                                                actor_batch_episodes=4)))
    rng = np.random.default_rng(0)
    bad = collect(policy, 0, 1, rng)[0]
    bad.steps[0] = StepRecord(obs=bad.steps[0].obs, choice=bad.steps[0].choice,
                              log_mu=bad.steps[0].log_mu, reward=1e30, policy_version=0)
    trainer.add_episode(bad)
    metrics = trainer.update()
    assert metrics["skipped_steps"] >= (1 if algo == "aride" else 0)
    assert np.isfinite(metrics["actor_loss"])
    assert all(torch.isfinite(v).all() for v in trainer.state_tensors().values())


@pytest.mark.parametrize("algo", ["aride", "digirl"])
def test_actor_dropout_regularises_the_actor_but_ratios_read_every_token(algo: str) -> None:
    """With ``actor_dropout`` the actor's gradient pass drops tokens (the policy is in its
    training mode only inside it), while ratios come from a pass with every token: on
    fresh on-policy data every ρ is exactly 1 (a dropout pass would scatter them)."""
    from distrl_sdk.policies.uitree import UITreePolicy

    policy = UITreePolicy.from_config({"buckets": 2048, "embed_dim": 16, "hidden": 32,
                                       "token_dropout": 0.5})
    with torch.no_grad():
        for prm in policy.trainable_parameters():
            prm.add_(0.3 * torch.randn(prm.shape, generator=torch.Generator().manual_seed(1)))
    modes: list[bool] = []
    real_evaluate = policy.evaluate

    def spy(steps: Any, *, grad: bool = True) -> Any:
        modes.append(policy.model.training)
        return real_evaluate(steps, grad=grad)

    policy.evaluate = spy  # type: ignore[method-assign]
    trainer: ARIDETrainer | DigiRLTrainer = (
        ARIDETrainer(policy, ARIDEConfig(min_episodes=4, batch_episodes=4, actor_dropout=True,
                                         max_stale_share=None))
        if algo == "aride" else
        DigiRLTrainer(policy, DigiRLConfig(min_episodes=4, batch_episodes=4,
                                           actor_batch_episodes=4, actor_dropout=True)))
    for ep in _bluetooth_episodes(policy, 4):
        trainer.add_episode(ep)
    m = trainer.update()
    assert m["mean_rho"] == pytest.approx(1.0, abs=1e-5)  # ratios from every token
    assert True in modes  # the actor pass (and only it) in training mode
    assert not policy.model.training  # back to acting mode after the update
    trainer.config.actor_dropout = False
    modes.clear()
    trainer.update()
    assert True not in modes  # off: no pass in training mode

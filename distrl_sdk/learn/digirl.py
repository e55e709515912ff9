"""The DigiRL-style baseline (arXiv 2406.11896): what A-RIDE is
measured against.

- Uniform replay over episodes (the same buffer with α = 0, β = 0 and no lag bound).
- Step critic V(s) ∈ (0, 1): a classifier of "the Monte Carlo return from s is > 0",
  trained by BCE (as DigiRL's code does).
- Trajectory critic V_traj(instruction): Monte Carlo BCE on the final reward.
- Trajectory filter: the actor trains only on episodes whose r_τ − V_traj(g) is in the
  replay's top 10 % (``filter_quantile`` 0.9), recomputed every update.
- Doubly-robust step advantage (DigiRL paper), then **binarised**:
      A_t = λ^{H−t} r_H + (1 − λ^{H−t}) (r_t + γ V(s_{t+1}) − V(s_t)),   weight 1[A_t > 0]
- Actor: advantage-weighted regression with those binary weights, no importance
  ratios, no entropy bonus:  L_π = −E[ 1[A_t > 0] log π(a_t|s_t) ].
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import EpisodeRecord, TrainablePolicy, has_training_mode
from distrl_sdk.learn.aride import (
    EpisodeBatch,
    discounted_returns,
    doubly_robust_advantage,
    ratio_stats,
)
from distrl_sdk.learn.critics import StepCritic, TrajectoryCritic
from distrl_sdk.learn.knobs import read_text_knobs
from distrl_sdk.learn.microbatch import evaluate_detached
from distrl_sdk.learn.replay import PrioritizedReplay
from distrl_sdk.learn.state import ActorCriticState

__all__ = ["DigiRLConfig", "DigiRLTrainer"]


@dataclass
class DigiRLConfig:
    """Knobs of the DigiRL-style baseline ("code" = DigiRL/DistRL released configs)."""

    gamma: float = 0.5  # γ (code: 0.5)
    dr_lambda: float = 0.5  # λ of the doubly-robust advantage (mix of MC and one-step TD)
    filter_quantile: float = 0.9  # actor trains on the top 10 % of r − V_traj (code: 0.9)
    capacity: int = 10_000  # uniform circular replay, in episodes (code: 10000)
    batch_episodes: int = 16  # episodes per critic batch
    actor_batch_episodes: int = 16  # episodes per actor batch, from the filtered set
    min_episodes: int = 32  # ready() once replay holds this many
    actor_lr: float = 1e-4  # Adam (code: lm_lr 1e-4)
    critic_lr: float = 1e-4  # Adam (code: critic_lr 1e-4)
    traj_critic_lr: float = 1e-4  # Adam
    critic_hidden: int = 256
    max_grad_norm: float = 1.0  # (code: 0.01)
    # the demonstration anchor, as in A-RIDE (ActorCriticState.add_demonstrations); 0 = off
    demo_coef: float = 0.0
    demo_batch_steps: int = 64
    # the actor's pass (and the anchor's) in the policy's training mode, as in A-RIDE
    actor_dropout: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        read_text_knobs(self, "DigiRL")
        if not 0 <= self.filter_quantile < 1 or not 0 <= self.gamma <= 1 \
                or not 0 <= self.dr_lambda <= 1 or self.capacity < 1 \
                or self.batch_episodes < 1 or self.actor_batch_episodes < 1 \
                or self.demo_coef < 0 or self.demo_batch_steps < 1:
            raise ConfigError(f"DigiRL config out of range: {self}")


class DigiRLTrainer(ActorCriticState):
    """DigiRL-style AWR over any :class:`TrainablePolicy` (the ``learn.api`` Trainer)."""

    trainer_kind, trainer_label = "digirl", "DigiRL"
    config: DigiRLConfig

    def __init__(self, policy: TrainablePolicy, config: DigiRLConfig | None = None) -> None:
        self.policy, self.config = policy, config or DigiRLConfig()
        cfg = self.config
        self.version, self.updates, self.skipped_steps = 0, 0, 0
        self.replay = PrioritizedReplay(cfg.capacity, max_lag=None, seed=cfg.seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.critic = StepCritic(policy.feature_dim, cfg.critic_hidden)
            self.traj_critic = TrajectoryCritic(policy.feature_dim, cfg.critic_hidden)
        self.actor_opt = torch.optim.Adam(policy.trainable_parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.traj_opt = torch.optim.Adam(self.traj_critic.parameters(), lr=cfg.traj_critic_lr)
        self.timings: dict[str, float] = {"update": 0.0}
        self._init_demos(cfg.seed)

    def add_episode(self, episode: EpisodeRecord) -> bool:
        added = bool(episode.steps) and self.replay.add(episode, 1.0) is not None
        prepare = getattr(self.policy, "prepare", None)
        if added and prepare is not None:  # featurise once, not at every replay
            prepare(episode.steps)
        return added

    def ready(self) -> bool:
        return len(self.replay) >= self.config.min_episodes

    def update(self) -> dict[str, float]:
        cfg = self.config
        if len(self.replay) == 0:
            raise RuntimeError("DigiRL update on an empty replay buffer (check ready() first)")
        t_start = time.perf_counter()

        # 1. critics on a uniform batch
        sample = self.replay.sample(cfg.batch_episodes, 0.0, 0.0, current_version=self.version)
        batch = EpisodeBatch.build(sample.episodes)
        with torch.no_grad():
            out = self.policy.evaluate(batch.steps)
            g_feats = self.policy.instruction_features(batch.instructions)
        logits = batch.pad(self.critic.forward(out.features))
        labels = (discounted_returns(batch.rewards, batch.mask, cfg.gamma) > 0).float()
        critic_loss = (F.binary_cross_entropy_with_logits(logits, labels, reduction="none")
                       * batch.mask).sum() / batch.mask.sum()
        self._step(self.critic_opt, critic_loss, self.critic.parameters())
        traj_loss = self.traj_critic.loss(self.traj_critic.logits(g_feats), batch.final_reward)
        self._step(self.traj_opt, traj_loss, self.traj_critic.parameters())

        # 2. trajectory filter over the whole replay: top (1 − q) of r − V_traj(g)
        slots = self.replay.filled()
        episodes = [self.replay.episode(int(i)) for i in slots]
        v_traj = np.array(self.instruction_values([e.instruction for e in episodes]))
        traj_adv = np.array([e.reward for e in episodes]) - v_traj
        kept = slots[traj_adv >= np.quantile(traj_adv, cfg.filter_quantile)]
        pick = self.replay.rng.choice(kept, size=cfg.actor_batch_episodes)

        # 3. binarised doubly-robust advantage, then AWR on the filtered episodes
        abatch = EpisodeBatch.build([self.replay.episode(int(i)) for i in pick])
        if cfg.actor_dropout and has_training_mode(self.policy):
            exact = evaluate_detached(self.policy, abatch.steps)  # every token
            with self._actor_training():
                out = self.policy.evaluate(abatch.steps)
        else:
            exact = out = self.policy.evaluate(abatch.steps)
        log_pi = abatch.pad(out.log_prob)
        with torch.no_grad():
            v = torch.sigmoid(abatch.pad(self.critic(exact.features)))
            adv = doubly_robust_advantage(abatch.rewards, v, abatch.mask, gamma=cfg.gamma,
                                          lam=cfg.dr_lambda)
            weight = (adv > 0).float() * abatch.mask
            rho = torch.exp((abatch.pad(exact.log_prob).detach() - abatch.log_mu)
                            .clamp(max=30.0)) * abatch.mask
        n = abatch.mask.sum()
        actor_loss = -(weight * log_pi).sum() / n
        demo_nll = self._demo_nll()
        if demo_nll is not None:
            actor_loss = actor_loss + cfg.demo_coef * demo_nll
        changed = self._step(self.actor_opt, actor_loss, self.policy.trainable_parameters())

        self.updates += 1
        self.version += changed  # a version per update that moved the policy
        self.timings["update"] += time.perf_counter() - t_start
        lags = self.replay.lags(self.version, pick)
        return {"actor_loss": float(actor_loss.detach()),
                "critic_loss": float(critic_loss.detach()),
                "traj_critic_loss": float(traj_loss.detach()),
                "entropy": float((abatch.pad(exact.entropy.detach())).sum() / n),
                # the same ratio diagnostics as A-RIDE's (DigiRL ignores ratios; they show
                # how off-policy its replay is): clipped above 1, stale below 0.1, ESS
                **ratio_stats(rho, abatch.mask, rho_max=1.0, stale_rho=0.1),
                "positive_advantage": float(weight.sum() / n),
                "mean_priority": 1.0, "kept_episodes": float(kept.size),
                **({} if demo_nll is None else {"demo_nll": float(demo_nll.detach())}),
                "policy_lag_min": float(lags.min()), "policy_lag_avg": float(lags.mean()),
                "policy_lag_max": float(lags.max()), "replay_size": float(len(self.replay)),
                "steps": float(n), "version": float(self.version),
                "skipped_steps": float(self.skipped_steps)}

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor": self.actor_opt, "critic": self.critic_opt, "traj": self.traj_opt}

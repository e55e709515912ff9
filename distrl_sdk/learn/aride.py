"""A-RIDE: Advantage-based Retrace Improved by Distributed prioritized Experience replay.

DistRL (arXiv 2410.14803) §A-RIDE as the paper states it — not the released code's
simplifications (trace decay fixed at 1, binarised advantage, a critic loss without
gradient, priorities computed but sampling uniform). Notation: episode τ = (s_0, a_0,
r_0, …, s_H, a_H, r_H) collected by behaviour policy μ (log μ recorded on the farm);
π the current policy, V the step critic, V_traj the trajectory critic.

1. Importance ratios and traces, per step:
       ρ_t = π(a_t|s_t) / μ(a_t|s_t),      c_t = λ · min(1, ρ_t)

2. Retrace(λ) on V (V(s_{H+1}) = 0: episodes end):
       δ_t = Σ_{k=t..H} γ^{k−t} (Π_{i=t+1..k} c_i) [r_k + γ V(s_{k+1}) − V(s_k)]
   computed backwards as δ_t = TD_t + γ c_{t+1} δ_{t+1}; target v_t = V(s_t) + δ_t.
   λ = 0 gives one-step TD targets; λ = 1 on-policy gives Monte Carlo returns.

3. Step critic: L_V = E_ν[ w_τ (V(s_t) − v_t)² ]       (w_τ: DPER importance weight)
   Trajectory critic (Monte Carlo BCE on the final reward r_τ ∈ [0, 1]):
       L_traj = −E_ν[ w_τ (r_τ log V_traj(g) + (1 − r_τ) log(1 − V_traj(g))) ]

4. Off-policy-corrected advantage (real-valued, never binarised):
       A_t = r_t + γ v_{t+1} − V(s_t)                   (v_{H+1} = 0)

5. Actor, with ρ̄_t = min(ρ_max, ρ_t):
       L_π = −E_ν[ w_τ ρ̄_t A_t log π(a_t|s_t) ] − β E_ν[ w_τ H(π(·|s_t)) ]
             + κ E_ν[ w_τ ρ̄_t P_invalid(a_t) log π(a_t|s_t) ]
   The last term is the score-function gradient of κ·E_π[P_invalid]: it lowers the
   probability of actions that did not parse (P_invalid = 1) and is 0 otherwise. The
   paper writes its weight as λ (reusing the trace symbol); here it is κ.
   Optionally (``traj_filter_quantile`` q > 0) only episodes whose trajectory advantage
   r_τ − V_traj(g) is in the batch's top (1 − q) enter the policy-gradient term.

6. DPER priority of each replayed episode, recomputed as π moves (for every sampled
   episode after each update, and for the stalest ``refresh_size`` every
   ``refresh_every`` updates):
       p(τ) = w1 · mean_t |r_t + γ V(s_{t+1}) − V(s_t)|
            + w2 · mean_t ρ_t + w3 · mean_t(−log π(a_t|s_t))
   sampled ∝ p^α with weights w_τ = (N·P(τ))^−β / max w, β annealed to 1
   (:mod:`distrl_sdk.learn.replay`), policy lag bounded by K.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import EpisodeRecord, StepRecord, TrainablePolicy
from distrl_sdk.learn.critics import StepCritic, TrajectoryCritic
from distrl_sdk.learn.replay import LagMode, PrioritizedReplay
from distrl_sdk.learn.state import ActorCriticState

__all__ = ["ARIDEConfig", "ARIDETrainer", "EpisodeBatch", "retrace_targets"]


@dataclass
class ARIDEConfig:
    """Every knob of A-RIDE. "code" = DistRL's released configs (research notes §2.2);
    the paper's hyper-parameter appendix was not available."""

    gamma: float = 0.9  # γ discount (code: 0.5, tuned for 10-step AitW episodes)
    trace_lambda: float = 1.0  # λ in c = λ·min(1, ρ) (code: fixed 1; Munos et al. 2016: 1)
    rho_max: float = 1.0  # ρ̄ = min(ρ_max, ρ) in the actor loss (code: clip_pg_rho_threshold 1)
    entropy_coef: float = 0.05  # β (code: 0.05 when use_entropy)
    invalid_penalty: float = 1.0  # κ, weight of P_invalid (paper's "λ"; value unknown)
    traj_filter_quantile: float = 0.0  # q; 0 = no filter (code's actor buffer: 0.9)
    w1: float = 50.0  # DPER weight of mean |TD| (code: dper_w1 = 50)
    w2: float = 1.0  # DPER weight of mean ρ (code: 1.0)
    w3: float = 0.01  # DPER weight of mean −log π (code: 0.01)
    priority_rho_cap: float = 10.0  # ρ capped inside p(τ) so one freak ratio can't own replay
    alpha: float = 0.6  # priority exponent α (Schaul et al. 2016 proportional: 0.6)
    is_beta_start: float = 0.4  # IS exponent β at update 0 (Schaul et al.: 0.4)
    is_beta_end: float = 1.0  # … annealed linearly to this (full correction)
    is_beta_anneal_updates: int = 10_000  # … over this many updates
    priority_eps: float = 1e-6  # added to every priority (nothing becomes unsampleable)
    refresh_every: int = 20  # every N updates re-score the stalest episodes (0 = never)
    refresh_size: int = 8  # … this many of them (a forward pass each: keep it small)
    capacity: int = 10_000  # replay size in episodes (code: 10000, circular)
    batch_episodes: int = 16  # episodes per update; all their steps train (code: 2 × 32 accum)
    min_episodes: int = 32  # ready() once replay holds this many
    max_policy_lag: int | None = 50  # K: bound on version − episode version (code: none)
    lag_mode: LagMode = "drop"  # "drop" older episodes, or "downweight" them
    lag_decay: float = 0.5  # downweight factor per version beyond K
    actor_lr: float = 1e-4  # Adam (code: lm_lr 1e-4)
    critic_lr: float = 1e-4  # Adam (code: critic_lr 1e-4)
    traj_critic_lr: float = 1e-4  # Adam (code: shares critic_lr)
    critic_hidden: int = 256  # width of both critic MLPs
    critic_steps: int = 1  # critic gradient steps per update (code: 5 epochs per iteration)
    max_grad_norm: float = 1.0  # per-network clip (code: 0.01, which only rescales Adam)
    seed: int = 0  # replay sampling and critic initialisation
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes kept in checkpoints

    def __post_init__(self) -> None:
        checks = {"gamma": 0 <= self.gamma <= 1, "trace_lambda": 0 <= self.trace_lambda <= 1,
                  "rho_max": self.rho_max > 0, "entropy_coef": self.entropy_coef >= 0,
                  "traj_filter_quantile": 0 <= self.traj_filter_quantile < 1,
                  "alpha": self.alpha >= 0, "is_beta_start": 0 <= self.is_beta_start <= 1,
                  "is_beta_end": 0 <= self.is_beta_end <= 1, "capacity": self.capacity >= 1,
                  "batch_episodes": self.batch_episodes >= 1,
                  "min_episodes": self.min_episodes >= 1,
                  "lag_mode": self.lag_mode in ("drop", "downweight"),
                  "max_policy_lag": self.max_policy_lag is None or self.max_policy_lag >= 0,
                  "critic_steps": self.critic_steps >= 1, "max_grad_norm": self.max_grad_norm > 0}
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ConfigError(f"A-RIDE config: invalid {', '.join(bad)} "
                              f"({', '.join(f'{k}={getattr(self, k)!r}' for k in bad)})")


@dataclass
class EpisodeBatch:
    """Episodes padded to [B, T] (left-aligned); steps flattened for one ``evaluate``."""

    steps: list[StepRecord]
    b_idx: torch.Tensor  # [N] episode of each flat step
    t_idx: torch.Tensor  # [N] time of each flat step
    mask: torch.Tensor  # [B, T] 1 on real steps
    rewards: torch.Tensor  # [B, T]
    log_mu: torch.Tensor  # [B, T]
    invalid: torch.Tensor  # [B, T] 1 where the action did not parse
    final_reward: torch.Tensor  # [B] evaluator score in [0, 1]
    instructions: list[str]

    @classmethod
    def build(cls, episodes: Sequence[EpisodeRecord]) -> EpisodeBatch:
        lengths = [len(e.steps) for e in episodes]
        if not lengths or min(lengths) == 0:
            raise ValueError("every episode in a batch needs at least one step")
        steps = [s for e in episodes for s in e.steps]
        b_idx = torch.repeat_interleave(torch.arange(len(episodes)), torch.tensor(lengths))
        t_idx = torch.cat([torch.arange(n) for n in lengths])
        shape = (len(episodes), max(lengths))
        mask, rewards, log_mu, invalid = (torch.zeros(shape) for _ in range(4))
        mask[b_idx, t_idx] = 1.0
        rewards[b_idx, t_idx] = torch.tensor([s.reward for s in steps], dtype=torch.float32)
        log_mu[b_idx, t_idx] = torch.tensor([s.log_mu for s in steps], dtype=torch.float32)
        invalid[b_idx, t_idx] = torch.tensor([float(s.invalid) for s in steps])
        return cls(steps, b_idx, t_idx, mask, rewards, log_mu, invalid,
                   torch.tensor([e.reward for e in episodes], dtype=torch.float32),
                   [e.instruction for e in episodes])

    def pad(self, flat: torch.Tensor) -> torch.Tensor:
        """[N] per-step values → [B, T] (0 past each episode's end); keeps gradients."""
        out = flat.new_zeros(self.mask.shape)
        return out.index_put((self.b_idx, self.t_idx), flat)

    def episode_mean(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T] → [B] mean over each episode's real steps."""
        return (x * self.mask).sum(1) / self.mask.sum(1)


def _shift(x: torch.Tensor) -> torch.Tensor:
    """x_{t+1} at position t, 0 after the last column (V(s_{H+1}) = 0)."""
    return torch.cat([x[:, 1:], x.new_zeros(x.shape[0], 1)], dim=1)


def retrace_targets(rewards: torch.Tensor, values: torch.Tensor, log_pi: torch.Tensor,
                    log_mu: torch.Tensor, mask: torch.Tensor, *, gamma: float, lam: float
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Retrace(λ) targets for V over padded episodes ([B, T], mask 1 on real steps).

    Returns (v, td, ρ): targets v_t = V(s_t) + δ_t, one-step TD errors, and ratios ρ_t.
    Episodes end after their last real step, so V(s_{H+1}) = 0 and nothing is
    bootstrapped past it."""
    rho = torch.exp((log_pi - log_mu).clamp(max=30.0)) * mask
    c = lam * rho.clamp(max=1.0)  # c_i = λ·min(1, ρ_i); 0 on padding, which cuts traces
    td = (rewards + gamma * _shift(values * mask) - values) * mask
    delta = torch.zeros_like(td)
    acc = torch.zeros_like(td[:, 0])
    for t in range(td.shape[1] - 1, -1, -1):  # δ_t = TD_t + γ c_{t+1} δ_{t+1}
        c_next = c[:, t + 1] if t + 1 < td.shape[1] else torch.zeros_like(acc)
        acc = td[:, t] + gamma * c_next * acc
        delta[:, t] = acc
    return (values + delta) * mask, td, rho


class ARIDETrainer(ActorCriticState):
    """A-RIDE over any :class:`TrainablePolicy` (the Trainer protocol of ``learn.api``)."""

    trainer_kind, trainer_label = "aride", "A-RIDE"
    config: ARIDEConfig

    def __init__(self, policy: TrainablePolicy, config: ARIDEConfig | None = None) -> None:
        self.policy, self.config = policy, config or ARIDEConfig()
        cfg = self.config
        self.version, self.updates, self.skipped_steps = 0, 0, 0
        self.replay = PrioritizedReplay(cfg.capacity, max_lag=cfg.max_policy_lag,
                                        lag_mode=cfg.lag_mode, lag_decay=cfg.lag_decay,
                                        eps=cfg.priority_eps, seed=cfg.seed)
        with torch.random.fork_rng(devices=[]):  # seeded critics, global RNG untouched
            torch.manual_seed(cfg.seed)
            self.critic = StepCritic(policy.feature_dim, cfg.critic_hidden)
            self.traj_critic = TrajectoryCritic(policy.feature_dim, cfg.critic_hidden)
        self.actor_opt = torch.optim.Adam(policy.trainable_parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.traj_opt = torch.optim.Adam(self.traj_critic.parameters(), lr=cfg.traj_critic_lr)
        # cumulative seconds: whole updates, and the A-RIDE-specific parts inside them
        self.timings = {"update": 0.0, "retrace": 0.0, "priority": 0.0, "refresh": 0.0}

    # -- Trainer protocol: data in --------------------------------------------
    def add_episode(self, episode: EpisodeRecord) -> bool:
        """Into DPER at the highest priority so far; False if empty or beyond the lag bound."""
        if not episode.steps:
            return False
        return self.replay.add(episode, current_version=self.version) is not None

    def ready(self) -> bool:
        return len(self.replay) >= self.config.min_episodes

    def is_beta(self) -> float:
        """The IS exponent β now: linear from is_beta_start to is_beta_end."""
        cfg = self.config
        frac = min(1.0, self.updates / max(1, cfg.is_beta_anneal_updates))
        return cfg.is_beta_start + frac * (cfg.is_beta_end - cfg.is_beta_start)

    # -- one update, top to bottom ----------------------------------------------
    def update(self) -> dict[str, float]:
        cfg = self.config
        if len(self.replay) == 0:
            raise RuntimeError("A-RIDE update on an empty replay buffer (check ready() first)")
        t_start = time.perf_counter()

        # 1. prioritized sample of whole episodes, with IS (and lag) weights
        beta = self.is_beta()
        sample = self.replay.sample(cfg.batch_episodes, cfg.alpha, beta,
                                    current_version=self.version)
        batch = EpisodeBatch.build(sample.episodes)
        w_ep = torch.as_tensor(sample.weights, dtype=torch.float32)
        w = w_ep[:, None] * batch.mask  # [B, T] weight of each real step
        n_steps = batch.mask.sum()

        # 2. re-evaluate the recorded steps under the current policy; critics read features
        out = self.policy.evaluate(batch.steps)
        log_pi, entropy = batch.pad(out.log_prob), batch.pad(out.entropy)
        features = out.features.detach()
        values = batch.pad(self.critic(features))

        # 3. Retrace(λ) targets and the off-policy-corrected advantage (no gradients)
        t0 = time.perf_counter()
        with torch.no_grad():
            targets, td, rho = retrace_targets(batch.rewards, values.detach(), log_pi.detach(),
                                               batch.log_mu, batch.mask,
                                               gamma=cfg.gamma, lam=cfg.trace_lambda)
            adv = (batch.rewards + cfg.gamma * _shift(targets) - values.detach()) * batch.mask
            rho_bar = rho.clamp(max=cfg.rho_max)
        self.timings["retrace"] += time.perf_counter() - t0

        # 4. step critic: weighted regression onto the Retrace targets
        critic_loss = (w * (values - targets) ** 2).sum() / n_steps
        for i in range(cfg.critic_steps):
            if i:
                values = batch.pad(self.critic(features))
                critic_loss = (w * (values - targets) ** 2).sum() / n_steps
            self._step(self.critic_opt, critic_loss, self.critic.parameters())

        # 5. trajectory critic: Monte Carlo BCE of V_traj(instruction) on the final reward
        with torch.no_grad():
            g_features = self.policy.instruction_features(batch.instructions)
        g_logits = self.traj_critic.logits(g_features)
        traj_loss = self.traj_critic.loss(g_logits, batch.final_reward, w_ep)
        self._step(self.traj_opt, traj_loss, self.traj_critic.parameters())

        # 6. actor: −ρ̄·A·log π − β·H + κ·ρ̄·P_invalid·log π, IS-weighted
        keep = torch.ones_like(w_ep)
        if cfg.traj_filter_quantile > 0:  # trajectory filter: top (1 − q) of r − V_traj
            traj_adv = batch.final_reward - torch.sigmoid(g_logits.detach())
            keep = (traj_adv >= torch.quantile(traj_adv, cfg.traj_filter_quantile)).float()
        pg = -(w * keep[:, None] * rho_bar * adv * log_pi).sum() / n_steps
        ent = (w * entropy).sum() / n_steps
        penalty = (w * rho_bar * batch.invalid * log_pi).sum() / n_steps
        actor_loss = pg - cfg.entropy_coef * ent + cfg.invalid_penalty * penalty
        changed = self._step(self.actor_opt, actor_loss, self.policy.trainable_parameters())

        # 7. DPER: new priorities for the sampled episodes (values from before this step)
        t0 = time.perf_counter()
        with torch.no_grad():
            prio = self._priorities(batch, td, rho, log_pi)
        self.replay.update_priorities(sample.indices, prio)
        self.timings["priority"] += time.perf_counter() - t0

        # 8. a new version; old data leaves; every refresh_every, re-score the stalest
        self.updates += 1
        self.version += changed  # a version per update that moved the policy
        self.replay.prune(self.version)
        if cfg.refresh_every and self.updates % cfg.refresh_every == 0 and len(self.replay):
            t0 = time.perf_counter()
            self.refresh_priorities(self.replay.stalest(cfg.refresh_size))
            self.timings["refresh"] += time.perf_counter() - t0
        self.timings["update"] += time.perf_counter() - t_start

        stored = self.replay.priorities(self.replay.filled())
        lags = sample.lags
        return {"actor_loss": float(actor_loss.detach()),
                "critic_loss": float(critic_loss.detach()),
                "traj_critic_loss": float(traj_loss.detach()),
                "entropy": float((entropy.detach() * batch.mask).sum() / n_steps),
                "mean_rho": float((rho * batch.mask).sum() / n_steps),
                "mean_advantage": float((adv * batch.mask).sum() / n_steps),
                "mean_priority": float(stored.mean()) if stored.size else 0.0,
                "batch_priority": float(prio.mean()), "is_beta": beta,
                "policy_lag_min": float(lags.min()), "policy_lag_avg": float(lags.mean()),
                "policy_lag_max": float(lags.max()), "replay_size": float(len(self.replay)),
                "steps": float(n_steps), "version": float(self.version),
                "skipped_steps": float(self.skipped_steps)}

    def _priorities(self, batch: EpisodeBatch, td: torch.Tensor, rho: torch.Tensor,
                    log_pi: torch.Tensor) -> np.ndarray:
        """p(τ) = w1·mean|δ| + w2·mean ρ + w3·mean(−log π), one per batch episode."""
        cfg = self.config
        p = (cfg.w1 * batch.episode_mean(td.abs())
             + cfg.w2 * batch.episode_mean(rho.clamp(max=cfg.priority_rho_cap))
             + cfg.w3 * batch.episode_mean(-log_pi))
        out = np.asarray(p.clamp_min(0.0).numpy(), dtype=np.float64)
        return np.where(np.isfinite(out), out, self.replay.max_priority)  # NaN: replay it soon

    @torch.no_grad()
    def refresh_priorities(self, slots: Sequence[int] | np.ndarray) -> None:
        """Re-score stored episodes under the current π and V (chunks of a batch)."""
        cfg = self.config
        slots = np.asarray(slots, dtype=np.int64)
        for lo in range(0, slots.size, cfg.batch_episodes):
            chunk = slots[lo : lo + cfg.batch_episodes]
            batch = EpisodeBatch.build([self.replay.episode(int(i)) for i in chunk])
            out = self.policy.evaluate(batch.steps)
            log_pi = batch.pad(out.log_prob)
            values = batch.pad(self.critic(out.features))
            rho = torch.exp((log_pi - batch.log_mu).clamp(max=30.0)) * batch.mask
            td = (batch.rewards + cfg.gamma * _shift(values) - values) * batch.mask
            self.replay.update_priorities(chunk, self._priorities(batch, td, rho, log_pi))

    @torch.no_grad()
    def instruction_values(self, instructions: Sequence[str]) -> list[float]:
        """V_traj per instruction: estimated success probability, for a task curriculum."""
        if not instructions:
            return []
        feats = self.policy.instruction_features(list(instructions))
        return [float(v) for v in self.traj_critic(feats)]

    # -- Trainer protocol: state -------------------------------------------------
    def _extra_meta(self) -> dict[str, Any]:
        return {"timings": dict(self.timings)}

    def _load_extra_meta(self, meta: Mapping[str, Any]) -> None:
        self.timings.update(meta.get("timings", {}))

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor": self.actor_opt, "critic": self.critic_opt, "traj": self.traj_opt}

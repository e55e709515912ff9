"""A-RIDE: Advantage-based Retrace Improved by Distributed prioritized Experience replay.

DistRL (arXiv 2410.14803) §A-RIDE, with the state-value correction of V-trace
(Espeholt et al. 2018) that the released code also applies — not the released code's
other simplifications (trace decay fixed at 1, binarised advantage, a critic loss
without gradient, priorities computed but sampling uniform). Notation: episode
τ = (s_0, a_0, r_0, …, s_H, a_H, r_H) collected by behaviour policy μ (log μ recorded
on the farm); π the current policy, V the step critic, V_traj the trajectory critic.
Step rewards enter as r_t − ``step_cost`` (0 by default).

1. Importance ratios, their truncations and traces, per step:
       ρ_t = π(a_t|s_t) / μ(a_t|s_t),   ρ̄^V_t = min(ρ̄_V, ρ_t),   c_t = λ · min(c̄, ρ_t)
   (ρ̄_V = ``vtrace_rho_max``, c̄ = ``trace_c_max``, λ = ``trace_lambda``).

2. Off-policy target for V (V(s_{H+1}) = 0: episodes end), ``v_target = "vtrace"``:
       δ_t = Σ_{k=t..H} γ^{k−t} (Π_{i=t..k−1} c_i) ρ̄^V_k [r_k + γ V(s_{k+1}) − V(s_k)]
   computed backwards as δ_t = ρ̄^V_t TD_t + γ c_t δ_{t+1}; target v_t = V(s_t) + δ_t.
   Its fixed point is V^π̃ with π̃ ∝ min(ρ̄_V μ, π): exactly V^π whenever ρ̄_V ≥ π/μ on
   the data (the default ρ̄_V = 5 covers ratios up to 5; ρ̄_V = 1 is IMPALA's choice,
   lower variance but biased toward μ). λ = 0 gives V + ρ̄^V·TD; λ = 1 on-policy gives
   Monte Carlo returns.
   ``v_target = "retrace_q"`` keeps the paper's Q-style formula read literally for V,
       δ_t = TD_t + γ c_{t+1} δ_{t+1}
   which has no correction at its first step: its fixed point is V^μ, not V^π (kept
   only for comparison; the issue's example: μ(good) = 0.2, π(good) = 0.9 gives 0.2
   against V^π = 0.9).

3. Step critic: L_V = E_ν[ w_τ (V(s_t) − v_t)² ]       (w_τ: DPER importance weight)
   Trajectory critic (Monte Carlo BCE on the final reward r_τ ∈ [0, 1]):
       L_traj = −E_ν[ w_τ (r_τ log V_traj(g) + (1 − r_τ) log(1 − V_traj(g))) ]

4. Off-policy-corrected advantage (real-valued by default):
       A_t = r_t + γ v_{t+1} − V(s_t)                   (v_{H+1} = 0)
   optionally normalised over the batch's steps (``normalize_advantage``), floored
   (``advantage_floor``), or binarised to 1[A_t > 0] (``binarize_advantage``, as DigiRL
   and the released DistRL code weight their actors): every step that did better than
   V expected then pulls equally, however far the discount and the critic's bootstrap
   have shrunk its advantage — a success at the end of a long task pulls its early
   steps as hard as a one-step task's.
   ``step_critic = "mc_classifier"`` (an option, off by default) swaps 3–4 (before any
   normalising, floor or binarising) for DigiRL's step critic: V(s) = σ(logit) trained
   by BCE on 1[G_t > 0] (the Monte Carlo return of the replayed episode, IS-weighted),
   and its doubly-robust advantage
       A_t = λ^{H−t} r_H + (1 − λ^{H−t}) (r_t + γ V(s_{t+1}) − V(s_t))   (λ = ``dr_lambda``)
   — no off-policy correction: V estimates the replay's success, not π's.

5. Actor, with ρ̄_t = min(ρ_max, ρ_t) and β_eff = β + b (b ≥ 0, see below):
       L_π = −E_ν[ w_τ f_τ ρ̄_t A_t log π(a_t|s_t) ] − β_eff E_ν[ w_τ H(π(·|s_t)) ]
             + κ E_ν[ w_τ ρ̄_t P_invalid(a_t) log π(a_t|s_t) ]
   ``actor_ratio = "none"`` sets ρ̄_t = 1 in both terms (an option, off by default):
   advantage-weighted regression on the replayed actions, as AWR and DigiRL's actor are,
   so a success whose decisive action π has since drifted away from (π/μ ≪ 1) still
   pulls by its advantage; with ``advantage_floor`` 0 only better-than-expected steps
   pull, which is what keeps that bias toward μ's good actions, not its bad ones.
   The last term is the score-function gradient of κ·E_π[P_invalid]: it lowers the
   probability of actions that did not parse (P_invalid = 1) and is 0 otherwise. The
   paper writes its weight as λ (reusing the trace symbol); here it is κ.
   Trajectory filter (``traj_filter_quantile`` q > 0, as DigiRL and the released
   DistRL code filter with V_traj): keep episodes with r_τ − V_traj(g) ≥ the q-quantile
   of r − V_traj over the replay (estimated on ≤ ``traj_filter_sample`` stored
   episodes). ``traj_filter_mode = "buffer"`` (the released code's actor buffer): the
   actor's batch is drawn uniformly from the kept episodes and re-scored (its own
   ratios, V-trace targets and advantages; IS weights 1), while the critics train on
   the batch of step 1 — so the actor spends every update on the episodes that did
   better than their instruction's expected success. ``"batch"``: f_τ = 1[kept] masks
   the actor's gradient within the critics' batch (the estimate includes the batch);
   q = 0: f = 1, one batch for all.
   Self-imitation (``sil_coef`` ν > 0; Oh et al. 2018, off by default) adds
       − ν E_ν[ w_τ (G_t − V(s_t))₊ log π(a_t|s_t) ],   G_t = Σ_{k≥t} γ^{k−t} r_k
   the episode's own discounted return: a replayed step whose episode did better than V
   expects is imitated whatever policy took it (no ratio: the return is a lower bound of
   the optimal value whoever collected it), so a rare success on a long task pulls its
   early steps directly instead of through a critic's bootstrapped, trace-cut estimate.
   Entropy floor (``entropy_target`` H*): after each update b ← clip(b + η (H* − H̄),
   0, β_max − β), with H̄ the batch's mean entropy per step — β grows only while the
   policy is less random than H*, and relaxes back to β once it is above.

6. DPER priority of each replayed episode, recomputed as π moves (for every sampled
   episode after each update, and for the stalest ``refresh_size`` every
   ``refresh_every`` updates):
       p(τ) = w1 · mean_t |r_t + γ V(s_{t+1}) − V(s_t)|
            + w2 · mean_t ρ_t + w3 · mean_t(−log π(a_t|s_t))
   sampled ∝ p^α with weights w_τ = (N·P(τ))^−β / max w. New episodes enter at the
   highest measured priority in replay and keep their own once scored. β is annealed
   linearly from ``is_beta_start`` to ``is_beta_end`` over the run's planned length
   (``horizon_updates`` / ``horizon_seconds`` or :meth:`ARIDETrainer.set_horizon`;
   ``is_beta_anneal_updates`` when no horizon is known). Over the same horizon the
   actor's learning rate can decay linearly to ``actor_lr_end_fraction`` of
   ``actor_lr`` (1 by default: constant, as in the paper and DigiRL).

7. Lag bounds: episodes more than K = ``max_policy_lag`` versions old are refused and
   pruned; and whenever an episode is measured (sampled or refreshed), it leaves
   replay if more than ``max_stale_share`` of its steps have ρ < ``stale_rho`` — the
   steps π no longer takes, which carry (almost) no gradient or trace.
   ``keep_successes`` (off by default) spares successful episodes from both bounds: a
   success still teaches through the terms without a ratio (self-imitation,
   ``actor_ratio = "none"``) and the trajectory filter, which rank exactly the rare
   successes of hard tasks highest — so a replay that forgets them by age or staleness
   forgets what those terms need. Only the capacity removes them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import (
    EpisodeRecord,
    PolicyOutput,
    StepRecord,
    TrainablePolicy,
    has_training_mode,
)
from distrl_sdk.learn.critics import StepCritic, TrajectoryCritic
from distrl_sdk.learn.knobs import read_text_knobs
from distrl_sdk.learn.microbatch import accumulate_gradients, evaluate_detached
from distrl_sdk.learn.parallel import DataParallel
from distrl_sdk.learn.replay import LagMode, PrioritizedReplay
from distrl_sdk.learn.state import ActorCriticState

__all__ = ["ARIDEConfig", "ARIDETrainer", "EpisodeBatch", "VTarget", "discounted_returns",
           "doubly_robust_advantage", "ratio_stats", "retrace_targets"]


VTarget = Literal["vtrace", "retrace_q"]
TrajFilterMode = Literal["buffer", "batch"]
ActorRatio = Literal["truncated", "none"]
StepCriticKind = Literal["vtrace", "mc_classifier"]


@dataclass
class ARIDEConfig:
    """Every knob of A-RIDE (equations: the module docstring). "code" = DistRL's released
    configs; the paper's hyper-parameter appendix was not available.

    Actor: ``rho_max`` ρ̄ and ``actor_ratio`` ("none": no ratio in the actor's terms).
    Off-policy targets: ``v_target`` ("vtrace": δ_t = ρ̄^V_t·TD_t + γ c_t δ_{t+1}, the
    default; "retrace_q": the Q-formula read literally, biased to V^μ, for comparison
    only), ``vtrace_rho_max`` ρ̄_V, ``trace_c_max`` c̄, ``trace_lambda`` λ.
    Lag: ``max_policy_lag`` K (versions), and ``stale_rho`` / ``max_stale_share`` (an
    episode measured with more than that share of steps at ρ < stale_rho leaves replay;
    None = off; ``keep_successes`` exempts successful episodes from both). IS β:
    annealed over ``horizon_updates`` or ``horizon_seconds`` (the planned run;
    :meth:`ARIDETrainer.set_horizon` sets them at run time), else over
    ``is_beta_anneal_updates``. Trajectory filter: ``traj_filter_quantile`` q,
    ``traj_filter_mode`` and ``traj_filter_sample``. Self-imitation: ``sil_coef``.
    Stability: ``step_cost`` (subtracted from every step reward), ``entropy_target`` H*
    with ``entropy_coef_lr`` η and ``entropy_coef_max`` (adaptive β floor; None = fixed
    β), ``normalize_advantage``, ``advantage_floor``, ``binarize_advantage``."""

    gamma: float = 0.9  # γ discount (code: 0.5, tuned for 10-step AitW episodes)
    # "vtrace": V(s) regressed onto V-trace targets, A from them (the module docstring);
    # "mc_classifier": DigiRL's step critic — V(s) = σ(logit), BCE on 1[G_t > 0] — with
    # its doubly-robust advantage (``dr_lambda``); ratios, replay and actor unchanged
    step_critic: StepCriticKind = "vtrace"
    dr_lambda: float = 0.5  # λ of the doubly-robust advantage ("mc_classifier" only)
    trace_lambda: float = 1.0  # λ in c = λ·min(c̄, ρ) (code: fixed 1; Munos et al. 2016: 1)
    v_target: VTarget = "vtrace"  # V-trace correction of the V target; "retrace_q": none
    vtrace_rho_max: float = 5.0  # ρ̄_V on TD_t in the V target (unbiased while π/μ ≤ ρ̄_V)
    trace_c_max: float = 1.0  # c̄: traces c = λ·min(c̄, ρ) (Retrace / V-trace: 1)
    rho_max: float = 1.0  # ρ̄ = min(ρ_max, ρ) in the actor loss (code: clip_pg_rho_threshold 1)
    # "none": the actor's terms drop ρ̄ (ρ̄ ← 1): a replayed step pulls by its advantage
    # alone, as in AWR and DigiRL's actor, however far π has moved from μ since; the
    # critics' V-trace targets keep their ratios
    actor_ratio: ActorRatio = "truncated"
    entropy_coef: float = 0.05  # β, the base entropy weight (code: 0.05 when use_entropy)
    entropy_target: float | None = 0.3  # H* nats/step: β rises while entropy is below it
    entropy_coef_lr: float = 0.01  # η: step of the adaptive part b per nat of shortfall
    entropy_coef_max: float = 1.0  # β + b never exceeds this
    invalid_penalty: float = 1.0  # κ, weight of P_invalid (paper's "λ"; value unknown)
    step_cost: float = 0.0  # subtracted from every step's reward (a cost per action)
    # the demonstration anchor (ActorCriticState.add_demonstrations): weight of the mean
    # −log π of demonstrated actions added to the actor loss; 0 = off
    demo_coef: float = 0.0
    demo_batch_steps: int = 64  # demonstration steps per update
    normalize_advantage: bool = False  # A ← (A − mean) / std over the batch's steps
    # A ← max(A, floor) in the actor loss: 0 moves π only toward actions that did better
    # than V expected (as AWR's positive weights do); None: the real-valued advantage
    advantage_floor: float | None = None
    # A ← 1[A > 0] in the actor loss (DigiRL's and the released code's weights): the sign
    # of the off-policy-corrected advantage, not its size; the floor is then moot
    binarize_advantage: bool = False
    # ν: weight of the self-imitation term −(G_t − V(s_t))₊·log π (0 = off)
    sil_coef: float = 0.0
    traj_filter_quantile: float = 0.0  # q; 0 = no filter (code's actor buffer: 0.9)
    # "buffer": the actor trains on its own batch drawn from the filtered episodes (the
    # released code's actor buffer; critics keep the full batch); "batch": f_τ masks the
    # actor's gradient within the critics' batch
    traj_filter_mode: TrajFilterMode = "buffer"
    traj_filter_sample: int = 256  # stored episodes the filter's quantile is estimated on
    w1: float = 50.0  # DPER weight of mean |TD| (code: dper_w1 = 50)
    w2: float = 1.0  # DPER weight of mean ρ (code: 1.0)
    w3: float = 0.01  # DPER weight of mean −log π (code: 0.01)
    priority_rho_cap: float = 10.0  # ρ capped inside p(τ) so one freak ratio can't own replay
    alpha: float = 0.6  # priority exponent α (Schaul et al. 2016 proportional: 0.6)
    is_beta_start: float = 0.4  # IS exponent β at update 0 (Schaul et al.: 0.4)
    is_beta_end: float = 1.0  # … annealed linearly to this (full correction) by the horizon
    horizon_updates: int | None = None  # planned updates of the run (β reaches the end there)
    horizon_seconds: float | None = None  # … or planned seconds of training (first update on)
    is_beta_anneal_updates: int = 1_000  # the horizon when neither of the above is known
    priority_eps: float = 1e-6  # added to every priority (nothing becomes unsampleable)
    refresh_every: int = 20  # every N updates re-score the stalest episodes (0 = never)
    refresh_size: int = 8  # … this many of them (a forward pass each: keep it small)
    capacity: int = 10_000  # replay size in episodes (code: 10000, circular)
    batch_episodes: int = 16  # episodes per update; all their steps train (code: 2 × 32 accum)
    min_episodes: int = 32  # ready() once replay holds this many
    max_policy_lag: int | None = 50  # K: bound on version − episode version (code: none)
    lag_mode: LagMode = "drop"  # "drop" older episodes, or "downweight" them
    lag_decay: float = 0.5  # downweight factor per version beyond K
    stale_rho: float = 0.1  # a step with ρ below this is "stale" (π no longer takes it)
    max_stale_share: float | None = 0.5  # evict episodes measured with more stale steps
    # successful episodes are exempt from both lag bounds (K and the stale share): what
    # self-imitation and the trajectory filter learn from stays until the capacity drops it
    keep_successes: bool = False
    actor_lr: float = 1e-4  # Adam (code: lm_lr 1e-4)
    # the actor's lr decays linearly to this fraction of actor_lr over the run's planned
    # length (the horizon IS β anneals over); 1 = constant, as the paper and DigiRL
    actor_lr_end_fraction: float = 1.0
    critic_lr: float = 1e-4  # Adam (code: critic_lr 1e-4)
    traj_critic_lr: float = 1e-4  # Adam (code: shares critic_lr)
    critic_hidden: int = 256  # width of both critic MLPs
    critic_steps: int = 1  # critic gradient steps per update (code: 5 epochs per iteration)
    max_grad_norm: float = 1.0  # per-network clip (code: 0.01, which only rescales Adam)
    # steps per actor-gradient micro-batch (a VLM on one GPU: 4–8). None: one pass over the
    # batch; set, the ratios/targets come from a no-grad pass and the actor's gradient is
    # accumulated slice by slice (distrl_sdk.learn.microbatch), equal to the one-shot one
    micro_batch: int | None = None
    # the actor's gradient pass (and the demonstration anchor's) in the policy's training
    # mode: the UI-tree policy's token dropout regularises RL as it does SFT, so what RL
    # learns on training instances carries to held-out ones. Ratios, targets, priorities
    # and the critics' features then come from a second, no-grad pass with every token
    actor_dropout: bool = False
    seed: int = 0  # replay sampling and critic initialisation
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes kept in checkpoints

    def __post_init__(self) -> None:
        # TOML has no null: a learner file turns an optional knob off with "none", the
        # spelling of the bench's flags ("max_policy_lag = 'none'": no lag bound)
        read_text_knobs(self, "A-RIDE")
        checks = {"gamma": 0 <= self.gamma <= 1, "trace_lambda": 0 <= self.trace_lambda <= 1,
                  "v_target": self.v_target in ("vtrace", "retrace_q"),
                  "vtrace_rho_max": self.vtrace_rho_max > 0, "trace_c_max": self.trace_c_max > 0,
                  "rho_max": self.rho_max > 0,
                  "actor_ratio": self.actor_ratio in ("truncated", "none"),
                  "step_critic": self.step_critic in ("vtrace", "mc_classifier"),
                  "dr_lambda": 0 <= self.dr_lambda <= 1,
                  "entropy_coef": self.entropy_coef >= 0,
                  "actor_lr_end_fraction": 0 <= self.actor_lr_end_fraction <= 1,
                  "entropy_target": self.entropy_target is None or self.entropy_target >= 0,
                  "entropy_coef_lr": self.entropy_coef_lr >= 0,
                  "entropy_coef_max": self.entropy_coef_max >= self.entropy_coef,
                  "step_cost": self.step_cost >= 0,
                  "demo_coef": self.demo_coef >= 0, "sil_coef": self.sil_coef >= 0,
                  "demo_batch_steps": self.demo_batch_steps >= 1,
                  "traj_filter_quantile": 0 <= self.traj_filter_quantile < 1,
                  "traj_filter_mode": self.traj_filter_mode in ("buffer", "batch"),
                  # the actor buffer draws its batch from this sample: it cannot be empty
                  "traj_filter_sample": self.traj_filter_sample
                  >= (1 if self.traj_filter_mode == "buffer" and self.traj_filter_quantile > 0
                      else 0),
                  "alpha": self.alpha >= 0, "is_beta_start": 0 <= self.is_beta_start <= 1,
                  "is_beta_end": 0 <= self.is_beta_end <= 1,
                  "horizon_updates": self.horizon_updates is None or self.horizon_updates >= 1,
                  "horizon_seconds": self.horizon_seconds is None or self.horizon_seconds > 0,
                  "is_beta_anneal_updates": self.is_beta_anneal_updates >= 1,
                  "capacity": self.capacity >= 1,
                  "batch_episodes": self.batch_episodes >= 1,
                  "min_episodes": self.min_episodes >= 1,
                  "lag_mode": self.lag_mode in ("drop", "downweight"),
                  "max_policy_lag": self.max_policy_lag is None or self.max_policy_lag >= 0,
                  "stale_rho": self.stale_rho >= 0,
                  "max_stale_share": self.max_stale_share is None
                  or 0 <= self.max_stale_share < 1,
                  "critic_steps": self.critic_steps >= 1, "max_grad_norm": self.max_grad_norm > 0,
                  "micro_batch": self.micro_batch is None or self.micro_batch >= 1}
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
                    log_mu: torch.Tensor, mask: torch.Tensor, *, gamma: float, lam: float,
                    rho_max: float = 5.0, c_max: float = 1.0, form: VTarget = "vtrace"
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Off-policy targets for V over padded episodes ([B, T], mask 1 on real steps).

    ``form="vtrace"``: δ_t = min(rho_max, ρ_t)·TD_t + γ c_t δ_{t+1};
    ``form="retrace_q"``: δ_t = TD_t + γ c_{t+1} δ_{t+1} (no first-step correction);
    both with c_t = λ·min(c_max, ρ_t). Returns (v, td, ρ): targets v_t = V(s_t) + δ_t,
    one-step TD errors, and ratios ρ_t. Episodes end after their last real step, so
    V(s_{H+1}) = 0 and nothing is bootstrapped past it."""
    if form not in ("vtrace", "retrace_q"):
        raise ValueError(f"unknown V-target form {form!r} (vtrace | retrace_q)")
    rho = torch.exp((log_pi - log_mu).clamp(max=30.0)) * mask
    c = lam * rho.clamp(max=c_max)  # 0 on padding, which cuts traces
    td = (rewards + gamma * _shift(values * mask) - values) * mask
    delta = torch.zeros_like(td)
    acc = torch.zeros_like(td[:, 0])
    horizon = td.shape[1]
    if form == "vtrace":
        scaled = rho.clamp(max=rho_max) * td
        for t in range(horizon - 1, -1, -1):  # δ_t = ρ̄_t TD_t + γ c_t δ_{t+1}
            acc = scaled[:, t] + gamma * c[:, t] * acc
            delta[:, t] = acc
    else:
        for t in range(horizon - 1, -1, -1):  # δ_t = TD_t + γ c_{t+1} δ_{t+1}
            c_next = c[:, t + 1] if t + 1 < horizon else torch.zeros_like(acc)
            acc = td[:, t] + gamma * c_next * acc
            delta[:, t] = acc
    return (values + delta) * mask, td, rho


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float
                       ) -> torch.Tensor:
    """G_t = r_t + γ G_{t+1} over padded episodes ([B, T]); 0 on padding."""
    g = torch.zeros_like(rewards)
    acc = torch.zeros_like(rewards[:, 0])
    for t in range(rewards.shape[1] - 1, -1, -1):
        acc = rewards[:, t] + gamma * acc * mask[:, t]
        g[:, t] = acc
    return g * mask


def doubly_robust_advantage(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
                            *, gamma: float, lam: float) -> torch.Tensor:
    """DigiRL's doubly-robust step advantage over padded episodes ([B, T]):
        A_t = λ^{H−t} r_H + (1 − λ^{H−t}) (r_t + γ V(s_{t+1}) − V(s_t))
    — the episode's last reward near its end, the one-step TD error early on."""
    lengths = mask.sum(1, keepdim=True)
    t = torch.arange(mask.shape[1], dtype=mask.dtype)[None, :]
    mix = lam ** (lengths - 1 - t).clamp_min(0)
    r_last = rewards.gather(1, (lengths - 1).clamp_min(0).long())
    v = values * mask
    return (mix * r_last + (1 - mix) * (rewards + gamma * _shift(v) - v)) * mask


def ratio_stats(rho: torch.Tensor, mask: torch.Tensor, *, rho_max: float, stale_rho: float
                ) -> dict[str, float]:
    """What the batch's ratios say about lag: the share of steps clipped above
    (ρ > ρ_max) and stale below (ρ < stale_rho), and the normalised effective sample
    size (Σρ)² / (N·Σρ²) ∈ (0, 1] (1: on-policy; → 0: a few steps carry the batch)."""
    r = rho[mask > 0].double()
    n = max(int(r.numel()), 1)
    sq = float((r**2).sum())
    return {"rho_clipped_high": float((r > rho_max).sum()) / n,
            "rho_stale_share": float((r < stale_rho).sum()) / n,
            "rho_ess": float(r.sum()) ** 2 / (n * sq) if sq > 0 else 0.0,
            "mean_rho": float(r.sum()) / n}


def _normalise(adv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(A − mean) / std over real steps (std floored: a constant batch stays finite)."""
    n = mask.sum().clamp_min(1.0)
    mean = (adv * mask).sum() / n
    std = (((adv - mean) * mask) ** 2).sum().div(n).sqrt().clamp_min(1e-6)
    return (adv - mean) / std * mask


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
                                        eps=cfg.priority_eps,
                                        keep_successes=cfg.keep_successes, seed=cfg.seed)
        with torch.random.fork_rng(devices=[]):  # seeded critics, global RNG untouched
            torch.manual_seed(cfg.seed)
            self.critic = StepCritic(policy.feature_dim, cfg.critic_hidden)
            self.traj_critic = TrajectoryCritic(policy.feature_dim, cfg.critic_hidden)
        self.actor_opt = torch.optim.Adam(policy.trainable_parameters(), lr=cfg.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=cfg.critic_lr)
        self.traj_opt = torch.optim.Adam(self.traj_critic.parameters(), lr=cfg.traj_critic_lr)
        self.horizon_updates, self.horizon_seconds = cfg.horizon_updates, cfg.horizon_seconds
        self.entropy_boost = 0.0  # b of the entropy floor: β_eff = entropy_coef + b
        self.train_seconds = 0.0  # wall time since the first update (β's time horizon)
        self._last_tick: float | None = None
        self.evicted = {"lag": 0, "stale": 0}  # episodes removed by each bound, cumulative
        # cumulative seconds: whole updates, and the A-RIDE-specific parts inside them
        self.timings = {"update": 0.0, "retrace": 0.0, "priority": 0.0, "refresh": 0.0}
        self._init_demos(cfg.seed)
        # a data-parallel group this trainer leads (distrl_sdk.learn.parallel): the policy
        # passes are sharded over its ranks; None = this process alone
        self.parallel: DataParallel | None = None

    # -- Trainer protocol: data in --------------------------------------------
    def add_episode(self, episode: EpisodeRecord) -> bool:
        """Into DPER at the highest measured priority; False if empty or beyond the lag
        bound."""
        if not episode.steps:
            return False
        added = self.replay.add(episode, current_version=self.version) is not None
        prepare = getattr(self.policy, "prepare", None)
        if added and prepare is not None:  # featurise once, not at every replay
            prepare(episode.steps)
        return added

    def ready(self) -> bool:
        return len(self.replay) >= self.config.min_episodes

    def set_horizon(self, total_updates: int | None = None, *,
                    seconds: float | None = None) -> None:
        """The run's planned length, in updates and/or seconds of training: IS β reaches
        ``is_beta_end`` there (whichever comes first). None leaves that part unset."""
        if total_updates is not None and total_updates < 1:
            raise ValueError(f"horizon must be ≥ 1 update, got {total_updates}")
        if seconds is not None and not seconds > 0:
            raise ValueError(f"horizon must be > 0 s, got {seconds}")
        self.horizon_updates, self.horizon_seconds = total_updates, seconds

    def anneal_fraction(self) -> float:
        """How far through the planned run this trainer is, in [0, 1]."""
        fracs = []
        if self.horizon_updates is not None:
            fracs.append(self.updates / self.horizon_updates)
        if self.horizon_seconds is not None:
            fracs.append(self.train_seconds / self.horizon_seconds)
        if not fracs:
            fracs.append(self.updates / self.config.is_beta_anneal_updates)
        return min(1.0, max(fracs))

    def is_beta(self) -> float:
        """The IS exponent β now: linear from is_beta_start to is_beta_end over the run."""
        cfg = self.config
        return cfg.is_beta_start + self.anneal_fraction() * (cfg.is_beta_end - cfg.is_beta_start)

    def actor_lr(self) -> float:
        """The actor's learning rate now: actor_lr, decayed linearly over the run to
        ``actor_lr_end_fraction`` of it."""
        cfg = self.config
        return cfg.actor_lr * (1 - self.anneal_fraction() * (1 - cfg.actor_lr_end_fraction))

    def entropy_coef(self) -> float:
        """β_eff = entropy_coef + the entropy floor's adaptive part."""
        return min(self.config.entropy_coef + self.entropy_boost, self.config.entropy_coef_max)

    # -- one update, top to bottom ----------------------------------------------
    def update(self) -> dict[str, float]:
        cfg = self.config
        if len(self.replay) == 0:
            raise RuntimeError("A-RIDE update on an empty replay buffer (check ready() first)")
        t_start = time.perf_counter()
        if self._last_tick is not None:  # training wall time, for horizon_seconds
            self.train_seconds += time.monotonic() - self._last_tick
        self._last_tick = time.monotonic()

        # 1. prioritized sample of whole episodes, with IS (and lag) weights
        beta = self.is_beta()
        actor_lr = self.actor_lr()
        for group in self.actor_opt.param_groups:
            group["lr"] = actor_lr
        sample = self.replay.sample(cfg.batch_episodes, cfg.alpha, beta,
                                    current_version=self.version)
        batch = EpisodeBatch.build(sample.episodes)
        rewards = batch.rewards - cfg.step_cost * batch.mask
        w_ep = torch.as_tensor(sample.weights, dtype=torch.float32)
        w = w_ep[:, None] * batch.mask  # [B, T] weight of each real step
        n_steps = batch.mask.sum()

        # 2. re-evaluate the recorded steps under the current policy; critics read features.
        # With the filtered actor buffer the actor trains on another batch (step 6), so
        # this one needs no gradient
        own_actor = not self._actor_buffer()
        dropout = cfg.actor_dropout and has_training_mode(self.policy)
        sliced = cfg.micro_batch is not None or self.parallel is not None
        out, exact = self._evaluate(batch, sample.episodes, grad=own_actor)
        log_pi, entropy = batch.pad(out.log_prob), batch.pad(out.entropy)
        log_pi_exact = batch.pad(exact.log_prob).detach()
        features = exact.features.detach()
        values = batch.pad(self._values(features))

        # 3. V-trace targets and the off-policy-corrected advantage (no gradients)
        targets, td, rho, adv, sil = self._targets(batch, rewards, values.detach(),
                                                   log_pi_exact)

        # 4. step critic: weighted regression onto the targets (or, as a Monte Carlo
        # classifier, BCE on whether the return from s_t is positive)
        critic_loss = self._critic_loss(batch, features, targets, rewards, w, n_steps)
        self._step(self.critic_opt, critic_loss, self.critic.parameters())
        for _ in range(cfg.critic_steps - 1):
            critic_loss = self._critic_loss(batch, features, targets, rewards, w, n_steps)
            self._step(self.critic_opt, critic_loss, self.critic.parameters())

        # 5. trajectory critic: Monte Carlo BCE of V_traj(instruction) on the final reward
        with torch.no_grad():
            g_features = self.policy.instruction_features(batch.instructions)
        g_logits = self.traj_critic.logits(g_features)
        traj_loss = self.traj_critic.loss(g_logits, batch.final_reward, w_ep)
        self._step(self.traj_opt, traj_loss, self.traj_critic.parameters())

        # 6. actor: −f·ρ̄·A·log π − β_eff·H + κ·ρ̄·P_invalid·log π, IS-weighted
        # (+ demo_coef · −log π of demonstrated actions: the anchor, when demonstrations are kept)
        critic_batch, critic_rho = batch, rho
        if own_actor:
            keep, threshold = self._traj_filter(sample.episodes)
            kept_share = float(keep.mean())
        else:  # the actor buffer: its own batch, drawn uniformly (IS weights 1), re-scored
            picked, threshold, kept_share = self._filtered_slots()
            episodes = [self.replay.episode(int(i)) for i in picked]
            batch = EpisodeBatch.build(episodes)
            rewards = batch.rewards - cfg.step_cost * batch.mask
            w, n_steps = batch.mask, batch.mask.sum()
            out, exact = self._evaluate(batch, episodes, grad=True)
            log_pi, entropy = batch.pad(out.log_prob), batch.pad(out.entropy)
            with torch.no_grad():
                a_values = batch.pad(self._values(exact.features.detach()))
            _, _, rho, adv, sil = self._targets(batch, rewards, a_values,
                                                batch.pad(exact.log_prob).detach())
            keep = torch.ones(len(episodes))
        rho_bar = (rho.clamp(max=cfg.rho_max) if cfg.actor_ratio == "truncated"
                   else torch.ones_like(rho))
        beta_h = self.entropy_coef()
        demo_nll = self._demo_nll()
        pull = keep[:, None] * rho_bar * adv  # the coefficient of log π in −L_π
        if sil is not None:
            pull = pull + cfg.sil_coef * sil
        if not sliced:
            pg = -(w * pull * log_pi).sum() / n_steps
            ent = (w * entropy).sum() / n_steps
            penalty = (w * rho_bar * batch.invalid * log_pi).sum() / n_steps
            actor_loss = pg - beta_h * ent + cfg.invalid_penalty * penalty
            if demo_nll is not None:
                actor_loss = actor_loss + cfg.demo_coef * demo_nll
            changed = self._step(self.actor_opt, actor_loss,
                                 self.policy.trainable_parameters())
        else:  # the same loss as per-step coefficients of log π and H, slice by slice
            with torch.no_grad():
                c_lp = (-(w * pull)
                        + cfg.invalid_penalty * w * rho_bar * batch.invalid) / n_steps
                c_h = -beta_h * w / n_steps
            self.actor_opt.zero_grad(set_to_none=True)
            a, b = c_lp[batch.b_idx, batch.t_idx], c_h[batch.b_idx, batch.t_idx]
            if self.parallel is not None:
                res = self.parallel.accumulate(self.policy, batch.steps, a, b,
                                               cfg.micro_batch, dropout)
            else:
                with self._actor_training():
                    res = accumulate_gradients(self.policy, batch.steps, a, b,
                                               cfg.micro_batch)
            actor_loss = torch.tensor(res.loss)
            finite = res.finite
            if demo_nll is not None:  # its gradient adds to the accumulated one
                finite = finite and bool(torch.isfinite(demo_nll))
                if finite:
                    (cfg.demo_coef * demo_nll).backward()  # type: ignore[no-untyped-call]
                    actor_loss = actor_loss + cfg.demo_coef * demo_nll.detach()
            changed = self._step_accumulated(self.actor_opt, finite,
                                             self.policy.trainable_parameters(), reduce=True)
        mean_entropy = float((batch.pad(exact.entropy).detach() * batch.mask).sum() / n_steps)
        if cfg.entropy_target is not None:  # the floor: integrate the entropy shortfall
            self.entropy_boost = min(max(0.0, self.entropy_boost + cfg.entropy_coef_lr
                                         * (cfg.entropy_target - mean_entropy)),
                                     cfg.entropy_coef_max - cfg.entropy_coef)

        # 7. DPER: new priorities for the sampled episodes (values from before this step);
        # episodes π has moved away from leave
        t0 = time.perf_counter()
        with torch.no_grad():
            prio = self._priorities(critic_batch, td, critic_rho, log_pi_exact)
        self.replay.update_priorities(sample.indices, prio)
        stale = self._evict_stale(sample.indices, critic_batch, critic_rho)
        self.timings["priority"] += time.perf_counter() - t0

        # 8. a new version; old data leaves; every refresh_every, re-score the stalest
        self.updates += 1
        self.version += changed  # a version per update that moved the policy
        pruned = self.replay.prune(self.version)
        self.evicted["lag"] += pruned
        if cfg.refresh_every and self.updates % cfg.refresh_every == 0 and len(self.replay):
            t0 = time.perf_counter()
            stale += self.refresh_priorities(self.replay.stalest(cfg.refresh_size))
            self.timings["refresh"] += time.perf_counter() - t0
        self.timings["update"] += time.perf_counter() - t_start

        lags = sample.lags
        return {"actor_loss": float(actor_loss.detach()),
                "critic_loss": float(critic_loss.detach()),
                "traj_critic_loss": float(traj_loss.detach()),
                "entropy": mean_entropy, "entropy_coef": beta_h,
                **ratio_stats(critic_rho, critic_batch.mask, rho_max=cfg.rho_max,
                              stale_rho=cfg.stale_rho),
                "mean_advantage": float((adv * batch.mask).sum() / n_steps),
                "mean_priority": self.replay.mean_priority(),
                "batch_priority": float(prio.mean()),
                "new_episode_priority": self.replay.max_priority, "is_beta": beta,
                "actor_lr": actor_lr,
                "is_weight_min": float(sample.weights.min()),
                "is_weight_mean": float(sample.weights.mean()),
                "traj_filter_kept": kept_share, "traj_filter_threshold": threshold,
                "stale_evicted": float(stale), "lag_pruned": float(pruned),
                **({} if demo_nll is None else {"demo_nll": float(demo_nll.detach())}),
                **({} if sil is None else {
                    "sil_share": float((sil > 0).float().sum() / n_steps),
                    "sil_mean": float(sil.sum() / n_steps)}),
                "policy_lag_min": float(lags.min()), "policy_lag_avg": float(lags.mean()),
                "policy_lag_max": float(lags.max()), "replay_size": float(len(self.replay)),
                "steps": float(n_steps), "version": float(self.version),
                "skipped_steps": float(self.skipped_steps)}

    def _evaluate(self, batch: EpisodeBatch, episodes: Sequence[EpisodeRecord], *,
                  grad: bool) -> tuple[PolicyOutput, PolicyOutput]:
        """(out, exact): the batch's steps under π. ``out`` carries the actor's gradient
        when ``grad`` (in training mode with ``actor_dropout``); ``exact`` reads every
        token, without gradient, for ratios, targets and the critics' features. Sliced
        (micro-batched or data-parallel) updates take the actor's gradient later, slice
        by slice, so both are the no-grad pass there."""
        cfg = self.config
        if self.parallel is not None:
            out = self.parallel.evaluate_detached(self.policy, episodes, cfg.micro_batch)
            return out, out
        if cfg.micro_batch is not None or not grad:
            out = evaluate_detached(self.policy, batch.steps, cfg.micro_batch)
            return out, out
        if cfg.actor_dropout and has_training_mode(self.policy):
            exact = evaluate_detached(self.policy, batch.steps)
            with self._actor_training():
                return self.policy.evaluate(batch.steps), exact
        out = self.policy.evaluate(batch.steps)
        return out, out

    @torch.no_grad()
    def _targets(self, batch: EpisodeBatch, rewards: torch.Tensor, values: torch.Tensor,
                 log_pi: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                            torch.Tensor | None]:
        """(V-trace targets, one-step TD, ρ, the actor's advantage, the self-imitation
        pull or None) for a batch whose values and log π are given ([B, T])."""
        cfg = self.config
        t0 = time.perf_counter()
        targets, td, rho = retrace_targets(rewards, values, log_pi, batch.log_mu, batch.mask,
                                           gamma=cfg.gamma, lam=cfg.trace_lambda,
                                           rho_max=cfg.vtrace_rho_max,
                                           c_max=cfg.trace_c_max, form=cfg.v_target)
        if cfg.step_critic == "mc_classifier":
            adv = doubly_robust_advantage(rewards, values.detach(), batch.mask,
                                          gamma=cfg.gamma, lam=cfg.dr_lambda)
        else:
            adv = (rewards + cfg.gamma * _shift(targets) - values.detach()) * batch.mask
        if cfg.normalize_advantage:
            adv = _normalise(adv, batch.mask)
        if cfg.advantage_floor is not None:
            adv = adv.clamp(min=cfg.advantage_floor) * batch.mask
        if cfg.binarize_advantage:
            adv = (adv > 0).float() * batch.mask
        sil = ((discounted_returns(rewards, batch.mask, cfg.gamma) - values)
               .clamp(min=0) * batch.mask) if cfg.sil_coef > 0 else None
        self.timings["retrace"] += time.perf_counter() - t0
        return targets, td, rho, adv, sil

    def _values(self, features: torch.Tensor) -> torch.Tensor:
        """V(s) per flat step: the critic's output, or σ of it as a classifier."""
        out = self.critic(features)
        return torch.sigmoid(out) if self.config.step_critic == "mc_classifier" else out

    def _critic_loss(self, batch: EpisodeBatch, features: torch.Tensor,
                     targets: torch.Tensor, rewards: torch.Tensor, w: torch.Tensor,
                     n_steps: torch.Tensor) -> torch.Tensor:
        """The step critic's IS-weighted loss on this batch: squared error to the V-trace
        targets, or BCE of its logit on 1[G_t > 0] (DigiRL's Monte Carlo classifier)."""
        out = batch.pad(self.critic(features))
        if self.config.step_critic == "mc_classifier":
            labels = (discounted_returns(rewards, batch.mask, self.config.gamma) > 0).float()
            bce = F.binary_cross_entropy_with_logits(out, labels, reduction="none")
            return (w * bce).sum() / n_steps
        return (w * (out - targets) ** 2).sum() / n_steps

    def _actor_buffer(self) -> bool:
        """Whether the actor trains on its own batch from the filtered actor buffer."""
        cfg = self.config
        return cfg.traj_filter_quantile > 0 and cfg.traj_filter_mode == "buffer"

    def _filtered_slots(self) -> tuple[np.ndarray, float, float]:
        """The actor buffer's batch: ``batch_episodes`` slots drawn uniformly from the
        stored episodes whose r − V_traj(g) reaches the q-quantile (estimated on ≤
        ``traj_filter_sample`` of them, as ``_traj_filter``). Returns the slots, the
        threshold and the share of the estimate's episodes kept."""
        cfg = self.config
        ref = self.replay.random_slots(cfg.traj_filter_sample)
        traj_adv = self._traj_advantages([self.replay.episode(int(i)) for i in ref])
        threshold = float(np.quantile(traj_adv, cfg.traj_filter_quantile))
        kept = ref[traj_adv >= threshold]
        picked = self.replay.rng.choice(kept, size=cfg.batch_episodes)
        return picked, threshold, kept.size / max(ref.size, 1)

    def _traj_advantages(self, episodes: Sequence[EpisodeRecord]) -> np.ndarray:
        """r_τ − V_traj(g) per episode: how much better it did than its instruction's
        expected success (what the trajectory filter ranks)."""
        rewards = np.array([e.reward for e in episodes], dtype=np.float64)
        values = np.array(self.instruction_values([e.instruction for e in episodes]))
        out: np.ndarray = rewards - values
        return out

    def _traj_filter(self, episodes: Sequence[EpisodeRecord]) -> tuple[torch.Tensor, float]:
        """f_τ per batch episode and the threshold on r − V_traj (−1 when off: r − V_traj
        ≥ −1 always, so every episode passes)."""
        q = self.config.traj_filter_quantile
        if q <= 0:
            return torch.ones(len(episodes)), -1.0
        ref = self.replay.random_slots(self.config.traj_filter_sample)
        traj_adv = self._traj_advantages([*episodes,
                                          *(self.replay.episode(int(i)) for i in ref)])
        threshold = float(np.quantile(traj_adv, q))
        return torch.from_numpy(traj_adv[:len(episodes)] >= threshold).float(), threshold

    def _stale_share(self, batch: EpisodeBatch, rho: torch.Tensor) -> torch.Tensor:
        return batch.episode_mean((rho < self.config.stale_rho).float())

    def _evict_stale(self, slots: np.ndarray, batch: EpisodeBatch, rho: torch.Tensor) -> int:
        """Remove the measured episodes whose share of stale steps exceeds the bound."""
        limit = self.config.max_stale_share
        if limit is None:
            return 0
        over = (self._stale_share(batch, rho) > limit).numpy()
        bad = self.replay.unspared(np.asarray(slots)[over])  # keep_successes: as for K
        before = len(self.replay)
        self.replay.remove(bad)
        gone = before - len(self.replay)
        self.evicted["stale"] += gone
        return gone

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
    def refresh_priorities(self, slots: Sequence[int] | np.ndarray) -> int:
        """Re-score stored episodes under the current π and V (chunks of a batch); those
        now mostly stale leave. Returns how many left."""
        cfg = self.config
        slots = np.asarray(slots, dtype=np.int64)
        evicted = 0
        for lo in range(0, slots.size, cfg.batch_episodes):
            chunk = slots[lo : lo + cfg.batch_episodes]
            batch = EpisodeBatch.build([self.replay.episode(int(i)) for i in chunk])
            out = evaluate_detached(self.policy, batch.steps, cfg.micro_batch)
            log_pi = batch.pad(out.log_prob)
            values = batch.pad(self._values(out.features))
            rho = torch.exp((log_pi - batch.log_mu).clamp(max=30.0)) * batch.mask
            rewards = batch.rewards - cfg.step_cost * batch.mask
            td = (rewards + cfg.gamma * _shift(values) - values) * batch.mask
            self.replay.update_priorities(chunk, self._priorities(batch, td, rho, log_pi))
            evicted += self._evict_stale(chunk, batch, rho)
        return evicted

    # -- Trainer protocol: state -------------------------------------------------
    def _extra_meta(self) -> dict[str, Any]:
        return {"timings": dict(self.timings), "entropy_boost": self.entropy_boost,
                "train_seconds": self.train_seconds, "horizon_updates": self.horizon_updates,
                "horizon_seconds": self.horizon_seconds, "evicted": dict(self.evicted)}

    def _load_extra_meta(self, meta: Mapping[str, Any]) -> None:
        self.timings.update(meta.get("timings", {}))
        self.entropy_boost = float(meta.get("entropy_boost", 0.0))
        self.train_seconds = float(meta.get("train_seconds", 0.0))
        # this run's config wins over the checkpoint's plan (call set_horizon after loading)
        if self.config.horizon_updates is None:
            self.horizon_updates = meta.get("horizon_updates", self.horizon_updates)
        if self.config.horizon_seconds is None:
            self.horizon_seconds = meta.get("horizon_seconds", self.horizon_seconds)
        self.evicted.update(meta.get("evicted", {}))

    def _optimizers(self) -> dict[str, torch.optim.Optimizer]:
        return {"actor": self.actor_opt, "critic": self.critic_opt, "traj": self.traj_opt}

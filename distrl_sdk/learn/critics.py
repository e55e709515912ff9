"""The two critics A-RIDE (and the DigiRL baseline) train beside the policy.

Both are small MLPs over features the policy computes (``PolicyOutput.features`` for a
step, ``TrainablePolicy.instruction_features`` for an instruction), detached so that
critic losses never move the policy:

- :class:`StepCritic` V(s): regressed with squared error onto Retrace targets
  (DistRL §"Retrace(λ) applied to V": V(s_t) ← V(s_t) + δ_t).
- :class:`TrajectoryCritic` V_traj(instruction) ∈ (0, 1): the probability that an
  episode on this instruction succeeds, trained by Monte Carlo binary cross-entropy
  against the episode's final reward r ∈ [0, 1]:
  L = −E[r log V_traj + (1 − r) log(1 − V_traj)].
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["StepCritic", "TrajectoryCritic"]


def _mlp(feature_dim: int, hidden: int) -> nn.Sequential:
    # LayerNorm first: policy features are unnormalised and drift while the policy learns
    return nn.Sequential(nn.LayerNorm(feature_dim), nn.Linear(feature_dim, hidden), nn.GELU(),
                         nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, 1))


class StepCritic(nn.Module):
    """V(s) from the policy's step features; one scalar per step."""

    def __init__(self, feature_dim: int, hidden: int = 256) -> None:
        super().__init__()
        self.net = _mlp(feature_dim, hidden)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """[B, D] → [B] state values."""
        out: torch.Tensor = self.net(features.detach()).squeeze(-1)
        return out

    def loss(self, values: torch.Tensor, targets: torch.Tensor,
             weights: torch.Tensor | None = None) -> torch.Tensor:
        """(Weighted) mean squared error of ``values`` (from forward) to ``targets``."""
        err = (values - targets.detach()) ** 2
        if weights is None:
            return err.mean()
        return (weights * err).sum() / weights.sum().clamp_min(1e-8)


class TrajectoryCritic(nn.Module):
    """V_traj(instruction): success probability of an episode on an instruction."""

    def __init__(self, feature_dim: int, hidden: int = 256) -> None:
        super().__init__()
        self.net = _mlp(feature_dim, hidden)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """[B, D] instruction features → [B] logits of V_traj."""
        out: torch.Tensor = self.net(features.detach()).squeeze(-1)
        return out

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """[B, D] → [B] V_traj in (0, 1)."""
        return torch.sigmoid(self.logits(features))

    def loss(self, logits: torch.Tensor, rewards: torch.Tensor,
             weights: torch.Tensor | None = None) -> torch.Tensor:
        """Monte Carlo BCE against final rewards in [0, 1] (soft labels allowed)."""
        bce = F.binary_cross_entropy_with_logits(logits, rewards.detach().clamp(0.0, 1.0),
                                                 reduction="none")
        if weights is None:
            return bce.mean()
        return (weights * bce).sum() / weights.sum().clamp_min(1e-8)

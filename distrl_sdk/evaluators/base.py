"""Reward evaluators: score an episode (and optionally each step) from device state.

Evaluators compose: ``a & b`` (all), ``a | b`` (any), ``Weighted({a: 0.7, b: 0.3})``.
Scores are floats in [0, 1]. Strings in an evaluator's configuration may name task
parameters as ``{name}``; they are filled from the episode's params when it runs.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping, Sequence
from typing import Any

from distrl_sdk.device import Device
from distrl_sdk.trajectory import Trajectory

__all__ = ["AllOf", "AnyOf", "RewardEvaluator", "Weighted", "fill"]


_FIELD = re.compile(r"\{([A-Za-z_]\w*)(?:![rsa])?(?::[^{}]*)?\}")


def fill(template: str, params: Mapping[str, Any]) -> str:
    """``template.format(**params)``, leaving unknown ``{names}`` as they are.

    Never raises on a template that is not a clean format string (a regex's ``\\d{2}``,
    a lone brace): then only the ``{name}`` fields naming a parameter are filled.
    """

    class _Keep(dict[str, Any]):
        def __missing__(self, key: str) -> str:
            return "{" + key + "}"

    try:
        return template.format_map(_Keep(params))
    except (ValueError, IndexError, AttributeError, TypeError):
        # Not a clean format string (a regex quantifier ``\d{2}``, a lone ``{``, ``{0}``):
        # fill only the ``{name}`` / ``{name:spec}`` fields that name a parameter.
        def one(m: re.Match[str]) -> str:
            if m.group(1) not in params:
                return m.group(0)
            try:
                return m.group(0).format_map(params)
            except (ValueError, IndexError, KeyError, AttributeError, TypeError):
                return m.group(0)

        return _FIELD.sub(one, template)


class RewardEvaluator(abc.ABC):
    """Scores an episode from what the device shows and what the agent did."""

    #: a short name for listings and error messages
    name: str = ""

    @abc.abstractmethod
    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        """Episode-level score in [0, 1], called once when the episode ends."""

    async def step_reward(self, device: Device, trajectory: Trajectory,
                          params: Mapping[str, Any]) -> float | None:
        """Optional dense reward after each step; None means "no step reward"."""
        return None

    def describe(self) -> str:
        return self.name or type(self).__name__

    def __and__(self, other: RewardEvaluator) -> AllOf:
        return AllOf([self, other])

    def __or__(self, other: RewardEvaluator) -> AnyOf:
        return AnyOf([self, other])


async def _sum_step_rewards(parts: Sequence[RewardEvaluator], device: Device,
                            trajectory: Trajectory, params: Mapping[str, Any]) -> float | None:
    """Dense rewards of composed parts add up; None when no part gives one."""
    rewards = [r for p in parts
               if (r := await p.step_reward(device, trajectory, params)) is not None]
    return sum(rewards) if rewards else None


class AllOf(RewardEvaluator):
    """The minimum of its parts: every part must hold."""

    name = "all"

    def __init__(self, parts: Sequence[RewardEvaluator]) -> None:
        self.parts = list(parts)

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        score = 1.0
        for part in self.parts:
            score = min(score, await part.evaluate(device, trajectory, params))
            if score <= 0.0:
                break  # later parts cannot raise it; spare the device the queries
        return score

    async def step_reward(self, device: Device, trajectory: Trajectory,
                          params: Mapping[str, Any]) -> float | None:
        return await _sum_step_rewards(self.parts, device, trajectory, params)

    def describe(self) -> str:
        return "all(" + ", ".join(p.describe() for p in self.parts) + ")"


class AnyOf(RewardEvaluator):
    """The maximum of its parts."""

    name = "any"

    def __init__(self, parts: Sequence[RewardEvaluator]) -> None:
        self.parts = list(parts)

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        score = 0.0
        for part in self.parts:
            score = max(score, await part.evaluate(device, trajectory, params))
            if score >= 1.0:
                break
        return score

    async def step_reward(self, device: Device, trajectory: Trajectory,
                          params: Mapping[str, Any]) -> float | None:
        return await _sum_step_rewards(self.parts, device, trajectory, params)

    def describe(self) -> str:
        return "any(" + ", ".join(p.describe() for p in self.parts) + ")"


class Weighted(RewardEvaluator):
    """A weighted mean of its parts (weights need not sum to 1)."""

    name = "weighted"

    def __init__(
        self,
        parts: Mapping[RewardEvaluator, float] | Sequence[tuple[RewardEvaluator, float]],
    ) -> None:
        items = list(parts.items()) if isinstance(parts, Mapping) else list(parts)
        if not items or any(w < 0 for _, w in items) or sum(w for _, w in items) <= 0:
            raise ValueError("weighted evaluator needs parts with non-negative weights, not all 0")
        self.parts = items

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        total = sum(w for _, w in self.parts)
        acc = 0.0
        for part, w in self.parts:
            acc += w * await part.evaluate(device, trajectory, params)
        return acc / total

    def describe(self) -> str:
        return "weighted(" + ", ".join(f"{p.describe()}×{w:g}" for p, w in self.parts) + ")"

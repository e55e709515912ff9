"""The seam between collection and learning: which policy plays an episode.

A :class:`PolicyProvider` returns a :class:`PolicyChoice` per episode. The learner's
provider hands out its newest policy and that policy's version; the collector
records ``policy_version`` on every trajectory's meta.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Protocol

from distrl_sdk.device import Device
from distrl_sdk.policy import OraclePolicy, Policy, RandomPolicy
from distrl_sdk.task import Task

__all__ = ["OracleProvider", "PolicyChoice", "PolicyProvider", "RandomProvider",
           "StaticProvider"]


@dataclass(frozen=True)
class PolicyChoice:
    policy: Policy
    version: int | str | None = None


class PolicyProvider(Protocol):
    async def policy_for(self, task: Task, device: Device) -> PolicyChoice: ...


class RandomProvider:
    """A fresh :class:`RandomPolicy` per episode, seeds ``seed, seed+1, …`` (version 0)."""

    def __init__(self, seed: int = 0) -> None:
        self._seeds = itertools.count(seed)

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(RandomPolicy(next(self._seeds)), 0)


class OracleProvider:
    """The task's scripted solution (``oracle`` version): for smoke runs and demos."""

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(OraclePolicy(task.oracle(device)), "oracle")


class StaticProvider:
    """One policy object for every episode; ``version`` can be bumped (hot swap)."""

    def __init__(self, policy: Policy, version: int | str | None = 0) -> None:
        self.policy, self.version = policy, version

    def swap(self, policy: Policy, version: int | str | None) -> None:
        self.policy, self.version = policy, version

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(self.policy, self.version)

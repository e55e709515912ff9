"""Periodic held-out evaluation inside a training farm (``farm up --policy learned``).

Every ``every_s`` seconds (the first round as soon as a policy has arrived) the farm
freezes the version it is playing and runs one :class:`EvalRound` of the test instances
— greedy, the same instances every round, so versions are compared on equal terms —
on the same devices, alongside training collection (both lease whichever device is
ready). Its trajectories go to the farm's sink marked as evaluation (``meta.eval`` →
the wire's ``eval`` field), which the learner scores and never learns from. A version
already evaluated is not evaluated again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from distrl_sdk.task import Split, Task
from farm.collect import PolicyProvider, TrajectorySink
from farm.collect.reset import EpisodeReset
from farm.device.registry import DeviceRegistry
from farm.evaluate.round import AgentEval, EvalReport, EvalRound, plan_instances

__all__ = ["PeriodicEval"]

log = logging.getLogger(__name__)


class _HasAgent(Protocol):
    @property
    def agent(self) -> Any: ...  # a PolicyAgent, or None before the first version


class PeriodicEval:
    def __init__(self, tasks: Sequence[type[Task]], provider: _HasAgent, *, every_s: float,
                 episodes_per_task: int = 1, seed: int = 0, farm_id: str = "farm",
                 episode_timeout_s: float = 120.0, max_steps: int | None = None,
                 retries: int = 2, split: Split = "test") -> None:
        if every_s <= 0:
            raise ValueError("every_s must be > 0")
        self.tasks, self.provider, self.every_s = list(tasks), provider, every_s
        self.episodes_per_task, self.seed, self.farm_id = episodes_per_task, seed, farm_id
        self.episode_timeout_s, self.max_steps = episode_timeout_s, max_steps
        self.retries, self.split = retries, split
        self.reports: list[EvalReport] = []
        self.current: EvalRound | None = None
        self._stop = asyncio.Event()
        self._last_version: int | None = None

    def stop(self) -> None:
        """End the loop; a round under way stops (its in-flight episodes abort)."""
        self._stop.set()
        if self.current is not None:
            self.current.stop()

    def _frozen(self) -> tuple[Any, Any] | None:
        """(greedy frozen agent, the provider's agent) for a version not yet evaluated."""
        from distrl_sdk.learn import PolicyAgent

        agent = self.provider.agent
        if agent is None or agent.version == self._last_version:
            return None
        greedy_copy = getattr(agent, "greedy_copy", None)
        if greedy_copy is not None:  # a remote policy: the server holds the version's weights
            return greedy_copy(), agent
        # the provider loads new weights only into policy objects no live agent uses:
        # holding its agent for the round keeps this object's weights frozen
        return PolicyAgent(agent.policy, agent.version, greedy=True), agent

    async def run(self, registry: DeviceRegistry, sink: TrajectorySink,
                  wrap_provider: Callable[[PolicyProvider], PolicyProvider] | None = None,
                  reset: EpisodeReset | None = None) -> None:
        n = 0
        while not self._stop.is_set():
            frozen = self._frozen()
            if frozen is not None:
                eval_agent, pinned = frozen
                n += 1
                self.current = EvalRound(
                    registry, plan_instances(self.tasks, self.episodes_per_task,
                                             seed=self.seed, split=self.split),
                    AgentEval(eval_agent), sink=sink, retries=self.retries,
                    episode_timeout_s=self.episode_timeout_s, max_steps=self.max_steps,
                    split=self.split, greedy=True, wrap_provider=wrap_provider,
                    round_id=f"{self.farm_id}-r{n}-v{eval_agent.version}", reset=reset)
                if self._stop.is_set():  # stop() came while the round was being built
                    break
                t0 = time.monotonic()
                report = await self.current.run()
                del pinned
                self._last_version = report.policy_version
                self.reports.append(report)
                log.info("eval round %s: v%s %.3f [%.3f, %.3f] over %d episodes%s",
                         report.round_id, report.policy_version, report.success_rate,
                         report.ci_low, report.ci_high, report.episodes,
                         "" if report.complete else " (incomplete)")
                self.current = None
                wait = max(0.0, self.every_s - (time.monotonic() - t0))  # start to start
            else:  # no (new) version yet: look again soon
                wait = min(self.every_s, 1.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), wait)

    def summary(self) -> dict[str, Any]:
        return {"rounds": len(self.reports),
                "last": None if not self.reports else {
                    k: v for k, v in self.reports[-1].as_dict().items() if k != "tasks"}}

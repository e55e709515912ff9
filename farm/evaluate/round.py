"""One evaluation round: a fixed set of held-out instances, each played once (aborted
attempts again, up to ``retries``), by one frozen policy, on a device registry.

The round runs the farm's own :class:`~farm.collect.Collector` (async workers, leases,
timeouts, fault handling) over an exhaustible sampler: when every instance has been
handed out, workers end, and the round is over once the last episode is sunk. It can
share a registry with a training collector: both lease whatever device is ready.

    instances = plan_instances(tasks, episodes_per_task=3, seed=0)     # test split
    report = await EvalRound(registry, instances, OracleEval()).run()
    report.success_rate, report.ci_low, report.ci_high

Every trajectory carries ``meta.eval`` (the fields of :class:`distrl_sdk.wire.EvalInfo`)
on its way to the optional ``sink``, so a farm can ship it marked as evaluation.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from distrl_sdk.device import Device
from distrl_sdk.policy import OraclePolicy, RandomPolicy
from distrl_sdk.task import Split, Task
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.collect import (
    Collector,
    CollectorConfig,
    CollectorStats,
    EpisodeMeta,
    PolicyChoice,
    PolicyProvider,
    TrajectorySink,
)
from farm.collect.reset import EpisodeReset
from farm.device.registry import DeviceRegistry
from farm.evaluate.stats import Tally

__all__ = ["EVAL_OWNER", "AgentEval", "EvalInstance", "EvalPolicy", "EvalReport", "EvalRound",
           "OracleEval", "RandomEval", "plan_instances"]

#: lease owner prefix of evaluation workers (a shared registry's listeners tell them apart)
EVAL_OWNER = "distrl-eval"


@dataclass(frozen=True)
class EvalInstance:
    index: int  # in the round
    task: type[Task]
    params: dict[str, Any]
    seed: int  # for policies that sample (the random one)

    def build(self) -> Task:
        return self.task(dict(self.params))


def plan_instances(tasks: Sequence[type[Task]], episodes_per_task: int, *, seed: int = 0,
                   split: Split = "test") -> list[EvalInstance]:
    """``episodes_per_task`` instances of each task, interleaved task by task (so partial
    progress covers every task). Instance ``k`` of a task is drawn from its own RNG
    seeded by ``(seed, task name, k)``: the same instances whatever else is evaluated."""
    if episodes_per_task < 1:
        raise ValueError("episodes_per_task must be ≥ 1")
    out: list[EvalInstance] = []
    for k in range(episodes_per_task):
        for t in sorted(tasks, key=lambda c: c.name):
            rng = random.Random(f"{seed}/{t.name}/{k}")
            params = t.generate_params(rng, split)
            out.append(EvalInstance(len(out), t, params, rng.randrange(2**31)))
    return out


class EvalPolicy(Protocol):
    """Who plays an instance. ``version``: the frozen policy version (None: scripted)."""

    name: str
    version: int | None

    def choose(self, instance: EvalInstance, task: Task, device: Device) -> PolicyChoice: ...


class OracleEval:
    """The task's scripted solution: the ceiling (every sample task scores 1.0)."""

    name = "oracle"
    version: int | None = None

    def choose(self, instance: EvalInstance, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(OraclePolicy(task.oracle(device)), "oracle")


class RandomEval:
    """A :class:`RandomPolicy` seeded per instance: the floor, reproducible per instance."""

    name = "random"
    version: int | None = None

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def choose(self, instance: EvalInstance, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(RandomPolicy(self.seed * 1_000_003 + instance.seed), 0)


class AgentEval:
    """One frozen learned policy (a :class:`~distrl_sdk.learn.PolicyAgent`, which batches
    the decisions of all devices) for every instance. The caller guarantees the agent's
    weights do not change during the round."""

    def __init__(self, agent: Any, name: str | None = None) -> None:
        self.agent = agent
        self.version: int | None = int(agent.version)
        self.name = name or str(agent.name)

    def choose(self, instance: EvalInstance, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(self.agent, self.version)


@dataclass
class EvalReport:
    """What a round measured (``as_dict``: the ``distrl eval --json`` schema)."""

    policy: str
    policy_version: int | None
    split: str
    greedy: bool | None  # None: a scripted policy (oracle, random)
    planned: int
    tally: Tally
    wall_s: float = 0.0
    devices: int = 0
    complete: bool = False  # every planned instance ended with a final episode
    round_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # seed, episodes per task …

    @property
    def success_rate(self) -> float:
        return self.tally.mean()[0]

    @property
    def ci_low(self) -> float:
        return self.tally.mean()[1]

    @property
    def ci_high(self) -> float:
        return self.tally.mean()[2]

    @property
    def episodes(self) -> int:
        return self.tally.episodes

    @property
    def by_task(self) -> dict[str, float]:
        return {n: s.success_rate for n, s in sorted(self.tally.tasks.items()) if s.episodes}

    def scalars(self) -> dict[str, float]:
        return self.tally.scalars(self.policy_version)

    def as_dict(self) -> dict[str, Any]:
        mean, lo, hi = self.tally.mean()
        tasks = [s.as_dict() for _, s in sorted(self.tally.tasks.items())]
        return {
            "schema": "distrl-eval/1", "policy": self.policy,
            "policy_version": self.policy_version, "split": self.split, "greedy": self.greedy,
            **self.meta, "confidence": 0.95,
            "success_rate": round(mean, 6), "ci_low": round(lo, 6), "ci_high": round(hi, 6),
            "episodes": self.episodes, "planned": self.planned,
            "mean_steps": round(self.tally.mean_steps(), 3),
            "aborted": sum(s.aborted for s in self.tally.tasks.values()),
            "errored": sum(s.errored for s in self.tally.tasks.values()),
            "complete": self.complete, "devices": self.devices,
            "wall_s": round(self.wall_s, 3),
            "episodes_per_min": round(self.episodes * 60.0 / max(self.wall_s, 1e-9), 2),
            "tasks": tasks,
        }


OnEpisode = Callable[[EvalInstance, Trajectory, bool], None]  # (instance, trajectory, final)


class _Sampler:
    def __init__(self, round_: EvalRound) -> None:
        self.r = round_

    def sample(self) -> Task | None:
        r = self.r
        if not r._queue:
            return None
        inst = r._queue.popleft()
        task = inst.build()
        r._issued[id(task)] = (inst, task)
        return task


class _Provider:
    def __init__(self, round_: EvalRound) -> None:
        self.r = round_

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        inst, _ = self.r._issued.pop(id(task))
        self.r._playing[device.serial] = inst  # one episode per device at a time (a lease)
        return self.r.policy.choose(inst, task, device)


class _Sink:
    def __init__(self, round_: EvalRound) -> None:
        self.r = round_

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        r = self.r
        inst = r._playing.pop(meta.serial, None)
        if inst is None:  # cannot happen: every episode got its policy from _Provider
            raise RuntimeError(f"evaluation episode on {meta.serial} without an instance")
        attempt = r._attempts.get(inst.index, 0)
        aborted = trajectory.status is EpisodeStatus.ABORTED
        stopping = r._stopping or r.collector.stopping
        retry = aborted and attempt < r.retries and not stopping
        # an episode the round's stop aborted is no result: not final, so the learner
        # never completes (and publishes) a round the farm cut short — its scored
        # episodes would be the ones that happened to finish first
        cut = aborted and stopping
        final = not retry and not cut
        if retry:  # a device fault: the instance is played again (first, on any device)
            r._attempts[inst.index] = attempt + 1
            r._queue.appendleft(inst)
        else:
            r._final += final
            r.tally.add(trajectory.task, trajectory.status.value, len(trajectory.steps))
        meta.eval = {"round": r.round_id, "policy_version": r.policy.version,
                     "instance": inst.index, "planned": len(r.instances), "final": final,
                     "split": r.split, "greedy": r.greedy is not False}
        if r.on_episode is not None:
            r.on_episode(inst, trajectory, final)
        if r.sink is not None:
            await r.sink.put(trajectory, meta)


class EvalRound:
    """Play ``instances`` with ``policy`` on ``registry``; :meth:`run` returns the report.

    ``retries``: an aborted episode (a device fault, never the agent's) is played again
    up to this many times; errored ones (a task bug) are not. ``timeout_s`` bounds the
    whole round (in-flight episodes end as aborted). ``wrap_provider`` lets a farm
    decorate the policy provider (its live status view). ``reset`` runs on the device
    before every episode (:mod:`farm.collect.reset`), so no episode sees what an earlier
    one left on its phone."""

    def __init__(self, registry: DeviceRegistry, instances: Sequence[EvalInstance],
                 policy: EvalPolicy, *, sink: TrajectorySink | None = None, retries: int = 2,
                 episode_timeout_s: float = 120.0, max_steps: int | None = None,
                 stop_on_success: bool = True, workers: int | None = None,
                 timeout_s: float | None = None, split: Split = "test",
                 greedy: bool | None = True,
                 round_id: str | None = None, on_episode: OnEpisode | None = None,
                 wrap_provider: Callable[[PolicyProvider], PolicyProvider] | None = None,
                 meta: dict[str, Any] | None = None,
                 reset: EpisodeReset | None = None) -> None:
        if not instances:
            raise ValueError("an evaluation round needs at least one instance")
        self.registry, self.instances, self.policy = registry, list(instances), policy
        self.sink, self.retries, self.on_episode = sink, retries, on_episode
        self.split, self.greedy = split, greedy
        self.round_id = round_id or f"eval-{uuid.uuid4().hex[:12]}"
        self.tally = Tally()
        self.tally.expect(i.task.name for i in self.instances)
        self.meta = dict(meta or {})
        self._queue: deque[EvalInstance] = deque(self.instances)
        self._issued: dict[int, tuple[EvalInstance, Task]] = {}
        self._playing: dict[str, EvalInstance] = {}
        self._attempts: dict[int, int] = {}
        self._final = 0
        self._stopping = False
        provider: PolicyProvider = _Provider(self)
        if wrap_provider is not None:
            provider = wrap_provider(provider)
        self.collector = Collector(
            registry, _Sampler(self), provider, _Sink(self),
            CollectorConfig(mode="async", duration_s=timeout_s, workers=workers,
                            max_steps=max_steps, episode_timeout_s=episode_timeout_s,
                            stop_on_success=stop_on_success), name=EVAL_OWNER, reset=reset)

    @property
    def done(self) -> int:
        """Instances that ended with a final episode so far."""
        return self._final

    @property
    def stats(self) -> CollectorStats:
        return self.collector.stats

    def stop(self) -> None:
        """End the round now: in-flight episodes abort (not retried); the report says
        ``complete=False``."""
        self._stopping = True
        self.collector.stop()

    async def run(self) -> EvalReport:
        t0 = time.monotonic()
        devices = len(self.registry.devices)
        try:
            await self.collector.run()
        except asyncio.CancelledError:
            self._stopping = True
            raise
        complete = not self._stopping and self._final == len(self.instances)
        return EvalReport(policy=self.policy.name, policy_version=self.policy.version,
                          split=self.split, greedy=self.greedy, planned=len(self.instances),
                          tally=self.tally, wall_s=time.monotonic() - t0, devices=devices,
                          complete=complete, round_id=self.round_id, meta=self.meta)

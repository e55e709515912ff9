"""The learner's side of evaluation: eval trajectories by round → scores per policy version.

A farm's evaluation round plays ``planned`` instances with one frozen version; each
trajectory carries :class:`~distrl_sdk.wire.EvalInfo`. A round counts only once it is
complete (every instance has a ``final`` trajectory): a partial round over-represents
the instances that finish first (short, often successful episodes), so publishing it
would bias the estimate. Complete rounds of the same version are pooled (several farms,
or a farm that evaluated a version twice). Open rounds are bounded: the oldest is
dropped (and counted) when too many are open, e.g. farms stopped mid-round.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from distrl_sdk.wire import TrajectoryMsg
from farm.evaluate.stats import Tally, TaskScore

__all__ = ["EvalAggregator"]

log = logging.getLogger(__name__)


@dataclass
class _Round:
    planned: int
    version: int | None
    final: set[int] = field(default_factory=set)
    tally: Tally = field(default_factory=Tally)


class EvalAggregator:
    def __init__(self, max_open_rounds: int = 64) -> None:
        self.max_open_rounds = max_open_rounds
        self.received = 0  # eval trajectories seen (any status, final or not)
        self.rounds = 0  # complete rounds
        self.dropped = 0  # rounds abandoned incomplete
        self.latest: int | None = None  # version of the newest complete round
        self.by_version: dict[int, Tally] = {}
        self._open: OrderedDict[str, _Round] = OrderedDict()

    def add(self, msg: TrajectoryMsg) -> dict[str, float] | None:
        """Take one eval trajectory; the version's ``eval/*`` scalars when it completed a
        round, else None."""
        info = msg.eval
        if info is None:
            raise ValueError("not an evaluation trajectory")
        self.received += 1
        key = f"{msg.farm_id}/{info.round}"
        r = self._open.get(key)
        if r is None:
            r = self._open[key] = _Round(info.planned, info.policy_version)
            while len(self._open) > self.max_open_rounds:
                old, _ = self._open.popitem(last=False)
                self.dropped += 1
                log.warning("evaluation round %s dropped incomplete", old)
        if not info.final or info.instance in r.final or info.instance >= r.planned:
            return None  # a retried attempt, a duplicate, or out of range: not scored
        r.final.add(info.instance)
        r.tally.add(msg.task, msg.status, len(msg.steps))
        if len(r.final) < r.planned:
            return None
        del self._open[key]
        self.rounds += 1
        if r.version is None:  # a scripted policy: nothing to attribute it to
            return None
        pooled = self.by_version.setdefault(r.version, Tally())
        for name, s in r.tally.tasks.items():
            p = pooled.tasks.setdefault(name, TaskScore(name))
            p.episodes += s.episodes
            p.successes += s.successes
            p.steps += s.steps
            p.aborted += s.aborted
            p.errored += s.errored
        self.latest = r.version
        log.info("held-out evaluation of v%d: %.3f over %d episodes", r.version,
                 pooled.mean()[0], pooled.episodes)
        return self.scalars()

    def scalars(self) -> dict[str, float]:
        """``eval/*`` of the newest evaluated version, plus the counters."""
        out: dict[str, float] = {"eval/received": float(self.received),
                                 "eval/rounds": float(self.rounds)}
        if self.latest is not None:
            out.update(self.by_version[self.latest].scalars(self.latest))
        return out

    def summary(self) -> dict[str, Any]:
        return {"received": self.received, "rounds": self.rounds, "dropped": self.dropped,
                "open_rounds": len(self._open),
                "by_version": {v: round(t.mean()[0], 6) for v, t in
                               sorted(self.by_version.items())}}

    # -- checkpoint ------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Complete results (JSON) for the learner's checkpoint; open rounds are not kept."""
        return {"received": self.received, "rounds": self.rounds, "dropped": self.dropped,
                "latest": self.latest,
                "by_version": {str(v): t.as_dict() for v, t in self.by_version.items()}}

    def load(self, state: Mapping[str, Any] | None) -> None:
        if not state:
            return
        self.received = int(state.get("received", 0))
        self.rounds = int(state.get("rounds", 0))
        self.dropped = int(state.get("dropped", 0))
        latest = state.get("latest")
        self.latest = int(latest) if latest is not None else None
        self.by_version = {int(v): Tally.from_dict(t)
                           for v, t in dict(state.get("by_version", {})).items()}
        if self.latest is not None and self.latest not in self.by_version:
            self.latest = None

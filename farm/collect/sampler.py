"""Which task an episode plays: weighted, seeded sampling over task families."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Protocol

from distrl_sdk.task import Split, Task

__all__ = ["EpisodeSampler", "TaskSampler"]


class EpisodeSampler(Protocol):
    """What the collector plays next. ``None``: nothing left (the worker that asked ends;
    an evaluation plan is exhausted), never returned by :class:`TaskSampler`."""

    def sample(self) -> Task | None: ...


class TaskSampler:
    """``TaskSampler([WifiOff, AlarmDial], weights={"clock.alarm_dial": 2}, seed=1)``.

    ``sample()`` picks a family by weight (default 1 each), then draws that family's
    parameters for ``split`` from the same seeded RNG: a run repeats under its seed
    (given the same order of calls).
    """

    def __init__(self, tasks: Sequence[type[Task]], *,
                 weights: Mapping[str, float] | Sequence[float] | None = None,
                 seed: int = 0, split: Split = "train") -> None:
        if not tasks:
            raise ValueError("TaskSampler needs at least one task class")
        self.tasks = list(tasks)
        if weights is None:
            w = [1.0] * len(self.tasks)
        elif isinstance(weights, Mapping):
            unknown = set(weights) - {t.name for t in self.tasks}
            if unknown:
                raise ValueError(f"weights for unknown tasks: {', '.join(sorted(unknown))}")
            w = [float(weights.get(t.name, 1.0)) for t in self.tasks]
        else:
            w = [float(x) for x in weights]
            if len(w) != len(self.tasks):
                raise ValueError(f"{len(w)} weights for {len(self.tasks)} tasks")
        if any(x < 0 for x in w) or sum(w) <= 0:
            raise ValueError("weights must be ≥ 0 and not all 0")
        self.weights = w
        self.split: Split = split
        self.rng = random.Random(seed)

    def sample(self) -> Task:
        cls = self.rng.choices(self.tasks, weights=self.weights)[0]
        return cls.sample(self.rng, self.split)

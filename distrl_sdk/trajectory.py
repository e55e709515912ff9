"""An episode as the SDK sees it: the steps an agent took on one task."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from distrl_sdk.uitree import UIElement

__all__ = ["EpisodeStatus", "Step", "Trajectory"]


class EpisodeStatus(StrEnum):
    RUNNING = "running"
    SUCCESS = "success"  # the evaluator scored it ≥ 0.5
    FAILURE = "failure"  # the agent finished or ran out of steps; not successful
    ABORTED = "aborted"  # a device fault broke it: never the agent's failure
    ERRORED = "errored"  # the task or its evaluator raised: never the agent's failure


@dataclass
class Step:
    """One decision: what the agent saw (optionally) and what it did."""

    index: int
    action: Any  # a distrl_sdk.actions Action or InvalidAction
    reward: float = 0.0
    screen: list[UIElement] | None = None  # the UI tree the action was chosen on
    activity: str | None = None  # foreground package/activity before the action
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trajectory:
    task: str
    instruction: str
    params: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    answer: str | None = None  # what the agent answered, if the task asks a question
    status: EpisodeStatus = EpisodeStatus.RUNNING
    reward: float = 0.0
    error: str | None = None

    @property
    def actions(self) -> list[Any]:
        return [s.action for s in self.steps]

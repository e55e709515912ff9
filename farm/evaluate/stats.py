"""Success rates with 95 % Wilson intervals, per task and for the suite.

A task's interval is the Wilson score interval of its successes over its finished
episodes (aborted and errored ones are device or task faults, never the agent's, and
are counted apart). The suite's success rate is the *mean over tasks* (each task counts
once, whatever its episode count); its interval is the Wilson interval at that mean
with the effective sample size ``T² / Σ 1/n_t`` — the size for which a binomial has the
variance of the stratified mean when the tasks share one rate. With the same number of
episodes per task this is exactly the Wilson interval of the pooled counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Z95", "Tally", "TaskScore", "suite_mean", "wilson"]

Z95 = 1.959963984540054  # two-sided 95 %


def wilson(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of ``successes`` out of ``n``; ``(0, 1)`` when ``n`` is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = min(1.0, max(0.0, successes / n))
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # clamp: rounding can push the ends a hair outside [0, 1] (or past p at 0 / 1)
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


@dataclass
class TaskScore:
    """One task's held-out result."""

    task: str
    episodes: int = 0  # finished (success or failure): the denominator
    successes: int = 0
    steps: int = 0  # summed over finished episodes
    aborted: int = 0  # device faults: not scored
    errored: int = 0  # task/evaluator bugs: not scored

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.episodes)

    @property
    def mean_steps(self) -> float:
        return self.steps / self.episodes if self.episodes else 0.0

    def as_dict(self) -> dict[str, Any]:
        lo, hi = self.interval
        return {"task": self.task, "episodes": self.episodes, "successes": self.successes,
                "success_rate": round(self.success_rate, 6), "ci_low": round(lo, 6),
                "ci_high": round(hi, 6), "mean_steps": round(self.mean_steps, 3),
                "aborted": self.aborted, "errored": self.errored}


def suite_mean(scores: Iterable[TaskScore]) -> tuple[float, float, float]:
    """(mean over tasks with ≥ 1 finished episode, ci_low, ci_high); see the module doc."""
    scored = [s for s in scores if s.episodes > 0]
    if not scored:
        return 0.0, 0.0, 1.0
    t = len(scored)
    mean = sum(s.success_rate for s in scored) / t
    n_eff = t * t / sum(1.0 / s.episodes for s in scored)
    lo, hi = wilson(mean * n_eff, n_eff)
    return mean, lo, hi


@dataclass
class Tally:
    """Outcomes as they arrive → per-task scores and the suite mean."""

    tasks: dict[str, TaskScore] = field(default_factory=dict)

    def _task(self, name: str) -> TaskScore:
        return self.tasks.setdefault(name, TaskScore(name))

    def expect(self, names: Iterable[str]) -> None:
        """List these tasks (with 0 episodes until outcomes arrive)."""
        for n in names:
            self._task(n)

    def add(self, task: str, status: str, steps: int = 0) -> None:
        """``status``: an :class:`~distrl_sdk.trajectory.EpisodeStatus` value."""
        s = self._task(task)
        if status in ("success", "failure"):
            s.episodes += 1
            s.successes += status == "success"
            s.steps += steps
        elif status == "aborted":
            s.aborted += 1
        else:
            s.errored += 1

    @property
    def episodes(self) -> int:
        return sum(s.episodes for s in self.tasks.values())

    @property
    def successes(self) -> int:
        return sum(s.successes for s in self.tasks.values())

    def mean(self) -> tuple[float, float, float]:
        return suite_mean(self.tasks.values())

    def mean_steps(self) -> float:
        n = self.episodes
        return sum(s.steps for s in self.tasks.values()) / n if n else 0.0

    def scalars(self, policy_version: int | None) -> dict[str, float]:
        """The ``eval/*`` metrics (names the TUI shows)."""
        mean, lo, hi = self.mean()
        out = {"eval/success_rate": mean, "eval/ci_low": lo, "eval/ci_high": hi,
               "eval/episodes": float(self.episodes)}
        if policy_version is not None:
            out["eval/policy_version"] = float(policy_version)
        for name, s in sorted(self.tasks.items()):
            if s.episodes:
                out[f"eval/task/{name}"] = s.success_rate
        return out

    def as_dict(self) -> dict[str, Any]:
        return {n: {"episodes": s.episodes, "successes": s.successes, "steps": s.steps,
                    "aborted": s.aborted, "errored": s.errored}
                for n, s in self.tasks.items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, int]]) -> Tally:
        out = cls()
        for n, v in d.items():
            out.tasks[n] = TaskScore(n, int(v["episodes"]), int(v["successes"]),
                                     int(v["steps"]), int(v["aborted"]), int(v["errored"]))
        return out

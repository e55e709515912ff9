"""Running evaluators safely: an evaluator that raises becomes a typed ``TaskError``.

The episode runner calls :func:`safe_evaluate` (and :func:`safe_step_reward`) instead
of ``evaluator.evaluate`` directly:

* a score comes back as ``EvalOutcome(score=…)``;
* an evaluator bug, a bad config met at run time, a judge service that failed, or a
  score outside [0, 1] comes back as ``EvalOutcome(error=TaskError(…))`` — the episode
  is ``ERRORED`` (never the agent's failure); ``outcome.unwrap()`` raises it;
* a ``DeviceError`` (phone offline, adb timeout) is *not* caught: it is a device
  fault and the runner marks the episode ``ABORTED``. Cancellation propagates too.

Evaluators that can end an episode early (android_env's ``episode_end`` regexes)
implement :class:`EndsEpisode`; the runner asks ``episode_ended`` after each step.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError, TaskError
from distrl_sdk.evaluators.base import RewardEvaluator
from distrl_sdk.trajectory import Trajectory

__all__ = ["EndsEpisode", "EvalOutcome", "safe_evaluate", "safe_step_reward"]


@dataclass(frozen=True, slots=True)
class EvalOutcome:
    """A score, or the ``TaskError`` that stands for the evaluator's failure."""

    score: float | None = None
    error: TaskError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def unwrap(self) -> float:
        """The score; raises the ``TaskError`` if the evaluator failed.

        (A step-reward outcome may hold ``score=None``, "no step reward": read ``.score``.)
        """
        if self.error is not None:
            raise self.error
        if self.score is None:
            raise TaskError("the evaluator gave no score (a step reward of None)")
        return self.score


@runtime_checkable
class EndsEpisode(Protocol):
    """An evaluator that may end the episode (termination, not truncation)."""

    async def episode_ended(self, device: Device, trajectory: Trajectory,
                            params: Mapping[str, Any]) -> bool: ...


def _wrap(evaluator: RewardEvaluator, what: str, exc: BaseException) -> TaskError:
    if isinstance(exc, TaskError):
        err = TaskError(f"evaluator {evaluator.describe()}: {exc}")
    else:
        err = TaskError(f"evaluator {evaluator.describe()} raised {type(exc).__name__} "
                        f"in {what}: {exc}")
    err.__cause__ = exc
    return err


async def safe_evaluate(evaluator: RewardEvaluator, device: Device, trajectory: Trajectory,
                        params: Mapping[str, Any]) -> EvalOutcome:
    """``evaluator.evaluate`` with failures turned into ``EvalOutcome.error``."""
    try:
        score = await evaluator.evaluate(device, trajectory, params)
    except DeviceError:
        raise
    except Exception as exc:
        return EvalOutcome(error=_wrap(evaluator, "evaluate", exc))
    if not isinstance(score, int | float) or isinstance(score, bool) or math.isnan(score) \
            or not 0.0 <= score <= 1.0:
        return EvalOutcome(error=TaskError(
            f"evaluator {evaluator.describe()} returned {score!r}; scores are floats in [0, 1]"))
    return EvalOutcome(score=float(score))


async def safe_step_reward(evaluator: RewardEvaluator, device: Device, trajectory: Trajectory,
                           params: Mapping[str, Any]) -> EvalOutcome:
    """``evaluator.step_reward`` likewise; ``score`` None means "no step reward"."""
    try:
        reward = await evaluator.step_reward(device, trajectory, params)
    except DeviceError:
        raise
    except Exception as exc:
        return EvalOutcome(error=_wrap(evaluator, "step_reward", exc))
    if reward is not None and (not isinstance(reward, int | float) or math.isnan(reward)):
        return EvalOutcome(error=TaskError(
            f"evaluator {evaluator.describe()} returned step reward {reward!r}; not a number"))
    return EvalOutcome(score=None if reward is None else float(reward))

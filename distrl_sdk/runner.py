"""Run one episode of a task on a device with a policy, and score it.

    setup → [observe → policy.act → execute (→ step reward) (→ success?)]* → evaluate
          → teardown

With ``stop_on_success`` the task's evaluator also runs after every executed step and
the episode ends there, as SUCCESS, the first time it passes: actions after the goal
is met are never recorded, so a learner cannot reward them.

A device fault marks the episode ABORTED and a task/evaluator bug ERRORED — never a
FAILURE of the agent — and teardown runs on every path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from distrl_sdk.actions import Answer, InvalidAction, execute, is_terminal
from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError, DistRLError, TaskError
from distrl_sdk.policy import Decision, Observation, Policy
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory

__all__ = ["SUCCESS_THRESHOLD", "run_episode"]

SUCCESS_THRESHOLD = 0.5
log = logging.getLogger(__name__)


def _decision_info(d: Decision) -> dict[str, Any]:
    out: dict[str, Any] = dict(d.info)
    if d.log_prob is not None:
        out["log_prob"] = float(d.log_prob)
    if d.policy_version is not None:
        out["policy_version"] = int(d.policy_version)
    if d.obs is not None:
        out["policy_obs"] = d.obs
    if d.choice is not None:
        out["policy_choice"] = d.choice
    return out


async def _score(task: Task, device: Device, traj: Trajectory) -> float:
    """The task's success score in [0, 1]; an evaluator bug is a TaskError."""
    try:
        score = await task.is_successful(device, traj)
    except DeviceError:
        raise
    except Exception as exc:
        raise TaskError(f"task {task.name}: evaluator failed: {exc}") from exc
    if not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
        raise TaskError(f"task {task.name}: success score {score!r} is not in [0, 1]")
    return float(score)


async def run_episode(
    task: Task,
    device: Device,
    policy: Policy,
    *,
    max_steps: int | None = None,
    settle_s: float = 0.0,
    with_screenshots: bool = False,
    stop_on_success: bool = False,
) -> Trajectory:
    traj = Trajectory(task=task.name, instruction=task.instruction, params=dict(task.params))
    budget = max_steps or task.max_steps
    try:
        try:
            await task.setup(device)
        except DeviceError:
            raise
        except Exception as exc:
            raise TaskError(f"task {task.name}: setup failed: {exc}") from exc
        size = await device.screen_size()
        score: float | None = None  # set early when stop_on_success ends the episode
        for i in range(budget):
            t0 = time.perf_counter()
            elements = await device.ui_elements()
            shot = await device.screenshot_png() if with_screenshots else None
            prev = traj.steps[-1].screen if traj.steps else None
            obs = Observation(task.instruction, elements, size, i, traj.actions, shot, prev)
            t1 = time.perf_counter()
            action: Any = await policy.act(obs)
            t2 = time.perf_counter()
            info: dict[str, Any] = {"observe_ms": (t1 - t0) * 1000,
                                    "policy_ms": (t2 - t1) * 1000}
            if isinstance(action, Decision):
                info.update(_decision_info(action))
                action = action.action
            step = Step(index=i, action=action, screen=elements, info=info)
            if shot is not None:
                step.info["screenshot_png"] = shot
            traj.steps.append(step)
            if isinstance(action, InvalidAction):
                continue  # nothing to execute; the learner penalises it
            if isinstance(action, Answer):
                traj.answer = action.text
            await execute(device, action)
            if settle_s:
                await asyncio.sleep(settle_s)
            step.info["act_ms"] = (time.perf_counter() - t2) * 1000
            try:
                reward = await task.step_reward(device, traj)
            except DeviceError:
                raise
            except Exception as exc:
                raise TaskError(f"task {task.name}: step reward failed: {exc}") from exc
            if reward is not None:
                step.reward = reward
            if stop_on_success and not is_terminal(action):
                early = await _score(task, device, traj)
                if early >= SUCCESS_THRESHOLD:
                    score = early
                    step.info["stopped_on_success"] = True
                    break
            if is_terminal(action) or await task.episode_ended(device, traj):
                break
        if score is None:
            score = await _score(task, device, traj)
        traj.reward = float(score)
        traj.status = (EpisodeStatus.SUCCESS if traj.reward >= SUCCESS_THRESHOLD
                       else EpisodeStatus.FAILURE)
    except DeviceError as exc:
        traj.status, traj.error, traj.reward = EpisodeStatus.ABORTED, str(exc), 0.0
    except Exception as exc:  # a task, evaluator or policy bug: the run goes on
        detail = str(exc) if isinstance(exc, DistRLError) else f"{type(exc).__name__}: {exc}"
        traj.status, traj.error, traj.reward = EpisodeStatus.ERRORED, detail, 0.0
        log.warning("episode of %s errored: %s", task.name, detail)
    finally:
        try:
            await task.teardown(device)
        except Exception as exc:  # a failing teardown must not hide the episode's outcome
            log.warning("task %s: teardown failed: %s", task.name, exc)
            if traj.status in (EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE):
                traj.error = f"teardown failed: {exc}"
    return traj

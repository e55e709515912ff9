"""A task on a phone as a Gymnasium environment, for SB3, RLlib, TorchRL or CleanRL code.

    env = gymnasium.make("distrl_sdk.gymnasium_env:distrl/Phone-v0",
                         task="settings.wifi_off", device=device, split="train")
    # or PhoneEnv(task_class_or_name, device), TapEnv(…) / "distrl/Tap-v0"
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(
        '{"action_type": "click", "x": 0.5, "y": 0.3}')

Episodes are what :func:`distrl_sdk.runner.run_episode` runs — the task's setup on
``reset``, its evaluator when the episode ends, its teardown before the next ``reset``
and on ``close`` — so the same task scores the same way here as in a farm:

- **observation** (``Dict``): ``screen``, the screenshot as ``uint8`` (H, W, 3) scaled to
  ``screen_shape``; ``instruction``, the instance's instruction (``Text``). ``info`` holds
  the UI tree (``elements``, :class:`~distrl_sdk.uitree.UIElement`), ``step``, ``task``,
  ``params`` and, at the end, ``score`` and ``status``.
- **action** (``Text``): an AndroidWorld JSON action, or any text
  :func:`~distrl_sdk.actions.parse_action` reads; an SDK action object is taken as it is.
  Unreadable text is an invalid action: nothing runs, the step counts.
- **reward**: the task's step rewards if it has any, and its score (0..1) when the
  episode ends — sparse, as in the paper. **terminated**: the agent ended it (complete,
  answer, impossible), the task did, or (``stop_on_success``) the goal was met;
  **truncated**: the step budget (the task's ``max_steps``) ran out.

:class:`TapEnv` is the same with a ``Box(2)`` action (tap at normalised x, y) and the
screen alone as observation, for algorithms that need fixed-size spaces.

The device is the SDK's async :class:`~distrl_sdk.device.Device`; the environment runs
its calls on a private event loop in a thread, so it works from plain synchronous code
(and from inside a running event loop)."""

from __future__ import annotations

import asyncio
import io
import random
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import gymnasium
import numpy as np
from gymnasium import spaces
from PIL import Image

from distrl_sdk.actions import Answer, InvalidAction, Tap, execute, is_terminal, parse_action
from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.runner import SUCCESS_THRESHOLD
from distrl_sdk.task import Split, Task
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory

__all__ = ["PhoneEnv", "TapEnv"]

T = TypeVar("T")
_TEXT = spaces.Text(max_length=4096, charset=frozenset(map(chr, range(32, 127))) | {"\n"})


class PhoneEnv(gymnasium.Env[dict[str, Any], Any]):
    """One task family on one device (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 - Gymnasium's own attribute

    def __init__(self, task: type[Task] | str, device: Device, *, split: Split = "train",
                 screen_shape: tuple[int, int] = (240, 108), stop_on_success: bool = True,
                 max_steps: int | None = None, settle_s: float = 0.0,
                 render_mode: str | None = None) -> None:
        if isinstance(task, str):  # a registered task's name
            from distrl_sdk.registry import TaskRegistry

            task = TaskRegistry.discover().get(task)
        self.task_cls, self.device, self.split = task, device, split
        self.screen_shape = screen_shape
        self.stop_on_success, self.settle_s = stop_on_success, settle_s
        self.max_steps = max_steps or task.max_steps
        self.render_mode = render_mode
        h, w = screen_shape
        self.observation_space = spaces.Dict({
            "screen": spaces.Box(0, 255, (h, w, 3), np.uint8), "instruction": _TEXT})
        self.action_space: spaces.Space[Any] = _TEXT
        self.task: Task | None = None
        self.trajectory: Trajectory | None = None
        self._screen: np.ndarray[Any, Any] | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="phone-env",
                                        daemon=True)
        self._thread.start()

    # -- the event loop the device lives on ------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # -- Gymnasium API ---------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new instance (drawn from ``seed`` and the split; ``options["params"]`` picks
        one), set up on the device. The previous one is torn down first."""
        super().reset(seed=seed)
        self._teardown()
        opts = options or {}
        split: Split = opts.get("split", self.split)
        if "params" in opts:
            task = self.task_cls(opts["params"])
        else:
            draw = int(self.np_random.integers(0, 2**31 - 1))
            task = self.task_cls.sample(random.Random(draw), split)
        self.task = task
        self.trajectory = Trajectory(task=task.name, instruction=task.instruction,
                                     params=dict(task.params))
        try:
            self._run(task.setup(self.device))
        except TaskError:
            raise
        except Exception as exc:
            raise TaskError(f"task {task.name}: setup failed: {exc}") from exc
        return self._observe()

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.task is None or self.trajectory is None:
            raise RuntimeError("call reset() before step()")
        task, traj = self.task, self.trajectory
        act = self._action(action)
        step = Step(index=len(traj.steps), action=act, screen=self._elements, info={})
        traj.steps.append(step)
        reward, done = 0.0, False
        if not isinstance(act, InvalidAction):
            if isinstance(act, Answer):
                traj.answer = act.text
            self._run(self._execute(act))
            step_reward = self._run(task.step_reward(self.device, traj))
            if step_reward is not None:
                step.reward = float(step_reward)
                reward += float(step_reward)
            done = is_terminal(act) or self._run(task.episode_ended(self.device, traj))
        score: float | None = None
        if not done and self.stop_on_success and not isinstance(act, InvalidAction):
            early = self._score()
            if early >= SUCCESS_THRESHOLD:
                score, done = early, True
        truncated = not done and len(traj.steps) >= self.max_steps
        if (done or truncated) and score is None:
            score = self._score()
        obs, info = self._observe()
        if score is not None:
            reward += score
            traj.reward = score
            traj.status = (EpisodeStatus.SUCCESS if score >= SUCCESS_THRESHOLD
                           else EpisodeStatus.FAILURE)
            info.update(score=score, status=traj.status.value)
        return obs, reward, done, truncated, info

    def render(self) -> np.ndarray[Any, Any] | None:
        return self._screen

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            self._teardown()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    # -- helpers for other frameworks -------------------------------------------------
    def oracle(self) -> Iterator[Any]:
        """The task's scripted solution for the current instance, one action at a time,
        reading the live screen: demonstrations for behaviour cloning in any framework
        (``for a in env.oracle(): env.step(a)``)."""
        if self.task is None:
            raise RuntimeError("call reset() before oracle()")
        gen = self.task.oracle(self.device)

        async def next_action() -> Any:
            return await gen.__anext__()

        while True:
            try:
                yield self._run(next_action())
            except StopAsyncIteration:
                return

    # -- internals -------------------------------------------------------------------
    def _action(self, action: Any) -> Any:
        if isinstance(action, str):
            return parse_action(action)
        if isinstance(action, dict):
            import json

            return parse_action(json.dumps(action))
        return action  # an SDK action object

    async def _execute(self, action: Any) -> None:
        await execute(self.device, action)
        if self.settle_s:
            await asyncio.sleep(self.settle_s)

    def _score(self) -> float:
        assert self.task is not None and self.trajectory is not None
        score = self._run(self.task.is_successful(self.device, self.trajectory))
        if not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
            raise TaskError(f"task {self.task.name}: success score {score!r} is not in [0, 1]")
        return float(score)

    def _observe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        assert self.task is not None and self.trajectory is not None

        async def look() -> tuple[list[Any], bytes]:
            return await self.device.ui_elements(), await self.device.screenshot_png()

        elements, png = self._run(look())
        self._elements = elements
        h, w = self.screen_shape
        img = Image.open(io.BytesIO(png)).convert("RGB").resize((w, h), Image.Resampling.BILINEAR)
        self._screen = np.asarray(img, dtype=np.uint8)
        obs = {"screen": self._screen, "instruction": self.task.instruction}
        info = {"elements": elements, "step": len(self.trajectory.steps),
                "task": self.task.name, "params": dict(self.task.params)}
        return obs, info

    def _teardown(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            self._run(task.teardown(self.device))


class TapEnv(PhoneEnv):
    """:class:`PhoneEnv` with fixed-size spaces: the action is a tap at normalised
    ``(x, y)`` (``Box(0, 1, (2,))``), the observation the screen alone."""

    def __init__(self, task: type[Task] | str, device: Device, **kw: Any) -> None:
        super().__init__(task, device, **kw)
        h, w = self.screen_shape
        self.observation_space = spaces.Box(0, 255, (h, w, 3), np.uint8)  # type: ignore[assignment]
        self.action_space = spaces.Box(0.0, 1.0, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        return obs["screen"], info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if isinstance(action, np.ndarray | list | tuple):
            x, y = (float(np.clip(v, 0.0, 1.0)) for v in action)
            action = Tap(x, y)
        obs, reward, terminated, truncated, info = super().step(action)
        return obs["screen"], reward, terminated, truncated, info


# gymnasium.make("distrl_sdk.gymnasium_env:distrl/Phone-v0", task=NAME, device=DEVICE):
# the module part imports this file, which registers both
gymnasium.register(id="distrl/Phone-v0", entry_point=f"{__name__}:PhoneEnv")
gymnasium.register(id="distrl/Tap-v0", entry_point=f"{__name__}:TapEnv")

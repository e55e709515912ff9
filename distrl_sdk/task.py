"""Tasks: what an agent is asked to do on a phone, how the phone is prepared, how success is judged.

    class TurnOffWifi(Task):
        name = "settings.wifi_off"
        template = "Turn off Wi-Fi"
        apps = ("com.android.settings",)
        success = SettingEquals("global", "wifi_on", "0")

        async def setup(self, device):
            await device.shell("settings put global wifi_on 1")

        async def oracle(self, device):
            yield OpenApp("Settings") ...

A task class is a family: ``generate_params(rng, split)`` draws one instance's
parameters (train and test splits never overlap), ``instruction`` fills the template.
Success is ``is_successful`` — by default the ``success`` evaluator's score.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Literal

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.trajectory import Trajectory

__all__ = ["Difficulty", "Split", "Task"]

Split = Literal["train", "test"]
Difficulty = Literal["easy", "medium", "hard"]


class Task:
    """Base class of every task; subclasses set the class attributes and override hooks."""

    #: unique dotted name, e.g. ``settings.wifi_off``
    name: ClassVar[str] = ""
    #: instruction with ``{param}`` fields, e.g. ``Set an alarm for {hour}:{minute:02d}``
    template: ClassVar[str] = ""
    #: step budget for one episode
    max_steps: ClassVar[int] = 10
    difficulty: ClassVar[Difficulty] = "easy"
    tags: ClassVar[tuple[str, ...]] = ()
    #: packages the task uses (real Android package names where a counterpart exists)
    apps: ClassVar[tuple[str, ...]] = ()
    #: the agent must finish with an Answer action whose text is judged
    needs_answer: ClassVar[bool] = False
    #: scored by ``is_successful`` unless that is overridden
    success: ClassVar[RewardEvaluator | None] = None
    #: optional dense reward after each step
    step_evaluator: ClassVar[RewardEvaluator | None] = None

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        self.params: dict[str, Any] = dict(params or {})

    # -- parameters ------------------------------------------------------------------
    @classmethod
    def generate_params(cls, rng: random.Random, split: Split = "train") -> dict[str, Any]:
        """Draw one instance's parameters; train and test draws must not overlap."""
        return {}

    @classmethod
    def sample(cls, rng: random.Random, split: Split = "train") -> Task:
        return cls(cls.generate_params(rng, split))

    @property
    def instruction(self) -> str:
        try:
            return self.template.format(**self.params)
        except (KeyError, IndexError, ValueError) as exc:
            raise TaskError(f"task {self.name}: instruction template {self.template!r} "
                            f"does not fit params {self.params}: {exc}") from None

    # -- lifecycle -------------------------------------------------------------------
    async def setup(self, device: Device) -> None:
        """Bring the device to the task's start state (called before every episode)."""

    async def is_successful(self, device: Device, trajectory: Trajectory) -> float:
        """Score in [0, 1]; by default the ``success`` evaluator's."""
        from distrl_sdk.evaluators.outcome import safe_evaluate

        if self.success is None:
            raise TaskError(f"task {self.name} defines neither `success` nor is_successful()")
        return (await safe_evaluate(self.success, device, trajectory, self.params)).unwrap()

    async def step_reward(self, device: Device, trajectory: Trajectory) -> float | None:
        from distrl_sdk.evaluators.outcome import safe_step_reward

        if self.step_evaluator is None:
            return None
        outcome = await safe_step_reward(self.step_evaluator, device, trajectory, self.params)
        if outcome.error is not None:
            raise outcome.error
        return outcome.score

    async def episode_ended(self, device: Device, trajectory: Trajectory) -> bool:
        """True when the task itself ends the episode (android_env's episode_end)."""
        from distrl_sdk.evaluators.outcome import EndsEpisode

        for ev in (self.step_evaluator, self.success):
            if isinstance(ev, EndsEpisode) and await ev.episode_ended(
                    device, trajectory, self.params):
                return True
        return False

    async def teardown(self, device: Device) -> None:
        """Undo what setup did that could leak into the next episode."""

    # -- scripted solution -----------------------------------------------------------
    def oracle(self, device: Device) -> AsyncIterator[Any]:
        """Yield the actions that solve this instance, reading the screen as it goes.

        Tests run every sample task's oracle on sim phones; the runner executes each
        yielded action before asking for the next.
        """
        raise NotImplementedError(f"task {self.name} has no oracle")

    def near_miss(self, device: Device) -> AsyncIterator[Any] | None:
        """Optionally, actions that end in a plausible wrong state (must score 0)."""
        return None

    @property
    def has_oracle(self) -> bool:
        return type(self).oracle is not Task.oracle

    def fill(self, template: str) -> str:
        """A string with this instance's ``{params}`` filled in."""
        return fill(template, self.params)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name, "template": self.template, "max_steps": self.max_steps,
            "difficulty": self.difficulty, "tags": list(self.tags), "apps": list(self.apps),
            "needs_answer": self.needs_answer,
            "success": self.success.describe() if self.success else "custom is_successful()",
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.params}>"

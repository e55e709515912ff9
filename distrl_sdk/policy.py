"""Policies choose actions from observations; the oracle and random ones live here.

The learner's policies (UI-tree, VLM + LoRA) implement the same ``Policy`` protocol
and add the behaviour log-probability the learner needs.
"""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from distrl_sdk.uitree import UIElement

__all__ = ["Decision", "Observation", "OraclePolicy", "Policy", "RandomPolicy"]


@dataclass
class Observation:
    """What a policy sees before each step."""

    instruction: str
    elements: list[UIElement]
    screen_size: tuple[int, int]
    step: int
    history: list[Any] = field(default_factory=list)  # earlier actions (or InvalidAction)
    screenshot_png: bytes | None = None
    # the screen the previous action was chosen on (None: the first step, or a caller that
    # does not keep it): tells "the last tap hit this element" from "the last tap's point
    # lies on whatever the next screen drew there"
    previous_elements: list[UIElement] | None = None


@dataclass
class Decision:
    """What a learning policy returns from ``act``: the action plus what the learner needs.

    ``run_episode`` executes ``action`` and records the rest on the step (``log_prob``,
    ``policy_version``, ``obs`` → ``info["policy_obs"]``, ``choice`` →
    ``info["policy_choice"]``), from where they travel to the learner in the trajectory.
    ``obs``/``choice`` are the policy's own JSON-able encodings: enough to recompute
    log π(choice | obs) under newer weights."""

    action: Any  # a distrl_sdk.actions Action, or InvalidAction
    log_prob: float | None = None  # behaviour log μ(a|s)
    policy_version: int | None = None
    obs: dict[str, Any] | None = None
    choice: dict[str, Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)  # e.g. entropy, raw model text


class Policy(Protocol):
    """Chooses the next action (or returns an InvalidAction it could not produce).

    ``act`` returns an action, or a :class:`Decision` wrapping one."""

    name: str

    async def act(self, observation: Observation) -> Any: ...


class OraclePolicy:
    """Replays a task's scripted solution; each action is chosen on the live screen."""

    name = "oracle"

    def __init__(self, actions: AsyncIterator[Any]) -> None:
        self._actions = actions

    async def act(self, observation: Observation) -> Any:
        from distrl_sdk.actions import Complete

        try:
            return await anext(self._actions)
        except StopAsyncIteration:
            return Complete()


class RandomPolicy:
    """A seeded random agent: the floor every learner must beat.

    Mostly taps clickable elements (what makes random play on a phone move at all),
    sometimes taps anywhere, scrolls, types a word, goes back or home, and ends the
    episode with a small probability.
    """

    name = "random"
    WORDS = ("wifi", "alarm", "hello", "mouse", "weather", "anna", "7", "30", "search")

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    async def act(self, observation: Observation) -> Any:
        from distrl_sdk.actions import Complete, Key, Scroll, Tap, TypeText

        rng = self.rng
        r = rng.random()
        w, h = observation.screen_size
        clickable = [e for e in observation.elements
                     if e.clickable and e.bounds.width > 0 and e.bounds.height > 0]
        if r < 0.55 and clickable:
            x, y = rng.choice(clickable).bounds.center
            return Tap(min(x / w, 1.0), min(y / h, 1.0))
        if r < 0.68:
            return Tap(rng.random(), rng.random())
        if r < 0.78:
            return Scroll(rng.choice(("up", "down")))
        if r < 0.86:
            word = rng.choice((*self.WORDS, rng.choice(string.ascii_lowercase) * 3))
            return TypeText(word)
        if r < 0.95:
            return Key(rng.choice(("back", "home", "enter")))
        return Complete()


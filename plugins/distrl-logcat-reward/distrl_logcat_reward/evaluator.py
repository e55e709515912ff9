"""android_env's ``log_parsing_config`` as a DistRL evaluator.

Per matching log message (of the given tags, in order):

* ``reward`` regexes: the first group, a float, is added to the total;
* ``score`` regex: the first group is a cumulative score; the total moves by its change;
* ``reward_event``: a fixed reward per match of ``event``;
* ``episode_end`` regexes: the episode terminates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import (
    EvaluatorConfig,
    LogLine,
    RewardEvaluator,
    episode_state,
    read_logcat,
)
from distrl_sdk.trajectory import Trajectory

__all__ = ["LogcatReward", "LogcatRewardConfig", "RewardEvent", "Tally"]

DEFAULT_REWARD = r"^[Rr]eward: ([-+]?[0-9]*\.?[0-9]*)$"
DEFAULT_SCORE = r"^[Ss]core: ([-+]?[0-9]*\.?[0-9]*)$"
DEFAULT_EPISODE_END = r"^[Ee]pisode [Ee]nd$"


class RewardEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    event: str
    reward: float


class LogcatRewardConfig(EvaluatorConfig):
    tags: list[str] = Field(default_factory=lambda: ["AndroidRLTask"])
    reward: list[str] = Field(default_factory=lambda: [DEFAULT_REWARD])
    score: str | None = DEFAULT_SCORE
    episode_end: list[str] = Field(default_factory=lambda: [DEFAULT_EPISODE_END])
    reward_event: list[RewardEvent] = Field(default_factory=list)
    success_threshold: float = 1.0
    max_reward: float | None = Field(default=None, gt=0)
    require_episode_end: bool = False


@dataclass(frozen=True, slots=True)
class Tally:
    total: float = 0.0
    ended: bool = False
    matched: int = 0  # lines that counted for anything


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TaskError(f"logcat_reward.{what}: {pattern!r} does not compile: {exc}") from None


def _number(m: re.Match[str], what: str) -> float:
    if m.re.groups < 1:
        raise TaskError(f"logcat_reward.{what}: {m.re.pattern!r} needs a group for the number")
    try:
        return float(m.group(1))
    except (TypeError, ValueError):
        return 0.0  # android_env skips lines whose number does not parse


class LogcatReward(RewardEvaluator):
    """Rewards, score and termination from an app's log lines (see the module doc)."""

    name = "logcat_reward"
    config_model = LogcatRewardConfig

    def __init__(self, *, tags: Sequence[str] = ("AndroidRLTask",),
                 reward: Sequence[str] = (DEFAULT_REWARD,),
                 score: str | None = DEFAULT_SCORE,
                 episode_end: Sequence[str] = (DEFAULT_EPISODE_END,),
                 reward_event: Sequence[RewardEvent | Mapping[str, Any]] = (),
                 success_threshold: float = 1.0, max_reward: float | None = None,
                 require_episode_end: bool = False) -> None:
        if not tags:
            raise TaskError("logcat_reward: give at least one tag (android_env: AndroidRLTask)")
        self.tags = list(tags)
        self.reward = [_compile(p, "reward") for p in reward]
        for rx in self.reward:
            if rx.groups < 1:
                raise TaskError(f"logcat_reward.reward: {rx.pattern!r} needs a group "
                                "for the number")
        self.score = _compile(score, "score") if score else None
        if self.score is not None and self.score.groups < 1:
            raise TaskError(f"logcat_reward.score: {score!r} needs a group for the number")
        self.episode_end = [_compile(p, "episode_end") for p in episode_end]
        events = [e if isinstance(e, RewardEvent) else RewardEvent.model_validate(dict(e))
                  for e in reward_event]
        self.reward_event = [(_compile(e.event, "reward_event"), e.reward) for e in events]
        if not (self.reward or self.score or self.reward_event or self.episode_end):
            raise TaskError("logcat_reward: no reward, score, reward_event or episode_end "
                            "regex; nothing could ever count")
        self.success_threshold = success_threshold
        self.max_reward = max_reward
        self.require_episode_end = require_episode_end

    def tally(self, lines: Sequence[LogLine]) -> Tally:
        """The cumulative total and termination over ``lines``, in order."""
        total, ended, matched = 0.0, False, 0
        last_score = 0.0
        for ln in lines:
            msg, hit = ln.message, False
            for rx in self.reward:
                m = rx.search(msg)
                if m:
                    total += _number(m, "reward")
                    hit = True
            if self.score is not None:
                m = self.score.search(msg)
                if m:
                    value = _number(m, "score")
                    total += value - last_score
                    last_score = value
                    hit = True
            for rx, r in self.reward_event:
                if rx.search(msg):
                    total += r
                    hit = True
            if any(rx.search(msg) for rx in self.episode_end):
                ended = hit = True
            matched += hit
        return Tally(total, ended, matched)

    async def read(self, device: Device) -> Tally:
        return self.tally(await read_logcat(device, self.tags))

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        t = await self.read(device)
        if self.require_episode_end and not t.ended:
            return 0.0
        if self.max_reward is not None:
            return min(1.0, max(0.0, t.total / self.max_reward))
        return 1.0 if t.total >= self.success_threshold else 0.0

    async def step_reward(self, device: Device, trajectory: Trajectory,
                          params: Mapping[str, Any]) -> float | None:
        """The change in the total since the previous step (android_env's reward)."""
        t = await self.read(device)
        state = episode_state(self, trajectory)
        before: float = state.get("total", 0.0)
        state["total"] = t.total
        state["ended"] = state.get("ended", False) or t.ended
        return t.total - before

    async def episode_ended(self, device: Device, trajectory: Trajectory,
                            params: Mapping[str, Any]) -> bool:
        """True once an ``episode_end`` line has appeared (termination)."""
        state = episode_state(self, trajectory)
        if state.get("ended"):
            return True
        ended = (await self.read(device)).ended
        state["ended"] = ended
        return ended

    def describe(self) -> str:
        bits = [f"reward×{len(self.reward)}"] if self.reward else []
        if self.score is not None:
            bits.append("score")
        if self.reward_event:
            bits.append(f"events×{len(self.reward_event)}")
        if self.episode_end:
            bits.append("episode_end")
        goal = (f"total/{self.max_reward:g}" if self.max_reward is not None
                else f"total≥{self.success_threshold:g}")
        return f"logcat_reward({','.join(self.tags)}: {', '.join(bits)}; {goal})"

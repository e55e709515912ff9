"""``LogcatRegex``: the app logged a line matching a regex (android_env's reward channel).

Reads ``logcat -d -v threadtime`` (optionally only one tag). The episode score is 1.0
once ``min_count`` matching lines are in the buffer; the step reward is ``per_match``
times the number of matching lines that appeared since the previous step. The buffer
outlives episodes, so a task using this should clear it in ``setup`` (``logcat -c``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import (
    EvaluatorConfig,
    check_regex,
    compile_regex,
    episode_state,
)
from distrl_sdk.trajectory import Trajectory

__all__ = ["LogLine", "LogcatRegex", "parse_logcat", "read_logcat"]

# 12-02 12:26:30.871  1000  1000 I ActivityTaskManager: START u0 {...}
_THREADTIME = re.compile(
    r"^(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+\s+(\d+)\s+(\d+)\s+([VDIWEFSA])\s+(.*?)\s*: (.*)$"
)
_TAG = re.compile(r"^[\w.$/{}-]+$")


@dataclass(frozen=True, slots=True)
class LogLine:
    pid: int
    tid: int
    priority: str
    tag: str
    message: str


def parse_logcat(text: str) -> list[LogLine]:
    """Lines of ``logcat -v threadtime`` output; dividers and other noise are skipped."""
    out = []
    for line in text.splitlines():
        m = _THREADTIME.match(line)
        if m:
            out.append(LogLine(int(m.group(1)), int(m.group(2)), m.group(3), m.group(4),
                               m.group(5)))
    return out


async def read_logcat(device: Device, tags: list[str] | None = None) -> list[LogLine]:
    """Dump the log buffer (only ``tags``, at any priority, when given)."""
    cmd = "logcat -d -v threadtime"
    if tags:
        cmd += " " + " ".join(shlex.quote(f"{t}:V") for t in tags) + " '*:S'"
    out = await device.shell(cmd)
    lines = parse_logcat(out.stdout)
    if tags:  # belt and braces: some logcat builds ignore filter specs after -d
        lines = [ln for ln in lines if ln.tag in tags]
    return lines


class LogcatConfig(EvaluatorConfig):
    regex: str
    tag: str | None = None
    min_count: int = Field(default=1, ge=1)
    per_match: float = 1.0


class LogcatRegex(RewardEvaluator):
    """1.0 when at least ``min_count`` log messages match ``regex`` (``re.search``).

    ``tag`` restricts the search to one logcat tag. Step reward: ``per_match`` for each
    matching message new since the previous call.
    """

    name = "logcat"
    config_model = LogcatConfig

    def __init__(self, regex: str, tag: str | None = None, *, min_count: int = 1,
                 per_match: float = 1.0) -> None:
        check_regex(regex, "logcat.regex")
        if tag is not None and not _TAG.match(tag):
            raise TaskError(f"logcat: bad tag {tag!r}")
        if min_count < 1:
            raise TaskError("logcat: min_count must be ≥ 1")
        self.regex, self.tag, self.min_count, self.per_match = regex, tag, min_count, per_match

    async def count(self, device: Device, params: Mapping[str, Any]) -> int:
        rx = compile_regex(self.regex, params, what="logcat.regex")
        tags = [fill(self.tag, params)] if self.tag else None
        return sum(1 for ln in await read_logcat(device, tags) if rx.search(ln.message))

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        return 1.0 if await self.count(device, params) >= self.min_count else 0.0

    async def step_reward(self, device: Device, trajectory: Trajectory,
                          params: Mapping[str, Any]) -> float | None:
        state = episode_state(self, trajectory)
        n = await self.count(device, params)
        # the first call counts every match in the buffer: setup is expected to have
        # cleared it (as android_env does at reset), so they all came from this episode
        before: int = state.get("seen", 0)
        state["seen"] = n
        return self.per_match * max(0, n - before)

    def describe(self) -> str:
        where = f"{self.tag}: " if self.tag else ""
        times = f", ≥{self.min_count}×" if self.min_count > 1 else ""
        return f"logcat({where}/{self.regex}/{times})"

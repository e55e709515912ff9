"""``ActivityIs``: which app (and activity) is in the foreground, from ``dumpsys window``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig
from distrl_sdk.trajectory import Trajectory

__all__ = ["ActivityIs", "foreground_component", "parse_focus"]

# mCurrentFocus=Window{d26bc71 u0 com.android.settings/com.android.settings.Settings}
# mFocusedApp=ActivityRecord{4bf747f u0 com.android.settings/.Settings t2}
_FOCUS = re.compile(r"(mCurrentFocus|mFocusedApp|mResumedActivity|topResumedActivity)"
                    r"=\S*\{[^}]*?\s([\w.]+)/([\w.$]+)")


def parse_focus(dumpsys: str) -> tuple[str, str] | None:
    """(package, fully qualified activity) of the focused window, else the focused app."""
    found: dict[str, tuple[str, str]] = {}
    for kind, pkg, act in _FOCUS.findall(dumpsys):
        found.setdefault(kind, (pkg, pkg + act if act.startswith(".") else act))
    for kind in ("mCurrentFocus", "mFocusedApp", "topResumedActivity", "mResumedActivity"):
        if kind in found:
            return found[kind]
    return None


async def foreground_component(device: Device) -> tuple[str, str] | None:
    """(package, activity) in the foreground, or None (e.g. nothing focused)."""
    out = await device.shell("dumpsys window")
    return parse_focus(out.stdout)


class ActivityConfig(EvaluatorConfig):
    package: str
    activity: str | None = None


class ActivityIs(RewardEvaluator):
    """1.0 when ``package`` (and, if given, ``activity``) is in the foreground.

    ``activity`` is fully qualified or starts with ``.`` (relative to ``package``).
    """

    name = "activity"
    config_model = ActivityConfig

    def __init__(self, package: str, activity: str | None = None) -> None:
        if not package or "/" in package:
            raise TaskError(f"activity: package {package!r} must be a package name; put "
                            "the activity in `activity`")
        self.package, self.activity = package, activity

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        current = await foreground_component(device)
        if current is None:
            return 0.0
        package = fill(self.package, params)
        if current[0] != package:
            return 0.0
        if self.activity is None:
            return 1.0
        act = fill(self.activity, params)
        want = package + act if act.startswith(".") else act
        return 1.0 if current[1] == want else 0.0

    def describe(self) -> str:
        return f"activity({self.package}{'/' + self.activity if self.activity else ''})"

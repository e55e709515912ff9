"""``SettingEquals``: a ``settings get NAMESPACE KEY`` value, as android_world checks Wi-Fi."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, Literal

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig
from distrl_sdk.trajectory import Trajectory

__all__ = ["SettingEquals"]

Namespace = Literal["system", "secure", "global"]


class SettingConfig(EvaluatorConfig):
    namespace: Namespace
    key: str
    value: str | int | float | bool | None


def _text(value: str | int | float | bool | None) -> str:
    if value is None:
        return "null"  # what `settings get` prints for an unset key
    if isinstance(value, bool):
        return "1" if value else "0"  # Android's booleans are 0/1 settings
    return str(value)


class SettingEquals(RewardEvaluator):
    """1.0 when ``settings get namespace key`` prints ``value`` (trimmed, exact).

    ``value`` may be a string with ``{params}``, a number, a bool (stored as 1/0) or
    None (the key is unset: ``settings get`` prints ``null``).
    """

    name = "setting"
    config_model = SettingConfig

    def __init__(self, namespace: Namespace, key: str,
                 value: str | int | float | bool | None) -> None:
        if namespace not in ("system", "secure", "global"):
            raise TaskError(f"setting: namespace must be system, secure or global, "
                            f"not {namespace!r}")
        if not key or any(c.isspace() for c in key):
            raise TaskError(f"setting: bad key {key!r}")
        self.namespace, self.key, self.value = namespace, key, value

    async def read(self, device: Device, params: Mapping[str, Any]) -> str:
        key = fill(self.key, params)
        out = await device.shell(f"settings get {self.namespace} {shlex.quote(key)}")
        return out.stdout.strip()

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        want = fill(_text(self.value), params)
        return 1.0 if await self.read(device, params) == want else 0.0

    def describe(self) -> str:
        return f"setting({self.namespace}/{self.key} == {_text(self.value)!r})"

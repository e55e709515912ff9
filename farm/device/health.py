"""Health probe: boot state, battery and screen, from three shell reads run concurrently.

``getprop sys.boot_completed``, ``dumpsys battery`` and ``dumpsys power`` each carry
their own deadline (``timeout``), so a hung device costs one timeout, not three, and
surfaces as :class:`~distrl_sdk.errors.AdbTimeout`. Parsers go by key and ignore
lines they do not know (OEMs add some).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from typing import Protocol

from distrl_sdk.device import ShellOutput

__all__ = ["Health", "HealthLimits", "health", "parse_battery", "parse_power"]

_KV = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$")
_WAKE = re.compile(r"mWakefulness=(\w+)")
_DISPLAY_BLOCKER = re.compile(r"mHoldingDisplaySuspendBlocker=(true|false)")


class Shellable(Protocol):
    @property
    def serial(self) -> str: ...

    async def shell(self, command: str, *, timeout: float = 30.0) -> ShellOutput: ...


@dataclass(frozen=True, slots=True)
class HealthLimits:
    min_battery: int = 10  # % when not charging
    max_temperature_c: float = 45.0


@dataclass(frozen=True, slots=True)
class Health:
    serial: str
    boot_completed: bool
    battery_level: int | None  # percent (level * 100 / scale)
    temperature_c: float | None  # battery temperature
    battery_status: int | None  # 2 charging, 3 discharging, 4 not charging, 5 full
    battery_health: int | None  # 2 good, 3 overheat, …
    plugged: bool | None
    screen_on: bool | None
    checked_at: float  # time.time()
    latency_s: float

    def problems(self, limits: HealthLimits = HealthLimits()) -> tuple[str, ...]:
        out: list[str] = []
        if not self.boot_completed:
            out.append("booting")
        if (self.battery_level is not None and self.battery_level < limits.min_battery
                and not self.plugged):
            out.append(f"battery low ({self.battery_level} %)")
        if ((self.temperature_c is not None and self.temperature_c >= limits.max_temperature_c)
                or self.battery_health == 3):
            out.append(f"overheating ({self.temperature_c:g} °C)")
        if self.screen_on is False:
            out.append("screen off")
        return tuple(out)

    def ok(self, limits: HealthLimits = HealthLimits()) -> bool:
        return not self.problems(limits)


def parse_battery(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _KV.match(line)
        if m:
            out[m.group(1).strip().lower()] = m.group(2)
    return out


def _int(v: str | None) -> int | None:
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def parse_power(text: str) -> bool | None:
    """Screen on? ``mWakefulness=Awake``, else adbutils' display-suspend-blocker test."""
    m = _WAKE.search(text)
    if m:
        return m.group(1) == "Awake"
    m = _DISPLAY_BLOCKER.search(text)
    return (m.group(1) == "true") if m else None


async def health(device: Shellable, *, timeout: float = 5.0) -> Health:
    """Probe one device; raises ``AdbTimeout``/``DeviceOffline``/``DeviceError`` on failure."""
    t0 = time.monotonic()
    boot, batt, power = await asyncio.gather(
        device.shell("getprop sys.boot_completed", timeout=timeout),
        device.shell("dumpsys battery", timeout=timeout),
        device.shell("dumpsys power", timeout=timeout),
    )
    b = parse_battery(batt.stdout)
    level, scale = _int(b.get("level")), _int(b.get("scale")) or 100
    temp = _int(b.get("temperature"))
    powered = [b.get(k) for k in ("ac powered", "usb powered", "wireless powered",
                                  "dock powered")]
    return Health(
        serial=device.serial,
        boot_completed=boot.stdout.strip() == "1",
        battery_level=None if level is None else level * 100 // scale,
        temperature_c=None if temp is None else temp / 10.0,
        battery_status=_int(b.get("status")),
        battery_health=_int(b.get("health")),
        plugged=None if not any(powered) else any(p == "true" for p in powered),
        screen_on=parse_power(power.stdout),
        checked_at=time.time(),
        latency_s=time.monotonic() - t0,
    )

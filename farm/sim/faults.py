"""Fault injection for one simulated phone.

Each fault is a window of (monotonic) time: the protocol layer asks ``hung()`` /
``disconnected()`` before it answers, the shell asks ``boot_completed()`` and
``frame_delay()``, and the battery model reads drain and overheat. Faults are set
by the CLI (``distrl sim fault``), the Python API or a seeded chaos schedule, so a
run repeats exactly under the same seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class FaultKind(StrEnum):
    DISCONNECT = "disconnect"  # drop every TCP connection and refuse new ones for N s
    HANG = "hang"  # stop answering packets for N s (connections stay up)
    ANR = "anr"  # "App isn't responding" dialog over the foreground app
    SLOW_FRAMES = "slow-frames"  # screencap takes N ms longer, for a while
    BATTERY_DRAIN = "battery-drain"  # battery loses N % per minute, unplugged
    OVERHEAT = "overheat"  # battery temperature jumps to N °C, health overheat
    LOW_BATTERY = "low-battery"  # battery level set to N %
    BOOT_DELAY = "boot-delay"  # sys.boot_completed reads 0 for N s (as after a reboot)
    CLEAR = "clear"  # end every fault now


FAULT_HELP: dict[FaultKind, str] = {
    FaultKind.DISCONNECT: "drop all connections and refuse new ones for --seconds (default 15)",
    FaultKind.HANG: "stop answering for --seconds (default 30); TCP stays open",
    FaultKind.ANR: "show an ANR dialog over the foreground app",
    FaultKind.SLOW_FRAMES: "add --value ms (default 1500) to each screencap for --seconds",
    FaultKind.BATTERY_DRAIN: "drain --value % per minute (default 5), unplugged",
    FaultKind.OVERHEAT: "battery temperature --value °C (default 48), health overheat",
    FaultKind.LOW_BATTERY: "battery level --value % (default 4)",
    FaultKind.BOOT_DELAY: "sys.boot_completed=0 for --seconds (default 20)",
    FaultKind.CLEAR: "end every fault now",
}


@dataclass(slots=True)
class BatteryState:
    """What ``dumpsys battery`` reports; temperature in tenths of °C like Android."""

    level: int = 85
    temperature: int = 274
    plugged_usb: bool = True
    health: int = 2  # 2 good, 3 overheat
    drain_per_min: float = 0.0
    _drain_since: float = 0.0
    _level_at_drain: float = 85.0

    @property
    def status(self) -> int:
        """2 charging, 3 discharging, 5 full."""
        if self.plugged_usb:
            return 5 if self.level >= 100 else 2
        return 3

    def current_level(self, now: float) -> int:
        if self.drain_per_min <= 0:
            return self.level
        drained = (now - self._drain_since) / 60.0 * self.drain_per_min
        return max(0, round(self._level_at_drain - drained))

    def start_drain(self, per_min: float, now: float) -> None:
        self.level = self.current_level(now)
        self._level_at_drain = float(self.level)
        self._drain_since = now
        self.drain_per_min = per_min
        self.plugged_usb = per_min <= 0


@dataclass
class Faults:
    """Active fault windows of one phone; all times are ``clock()`` seconds."""

    clock: Callable[[], float] = time.monotonic
    battery: BatteryState = field(default_factory=BatteryState)
    hang_until: float = 0.0
    disconnected_until: float = 0.0
    slow_frames_until: float = 0.0
    slow_frames_ms: float = 0.0
    boot_completed_at: float = 0.0
    anr_requested: bool = False
    # Called when a disconnect starts so the adbd server can drop its sockets now.
    on_disconnect: list[Callable[[float], None]] = field(default_factory=list)
    # Called when an ANR is requested so the world can raise its dialog.
    on_anr: list[Callable[[], None]] = field(default_factory=list)

    def hung(self) -> bool:
        return self.clock() < self.hang_until

    def hang_remaining(self) -> float:
        return max(0.0, self.hang_until - self.clock())

    def disconnected(self) -> bool:
        return self.clock() < self.disconnected_until

    def boot_completed(self) -> bool:
        return self.clock() >= self.boot_completed_at

    def frame_delay(self) -> float:
        """Extra seconds a screencap takes now."""
        return self.slow_frames_ms / 1000.0 if self.clock() < self.slow_frames_until else 0.0

    def apply(self, kind: FaultKind | str, seconds: float | None = None,
              value: float | None = None) -> str:
        """Start a fault; returns a one-line description of what happened."""
        kind = FaultKind(kind)
        now = self.clock()
        if kind is FaultKind.DISCONNECT:
            secs = 15.0 if seconds is None else seconds
            self.disconnected_until = now + secs
            for cb in list(self.on_disconnect):
                cb(secs)
            return f"disconnected for {secs:g} s"
        if kind is FaultKind.HANG:
            secs = 30.0 if seconds is None else seconds
            self.hang_until = now + secs
            return f"hung for {secs:g} s"
        if kind is FaultKind.ANR:
            self.anr_requested = True
            for anr_cb in list(self.on_anr):
                anr_cb()
            return "ANR dialog shown"
        if kind is FaultKind.SLOW_FRAMES:
            secs = 60.0 if seconds is None else seconds
            self.slow_frames_ms = 1500.0 if value is None else value
            self.slow_frames_until = now + secs
            return f"screencap +{self.slow_frames_ms:g} ms for {secs:g} s"
        if kind is FaultKind.BATTERY_DRAIN:
            per_min = 5.0 if value is None else value
            self.battery.start_drain(per_min, now)
            return f"battery draining {per_min:g} %/min"
        if kind is FaultKind.OVERHEAT:
            celsius = 48.0 if value is None else value
            self.battery.temperature = round(celsius * 10)
            self.battery.health = 3 if celsius >= 45 else 2
            return f"battery at {celsius:g} °C"
        if kind is FaultKind.LOW_BATTERY:
            level = 4 if value is None else int(value)
            self.battery.drain_per_min = 0.0
            self.battery.level = max(0, min(100, level))
            self.battery.plugged_usb = False
            return f"battery at {self.battery.level} %"
        if kind is FaultKind.BOOT_DELAY:
            secs = 20.0 if seconds is None else seconds
            self.boot_completed_at = now + secs
            return f"booting for {secs:g} s"
        self.clear()
        return "all faults cleared"

    def clear(self) -> None:
        self.hang_until = self.disconnected_until = self.slow_frames_until = 0.0
        self.boot_completed_at = 0.0
        self.anr_requested = False
        b = self.battery
        b.drain_per_min, b.plugged_usb, b.temperature, b.health = 0.0, True, 274, 2

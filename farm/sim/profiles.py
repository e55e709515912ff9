"""Latency profiles: how long a real device takes for each kind of command.

Figures are what published device-farm measurements report (raw screencap ≈ 0.25–0.7 s,
PNG screencap 0.5–2 s, uiautomator dump ≈ 1–2.5 s on phones, input ≈ tens of ms).
Every delay is drawn from the phone's own seeded RNG so that runs repeat.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum


class CommandKind(StrEnum):
    """What a shell command costs on a device, coarsely."""

    SHELL = "shell"  # any cheap command: echo, getprop, settings, dumpsys …
    INPUT = "input"  # input tap/swipe/text/keyevent
    SCREENCAP_RAW = "screencap_raw"
    SCREENCAP_PNG = "screencap_png"
    UI_DUMP = "ui_dump"
    AM_START = "am_start"
    INSTALL = "install"


@dataclass(frozen=True, slots=True)
class LatencyProfile:
    """Median milliseconds per command kind plus a relative jitter."""

    name: str
    description: str
    shell_ms: float
    input_ms: float
    screencap_raw_ms: float
    screencap_png_ms: float
    ui_dump_ms: float
    am_start_ms: float
    install_ms: float
    jitter: float = 0.2  # ±20 % uniform around the median

    def median_ms(self, kind: CommandKind) -> float:
        return float(getattr(self, f"{kind.value}_ms"))

    def delay(self, kind: CommandKind, rng: random.Random) -> float:
        """Seconds to wait before answering; 0 for the ``instant`` profile."""
        base = self.median_ms(kind)
        if base <= 0:
            return 0.0
        return max(0.0, base * (1 + rng.uniform(-self.jitter, self.jitter))) / 1000.0


PROFILES: dict[str, LatencyProfile] = {
    p.name: p
    for p in (
        LatencyProfile(
            "instant",
            "no artificial delay: tests and throughput benchmarks",
            0, 0, 0, 0, 0, 0, 0, 0.0,
        ),
        LatencyProfile(
            "emulator",
            "x86 emulator with KVM on a workstation",
            4, 25, 250, 700, 800, 350, 1500,
        ),
        LatencyProfile(
            "pixel",
            "a recent phone over USB (Pixel 6 class)",
            8, 40, 150, 550, 1100, 450, 2500,
        ),
        LatencyProfile(
            "old-phone",
            "a five-year-old budget phone",
            20, 90, 450, 2000, 2500, 1200, 6000, 0.35,
        ),
    )
}


def get_profile(name: str) -> LatencyProfile:
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PROFILES)
        raise ValueError(f"unknown latency profile {name!r}; choose one of: {known}") from None

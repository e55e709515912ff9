"""Shared helpers for the TUI tests: a fake source fed with the deterministic wire
traffic of :mod:`tui.fakefeed`, a fixed clock, and decoding of what the app sent."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from distrl_sdk.wire import Command, Message, parse_message
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.source import FakeSource

NOW = 1_700_000_000.0
FARM = "farm1"


def fixed_clock() -> float:
    return NOW


def feed_fleet(src: FakeSource, n: int = 4, *, frames: bool = True) -> None:
    """``n`` sim phones: alternately busy and ready, each with a frame and a tap."""
    for i in range(n):
        state = "busy" if i % 2 == 0 else "ready"
        src.push(*ff.status(FARM, f"sim-{i}", state, task="wifi_off" if i % 2 == 0 else None,
                            instruction="Turn off Wi-Fi" if i % 2 == 0 else None,
                            step=i if i % 2 == 0 else None,
                            episode_return=0.25 * i if i % 2 == 0 else None,
                            battery=max(0, 90 - 7 * i), temperature_c=30.0 + i, kind="sim",
                            policy_version=3, episodes=10 + i))
        if frames:
            src.push(*ff.frame(FARM, f"sim-{i}", step=i, seed=i, actions=[
                {"action_type": "click", "x": 540, "y": 700},
                {"action_type": "swipe", "x1": 0.5, "y1": 0.8, "x2": 0.5, "y2": 0.3,
                 "duration_ms": 300}]))


async def fleet_on_screen(app: DistrlTui, src: FakeSource, pilot: Pilot[None],
                          n: int = 4) -> None:
    """``n`` phones fed, decoded and laid out: a second settle after the layout pass,
    which first tells the wall its size (and so the tiles' size)."""
    feed_fleet(src, n)
    await app.settle()
    await pilot.pause()
    await app.settle()


def sent_commands(src: FakeSource) -> list[tuple[str, Command]]:
    """(topic, Command) for everything the app published, parsed like a farm would."""
    out = []
    for topic, payload in src.sent:
        msg = parse_message(topic, payload)
        assert isinstance(msg, Message), msg
        assert isinstance(msg.body, Command)
        out.append((topic, msg.body))
    return out


@pytest.fixture
def source() -> FakeSource:
    src = FakeSource()
    src.responder = ff.command_result_for
    return src


@pytest.fixture
def make_app(source: FakeSource) -> Callable[..., DistrlTui]:
    def make(**kw: object) -> DistrlTui:
        # these tests read the list's rows; the wall has its own (tests/tui/test_wall.py)
        kw.setdefault("fleet_view", "list")
        return DistrlTui(source, clock=fixed_clock, **kw)  # type: ignore[arg-type]
    return make

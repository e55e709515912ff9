"""SVG snapshots of every screen, fed by the deterministic fake stream (fixed clock,
fixed frames). Accept changes with ``pytest --snapshot-update`` after looking at the
report."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from textual.pilot import Pilot

from tests.tui.conftest import FARM, feed_fleet, fixed_clock
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.source import FakeSource

SIZE = (130, 40)
Compare = Callable[..., bool]


def fleet_app(readonly: bool = False) -> tuple[DistrlTui, FakeSource]:
    src = FakeSource()
    # the list view (`w`); the wall's snapshots are in tests/tui/test_wall.py
    app = DistrlTui(src, clock=fixed_clock, readonly=readonly, fleet_view="list")
    # toasts expire after 5 s of real time: on a loaded CI machine the steps before a
    # screenshot took longer and the notification snapshot came out without them
    app.NOTIFICATION_TIMEOUT = 3600  # type: ignore[misc]
    return app, src


def populate(src: FakeSource) -> None:
    feed_fleet(src, 6)
    src.push(*ff.status(FARM, "sim-4", "quarantined", detail="operator", battery=40))
    src.push(*ff.status("lab", "pixel-7", "offline", detail="heartbeat lost", kind="usb"))
    src.push(*ff.status(FARM, "sim-5", "paused", battery=12, temperature_c=44.5))
    src.push(*ff.status(FARM, "controller", "ready"))  # the farm's link: in the title
    for i in range(40):
        src.push(*ff.metrics(i, {
            "success_rate": min(1.0, i / 40 + 0.1 * math.sin(i)),
            "return_mean": i / 50, "train/actor_loss": 1 / (1 + i),
            "train/critic_loss": 0.5 / (1 + i), "train/entropy": 2 - i / 40,
            "policy_lag_avg": 1 + (i % 3), "policy_lag_max": 3 + (i % 4),
            "replay_size": 50.0 * i, "trajectories_per_min": 30 + (i % 7),
            "version": i // 5}))
    src.push(*ff.pointer(7))
    src.push(f"distrl/v1/{FARM}/status/sim-0", b"\x00 not json")


def before(src: FakeSource, *keys: str, clear: bool = True
           ) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, DistrlTui)
        populate(src)
        await app.settle()
        for k in keys:
            await pilot.press(k)
            await app.settle()
        if clear:
            # the toasts tick() posted arrive as messages: let them land first, or a
            # clear that runs before them leaves them on screen (which one won depended
            # on the machine's load: the snapshots flickered between the two)
            await pilot.pause()
            app.clear_notifications()
        await pilot.pause()
    return run


def test_fleet(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src))


def test_fleet_filtered_and_sorted(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(
        src, "slash", "s", "i", "m", "enter", "s", "s", "s", "s", "s"))


def test_fleet_readonly(snap_compare: Compare) -> None:
    app, src = fleet_app(readonly=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src))


def test_device(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src, "down", "down",
                                                                   "enter"))


def test_learner(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src, "2"))


def test_logs(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src, "3"))


def test_help(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=(130, 50), run_before=before(src, "question_mark"))


def test_quarantine_confirm(snap_compare: Compare) -> None:
    app, src = fleet_app()
    assert snap_compare(app, terminal_size=SIZE, run_before=before(src, "x"))


def test_state_change_notification(snap_compare: Compare) -> None:
    app, src = fleet_app()

    async def run(pilot: Pilot[None]) -> None:
        await before(src)(pilot)
        src.push(*ff.status(FARM, "sim-1", "quarantined", detail="too many failures"))
        await app.settle()
        await pilot.pause()
    assert snap_compare(app, terminal_size=SIZE, run_before=run)

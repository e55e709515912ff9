"""The wall of phones: its layout at any terminal size, every key on it (fake feed and
the feed recorded from the real farm), the list a key away, SVG snapshots at 200×50 and
80×24, and colours forced to 24-bit inside tmux."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from rich.color import ColorSystem
from rich.segment import Segment
from rich.style import Style
from textual.pilot import Pilot
from textual.strip import Strip

from bench.record_tui_feed import DEFAULT_OUT, load, while_running
from farm.broker import free_port
from tests.tui.conftest import FARM, fixed_clock, fleet_on_screen
from tests.tui.test_snapshots import Compare, populate
from tui.app import DistrlTui
from tui.device import DeviceScreen
from tui.fleet import FleetScreen
from tui.source import FakeSource
from tui.terminal import detect_color, force_color_system
from tui.wall import GAP, TEXT_LINES, PhoneWall, wall_layout

ROOT = Path(__file__).resolve().parents[2]


def wall_of(app: DistrlTui) -> PhoneWall:
    screen = app.screen
    assert isinstance(screen, FleetScreen), screen
    return screen.wall


@pytest.mark.parametrize(("w", "h"), [(200, 47), (80, 21), (120, 33), (300, 80), (40, 10),
                                      (20, 5)])
def test_layout_takes_whole_tiles_that_fit(w: int, h: int) -> None:
    g = wall_layout(w, h)
    assert g.columns >= 1 and g.rows >= 1
    if w >= g.tile_w and h >= g.tile_h:  # a terminal that holds one tile at all
        assert g.columns * g.tile_w <= w and g.rows * g.tile_h <= h  # none cut in half
    assert g.tile_h == g.screen_rows + TEXT_LINES and g.tile_w >= g.screen_cols + GAP


def test_layout_at_200x50_is_legible_and_80x24_still_shows_phones() -> None:
    big = wall_layout(200, 47)  # 50 rows less the title, status bar and footer
    assert big.screen_rows >= 20 and big.screen_cols >= 18
    assert big.columns * big.rows >= 18  # and still many phones at once
    small = wall_layout(80, 21)
    assert small.screen_rows >= 12 and small.columns >= 3


async def test_wall_keys_move_open_and_switch_to_the_list() -> None:
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(200, 50)) as pilot:
        await fleet_on_screen(app, src, pilot, 64)
        wall = wall_of(app)
        g = wall.grid
        assert app.decoder.tile == (g.screen_cols, g.screen_rows)  # tiles rendered at size
        assert wall.visible_keys() == wall.keys[:g.columns * g.rows]
        keys = wall.keys
        # only the phones on screen are decoded; the others wait for their turn
        shown = set(wall.visible_keys())
        assert all(app.model.devices[k].tile is not None
                   and app.model.devices[k].tile.rows == 20 for k in shown)  # type: ignore[union-attr]
        assert all(app.model.devices[k].tile is None for k in keys if k not in shown)
        assert app.decoder.stats.deferred >= len(keys) - len(shown)

        async def at(*press: str) -> object:
            await pilot.press(*press)
            return wall.current_key

        assert await at("right") == keys[1]
        assert await at("down") == keys[1 + g.columns]
        assert await at("left", "up") == keys[0]
        assert await at("l", "j", "h", "k") == keys[0]
        assert await at("end") == keys[-1]
        top = int(wall.scroll_y)
        assert top % g.tile_h == 0 and top > 0  # scrolled by whole tile rows
        assert keys[-1] in wall.visible_keys()
        await app.settle()  # scrolled in: their newest frames are rendered now
        await pilot.pause()
        await app.settle()
        assert all(app.model.devices[k].tile is not None for k in wall.visible_keys())
        assert wall.tiles[keys[-1]].picture is not None
        assert await at("home") == keys[0] and int(wall.scroll_y) == 0
        assert await at("pagedown") == keys[g.rows * g.columns]
        assert await at("pageup") == keys[0]
        await pilot.press("right", "enter")
        assert isinstance(app.screen, DeviceScreen) and app.screen.key == keys[1]
        await pilot.press("escape")
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await pilot.press("w")  # the list, on the same device
        box = screen.query_one("#wallbox")
        assert screen.view == "list" and screen.table.display and not box.display
        assert screen.table.current_key == keys[1] and screen.table.has_focus
        await pilot.press("down", "enter")
        assert isinstance(app.screen, DeviceScreen) and app.screen.key == keys[2]
        await pilot.press("escape", "w")
        assert screen.view == "wall" and box.display and wall.current_key == keys[2]
        # a changed device repaints its tile only
        built = wall.tiles_built
        src.push(*__import__("tui.fakefeed", fromlist=["status"]).status(
            FARM, keys[0][1], "paused"))
        await app.settle()
        await pilot.pause()
        assert wall.tiles_built == built + 1
        assert "paused" in str(wall.tiles[keys[0]].state)


async def test_wall_shows_every_recorded_real_device() -> None:
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        for t, p in while_running(load(DEFAULT_OUT)):
            src.push(t, p)
        await app.settle(20)
        await pilot.pause()
        await app.settle()
        wall = wall_of(app)
        assert set(wall.keys) == set(app.model.devices)
        framed = [k for k, d in app.model.devices.items() if d.frame is not None]
        assert framed and all(wall.tiles[k].picture is not None for k in framed)
        shot = app.export_screenshot()
        for k in wall.keys:
            assert k[1][:14] in shot.replace("&#160;", " ")
        await pilot.press("end", "enter")
        assert isinstance(app.screen, DeviceScreen)
        await pilot.press("escape", "w", "w")
        assert app.is_running


async def test_settle_waits_for_the_frames_its_own_tick_queues() -> None:
    """The race behind a CI failure: a tick told the decoder which phones are on screen
    only after their frames were re-rendered for a new tile size without them; settle
    returned on that tick, with those tiles still queued."""
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(200, 50)) as pilot:
        await fleet_on_screen(app, src, pilot, 64)
        wall = wall_of(app)
        g, shown = wall.grid, wall.visible_keys()
        app.decoder.set_visible(shown[:1])  # a stale idea of what is on screen
        app.decoder.set_tile(g.screen_cols, g.screen_rows - 1)  # re-rendered: that one only
        await app.settle()
        assert all(app.model.devices[k].tile.rows == g.screen_rows - 1  # type: ignore[union-attr]
                   for k in shown)


def wall_app() -> tuple[DistrlTui, FakeSource]:
    src = FakeSource()
    return DistrlTui(src, clock=fixed_clock), src


def settled(src: FakeSource, *keys: str) -> Callable[[Pilot[None]], Awaitable[None]]:
    """The snapshot feed, its state-change toasts popped and cleared, the tiles
    rendered at the wall's own size (a second pass: the size is known after layout)."""
    async def run(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, DistrlTui)
        populate(src)
        for _ in range(2):
            await app.settle()
            await pilot.pause()
        for k in keys:
            await pilot.press(k)
            await app.settle()
        app.clear_notifications()
        await pilot.pause()
    return run


def test_snapshot_wall_200x50(snap_compare: Compare) -> None:
    app, src = wall_app()
    assert snap_compare(app, terminal_size=(200, 50), run_before=settled(src, "right"))


def test_snapshot_wall_80x24(snap_compare: Compare) -> None:
    app, src = wall_app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=settled(src))


async def test_80x24_status_bar_keeps_success_and_policy() -> None:
    app, src = wall_app()
    async with app.run_test(size=(80, 24)) as pilot:
        populate(src)
        await app.settle()
        await pilot.pause()
        bar = str(app.screen.query_one("#statusbar").render())
        assert "success" in bar[:40] and "policy v7" in bar[:60], bar
        g = wall_of(app).grid
        assert g.columns * g.tile_w <= 80 and g.rows * g.tile_h <= 21


# ------------------------------------------------------------------ colour

def _ansi(app: DistrlTui) -> str:
    """Two half-blocks of the sim launcher's blue as the app would send them (a new
    Style each time: Textual caches a style's escape codes on the style)."""
    blue = Style(bgcolor="rgb(66,118,200)", color="rgb(52,104,188)")
    return "".join(Strip([Segment("▀▀", blue)]).render(app.console))


def test_truecolor_forced_in_tmux_without_colorterm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLORTERM", raising=False)
    monkeypatch.setenv("TERM", "tmux-256color")
    default = DistrlTui(FakeSource())
    assert default.console.color_system != "truecolor"  # what Rich alone decides
    assert "38;2;52;104;188" not in _ansi(default)  # the blue would band
    forced = DistrlTui(FakeSource(), color="truecolor")
    assert forced.color == "truecolor" and "38;2;52;104;188" in _ansi(forced)
    limited = DistrlTui(FakeSource(), color="256")
    assert "38;5;" in _ansi(limited) and "38;2;" not in _ansi(limited)
    with pytest.raises(ValueError, match="color must be"):
        force_color_system(forced.console, "16m")
    assert forced.console._color_system is ColorSystem.TRUECOLOR


def test_truecolor_detected_from_the_terminal() -> None:
    assert detect_color({"COLORTERM": "truecolor"}) == "truecolor"
    assert detect_color({"TERM": "xterm-direct"}) == "truecolor"
    assert detect_color({"TERM_PROGRAM": "WezTerm", "TERM": "xterm-256color"}) == "truecolor"
    assert detect_color({"TERM": "tmux-256color"}) == "auto"  # Rich's own choice stays


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("forced", [True, False])
def test_python_m_tui_in_tmux_draws_24_bit_only_when_forced(forced: bool,
                                                            tmp_path: Path) -> None:
    """The real program in a real tmux without COLORTERM: with ``--color truecolor``
    tmux holds 24-bit cells (capture-pane -e shows ``38;2``/``48;2``), without it the
    256-colour cube only. (tmux on a CI box has no RGB client: auto stays 256.)"""
    sock = f"distrl-wall-{os.getpid()}-{forced}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "TMUX")}
    args = [sys.executable, "-m", "tui", "--broker", f"mqtt://127.0.0.1:{free_port()}",
            "--readonly", *(["--color", "truecolor"] if forced else [])]
    cmd = "cd {} && exec {}".format(ROOT, " ".join(args))
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-x", "120",
                    "-y", "40", "env", "-u", "COLORTERM", "sh", "-c", cmd], check=True,
                   env=env, timeout=30)
    try:
        deadline = time.monotonic() + 60
        shot = ""
        while "READ-ONLY" not in shot:
            assert time.monotonic() < deadline, shot[-2000:]
            time.sleep(0.2)  # polling a real terminal: nothing to wait on but its screen
            shot = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-e"],
                                  capture_output=True, text=True, env=env,
                                  timeout=10).stdout
        (tmp_path / "pane.txt").write_text(shot)
        has_rgb = "38;2;" in shot or "48;2;" in shot
        assert has_rgb == forced, shot[:400]
        if not forced:
            assert "38;5;" in shot or "48;5;" in shot
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], env=env, timeout=10,
                       check=False)

"""The wall of phones under load: 64 devices, each sending one status and one frame per
second, with the wall visible (issue #12: ≥ 4 refreshes/s, ≤ 25 % of one core).

The real app (``tui.app.DistrlTui``) runs headless (Textual's ``run_test``) on the fake
source, fed the way a farm feeds it over MQTT. The frames are real sim-phone screens
(launcher, Settings, a Contacts form: ``tests/tui/sim_screens.py``) encoded with the
farm's own thumbnail encoder at the farm's 240×533, rotated so that every tile changes
every second. Payloads are encoded before the clock starts, so the figures are the
TUI's own cost: parsing, JPEG decoding and half-block tiles in the frame thread, the
wall's tile updates, and each screen update rendered to terminal escape sequences
(the headless driver skips that step; here it is done and thrown away, as a terminal
write would cost it).

Reported over the window after a warm-up:
  refresh   screen updates per second (non-empty compositor updates)      bar ≥ 4 Hz
  CPU       process CPU time / wall time (all threads), % of one core     bar ≤ 25 %
  tiles     tiles rebuilt per second (only changed tiles on screen are)

Usage:  .venv/bin/python bench/tui_wall.py [--devices 64] [--seconds 30] [--size 200x50]
        [--view wall|list]   (exit 1 when a bar is missed)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from textual._compositor import CompositorUpdate

from tests.tui.sim_screens import app_screens
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.fleet import FleetScreen
from tui.source import FakeSource

FARM = "bench"
Wire = tuple[str, bytes]


def build_feed(devices: int, seconds: int) -> list[list[Wire]]:
    """Per second, per device (in a fixed shuffled phase: a fleet is not in lockstep):
    [status, frame], all encoded up front (outside the event loop: the sim phone's
    screens are rendered with asyncio.run)."""
    shots = list(app_screens().values())
    phase = list(range(devices))
    random.Random(0).shuffle(phase)
    out: list[list[Wire]] = []
    for sec in range(seconds):
        for d in phase:
            dev = f"sim-{d:02d}"
            jpeg, w, h = shots[(sec + d) % len(shots)]
            st = ff.status(FARM, dev, "busy" if (sec + d) % 5 else "ready", task="wifi_off",
                           instruction="Turn off Wi-Fi", step=sec % 20,
                           episode_return=sec / 10, battery=90 - d % 50, kind="sim",
                           policy_version=sec // 4, episodes=sec)
            fr = ff.frame(FARM, dev, step=sec, image=jpeg, size=(w, h), elements=[],
                          actions=[{"action_type": "click", "x": 540, "y": 1200}])
            out.append([st, fr])
    return out


async def run(feed: list[list[Wire]], devices: int, warmup: float,
              size: tuple[int, int], view: str) -> dict[str, Any]:
    src = FakeSource()
    app = DistrlTui(src, fleet_view=view)
    updates: list[float] = []
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      width=size[0], height=size[1], legacy_windows=False)
    written = [0]

    def display(screen: Any, renderable: Any) -> None:
        if isinstance(renderable, CompositorUpdate):
            seq = renderable.render_segments(console)  # what a terminal would be sent
            if seq:
                written[0] += len(seq)
                updates.append(time.perf_counter())

    app._display = display  # type: ignore[method-assign]
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        period = 1.0 / devices  # one device's status + frame every 1/N s: each at 1 Hz
        t0 = time.perf_counter()
        cpu0 = wall0 = None
        n0 = built0 = 0
        for i, msgs in enumerate(feed):
            delay = t0 + i * period - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.perf_counter()
            if cpu0 is None and now - t0 >= warmup:
                cpu0, wall0, n0 = time.process_time(), now, len(updates)
                built0 = screen.wall.tiles_built
            for topic, payload in msgs:
                src.push(topic, payload)
        await asyncio.sleep(0.5)
        cpu1, wall1, n1 = time.process_time(), time.perf_counter(), len(updates)
        assert cpu0 is not None and wall0 is not None
        built = screen.wall.tiles_built - built0
        grid = screen.wall.grid
        stats = app.decoder.stats
        shown = len(app.model.devices)
        with_tile = sum(1 for d in app.model.devices.values() if d.tile is not None)
    wall = wall1 - wall0
    return {
        "devices": devices, "shown": shown, "with_tile": with_tile,
        "seconds": round(wall, 1), "refresh_hz": (n1 - n0) / wall,
        "cpu_pct": 100 * (cpu1 - cpu0) / wall, "tiles_per_s": built / wall,
        "grid": f"{grid.columns}x{grid.rows} tiles of {grid.screen_cols}x{grid.screen_rows}",
        "frames_decoded": stats.decoded, "coalesced": stats.coalesced,
        "decoder_cpu_s": stats.busy_s, "bytes_per_s": written[0] / (wall1 - t0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, default=64)
    ap.add_argument("--seconds", type=int, default=30, help="feed length (incl. warm-up)")
    ap.add_argument("--warmup", type=float, default=4.0)
    ap.add_argument("--size", default="200x50", help="terminal COLSxROWS")
    ap.add_argument("--view", choices=["wall", "list"], default="wall")
    a = ap.parse_args()
    cols, rows = (int(v) for v in a.size.lower().split("x"))
    print(f"building {a.devices} devices × {a.seconds} s of traffic …", flush=True)
    feed = build_feed(a.devices, a.seconds)
    r = asyncio.run(run(feed, a.devices, a.warmup, (cols, rows), a.view))
    ok_hz, ok_cpu = r["refresh_hz"] >= 4.0, r["cpu_pct"] <= 25.0
    print(f"TUI {a.view}, {r['devices']} devices × (status + 240×533 frame) at 1 Hz each, "
          f"terminal {cols}x{rows} ({r['grid']}), {r['seconds']} s measured")
    print(f"  refresh   {r['refresh_hz']:.2f} screen updates/s   (bar ≥ 4 Hz: "
          f"{'PASS' if ok_hz else 'FAIL'})")
    print(f"  CPU       {r['cpu_pct']:.1f} % of one core          (bar ≤ 25 %: "
          f"{'PASS' if ok_cpu else 'FAIL'})")
    print(f"  tiles     {r['tiles_per_s']:.1f} rebuilt/s; {r['with_tile']}/{r['shown']} "
          f"devices with a tile picture")
    print(f"  decoder   {r['frames_decoded']} frames, {r['coalesced']} coalesced, "
          f"{r['decoder_cpu_s']:.2f} s thread CPU; output "
          f"{r['bytes_per_s'] / 1024:.0f} KiB/s of escape sequences")
    sys.exit(0 if ok_hz and ok_cpu else 1)


if __name__ == "__main__":
    main()

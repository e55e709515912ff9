"""TUI refresh rate and CPU with 64 devices' live thumbnails (docs/design.md §8).

The real app (``tui.app.DistrlTui``) runs headless on the fake source, fed like a farm
would feed it over MQTT: every device sends one status and one JPEG thumbnail per
second (staggered evenly, so 128 messages/s in all). Payloads are encoded before the
clock starts, so the figures are the TUI's own cost: parsing every message, decoding
every JPEG in the frame thread, half-block rendering, the table updates, and the
screen updates rendered to terminal escape sequences (the headless driver skips that
last step; here it is done and thrown away, as a terminal write would cost it).

Reported over the measurement window (after a warm-up):
  refresh   screen updates per second (non-empty compositor updates)     bar ≥ 4 Hz
  CPU       process CPU time / wall time (all threads), as % of one core bar ≤ 25 %
  latency   frame pushed → its thumbnail applied to the model (p50 / p95)
  coalesced frames replaced by a newer one before decoding (should be ~0 when the
            decoder keeps up)

Usage:  .venv/bin/python bench/tui_refresh.py [--devices 64] [--seconds 20] [--size 200x60]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from textual._compositor import CompositorUpdate

from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.decoder import Rendered
from tui.source import FakeSource

FARM = "bench"


def build_feed(devices: int, seconds: int) -> list[list[tuple[str, bytes]]]:
    """Per second, per device: [status, frame] payloads, all encoded up front. Devices
    keep a fixed, shuffled phase within the second (seeded): a real fleet's devices are
    not in lockstep, and sending them in table order would bunch the visible rows'
    updates into one tick."""
    phase = list(range(devices))
    random.Random(0).shuffle(phase)
    jpegs = [[ff.screen_jpeg(seed, step, (108, 240)) for step in range(8)]
             for seed in range(8)]
    out: list[list[tuple[str, bytes]]] = []
    for sec in range(seconds):
        for d in phase:
            dev = f"sim-{d:02d}"
            st = ff.status(FARM, dev, "busy" if (sec + d) % 5 else "ready", task="wifi_off",
                           instruction="Turn off Wi-Fi", step=sec % 20,
                           episode_return=sec / 10, battery=90 - d % 50,
                           temperature_c=30 + d % 10, kind="sim", policy_version=sec // 4,
                           episodes=sec, last_action={"action_type": "click", "x": 0.5,
                                                      "y": 0.5})
            fr = ff.frame(FARM, dev, step=sec, actions=[
                {"action_type": "click", "x": 540, "y": 1200}],
                image=jpegs[d % 8][sec % 8])
            out.append([st, fr])
    return out


async def run(devices: int, seconds: int, warmup: float, size: tuple[int, int],
              tick_s: float) -> dict[str, Any]:
    feed = build_feed(devices, seconds)
    phase = list(range(devices))
    random.Random(0).shuffle(phase)
    src = FakeSource()
    app = DistrlTui(src, tick_s=tick_s, fleet_view="list")  # the list view (tui_wall.py: the wall)
    updates: list[float] = []
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      width=size[0], height=size[1], legacy_windows=False)
    pushed: dict[tuple[str, int], float] = {}
    latencies: list[float] = []
    written = [0]

    def display(screen: Any, renderable: Any) -> None:
        if isinstance(renderable, CompositorUpdate):
            seq = renderable.render_segments(console)  # what a terminal would be sent
            if seq:
                written[0] += len(seq)
                updates.append(time.perf_counter())

    app._display = display  # type: ignore[method-assign]
    apply = app.model.apply_rendered

    def timed_apply(r: Rendered) -> None:
        t = pushed.pop((r.key[1], r.frame.step or 0), None)
        if t is not None:
            latencies.append(time.perf_counter() - t)
        apply(r)

    app.model.apply_rendered = timed_apply  # type: ignore[method-assign]

    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        period = 1.0 / devices  # one device's status + frame every 1/N s: each at 1 Hz
        t0 = time.perf_counter()
        cpu0 = wall0 = None
        n0 = 0
        for i, msgs in enumerate(feed):
            target = t0 + i * period
            delay = target - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            now = time.perf_counter()
            if cpu0 is None and now - t0 >= warmup:
                cpu0, wall0, n0 = time.process_time(), now, len(updates)
                latencies.clear()
            for topic, payload in msgs:
                src.push(topic, payload)
            pushed[(f"sim-{phase[i % devices]:02d}", i // devices)] = now
        await asyncio.sleep(0.5)
        cpu1, wall1, n1 = time.process_time(), time.perf_counter(), len(updates)
        assert cpu0 is not None and wall0 is not None
        stats = app.decoder.stats
        shown = len(app.model.devices)
    wall = wall1 - wall0
    lat = sorted(latencies)
    return {
        "devices": devices, "shown": shown, "seconds": round(wall, 1),
        "refresh_hz": (n1 - n0) / wall, "cpu_pct": 100 * (cpu1 - cpu0) / wall,
        "latency_p50_ms": 1000 * statistics.median(lat) if lat else float("nan"),
        "latency_p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))] if lat else float("nan"),
        "frames_decoded": stats.decoded, "coalesced": stats.coalesced,
        "decode_errors": stats.errors, "decoder_cpu_s": stats.busy_s,
        "bytes_per_s": written[0] / (wall1 - t0), "ticks": app.ticks,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--devices", type=int, default=64)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--warmup", type=float, default=4.0)
    ap.add_argument("--size", default="200x60", help="terminal COLSxROWS")
    ap.add_argument("--tick", type=float, default=0.125, help="UI tick in seconds (app default)")
    a = ap.parse_args()
    cols, rows = (int(v) for v in a.size.lower().split("x"))
    r = asyncio.run(run(a.devices, a.seconds, a.warmup, (cols, rows), a.tick))
    ok_hz, ok_cpu = r["refresh_hz"] >= 4.0, r["cpu_pct"] <= 25.0
    print(f"TUI, {r['devices']} devices × (status + thumbnail) at 1 Hz each, "
          f"terminal {cols}x{rows}, {r['seconds']} s measured")
    print(f"  refresh   {r['refresh_hz']:.2f} screen updates/s   (bar ≥ 4 Hz: "
          f"{'PASS' if ok_hz else 'FAIL'}, {r['refresh_hz'] / 4:.2f}× the bar)")
    print(f"  CPU       {r['cpu_pct']:.1f} % of one core          (bar ≤ 25 %: "
          f"{'PASS' if ok_cpu else 'FAIL'}, {r['cpu_pct'] / 25:.2f}× the bar)")
    print(f"  latency   frame → thumbnail p50 {r['latency_p50_ms']:.0f} ms, "
          f"p95 {r['latency_p95_ms']:.0f} ms")
    print(f"  decoder   {r['frames_decoded']} frames, {r['coalesced']} coalesced, "
          f"{r['decode_errors']} errors, {r['decoder_cpu_s']:.2f} s thread CPU")
    print(f"  output    {r['bytes_per_s'] / 1024:.0f} KiB/s of escape sequences, "
          f"{r['ticks']} ticks; devices shown {r['shown']}")
    sys.exit(0 if ok_hz and ok_cpu else 1)


if __name__ == "__main__":
    main()

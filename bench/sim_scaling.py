"""How many sim phones one process serves at 1 step/s each before step p99 doubles.

All phones run in ONE child process (`distrl sim serve`). The client drives N of
them, each at 1 step/s with a random phase, over its own adb transport connection
per phone (bench/_adbd_host.py) — with `--via-adb-server`, through a private adb
server instead, which then bounds the result (its I/O runs on one thread and relays
every 10 MB frame in 1 MB packets, each acknowledged). A step is
an action that changes the screen (dark theme flipped with `settings put`, so every
step re-renders the full frame: the worst case) followed by an observation (raw
screencap + UI dump, concurrently). For each N we report step latency p50/p99 and
the phone process's CPU; the answer is the largest N whose p99 stays within 2× the
p99 at the lightest level. On this 2-core machine the load generator shares the
cores with the phones, so the figure is a floor for a dedicated sim host.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable

from _adbd_host import AdbdHost
from _common import cpu_seconds, phones_in_child

from farm.adb import AdbServerClient
from farm.sim.adbhost import PrivateAdbServer, bundled_adb

Stepper = Callable[[int], Awaitable[None]]


def adb_server_stepper(client: AdbServerClient, serial: str) -> Stepper:
    async def step(i: int) -> None:
        await client.shell_v2(serial, f"settings put secure ui_night_mode {1 + i % 2}")
        frame, dump = await asyncio.gather(
            client.exec_out(serial, "screencap"),
            client.exec_out(serial, "uiautomator dump /dev/tty"),
        )
        assert len(frame) > 16 and b"</hierarchy>" in dump
    return step


def direct_stepper(host: AdbdHost) -> Stepper:
    async def step(i: int) -> None:
        assert await host.shell_v2_exit(f"settings put secure ui_night_mode {1 + i % 2}") == 0
        frame, dump = await asyncio.gather(
            host.run("exec:screencap"), host.run("exec:uiautomator dump /dev/tty"),
        )
        assert len(frame) > 16 and b"</hierarchy>" in dump
    return step


async def drive(steppers: list[Stepper], seconds: float) -> list[float]:
    latencies: list[float] = []
    t_end = time.perf_counter() + seconds

    async def loop(step: Stepper) -> None:
        next_t = time.perf_counter() + random.random()
        i = 0
        while next_t < t_end:
            await asyncio.sleep(max(0.0, next_t - time.perf_counter()))
            t0 = time.perf_counter()
            await step(i)
            latencies.append(time.perf_counter() - t0)
            i += 1
            next_t += 1.0

    await asyncio.gather(*(loop(s) for s in steppers))
    return latencies


def p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100)[98] if len(xs) >= 2 else xs[0]


async def run(levels: list[int], seconds: float, screen: str, via_adb_server: bool) -> None:
    top = max(levels)
    with phones_in_child(top, screen=screen) as state, PrivateAdbServer(bundled_adb()) as adb:
        pid = state["pid"]
        serials = [p["serial"] for p in state["phones"]]
        steppers: list[Stepper] = []
        if via_adb_server:
            client = AdbServerClient(port=adb.port, timeout=60)
            for s in serials:
                adb.connect(s)
                steppers.append(adb_server_stepper(client, s))
        else:
            for p in state["phones"]:
                steppers.append(direct_stepper(await AdbdHost.connect(p["port"])))
        for step in steppers:  # both themes once: first renders fill the glyph caches
            await step(0)
            await step(1)
        route = "via a private adb server" if via_adb_server else "direct adb transports"
        print(f"{screen} screen, {seconds:g} s per level, {route}")
        baseline = None
        best = 0
        print(f"{'phones':>6} {'steps':>6} {'p50 ms':>8} {'p99 ms':>8} {'p99 ratio':>10} "
              f"{'sim CPU':>8}")
        for n in levels:
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            # at least ~100 steps per level, so that p99 is not just the slowest step
            lat = await drive(steppers[:n], max(seconds, 100 / n))
            cpu = (cpu_seconds(pid) - cpu0) / (time.perf_counter() - t0)
            q99 = p99(lat)
            baseline = baseline or q99
            ratio = q99 / baseline
            print(f"{n:>6} {len(lat):>6} {statistics.median(lat) * 1000:>8.1f} "
                  f"{q99 * 1000:>8.1f} {ratio:>10.2f} {cpu * 100:>7.0f}%", flush=True)
            if ratio <= 2.0:
                best = n
            else:
                break
        print(f"one sim process serves {best} phones at 1 step/s before step p99 doubles")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="4,8,16,32,48,64,96,128")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--screen", default="phone", choices=["phone", "small"])
    ap.add_argument("--via-adb-server", action="store_true",
                    help="drive the phones through a private adb server")
    a = ap.parse_args()
    asyncio.run(run([int(x) for x in a.levels.split(",")], a.seconds, a.screen,
                    a.via_adb_server))

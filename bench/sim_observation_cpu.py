"""CPU a sim phone spends per observation (raw screencap + UI dump), 1080×2400, instant.

The phone runs in a child process (`distrl sim serve`); a client reads observations
through a private adb server with DistRL's lean async client, and we read the
child's CPU time from /proc. Two cases: an unchanged screen (frame and dump served
from cache) and one changed before every observation (dark theme flipped with
`settings put`, so the whole screen re-renders; the put's own cost is included).

Bar (DESIGN.md §6 / issue 2): ≤ 10 ms, so one core serves ≥ 32 phones at 1 step/s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from _common import cpu_seconds, phones_in_child

from farm.adb import AdbServerClient
from farm.sim.adbhost import PrivateAdbServer, bundled_adb


async def observe(client: AdbServerClient, serial: str, width: int, height: int) -> None:
    frame, dump = await asyncio.gather(
        client.exec_out(serial, "screencap"),
        client.exec_out(serial, "uiautomator dump /dev/tty"),
    )
    assert len(frame) == 16 + width * height * 4, len(frame)
    assert b"</hierarchy>" in dump


async def run(n: int, screen: str) -> None:
    with phones_in_child(1, screen=screen) as state, PrivateAdbServer(bundled_adb()) as adb:
        pid, phone = state["pid"], state["phones"][0]
        serial = phone["serial"]
        width, height = (int(v) for v in phone["screen"].split("x"))
        adb.connect(serial)
        client = AdbServerClient(port=adb.port, timeout=60)
        await client.shell_v2(serial, "am start -n com.android.settings/.Settings")
        for _ in range(10):
            await observe(client, serial, width, height)
        results = {}
        for case in ("unchanged screen", "changed screen"):
            walls = []
            cpu0 = cpu_seconds(pid)
            for i in range(n):
                if case == "changed screen":
                    await client.shell_v2(serial, f"settings put secure ui_night_mode {1 + i % 2}")
                t0 = time.perf_counter()
                await observe(client, serial, width, height)
                walls.append(time.perf_counter() - t0)
            cpu_ms = (cpu_seconds(pid) - cpu0) / n * 1000
            results[case] = cpu_ms
            print(f"{case:>17}: phone CPU {cpu_ms:6.2f} ms/observation "
                  f"(≈ {1000 / cpu_ms:4.0f} phones per core at 1 step/s); "
                  f"client wall p50 {statistics.median(walls) * 1000:.1f} ms")
        worst = max(results.values())
        print(f"bar ≤ 10 ms: {'PASS' if worst <= 10 else 'FAIL'} (worst case {worst:.2f} ms, "
              f"{width}x{height}, {n} observations each)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="observations per case")
    ap.add_argument("--screen", default="phone", choices=["phone", "small"])
    args = ap.parse_args()
    asyncio.run(run(args.n, args.screen))

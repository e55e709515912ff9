"""CPU a sim phone spends per observation (raw screencap + UI dump), 1080×2400, instant.

The phone runs in a child process (`distrl sim serve`); a client reads observations
through a private adb server with DistRL's lean async client, and we read the
child's CPU time from /proc. Three loops: (A) observe an unchanged screen (frame and
dump from cache); (B) a `settings put` of a key nothing shows, then observe; (C) a
`settings put` that flips dark theme, then observe, so the whole screen re-renders.
The action's own cost is B − A, so an observation of a changed screen costs C − B + A.

Bar (docs/design.md §8): ≤ 10 ms, so one core serves ≥ 32 phones at 1 step/s.
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
        actions = {
            "A": None,
            "B": "settings put system distrl_bench_counter {i}",
            "C": "settings put secure ui_night_mode {mode}",
        }
        cpu: dict[str, float] = {}
        wall: dict[str, float] = {}
        for case, action in actions.items():
            walls = []
            cpu0 = cpu_seconds(pid)
            for i in range(n):
                if action:
                    await client.shell_v2(serial, action.format(i=i, mode=1 + i % 2))
                t0 = time.perf_counter()
                await observe(client, serial, width, height)
                walls.append(time.perf_counter() - t0)
            cpu[case] = (cpu_seconds(pid) - cpu0) / n * 1000
            wall[case] = statistics.median(walls) * 1000
        changed = cpu["C"] - cpu["B"] + cpu["A"]
        print(f"{width}x{height}, {n} observations per loop; phone CPU per observation:")
        print(f"  unchanged screen (cached):       {cpu['A']:6.2f} ms  "
              f"(≈ {1000 / cpu['A']:4.0f} phones/core at 1 step/s; wall p50 {wall['A']:.1f} ms)")
        print(f"  changed screen (full re-render): {changed:6.2f} ms  "
              f"(≈ {1000 / changed:4.0f} phones/core at 1 step/s; wall p50 {wall['C']:.1f} ms)")
        print(f"  the action itself (settings put): {cpu['B'] - cpu['A']:5.2f} ms; "
              f"a whole step (action + changed observation): {cpu['C']:.2f} ms")
        worst = max(cpu["A"], changed)
        print(f"bar ≤ 10 ms per observation: {'PASS' if worst <= 10 else 'FAIL'} "
              f"(worst {worst:.2f} ms)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=200, help="observations per case")
    ap.add_argument("--screen", default="phone", choices=["phone", "small"])
    args = ap.parse_args()
    asyncio.run(run(args.n, args.screen))

"""Deploy's own per-step costs on a sim phone: observation, guard check, frame annotation.

Run from the repository root:

    .venv/bin/python bench/deploy_step.py     # prints one JSON line
"""

from __future__ import annotations

import asyncio
import json
import time

from distrl_sdk.actions import OpenApp, Tap, TypeText
from farm.deploy import Guard, GuardContext, annotate
from farm.device import AdbDevice
from farm.device.observe import observe
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm


async def measure(dev: AdbDevice) -> dict[str, float]:
    await dev.shell("am start -n 'com.android.settings/.Settings$ManageApplicationsActivity'")
    seen = await observe(dev)
    t = time.perf_counter()
    for _ in range(5):
        await observe(dev)
    observe_ms = (time.perf_counter() - t) / 5 * 1000
    guard = Guard()
    ctx = GuardContext(seen.package, seen.activity, seen.elements, (1080, 2400))
    actions = [Tap(0.5, 0.4), OpenApp("Settings"), TypeText("hello 4111 1111")] * 100
    t = time.perf_counter()
    for a in actions:
        guard.check(a, ctx)
    guard_us = (time.perf_counter() - t) / len(actions) * 1e6
    image = seen.frame.image()
    t = time.perf_counter()
    for _ in range(10):
        annotate(image, Tap(0.5, 0.5), outcome="allowed", caption="x")
    annotate_ms = (time.perf_counter() - t) / 10 * 1000
    return {"elements": len(seen.elements), "observe_ms": round(observe_ms, 1),
            "guard_check_us": round(guard_us, 1), "annotate_ms": round(annotate_ms, 1)}


def main() -> None:
    bg = BackgroundFarm(1)
    farm = bg.start()
    try:
        with PrivateAdbServer() as adb:
            serial = farm.phones[0].serial
            adb.connect(serial)
            print(json.dumps(asyncio.run(measure(AdbDevice(serial, port=adb.port)))))
    finally:
        bg.stop()


if __name__ == "__main__":
    main()

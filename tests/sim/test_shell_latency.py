"""Latency profiles are applied per command kind; the instant profile never sleeps."""

from __future__ import annotations

import asyncio
import time
from unittest import mock

import pytest

from farm.sim.faults import FaultKind
from farm.sim.profiles import LatencyProfile
from tests.sim.shell_fixtures import make_rig

SLOW = LatencyProfile("test-slow", "fixed delays for tests", shell_ms=30, input_ms=60,
                      screencap_raw_ms=120, screencap_png_ms=150, ui_dump_ms=200,
                      am_start_ms=90, install_ms=100, jitter=0.0)


async def _elapsed(rig_cmd: str, profile: LatencyProfile = SLOW) -> float:
    rig = make_rig(profile=profile)
    t = time.perf_counter()
    await rig.run(rig_cmd)
    return time.perf_counter() - t


@pytest.mark.parametrize(("cmd", "expected"), [
    ("echo hi", 0.030),
    ("input tap 1 2", 0.060),
    ("screencap", 0.120),
    ("screencap -p", 0.150),
    ("uiautomator dump /sdcard/x.xml", 0.200),
    ("am start -n com.android.settings/.Settings", 0.090),
    ("rm -f /data/local/tmp/uidump.xml; uiautomator dump /data/local/tmp/uidump.xml "
     "&& echo success", 0.230),  # the cheap rm pays the round trip, the dump its own time
    ("getprop ro.serialno; echo X4EXIT:$?", 0.030),  # cheap commands pay once per line
])
async def test_profile_delay_per_kind(cmd: str, expected: float) -> None:
    elapsed = await _elapsed(cmd)
    assert expected * 0.9 <= elapsed < expected + 0.08, (cmd, elapsed)


async def test_slow_frames_fault_adds_to_screencap() -> None:
    rig = make_rig(profile=SLOW)
    rig.faults.apply(FaultKind.SLOW_FRAMES, seconds=60, value=100)
    t = time.perf_counter()
    await rig.run("screencap -p")
    assert time.perf_counter() - t >= 0.24
    t = time.perf_counter()
    await rig.run("echo x")
    assert time.perf_counter() - t < 0.1


async def test_install_stream_delay() -> None:
    from farm.sim.shell import build_test_apk

    rig = make_rig(profile=SLOW)
    t = time.perf_counter()
    assert await rig.shell.install_apk_bytes(build_test_apk("com.x.y"), []) == "Success\n"
    assert time.perf_counter() - t >= 0.09


async def test_instant_profile_never_sleeps() -> None:
    rig = make_rig(profile="instant")
    with mock.patch("asyncio.sleep", side_effect=AssertionError("slept")) as sleep:
        for cmd in ("screencap", "screencap -p", "uiautomator dump", "input tap 1 2",
                    "am start -n com.android.settings/.Settings", "echo a; echo b", "", "'"):
            await rig.run(cmd)
        assert sleep.call_count == 0
    assert asyncio.sleep is not None


@pytest.mark.parametrize("kind", ["fake", "real"])
async def test_observation_cpu_budget(kind: str) -> None:
    """Raw screencap + uiautomator dump to a file: ≤ 10 ms sim CPU with a cached frame."""
    rig = make_rig(kind)
    await rig.run("screencap")  # warm the world's frame/xml caches
    await rig.run("uiautomator dump /data/local/tmp/uidump.xml")
    n = 20
    t = time.process_time()
    for _ in range(n):
        await rig.run("screencap")
        await rig.run("uiautomator dump /data/local/tmp/uidump.xml")
    per_pair = (time.process_time() - t) / n
    assert per_pair < 0.010, f"{per_pair * 1000:.2f} ms"

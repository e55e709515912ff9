"""The TUI watching and operating a real farm: sim phones over ADB, the farm controller,
mosquitto. Devices appear with live thumbnails drawn from the controller's frames, and
the keys pause a device and queue a task on it (answered by the farm)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from distrl_sdk.registry import TaskRegistry
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import LifecycleConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from tui.app import DistrlTui
from tui.fleet import FleetScreen
from tui.mqtt_source import MqttSource

pytestmark = [pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary"),
              pytest.mark.slow]
FARM = "e2e"
FAST = LifecycleConfig(heartbeat_s=0.3, reaper_s=3, probe_timeout_s=2, boot_timeout_s=10,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.5,
                       reconnect_timeout_s=3.0)


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {what}")
        await asyncio.sleep(0.05)


async def test_tui_watches_and_operates_a_real_farm(tmp_path: Path) -> None:
    reg = TaskRegistry.discover()
    tasks = [reg.get("settings.wifi_off")]
    with BackgroundFarm(2, seed=3, profile="emulator") as sims, PrivateAdbServer() as adb:
        async with EmbeddedBroker(backend="mosquitto") as broker:
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id=FARM, adb_port=adb.port, devices=sims.serials,
                tasks=tasks, spool_dir=tmp_path / "spool", lifecycle=FAST, flush_timeout_s=2,
                episode_timeout_s=60, sim_devices=frozenset(sims.serials), frames_hz=2.0))
            run = asyncio.create_task(ctl.run())
            try:
                app = DistrlTui(MqttSource(broker.url, FARM), tick_s=0.1)
                async with app.run_test(size=(140, 40)) as pilot:
                    m = app.model
                    keys = [(FARM, s) for s in sims.serials]
                    await until(lambda: all(k in m.devices for k in keys), 30, "devices")
                    await until(lambda: any(m.devices[k].thumb is not None for k in keys), 30,
                                "a live thumbnail from the controller")
                    await until(lambda: any(m.devices[k].state == "busy" for k in keys), 30,
                                "a busy device")
                    assert not m.garbage, m.garbage  # the farm speaks the contract
                    # the run-task dialog offers what the farm itself says it runs
                    assert m.farm_tasks(FARM) == ["settings.wifi_off"]
                    screen = app.screen
                    assert isinstance(screen, FleetScreen)
                    screen.move_to(keys[0])
                    await pilot.press("p")
                    await until(lambda: any(r.ok for r in m.results.values()), 20,
                                "the farm's answer to pause")
                    await until(lambda: m.devices[keys[0]].state == "paused", 40,
                                "paused on screen")
                    await pilot.press("t", *"settings.wifi_off", "enter")
                    await until(lambda: len(m.results) == 2, 20, "answer to run_task")
                    last = list(m.results.values())[-1]
                    assert last.ok and "queued" in (last.detail or ""), last
            finally:
                ctl.stop()
                await asyncio.wait_for(run, 60)

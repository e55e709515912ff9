"""What the fleet screen shows of a real farm whose episodes are shorter than the live
status period (sim phones and the oracle finish several episodes a second, like the
demo): busy rows carry a step and a return, every episode is seen, finished ones show
their final return, and the farm's own status is its link, not a device.

Real mosquitto, real sim phones over ADB, the real controller; the TUI's model is fed
exactly what a TUI would receive and sampled the way its screen reads it."""

from __future__ import annotations

import asyncio
import re
import time
from collections import defaultdict
from pathlib import Path

import aiomqtt
import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import DeviceStatus, Message, parse_message, topics
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import LifecycleConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from tui.model import FARM_STATUS_ID, FleetModel

pytestmark = [pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary"),
              pytest.mark.slow]
FARM = "live"
FAST = LifecycleConfig(heartbeat_s=0.3, reaper_s=3, probe_timeout_s=2, boot_timeout_s=10,
                       boot_poll_s=0.1, backoff_min_s=0.1, backoff_max_s=0.5)
STATUS_HZ = 1.0
WINDOW_S = 6.0


async def test_short_episodes_show_steps_returns_and_every_episode(tmp_path: Path) -> None:
    reg = TaskRegistry.discover()
    tasks = [reg.get("settings.wifi_off")]
    model = FleetModel()
    statuses: dict[str, list[DeviceStatus]] = defaultdict(list)
    samples: list[tuple[int | None, float | None]] = []  # (step, return) of busy rows
    histories: dict[str, list[str]] = {}  # the device screen's action history, per device
    with BackgroundFarm(2, seed=5) as sims, PrivateAdbServer() as adb:
        serials = list(sims.serials)
        async with EmbeddedBroker(backend="mosquitto") as broker:
            port = int(broker.url.rsplit(":", 1)[1])
            async with aiomqtt.Client("127.0.0.1", port, identifier="test-live") as client:
                await client.subscribe(f"{topics.PREFIX}/{FARM}/status/+", qos=1)

                async def pump() -> None:
                    async for m in client.messages:
                        payload = m.payload
                        assert isinstance(payload, bytes)
                        model.ingest(str(m.topic), payload)
                        p = parse_message(str(m.topic), payload)
                        if isinstance(p, Message) and isinstance(p.body, DeviceStatus):
                            statuses[p.body.device_id].append(p.body)

                async def sample(stop: asyncio.Event) -> None:
                    while not stop.is_set():  # what the screen would show, 10 times a second
                        for d in model.devices.values():
                            if d.status is not None and d.state == "busy":
                                samples.append((d.status.step, d.status.episode_return))
                            histories[d.key[1]] = list(d.actions)
                        await asyncio.sleep(0.1)

                pumping = asyncio.create_task(pump())
                ctl = FarmController(FarmConfig(
                    broker_url=broker.url, farm_id=FARM, adb_port=adb.port,
                    devices=sims.serials, tasks=tasks, policy="oracle",
                    spool_dir=tmp_path / "spool", lifecycle=FAST, flush_timeout_s=2,
                    duration_s=WINDOW_S, status_hz=STATUS_HZ, frames_hz=0,
                    sim_devices=frozenset(sims.serials)))
                run = asyncio.create_task(ctl.run())
                deadline = time.monotonic() + 60
                while ctl.collector is None and time.monotonic() < deadline:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)  # (the controller has no "started" event)
                stop = asyncio.Event()
                sampling = asyncio.create_task(sample(stop))
                await asyncio.wait_for(run, WINDOW_S + 60)
                stop.set()
                await sampling
                await asyncio.sleep(0.5)
                pumping.cancel()

    # the device screen's history: every step of every finished episode, numbered from 0
    # without gaps, between its opening line and its outcome (statuses are coalesced to
    # 1 Hz while these episodes take a fraction of a second)
    finished = 0
    for serial, lines in histories.items():
        opened: dict[int, list[int]] = {}
        current: int | None = None
        for line in lines:
            if m := re.match(r"▶ episode (\d+): ", line):
                current = int(m.group(1))
                opened[current] = []
            elif m := re.match(r"  #(\d+) ", line):
                if current is not None:  # (the bounded history may start mid-episode)
                    opened[current].append(int(m.group(1)))
            elif m := re.match(r"■ episode (\d+)(?: \(above\))?: success · return \+1\.00 · "
                               r"(\d+) steps", line):
                n, k = int(m.group(1)), int(m.group(2))
                if n in opened:  # opened before the window's first snapshot otherwise
                    assert opened[n] == list(range(k)), (serial, n, opened[n], lines)
                    finished += 1
    assert finished >= 4, histories

    # the farm's own retained status is its link: never a device row
    assert (FARM, FARM_STATUS_ID) not in model.devices
    # graceful stop: the farm went offline, saying so, and its devices left the fleet
    assert model.farm_links() == [(FARM, False)]
    assert model.farms[FARM].detail == "stopped"
    assert sorted(model.removed) == sorted((FARM, s) for s in serials)
    assert model.devices == {} and model.totals().total == 0 and not model.garbage
    by_dev = ctl.stats.by_device
    assert ctl.stats.episodes >= 4 * WINDOW_S * STATUS_HZ / 2, \
        f"episodes too slow for this test to mean anything: {ctl.stats.as_dict()}"
    # what the screen shows while busy: a step and a return, not "-" (the leased/released
    # churn used to overwrite the live status within milliseconds)
    assert len(samples) >= 10, samples
    with_step = sum(1 for step, _ in samples if step is not None)
    assert with_step >= 0.6 * len(samples), f"{with_step}/{len(samples)} busy rows had a step"
    for serial in serials:
        mine = statuses[serial]
        busy = [s for s in mine if s.state == "busy"]
        # every episode shown at least once (a busy status carries the episodes finished
        # before it), however short
        seen = {s.episodes for s in busy}
        assert set(range(by_dev[serial])) <= seen, (serial, by_dev[serial], sorted(seen))
        # the final status of an episode has its return with the final score: the oracle
        # succeeds, so some finished episode shows a return of at least 1
        assert any(s.detail == "episode over" and (s.episode_return or 0) >= 1.0
                   and s.step is not None for s in busy), [s.detail for s in busy]
        # coalesced: at most one status per episode plus status_hz, not two per episode
        budget = by_dev[serial] + STATUS_HZ * (WINDOW_S + 4) + 6
        assert len(mine) <= budget, (serial, len(mine), by_dev[serial])
        assert mine[-1].state != "busy" and mine[-1].task is None  # the final word

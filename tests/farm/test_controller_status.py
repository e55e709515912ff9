"""Live device status and thumbnails for the TUI, against real mosquitto and sim phones."""

from __future__ import annotations

import asyncio
import io
import time
from collections import defaultdict
from pathlib import Path

import aiomqtt
import pytest
from PIL import Image

from distrl_sdk.actions import Swipe, Tap
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import DeviceFrame, DeviceStatus, Message, parse_message, topics
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController, _px_action, _thumbnail
from farm.device.lifecycle import LifecycleConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

FARM = "lf"
FAST = LifecycleConfig(heartbeat_s=0.3, reaper_s=3, probe_timeout_s=2, boot_timeout_s=10,
                       boot_poll_s=0.1, backoff_min_s=0.1, backoff_max_s=0.5)


def test_thumbnail_and_pixel_actions() -> None:
    w, h = 1080, 2400
    rgba = bytes([200, 10, 10, 255]) * (w * h)
    jpeg, tw, th = _thumbnail(w, h, rgba, 240, 70)
    img = Image.open(io.BytesIO(jpeg))
    assert img.format == "JPEG" and img.size == (tw, th) and tw <= 240 and tw >= 200
    assert abs(th / tw - h / w) < 0.05
    r, g, _b = img.convert("RGB").getpixel((tw // 2, th // 2))  # type: ignore[misc]
    assert r > 150 and g < 60
    assert _px_action(Tap(0.5, 0.25), (w, h)) == {"action_type": "click", "x": 540, "y": 600}
    sw = _px_action(Swipe(0.0, 1.0, 1.0, 0.0), (w, h))
    assert (sw["x1"], sw["y1"], sw["x2"], sw["y2"]) == (0, h - 1, w - 1, 0)


Watched = tuple[FarmController, list[tuple[float, DeviceStatus]], list[tuple[float, Message]],
                list[str]]


async def _watch(frames_hz: float, status_hz: float, window: float, tmp: Path,
                 frames_total_hz: float = 10.0) -> Watched:
    reg = TaskRegistry.discover()
    tasks = [reg.get("settings.wifi_off"), reg.get("chrome.search")]
    statuses: list[tuple[float, DeviceStatus]] = []
    frames: list[tuple[float, Message]] = []
    with BackgroundFarm(2, seed=4) as sims, PrivateAdbServer() as adb:
        async with EmbeddedBroker(backend="mosquitto") as broker:
            port = int(broker.url.rsplit(":", 1)[1])
            async with aiomqtt.Client("127.0.0.1", port, identifier="test-tui") as client:
                await client.subscribe(f"{topics.PREFIX}/{FARM}/status/+", qos=1)
                await client.subscribe(f"{topics.PREFIX}/{FARM}/frame/+", qos=0)

                async def pump() -> None:
                    async for m in client.messages:
                        p = parse_message(str(m.topic), m.payload)
                        if isinstance(p, Message) and isinstance(p.body, DeviceStatus):
                            statuses.append((time.monotonic(), p.body))
                        elif isinstance(p, Message) and isinstance(p.body, DeviceFrame):
                            frames.append((time.monotonic(), p))

                pumping = asyncio.create_task(pump())
                ctl = FarmController(FarmConfig(
                    broker_url=broker.url, farm_id=FARM, adb_port=adb.port,
                    devices=sims.serials, tasks=tasks, spool_dir=tmp / "spool",
                    lifecycle=FAST, flush_timeout_s=2, duration_s=window, frames_hz=frames_hz,
                    status_hz=status_hz, frames_total_hz=frames_total_hz,
                    sim_devices=frozenset(sims.serials)))
                await asyncio.wait_for(ctl.run(), window + 60)
                await asyncio.sleep(0.3)
                pumping.cancel()
            return ctl, statuses, frames, sims.serials


def _max_per_second(times: list[float]) -> int:
    """The most events in any 1-second window."""
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - 1.0:
            j += 1
        best = max(best, i - j + 1)
    return best


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_live_status_and_thumbnails(tmp_path: Path) -> None:
    ctl, statuses, frames, serials = await _watch(2.0, 2.0, 6.0, tmp_path)
    steps = ctl.stats.steps
    live = [(t, s) for t, s in statuses if s.detail == "episode running"]
    assert live, "no live status while episodes ran"
    for serial in serials:
        mine = [s for _, s in live if s.device_id == serial]
        assert mine, f"no live status for {serial}"
        s = mine[-1]
        assert s.state == "busy" and s.task in ("settings.wifi_off", "chrome.search")
        assert s.instruction and s.kind == "sim"
        assert any(x.step is not None for x in mine)  # None only before the first step
        assert s.battery is not None and 0 <= s.battery <= 100
        assert s.temperature_c is not None and s.episode_return is not None
        assert any(x.last_action and "action_type" in x.last_action for x in mine)
        # coalesced: instant phones step far faster than 2 Hz
        times = [t for t, x in live if x.device_id == serial]
        assert _max_per_second(times) <= 4, f"{serial}: {_max_per_second(times)} statuses/s"
    assert steps > 4 * len(live) / len(serials) or steps > 200, (steps, len(live))
    # the final word per device is its state after the run, with no stale episode fields
    for serial in serials:
        last = [s for _, s in statuses if s.device_id == serial][-1]
        assert last.state != "busy" and last.task is None
    # thumbnails: small JPEGs, actions in pixels, at most ~frames_hz per device
    assert frames, "no thumbnails"
    by_dev: dict[str, list[float]] = defaultdict(list)
    for t, m in frames:
        f = m.body
        assert isinstance(f, DeviceFrame) and m.data
        img = Image.open(io.BytesIO(m.data))
        assert img.format == "JPEG" and img.size == (f.width, f.height) and f.width <= 240
        assert (f.screen_width, f.screen_height) == (1080, 2400)
        for a in f.actions:
            for k in ("x", "x1", "x2"):
                if k in a:
                    assert isinstance(a[k], int) and 0 <= a[k] < f.screen_width
            for k in ("y", "y1", "y2"):
                if k in a:
                    assert isinstance(a[k], int) and 0 <= a[k] < f.screen_height
        # one step's truth: the screen its action was chosen on, that observation's UI
        # elements (no extra dump) and that one action, under its step number
        assert f.step is not None and len(f.actions) == 1, (f.step, f.actions)
        assert 0 < len(f.elements) <= 64, (f.step, len(f.elements))
        for e in f.elements:
            left, top, right, bottom = e["bounds"]
            assert 0 <= left < right <= f.screen_width and 0 <= top < bottom <= f.screen_height
            assert e["text"] or e["desc"] or e["click"] or e["checked"] is not None, e
            assert isinstance(e["cls"], str) and "." not in e["cls"]
        by_dev[f.device_id].append(t)
    bodies = [m.body for _, m in frames if isinstance(m.body, DeviceFrame)]
    labels = {e["text"] or e["desc"] for f in bodies for e in f.elements}
    assert len(labels - {""}) >= 3, labels  # real screens, not one placeholder
    assert sum(1 for f in bodies if f.elements) >= len(bodies) // 2
    assert set(by_dev) <= set(serials)
    for serial, times in by_dev.items():
        assert _max_per_second(times) <= 3, f"{serial}: {_max_per_second(times)} frames/s"
    assert sum(ctl.frames_sent.values()) == len(frames)


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_frames_off_means_no_screenshots(tmp_path: Path) -> None:
    ctl, statuses, frames, _ = await _watch(0.0, 2.0, 3.0, tmp_path)
    assert ctl.stats.steps > 0 and not frames and not ctl.frames_sent
    assert any(s.detail == "episode running" for _, s in statuses)


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_farm_wide_thumbnail_budget(tmp_path: Path) -> None:
    """2 devices at up to 2 Hz each, but the farm may send only 1 thumbnail a second."""
    _ctl, _, frames, _ = await _watch(2.0, 2.0, 5.0, tmp_path, frames_total_hz=1.0)
    times = sorted(t for t, _ in frames)
    assert frames and _max_per_second(times) <= 2, _max_per_second(times)
    assert len(frames) <= 5 + 2

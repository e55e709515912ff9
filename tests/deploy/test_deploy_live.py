"""A deploy shows up live on the broker the TUI watches (real broker, real sim phone)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from distrl_sdk.actions import Complete, OpenApp, Tap
from distrl_sdk.wire import DeviceFrame, DeviceStatus, Message, parse_message
from farm.broker import EmbeddedBroker
from farm.deploy import DeployOptions, Guard, LiveFeed, run_deploy
from tests.deploy.test_deploy_sim import Scripted

pytestmark = pytest.mark.slow


async def test_status_and_frames_reach_the_broker(sim_adb_device: Any, tmp_path: Path) -> None:
    async with EmbeddedBroker() as broker:
        got: list[Message] = []
        async with aiomqtt.Client(hostname="127.0.0.1", port=broker.port) as sub:
            await sub.subscribe("distrl/v1/deploy/#", qos=1)

            async def collect() -> None:
                async for m in sub.messages:
                    parsed = parse_message(str(m.topic), m.payload)
                    assert isinstance(parsed, Message), parsed
                    got.append(parsed)

            reader = asyncio.create_task(collect())
            live = LiveFeed(broker.url, sim_adb_device.serial)
            await live.start()
            opts = DeployOptions("Open Settings", tmp_path, Guard(), settle_s=0.0, live=live)
            policy = Scripted(OpenApp("Settings"), Tap(0.5, 0.5), OpenApp("Phone"), Complete())
            res = await run_deploy(sim_adb_device, policy, opts)
            assert res.stop_reason == "refused"
            for _ in range(100):
                if any(isinstance(m.body, DeviceStatus) and m.body.state == "ready" for m in got):
                    break
                await asyncio.sleep(0.05)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    dev = sim_adb_device.serial
    statuses = [m.body for m in got if isinstance(m.body, DeviceStatus)]
    frames = [m for m in got if isinstance(m.body, DeviceFrame)]
    assert all(s.device_id == dev for s in statuses) and statuses[0].state == "busy"
    busy = [s for s in statuses if s.state == "busy" and s.step]
    assert [s.step for s in busy] == [1, 2, 3]
    assert busy[0].last_action == {"action_type": "open_app", "app_name": "Settings"}
    assert busy[0].instruction == "Open Settings" and busy[0].kind == "tcp"
    assert statuses[-1].state == "ready" and "refused" in (statuses[-1].detail or "")
    assert len(frames) == 4  # three decisions and the end
    f = frames[1]
    assert isinstance(f.body, DeviceFrame) and f.data is not None and f.data[:2] == b"\xff\xd8"
    assert f.body.screen_width == 1080 and f.body.step == 1 and f.body.height <= 480
    assert f.body.actions[-1]["x_px"] == 540 and f.body.actions[-1]["y_px"] == 1200

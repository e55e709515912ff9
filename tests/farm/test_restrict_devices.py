"""``farm up --device A --device B``: the farm uses exactly those phones, never the other
devices on the same adb server (a user's own phone next to the farm gets no actions).
Real sim phones on a real adb server, real mosquitto."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.registry import TaskRegistry
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

FAST = LifecycleConfig(heartbeat_s=0.3, reaper_s=3, probe_timeout_s=2, boot_timeout_s=10,
                       boot_poll_s=0.1, backoff_min_s=0.1, backoff_max_s=0.5)


def _count_shell(phone: Any) -> list[str]:
    """Record every shell command the phone runs (a spy on the real phone's seam)."""
    seen: list[str] = []
    orig = phone.run_shell

    async def spy(command: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(command)
        return await orig(command, *args, **kwargs)

    phone.run_shell = spy
    return seen


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_listed_devices_only(tmp_path: Path) -> None:
    tasks = [TaskRegistry.discover().get("settings.wifi_off")]
    with BackgroundFarm(3, seed=2) as sims, PrivateAdbServer() as adb:
        mine, theirs = sims.serials[:2], sims.serials[2]
        for serial in sims.serials:  # all three are on the adb server, as a user's phone is
            adb.connect(serial)
        other = _count_shell(sims.phones[2])
        used = _count_shell(sims.phones[0])
        async with EmbeddedBroker(backend="mosquitto") as broker:
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id="only", adb_port=adb.port, devices=mine,
                tasks=tasks, spool_dir=tmp_path / "spool", lifecycle=FAST,
                flush_timeout_s=5, duration_s=3, frames_hz=0, status_hz=0))
            await asyncio.wait_for(ctl.run(), 90)
    assert ctl.registry is not None
    assert sorted(ctl.registry.devices) == sorted(mine)
    assert set(ctl.stats.by_device) <= set(mine) and ctl.stats.episodes > 0
    assert theirs not in ctl.stats.by_device
    assert used, "the listed phone was never driven (the spy would prove nothing)"
    assert other == [], f"an unlisted phone got commands: {other[:5]}"


async def test_registry_allow_list_rejects_other_targets() -> None:
    reg = DeviceRegistry(port=1, only=["127.0.0.1:5555"], targets=["127.0.0.1:5555"])
    with pytest.raises(ValueError, match="allowed"):
        reg.add_target("127.0.0.1:5556")
    assert list(reg.devices) == ["127.0.0.1:5555"]

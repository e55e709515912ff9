"""host:track-devices through a private adb server: connect, disconnect, server restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from farm.adb.track import DeviceSetChange, parse_device_block, track_devices
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm


def test_parse_block() -> None:
    assert parse_device_block("emulator-5554\tdevice\n127.0.0.1:1\toffline\n") == {
        "emulator-5554": "device", "127.0.0.1:1": "offline"}
    assert parse_device_block("") == {}


async def _until(it: AsyncIterator[DeviceSetChange], pred: object,
                 timeout: float = 15.0) -> DeviceSetChange:
    async with asyncio.timeout(timeout):
        async for change in it:
            if pred(change):  # type: ignore[operator]
                return change
    raise AssertionError("tracking ended")


@pytest.mark.slow
@pytest.mark.sim(count=1)
async def test_track_connect_disconnect_and_restart(sim_background: BackgroundFarm,
                                                    private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial = sim_background.farm.serials[0]
    it = track_devices("127.0.0.1", private_adb.port, max_backoff=0.5)
    first = await _until(it, lambda c: True)
    assert first.resync and first.server_up and serial not in first.devices

    await asyncio.to_thread(private_adb.connect, serial)
    got = await _until(it, lambda c: c.devices.get(serial) == "device")
    assert serial in got.added or serial in got.changed

    await asyncio.to_thread(private_adb.disconnect, serial)
    gone = await _until(it, lambda c: serial not in c.devices)
    assert serial in gone.removed

    # the adb server restarts: one "down" change, then a resync once it is back
    await asyncio.to_thread(private_adb.run, "kill-server")
    down = await _until(it, lambda c: not c.server_up)
    assert down.devices == {}
    await asyncio.to_thread(private_adb.start)
    back = await _until(it, lambda c: c.server_up)
    assert back.resync
    await asyncio.to_thread(private_adb.connect, serial)
    await _until(it, lambda c: c.devices.get(serial) == "device")
    await it.aclose()  # type: ignore[attr-defined]

"""farm.device.AdbDevice against sim phones through a real (private) adb server."""

from __future__ import annotations

import hashlib
import io
import os

import pytest
from PIL import Image

from distrl_sdk import AdbTimeout, Device, DeviceError, DeviceOffline
from farm.device import AdbDevice
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm


@pytest.mark.sim(count=2)
async def test_device_protocol_end_to_end(sim_background: BackgroundFarm,
                                          private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial, other = sim_background.farm.serials
    private_adb.connect(serial)
    private_adb.connect(other)
    dev = AdbDevice(serial, port=private_adb.port, timeout=10)
    assert isinstance(dev, Device)
    res = await dev.shell("echo out; echo err >&2; false")
    assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 1)
    assert await dev.screen_size() == (1080, 2400)
    blob = os.urandom(300_000)
    await dev.push(blob, "/sdcard/Download/x/blob.bin")
    back = await dev.pull("/sdcard/Download/x/blob.bin")
    assert hashlib.sha256(back).digest() == hashlib.sha256(blob).digest()
    png = await dev.screenshot_png()
    assert Image.open(io.BytesIO(png)).size == (1080, 2400)
    await dev.shell("am start -n com.android.settings/.Settings")
    labels = {e.text for e in await dev.ui_elements()}
    assert "Network & internet" in labels
    with pytest.raises(DeviceError, match=r"No such file|open failed"):
        await dev.pull("/sdcard/nope.bin")

    sim_background.fault(serial, "hang", seconds=10)
    with pytest.raises(AdbTimeout):
        await dev.shell("echo hi", timeout=1.0)
    assert (await AdbDevice(other, port=private_adb.port).shell("echo ok")).stdout == "ok\n"

    with pytest.raises(DeviceOffline):
        await AdbDevice("127.0.0.1:1", port=private_adb.port).shell("echo")

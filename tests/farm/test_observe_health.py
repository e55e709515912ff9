"""observe() and health() against sim phones through a private adb server."""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image

from distrl_sdk import AdbTimeout, DeviceError
from farm.device import AdbDevice
from farm.device.health import health, parse_battery, parse_power
from farm.device.observe import Observer, observe, parse_focus
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm


def _device(bg: BackgroundFarm, adb: PrivateAdbServer, i: int = 0) -> AdbDevice:
    assert bg.farm is not None
    serial = bg.farm.serials[i]
    adb.connect(serial)
    return AdbDevice(serial, port=adb.port, timeout=10)


def test_parse_focus_variants() -> None:
    assert parse_focus("  mCurrentFocus=Window{f3b9c5e u0 com.android.settings/"
                       "com.android.settings.Settings}\n") == (
        "com.android.settings", "com.android.settings.Settings",
        "com.android.settings/com.android.settings.Settings")
    assert parse_focus("  mCurrentFocus=null\n  mFocusedApp=ActivityRecord{def u0 "
                       "com.pkg/.Main t12}\n") == ("com.pkg", ".Main", None)
    assert parse_focus("  mCurrentFocus=Window{1 u0 StatusBar}\n") == (None, None, "StatusBar")
    assert parse_focus("") == (None, None, None)


def test_parsers() -> None:
    b = parse_battery("Current Battery Service state:\n  AC powered: false\n  level: 85\n"
                      "  temperature: 274\n  Capacity level: 3\n")
    assert (b["level"], b["temperature"], b["ac powered"]) == ("85", "274", "false")
    assert parse_power("  mWakefulness=Awake\n") is True
    assert parse_power("mHoldingDisplaySuspendBlocker=false") is False
    assert parse_power("") is None


@pytest.mark.sim(count=1)
async def test_observe_is_consistent(sim_background: BackgroundFarm,
                                     private_adb: PrivateAdbServer) -> None:
    dev = _device(sim_background, private_adb)
    await dev.shell("am start -n com.android.settings/.Settings")
    obs = await observe(dev)
    assert (obs.package, obs.stale) == ("com.android.settings", False)
    assert obs.activity and "Settings" in obs.activity
    assert (obs.frame.width, obs.frame.height) == (1080, 2400)
    assert len(obs.frame.rgba) == 1080 * 2400 * 4
    assert "Network & internet" in {e.text for e in obs.elements}
    assert {e.package for e in obs.elements if e.text == "Network & internet"} == {
        "com.android.settings"}
    assert obs.started_at <= obs.captured_at
    jpeg = Image.open(io.BytesIO(obs.frame.to_jpeg(max_side=600)))
    assert jpeg.format == "JPEG" and max(jpeg.size) == 600
    assert Image.open(io.BytesIO(obs.frame.to_png())).size == (1080, 2400)
    # the frame is the settings screen, not black
    assert bytes(obs.frame.rgba).count(0) < len(obs.frame.rgba)


class _FlakyDevice:
    """Delegates to a real device; its screenshot can be made to fail or go black."""

    def __init__(self, dev: AdbDevice) -> None:
        self.dev, self.mode = dev, "ok"

    @property
    def serial(self) -> str:
        return self.dev.serial

    async def screenshot_rgba(self) -> tuple[int, int, bytes]:
        if self.mode == "black":
            return 4, 4, bytes(64)
        if self.mode == "fail":
            raise DeviceError("screencap failed", serial=self.serial)
        return await self.dev.screenshot_rgba()

    async def ui_elements(self) -> list:  # type: ignore[type-arg]
        return await self.dev.ui_elements()

    async def shell(self, command: str, *, timeout: float = 30.0) -> object:
        return await self.dev.shell(command, timeout=timeout)


@pytest.mark.sim(count=1)
async def test_never_a_silent_black_frame(sim_background: BackgroundFarm,
                                          private_adb: PrivateAdbServer) -> None:
    flaky = _FlakyDevice(_device(sim_background, private_adb))
    flaky.mode = "black"
    with pytest.raises(DeviceError, match="all-zero"):
        await observe(flaky)
    obs_er = Observer(flaky, max_stale=1)
    flaky.mode = "ok"
    first = await obs_er.observe()
    flaky.mode = "fail"
    again = await obs_er.observe()
    assert again.stale and again.stale_reason and "screencap failed" in again.stale_reason
    assert again.frame is first.frame and not first.stale
    with pytest.raises(DeviceError, match="screencap failed"):  # max_stale reached
        await obs_er.observe()
    flaky.mode = "ok"
    assert not (await obs_er.observe()).stale


@pytest.mark.sim(count=1)
async def test_hung_observe_times_out(sim_background: BackgroundFarm,
                                      private_adb: PrivateAdbServer) -> None:
    dev = _device(sim_background, private_adb)
    sim_background.fault(dev.serial, "hang", seconds=3)
    t0 = asyncio.get_running_loop().time()
    with pytest.raises(AdbTimeout):
        await observe(dev, timeout=0.5)
    with pytest.raises(AdbTimeout):
        await health(dev, timeout=0.5)
    assert asyncio.get_running_loop().time() - t0 < 2.5


@pytest.mark.sim(count=1)
async def test_health_under_faults(sim_background: BackgroundFarm,
                                   private_adb: PrivateAdbServer) -> None:
    dev = _device(sim_background, private_adb)
    h = await health(dev)
    assert h.boot_completed and h.ok(), h.problems()
    assert (h.battery_level, h.temperature_c, h.screen_on, h.plugged) == (85, 27.4, True, True)
    sim_background.fault(dev.serial, "low-battery", value=4)
    sim_background.fault(dev.serial, "overheat", value=48)
    sim_background.fault(dev.serial, "boot-delay", seconds=30)
    h = await health(dev, timeout=2)
    assert (h.boot_completed, h.battery_level, h.temperature_c, h.plugged) == (
        False, 4, 48.0, False)
    assert h.battery_health == 3
    assert set(h.problems()) == {"booting", "battery low (4 %)", "overheating (48 °C)"}
    sim_background.fault(dev.serial, "clear")
    assert (await health(dev)).boot_completed

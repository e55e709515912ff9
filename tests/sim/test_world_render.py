"""Pixels and caching: frames are cached per version, version bumps only on visible change."""

from __future__ import annotations

import io
import random

import numpy as np
from PIL import Image

from farm.sim.faults import Faults
from farm.sim.spec import LogBuffer, PhoneSpec, ScreenSpec, WorldAPI
from farm.sim.vfs import VirtualFS
from farm.sim.world import World


class Clocks:
    def __init__(self) -> None:
        self.mono = 50.0
        self.wall = 1_700_000_000.0  # 22:13:20 UTC


def make(preset: str = "phone") -> tuple[World, Clocks, Faults]:
    c = Clocks()
    faults = Faults(clock=lambda: c.mono)
    w = World(PhoneSpec(screen=ScreenSpec.preset(preset)), VirtualFS(), faults,
              LogBuffer(clock=lambda: c.wall), random.Random(3), clock=lambda: c.mono)
    return w, c, faults


def test_cached_frames_are_the_same_object_until_a_change() -> None:
    w, _, _ = make()
    f1, x1, p1 = w.frame_rgba(), w.ui_xml(), w.frame_png()
    assert len(f1) == 1080 * 2400 * 4
    v = w.version
    assert w.frame_rgba() is f1 and w.ui_xml() is x1 and w.frame_png() is p1
    w.tap(5, 1500)  # empty wallpaper: nothing changes, nothing is redrawn
    assert w.version == v and w.frame_rgba() is f1
    w.launch_package("com.android.settings")
    assert w.version == v + 1
    f2 = w.frame_rgba()
    assert f2 is not f1 and f2 != f1 and w.ui_xml() != x1


def test_settings_that_do_not_show_do_not_bump() -> None:
    w, _, _ = make()
    v = w.version
    w.settings.put("global", "stay_on_while_plugged_in", "7")
    assert w.version == v
    w.settings.put("secure", "ui_night_mode", "2")
    assert w.version == v + 1


def test_status_bar_clock_ticks_once_a_minute_and_battery_drain_shows() -> None:
    w, c, faults = make()
    w.frame_rgba()
    v = w.version
    c.wall += 10  # 22:13:30: same minute
    assert w.version == v
    c.wall += 40  # 22:14:10
    assert w.version == v + 1
    faults.apply("low-battery", value=9)
    assert w.version == v + 2
    assert 'content-desc="Battery 9 percent."' in w.ui_xml()
    faults.apply("battery-drain", value=60)  # 1 % per second
    c.mono += 3
    assert 'content-desc="Battery 6 percent."' in w.ui_xml()


def test_png_matches_rgba_and_dark_home_is_dark() -> None:
    w, _, _ = make()
    img = Image.open(io.BytesIO(w.frame_png()))
    assert img.size == (1080, 2400) and img.mode == "RGBA"
    assert img.tobytes() == w.frame_rgba()
    w.launch_package("com.android.settings")
    light = np.frombuffer(w.frame_rgba(), np.uint8).reshape(2400, 1080, 4)
    w.settings.put("secure", "ui_night_mode", "2")
    dark = np.frombuffer(w.frame_rgba(), np.uint8).reshape(2400, 1080, 4)
    assert np.median(light[:, :, :3]) > 200 and np.median(dark[:, :, :3]) < 60
    assert (dark[:, :, 3] == 255).all()


def test_screen_off_is_black_and_ignores_taps() -> None:
    w, _, _ = make()
    w.key(26)
    assert not w.screen_on
    frame = np.frombuffer(w.frame_rgba(), np.uint8)
    assert frame.reshape(-1, 4)[:, :3].max() == 0
    w.tap(160, 400)
    w.key(224)
    assert w.current_focus() is not None
    assert w.current_focus()[0] == "com.google.android.apps.nexuslauncher"


def test_small_preset_renders() -> None:
    w, _, _ = make("small")
    assert len(w.frame_rgba()) == 360 * 800 * 4
    w.launch_package("com.android.settings")
    assert 'bounds="[0,0][360,800]"' in w.ui_xml()
    img = Image.open(io.BytesIO(w.frame_png()))
    assert img.size == (360, 800)


def test_world_is_a_world_api() -> None:
    w, _, _ = make()
    api: WorldAPI = w  # structural: mypy --strict checks this assignment
    assert api.settings.get("global", "wifi_on") == "1"
    assert api.settings.get("system", "screen_brightness") == "102"
    assert api.settings.get("secure", "ui_night_mode") == "1"
    assert api.battery is w.faults.battery

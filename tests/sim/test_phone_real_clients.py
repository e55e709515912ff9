"""Whole sim phones (world + shell + adbd) driven by the real clients.

Both Debian's adb (platform-tools 29) and the adb in adbutils' wheel (36) run
against them, each through a private adb server on a port of its own.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import adbutils
import numpy as np
import pytest
from PIL import Image

from distrl_sdk.uitree import UIElement, find_elements, parse_ui_dump
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.background import BackgroundFarm
from farm.sim.farm import SimFarm
from farm.sim.shell.apk import build_test_apk
from tests.sim.adb_helpers import adb_binary_params


@pytest.fixture(scope="module", params=adb_binary_params())
def rig(request: pytest.FixtureRequest) -> Iterator[tuple[SimFarm, PrivateAdbServer]]:
    adb_path = request.param
    if adb_path is None:
        pytest.fail("DISTRL_REQUIRE_SYSTEM_ADB=1 but Debian's adb is missing")
    with BackgroundFarm(2, seed=3) as farm, PrivateAdbServer(adb_path) as adb:
        for p in farm.phones:
            adb.connect(p.serial)
        yield farm, adb


def adb_shell(adb: PrivateAdbServer, serial: str, *args: str) -> str:
    proc = adb.run("-s", serial, "shell", *args)
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout)


def screen(adb: PrivateAdbServer, serial: str) -> list[UIElement]:
    return parse_ui_dump(adb_shell(adb, serial, "uiautomator", "dump", "/dev/tty"))


def png_pixels(adb: PrivateAdbServer, serial: str) -> np.ndarray:
    proc = adb.run("-s", serial, "exec-out", "screencap", "-p", text=False)
    assert proc.returncode == 0
    return np.asarray(Image.open(io.BytesIO(proc.stdout)).convert("RGB"))


def tap(adb: PrivateAdbServer, serial: str, el: UIElement) -> None:
    x, y = el.bounds.center
    adb_shell(adb, serial, "input", "tap", str(x), str(y))


def test_devices_l_shows_banner(rig: tuple[SimFarm, PrivateAdbServer]) -> None:
    farm, adb = rig
    out = adb.run("devices", "-l").stdout
    for p in farm.phones:
        line = next(ln for ln in out.splitlines() if ln.startswith(p.serial))
        assert " device " in line
        assert "product:distrl_sim" in line and "model:DistRL_Sim_Phone" in line
        assert "device:distrl_sim" in line


def test_shell_exit_codes_and_exec_out_png(rig: tuple[SimFarm, PrivateAdbServer]) -> None:
    farm, adb = rig
    serial = farm.phones[0].serial
    assert adb.run("-s", serial, "shell", "false").returncode == 1
    assert adb.run("-s", serial, "shell", "true").returncode == 0
    missing = adb.run("-s", serial, "shell", "frobnicate")
    assert missing.returncode == 127 and "frobnicate: not found" in missing.stderr
    # `adb shell a b` joins argv unescaped, so the phone's shell sees the operators
    assert adb_shell(adb, serial, "echo", "a", "&&", "echo", "b").split() == ["a", "b"]
    png = adb.run("-s", serial, "exec-out", "screencap", "-p", text=False).stdout
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1080, 2400)


def test_push_pull_multi_megabyte_identical(rig: tuple[SimFarm, PrivateAdbServer],
                                            tmp_path: Path) -> None:
    farm, adb = rig
    serial = farm.phones[0].serial
    src = tmp_path / "blob.bin"
    src.write_bytes(os.urandom(5 * 1024 * 1024 + 123))
    assert adb.run("-s", serial, "push", str(src), "/sdcard/Download/blob.bin").returncode == 0
    back = tmp_path / "back.bin"
    assert adb.run("-s", serial, "pull", "/sdcard/Download/blob.bin", str(back)).returncode == 0
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(src.read_bytes()).digest()
    assert "blob.bin" in adb.run("-s", serial, "ls", "/sdcard/Download").stdout


def test_install_a_file(rig: tuple[SimFarm, PrivateAdbServer], tmp_path: Path) -> None:
    farm, adb = rig
    serial = farm.phones[0].serial
    apk = tmp_path / "notes.apk"
    apk.write_bytes(build_test_apk("org.example.notes", "Notes"))
    proc = adb.run("-s", serial, "install", str(apk))
    assert proc.returncode == 0 and "Success" in proc.stdout, proc.stdout + proc.stderr
    assert "package:org.example.notes" in adb_shell(adb, serial, "pm", "list", "packages")
    bad = tmp_path / "broken.apk"
    bad.write_bytes(b"not a zip at all")
    proc = adb.run("-s", serial, "install", str(bad))
    assert proc.returncode != 0 or "Failure" in proc.stdout + proc.stderr


def test_walk_to_wifi_toggle_by_ui_bounds(rig: tuple[SimFarm, PrivateAdbServer]) -> None:
    farm, adb = rig
    serial = farm.phones[1].serial
    adb_shell(adb, serial, "input", "keyevent", "HOME")
    tap(adb, serial, find_elements(screen(adb, serial), text="Settings")[0])
    assert "com.android.settings" in adb_shell(adb, serial, "dumpsys", "window", "windows")
    tap(adb, serial, find_elements(screen(adb, serial), text="Network & internet")[0])
    tap(adb, serial, find_elements(screen(adb, serial), text="Internet")[0])  # Android 12+
    els = screen(adb, serial)
    switches = [e for e in els if e.class_name == "android.widget.Switch"]
    label = next(e for e in els if e.text == "Wi\u2011Fi")  # AOSP's non-breaking hyphen
    switch = min(switches, key=lambda s: abs(s.bounds.center[1] - label.bounds.center[1]))
    before_setting = adb_shell(adb, serial, "settings", "get", "global", "wifi_on").strip()
    b = switch.bounds
    before_px = png_pixels(adb, serial)[b.top:b.bottom, b.left:b.right].astype(int)
    tap(adb, serial, switch)
    after_setting = adb_shell(adb, serial, "settings", "get", "global", "wifi_on").strip()
    after_px = png_pixels(adb, serial)[b.top:b.bottom, b.left:b.right].astype(int)
    assert {before_setting, after_setting} == {"0", "1"}
    # the switch's pixels show the new state: a clearly visible change inside its bounds
    assert np.abs(before_px - after_px).mean() > 5
    flipped = next(e for e in screen(adb, serial) if e.bounds == b)
    assert flipped.checked == (after_setting == "1")


def test_adbutils_device_api(rig: tuple[SimFarm, PrivateAdbServer], tmp_path: Path) -> None:
    farm, adb = rig
    serial = farm.phones[0].serial
    d = adb.client().device(serial)
    assert d.shell("echo hello") == "hello"
    assert d.shell2("false").returncode == 1
    assert d.shell2("echo ok; false", v2=True).returncode == 1
    assert tuple(d.window_size()) == (1080, 2400)
    assert d.rotation() == 0
    img = d.screenshot()
    assert img.size == (1080, 2400) and img.getextrema() != ((0, 0), (0, 0), (0, 0))
    d.keyevent("HOME")
    d.shell("am start -n com.android.settings/.Settings")
    assert d.app_current().package == "com.android.settings"
    xml = d.dump_hierarchy()
    assert xml.startswith("<?xml") and "Network &amp; internet" in xml
    # type into the Settings search field
    search = next(e for e in parse_ui_dump(xml) if "search" in e.resource_id.lower()
                  or e.text.lower().startswith("search"))
    d.click(*search.bounds.center)
    d.send_keys("wifi")
    assert "wifi" in d.dump_hierarchy().lower()
    d.keyevent("BACK")
    d.swipe(540, 1800, 540, 600, 0.2)
    battery = d.battery()
    assert battery.level == 85 and battery.temperature is not None
    src = tmp_path / "f.txt"
    src.write_bytes(b"abc" * 5000)
    d.sync.push(str(src), "/sdcard/f.txt")
    assert d.sync.read_bytes("/sdcard/f.txt") == src.read_bytes()
    assert "f.txt" in [e.path for e in d.sync.list("/sdcard")]
    d.sync.pull("/sdcard/f.txt", str(tmp_path / "g.txt"))
    assert (tmp_path / "g.txt").read_bytes() == src.read_bytes()


def test_track_devices_sees_phone_appear_and_vanish() -> None:
    with PrivateAdbServer(bundled_adb()) as adb:
        events: list[tuple[str, str]] = []
        stop = threading.Event()

        def watch() -> None:
            try:
                for ev in adb.client().track_devices():
                    events.append((ev.serial, ev.status))
                    if stop.is_set():
                        return
            except Exception:  # the stream ends when the server is killed
                return

        threading.Thread(target=watch, daemon=True).start()
        bg = BackgroundFarm(1, seed=9)
        farm = bg.start()
        serial = farm.phones[0].serial
        adb.connect(serial)
        deadline = time.monotonic() + 10
        while (serial, "device") not in events and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (serial, "device") in events
        bg.stop()  # the phone goes away; the server sees the transport drop
        deadline = time.monotonic() + 15
        while not any(s == serial and st in ("offline", "absent") for s, st in events) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        assert any(s == serial and st in ("offline", "absent") for s, st in events), events


def test_faults_offline_and_hang_leave_other_phones_alone() -> None:
    bg = BackgroundFarm(3, seed=5)
    with bg as farm, PrivateAdbServer(bundled_adb()) as adb:
        for p in farm.phones:
            adb.connect(p.serial)
        a, b, c = (p.serial for p in farm.phones)
        bg.fault(a, "disconnect", seconds=30)
        deadline = time.monotonic() + 10
        state = ""
        while time.monotonic() < deadline:
            state = adb.run("-s", a, "get-state").stdout.strip()
            if state != "device":
                break
            time.sleep(0.1)
        assert state != "device"
        assert "offline" in adb.run("devices").stdout
        bg.fault(b, "hang", seconds=20)
        client = adb.client()
        # adbutils' shell() applies its timeout only once the stream is open; shell2 covers
        # the whole call, as a controller needs
        with pytest.raises(adbutils.AdbTimeout):
            client.device(b).shell2("echo hi", timeout=1.5, v2=True)
        assert client.device(c).shell("echo still-here", timeout=5) == "still-here"


"""DigiRL's Android environment against a sim phone.

DigiRL drives emulators it starts itself: it finds them in ``adb devices`` as
``emulator-NNNN``, records episodes with ``screenrecord``, stops them with
``adb emu kill``, and acts through an Appium UiAutomator2 session (whose server
Appium reaches through ``adb forward`` to port 6790 on the phone). The sim has no
on-device Appium server, so the case that matters there is that the refusal is
the one a phone without the server gives.
"""

from __future__ import annotations

import re
import socket
import time

from farm.sim.adbhost import free_port
from tests.compat.harness import Case, Rig


def emulator_serials(rig: Rig) -> None:
    out = str(rig.adb("devices").stdout)
    assert re.findall(r"emulator-\d+", out), out


def emu_kill(rig: Rig) -> None:
    proc = rig.adb("emu", "kill")
    assert proc.returncode == 0, proc.stderr
    deadline = time.monotonic() + 20
    while f"{rig.serial}\tdevice" in str(rig.adb_server.run("devices").stdout):
        assert time.monotonic() < deadline, "the killed emulator is still listed"
        time.sleep(0.1)  # polling adb's device list


def screenrecord(rig: Rig) -> None:
    proc = rig.adb_line("shell screenrecord --size 540x1140 --bit-rate 4M --time-limit=1 "
                        "/sdcard/video_1_1.mp4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    local = rig.tmp / "video_1_1.mp4"
    assert rig.adb("pull", "/sdcard/video_1_1.mp4", str(local)).returncode == 0
    assert local.read_bytes()[4:8] == b"ftyp"


def appium_bootstrap(rig: Rig) -> None:
    """What the UiAutomator2 driver asks over adb before it talks to its server."""
    sdk = rig.shell("getprop ro.build.version.sdk").strip()
    assert sdk.isdigit()
    assert "Physical size:" in rig.shell("wm size")
    assert rig.shell("pm list packages io.appium.uiautomator2.server").strip() == ""
    assert "mCurrentFocus=" in rig.shell("dumpsys window")


def appium_server_refused(rig: Rig) -> None:
    port = free_port()
    assert rig.adb("forward", f"tcp:{port}", "tcp:6790").returncode == 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /wd/hub/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert s.recv(100) == b""  # as on a phone without the server: closed, no reply
    finally:
        rig.adb("forward", "--remove", f"tcp:{port}")


def keycodes(rig: Rig) -> None:
    # driver.press_keycode(3) / (66) and driver.back() end as these key events
    for code in ("3", "66", "4"):
        assert rig.adb("shell", "input", "keyevent", code).returncode == 0


CASES: list[Case] = [
    Case("find emulators in adb devices (emulator-NNNN)", emulator_serials),
    Case("screenrecord --size --bit-rate --time-limit + pull mp4", screenrecord),
    Case("Appium UiAutomator2 bootstrap queries", appium_bootstrap),
    Case("Appium server port refused as on a phone without it", appium_server_refused),
    Case("press_keycode 3/66, back", keycodes),
    Case("adb emu kill (the phone is gone afterwards)", emu_kill),  # last: it ends the phone
]

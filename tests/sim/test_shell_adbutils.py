"""adbutils 2.12's own parsers run against the shell, over the fake and the real World.

``ShellExtension`` holds adbutils' device helpers (window_size, rotation,
app_current, dump_hierarchy, battery…); we give it a ``shell()`` that calls our
Shell directly, so these tests check output formats without the protocol layer.
"""

from __future__ import annotations

import asyncio
import re
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from adbutils._utils import list2cmdline
from adbutils.shell import ShellExtension

from farm.sim.faults import FaultKind
from farm.sim.shell import build_test_apk
from tests.sim.shell_fixtures import Rig, make_rig


class _Sync:
    def __init__(self, rig: Rig) -> None:
        self.rig = rig

    def iter_content(self, path: str) -> Iterator[bytes]:
        yield self.rig.vfs.read(path)


class SimShellDevice(ShellExtension):  # type: ignore[misc]
    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self._sync = _Sync(rig)

    @property
    def sync(self) -> Any:
        return self._sync

    def shell(self, cmd: str | list[str], **_: Any) -> str:
        line = list2cmdline(cmd) if isinstance(cmd, list | tuple) else cmd
        r = asyncio.run(self.rig.run(line))
        return (r.stdout_bytes + r.stderr_bytes).decode("utf-8").rstrip()


@pytest.fixture(params=["fake", "real"])
def rig(request: pytest.FixtureRequest) -> Rig:
    return make_rig(request.param)


@pytest.fixture
def dev(rig: Rig) -> SimShellDevice:
    return SimShellDevice(rig)


def test_window_size_and_rotation(dev: SimShellDevice) -> None:
    assert dev.rotation() == 0
    size = dev.window_size()
    assert (size.width, size.height) == (1080, 2400)
    dev.shell("wm size 720x1600")
    assert tuple(dev.window_size()) == (720, 1600)


def test_app_current_follows_am_start(dev: SimShellDevice, rig: Rig) -> None:
    before = dev.app_current()
    assert before.package
    assert "Starting: Intent { cmp=com.android.settings/.Settings }" in dev.shell(
        "am start -n com.android.settings/.Settings")
    cur = dev.app_current()
    assert cur.package == "com.android.settings"
    assert cur.activity.endswith("Settings")
    dev.app_stop("com.android.settings")
    assert dev.app_current().package != "com.android.settings"


def test_dump_hierarchy(dev: SimShellDevice) -> None:
    xml = dev.dump_hierarchy()
    assert xml.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy")


def test_screen_battery_packages(dev: SimShellDevice, rig: Rig) -> None:
    assert dev.is_screen_on() is True
    b = dev.battery()
    assert (b.level, b.temperature, b.status, b.usb_powered) == (85, 27.4, 2, True)
    rig.faults.apply(FaultKind.OVERHEAT, value=50)
    assert dev.battery().temperature == 50.0
    pkgs = dev.list_packages()
    assert "com.android.settings" in pkgs and pkgs == sorted(pkgs)
    info = dev.app_info("com.android.settings")
    assert info is not None and info.path.endswith(".apk")


def test_install_launch_and_info(dev: SimShellDevice, rig: Rig) -> None:
    rig.vfs.write("/data/local/tmp/com.example.todo.apk", build_test_apk("com.example.todo",
                                                                         "Todo"))
    out = dev.shell(["pm", "install", "-r", "-t", "/data/local/tmp/com.example.todo.apk"])
    assert out == "Success"
    assert "com.example.todo" in dev.list_packages(["-3"])
    out = dev.shell("monkey -p com.example.todo -c android.intent.category.LAUNCHER 1")
    assert "Events injected: 1" in out
    assert dev.app_current().package == "com.example.todo"
    info = dev.app_info("com.example.todo")
    assert info is not None and info.version_name == "1.0"


def test_input_changes_the_world(dev: SimShellDevice, rig: Rig) -> None:
    v0 = rig.world.version
    dev.click(540, 1200)
    dev.keyevent("HOME")
    dev.send_keys("hello world")
    assert rig.world.version >= v0


def test_shell2_magic_and_screencap(dev: SimShellDevice, rig: Rig) -> None:
    out = dev.shell("getprop sys.boot_completed; echo X4EXIT:$?")
    assert out.splitlines() == ["1", "X4EXIT:0"]
    rig.faults.apply(FaultKind.BOOT_DELAY, seconds=30)
    assert dev.shell("getprop sys.boot_completed") == "0"
    r = asyncio.run(rig.run("screencap"))
    w, h, fmt, cs = struct.unpack("<4I", bytes(r.stdout[0]))
    assert (w, h, fmt, cs) == (rig.world.width, rig.world.height, 1, 1)
    assert len(r.stdout_bytes) == 16 + w * h * 4
    png = asyncio.run(rig.run("screencap -p")).stdout_bytes
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_dumpsys_window_grep(dev: SimShellDevice) -> None:
    out = dev.shell("dumpsys window | grep mCurrentFocus")
    assert re.fullmatch(r"(\s*mCurrentFocus=Window\{[0-9a-f]+ u0 \S+/\S+\}\n?)+", out + "\n")

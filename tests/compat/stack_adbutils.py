"""adbutils' device API (which uiautomator2 and many scripts sit on) against a sim phone."""

from __future__ import annotations

import contextlib
import threading
import time

import adbutils

from farm.sim.shell.apk import build_test_apk
from tests.compat.harness import Case, Rig


def shell2_after_stderr(rig: Rig) -> None:
    d = rig.device()
    r = d.shell2("am start -n com.nope.app/.Missing")
    assert r.returncode == 1 and "does not exist" in r.output
    r = d.shell2("ls /nonexistent")
    assert r.returncode == 1 and r.output == "ls: /nonexistent: No such file or directory\n"


def window_rotation_screen(rig: Rig) -> None:
    d = rig.device()
    assert tuple(d.window_size()) == (1080, 2400)
    assert d.rotation() == 0
    assert d.is_screen_on()


def apps(rig: Rig) -> None:
    d = rig.device()
    d.app_start("com.android.settings", ".Settings")
    assert d.app_current().package == "com.android.settings"
    d.app_start("com.google.android.deskclock")  # no activity: monkey
    assert d.app_current().package == "com.google.android.deskclock"
    d.app_stop("com.google.android.deskclock")
    d.app_clear("com.android.chrome")
    assert "com.android.chrome" in d.list_packages()


def open_browser(rig: Rig) -> None:
    d = rig.device()
    d.open_browser("en.wikipedia.org/wiki/Eiffel_Tower")
    cur = d.app_current()
    assert (cur.package, cur.activity) == ("com.android.chrome",
                                           "com.google.android.apps.chrome.Main")
    assert "Eiffel Tower" in d.dump_hierarchy()


def screen_io(rig: Rig) -> None:
    d = rig.device()
    assert d.screenshot().size == (1080, 2400)
    assert d.framebuffer().size == (1080, 2400)
    assert d.dump_hierarchy().startswith("<?xml")


def input_api(rig: Rig) -> None:
    d = rig.device()
    d.keyevent("HOME")
    d.click(540, 1200)
    d.swipe(540, 1800, 540, 600, 0.2)
    d.send_keys("hello")
    d.volume_up()


def props_battery(rig: Rig) -> None:
    d = rig.device()
    assert d.getprop("ro.build.version.sdk").isdigit()
    assert d.prop.model
    assert 0 <= d.battery().level <= 100


def sync_api(rig: Rig) -> None:
    d = rig.device()
    d.sync.push(b"compat\n", "/sdcard/Download/c.txt")
    assert d.sync.read_text("/sdcard/Download/c.txt") == "compat\n"
    assert "c.txt" in [e.path for e in d.sync.list("/sdcard/Download")]


def install_uninstall(rig: Rig) -> None:
    d = rig.device()
    apk = rig.tmp / "au.apk"
    apk.write_bytes(build_test_apk("org.distrl.au", label="AU"))
    d.install(str(apk), silent=True)
    assert "org.distrl.au" in d.list_packages()
    d.uninstall("org.distrl.au")
    assert "org.distrl.au" not in d.list_packages()


def forwards(rig: Rig) -> None:
    d = rig.device()
    d.forward("tcp:18555", "tcp:9008")
    assert any(f.local == "tcp:18555" for f in d.forward_list())
    d.reverse("tcp:8091", "tcp:8091")
    assert [(r.remote, r.local) for r in d.reverse_list()] == [("tcp:8091", "tcp:8091")]


def uiautomator2_port_refused(rig: Rig) -> None:
    d = rig.device()
    try:
        d.create_connection(adbutils.Network.TCP, 9008)
    except adbutils.AdbError as e:
        assert "closed" in str(e)
    else:
        raise AssertionError("tcp:9008 accepted without a server")


def switches(rig: Rig) -> None:
    d = rig.device()
    d.switch_airplane(True)
    assert d.shell("settings get global airplane_mode_on") == "1"
    d.switch_airplane(False)
    d.switch_wifi(False)
    assert d.shell("settings get global wifi_on") == "0"
    d.switch_wifi(True)


def screenrecord(rig: Rig) -> None:
    d = rig.device()
    d.start_recording(str(rig.tmp / "r.mp4"))
    time.sleep(1.0)
    # on a phone the recording ends when stop_recording asks; one that records on to
    # its 180 s limit is a gap, so do not wait for it (the thread ends with the phone)
    def stop() -> None:
        with contextlib.suppress(adbutils.AdbError):  # the phone going away at teardown
            d.stop_recording()

    stopper = threading.Thread(target=stop, daemon=True)
    stopper.start()
    stopper.join(15)
    assert not stopper.is_alive(), "stop_recording did not end the recording"
    assert (rig.tmp / "r.mp4").read_bytes()[4:8] == b"ftyp"


CASES: list[Case] = [
    Case("shell2 exit code after stderr", shell2_after_stderr),
    Case("window_size / rotation / is_screen_on", window_rotation_screen),
    Case("app_start / app_current / app_stop / app_clear / list_packages", apps),
    Case("open_browser", open_browser),
    Case("screenshot / framebuffer / dump_hierarchy", screen_io),
    Case("keyevent / click / swipe / send_keys / volume_up", input_api),
    Case("getprop / prop.model / battery", props_battery),
    Case("sync push / read_text / list", sync_api),
    Case("install / uninstall", install_uninstall),
    Case("forward / forward_list / reverse / reverse_list", forwards),
    Case("create_connection tcp:9008 refused (uiautomator2 without its server)",
         uiautomator2_port_refused),
    Case("switch_airplane / switch_wifi", switches),
    Case("start_recording / stop_recording (screenrecord)", screenrecord),
]

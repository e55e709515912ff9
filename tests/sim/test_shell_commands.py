"""Android commands' exact output formats (goldens from research/device_farm.md §4)."""

from __future__ import annotations

import re
import struct

import pytest

from farm.sim.faults import FaultKind
from farm.sim.shell.commands.input import decode_text
from farm.sim.spec import PhoneSpec
from tests.sim.fake_world import FakeWorld
from tests.sim.shell_fixtures import Rig, make_rig


@pytest.fixture
def rig() -> Rig:
    return make_rig()


def fake(rig: Rig) -> FakeWorld:
    assert isinstance(rig.world, FakeWorld)
    return rig.world


# -- input ---------------------------------------------------------------------------
async def test_input_tap_swipe_text_keyevent(rig: Rig) -> None:
    w = fake(rig)
    for cmd in ("input tap 540 1200", "input swipe 100 200 300 400 250",
                "input swipe 10 10 10 10 1000", "input touchscreen tap 1.5 2",
                "input text 'hello%sworld'", "input text hi\\ there", "input keyevent KEYCODE_HOME",
                "input keyevent BACK", "input keyevent 66", "input keyevent --longpress POWER",
                "input keyevent 3 4", "input swipe 1 2 3 4"):
        r = await rig.run(cmd)
        assert (r.exit_code, r.stdout_bytes, r.stderr_bytes) == (0, b"", b""), cmd
    assert w.calls == [
        ("tap", 540.0, 1200.0), ("swipe", 100.0, 200.0, 300.0, 400.0, 250),
        ("swipe", 10.0, 10.0, 10.0, 10.0, 1000), ("tap", 1.5, 2.0),
        ("text", "hello world"), ("text", "hi there"), ("key", 3), ("key", 4), ("key", 66),
        ("key", 26), ("key", 3), ("key", 4), ("swipe", 1.0, 2.0, 3.0, 4.0, 300),
    ]


def test_input_text_percent_s_decoding() -> None:
    assert decode_text("a%sb%sc") == "a b c"
    assert decode_text("100%") == "100%"
    assert decode_text("%%s") == "% "
    assert decode_text("%d") == "%d"


async def test_input_bad_usage(rig: Rig) -> None:
    for cmd in ("input", "input tap 1", "input tap a b", "input swipe 1 2 3", "input bogus 1",
                "input keyevent"):
        r = await rig.run(cmd)
        assert r.exit_code == 1, cmd
        assert b"Usage: input [<source>]" in r.stderr_bytes
    r = await rig.run("input tap 1")
    assert r.stderr_bytes.startswith(b"Error: Invalid arguments for command: tap\n")
    assert fake(rig).calls == []


# -- screen --------------------------------------------------------------------------
async def test_screencap_raw_header_and_chunks(rig: Rig) -> None:
    r = await rig.run("screencap")
    assert len(r.stdout) == 2  # header and pixels are separate chunks: no 10 MB copy
    header, pixels = r.stdout
    assert struct.unpack("<4I", header) == (1080, 2400, 1, 1)
    assert pixels is fake(rig).frame_rgba()
    assert len(r.stdout_bytes) == 16 + 1080 * 2400 * 4


async def test_screencap_png_and_files(rig: Rig) -> None:
    assert (await rig.run("screencap -p")).stdout_bytes == fake(rig).frame_png()
    r = await rig.run("screencap -p /sdcard/s.png")
    assert (r.stdout_bytes, r.exit_code) == (b"", 0)
    assert rig.vfs.read("/sdcard/s.png").startswith(b"\x89PNG")
    await rig.run("screencap /sdcard/auto.png")  # .png implies -p
    assert rig.vfs.read("/sdcard/auto.png").startswith(b"\x89PNG")
    await rig.run("screencap /data/local/tmp/raw.bin")
    raw = rig.vfs.read("/data/local/tmp/raw.bin")
    assert struct.unpack("<4I", raw[:16]) == (1080, 2400, 1, 1) and len(raw) == 16 + 10368000
    r = await rig.run("screencap -p /no/dir/x.png")
    assert r.exit_code == 1 and b"Error opening file" in r.stderr_bytes
    r = await rig.run("screencap -x")
    assert r.exit_code == 1 and r.stderr_bytes.startswith(b"usage: screencap [-hp]")


async def test_uiautomator_dump(rig: Rig) -> None:
    r = await rig.run("uiautomator dump")
    assert r.stdout_bytes == b"UI hierchary dumped to: /sdcard/window_dump.xml\n"
    assert rig.vfs.read("/sdcard/window_dump.xml").startswith(b"<?xml version='1.0'")
    r = await rig.run("rm -f /data/local/tmp/uidump.xml; "
                      "uiautomator dump /data/local/tmp/uidump.xml && echo success")
    assert r.stdout_bytes == b"UI hierchary dumped to: /data/local/tmp/uidump.xml\nsuccess\n"
    r = await rig.run("uiautomator dump --compressed /dev/tty")
    xml = fake(rig).ui_xml().encode()
    assert r.stdout_bytes == xml + b"UI hierchary dumped to: /dev/tty\n"
    r = await rig.run("uiautomator dump /no/dir/x.xml")
    assert r.exit_code == 1 and b"ENOENT" in r.stderr_bytes


# -- wm / getprop --------------------------------------------------------------------
async def test_wm_size_density_and_override(rig: Rig) -> None:
    assert await rig.out("wm size") == "Physical size: 1080x2400\n"
    assert await rig.out("wm density") == "Physical density: 420\n"
    assert await rig.out("wm size 720x1600; wm size") == (
        "Physical size: 1080x2400\nOverride size: 720x1600\n")
    assert await rig.out("wm size reset; wm size") == "Physical size: 1080x2400\n"
    assert await rig.out("wm density 320; wm density") == (
        "Physical density: 420\nOverride density: 320\n")
    r = await rig.run("wm size banana")
    assert r.exit_code != 0 and b"bad size" in r.stderr_bytes


async def test_getprop() -> None:
    rig = make_rig(spec=PhoneSpec(model="Pixel 6", sdk=33, release="13", serialno="ABC123"))
    assert await rig.out("getprop ro.product.model") == "Pixel 6\n"
    assert await rig.out("getprop ro.build.version.sdk") == "33\n"
    assert await rig.out("getprop ro.build.version.release") == "13\n"
    assert await rig.out("getprop ro.serialno") == "ABC123\n"
    assert await rig.out("getprop ro.adb.secure") == "0\n"
    assert await rig.out("getprop no.such.prop") == "\n"
    assert await rig.out("getprop no.such.prop fallback") == "fallback\n"
    fp = (await rig.out("getprop ro.build.fingerprint")).strip()
    assert re.fullmatch(r"DistRL/distrl_sim/distrl_sim:13/[A-Z0-9.]+/\d+:user/release-keys", fp)
    everything = await rig.out("getprop")
    lines = everything.splitlines()
    keys = [ln[1:ln.index("]")] for ln in lines]
    assert keys == sorted(keys)
    assert "[ro.product.model]: [Pixel 6]" in lines
    assert all(re.fullmatch(r"\[[^\]]+\]: \[.*\]", ln) for ln in lines)


async def test_setprop(rig: Rig) -> None:
    assert (await rig.run("setprop debug.sim.x 42")).exit_code == 0
    assert await rig.out("getprop debug.sim.x") == "42\n"
    r = await rig.run("setprop ro.product.model Other")
    assert r.exit_code == 1
    assert r.stderr_bytes == (b"Failed to set property 'ro.product.model' to 'Other'.\n"
                              b"See dmesg for error reason.\n")


async def test_boot_completed_under_boot_delay(rig: Rig) -> None:
    assert await rig.out("getprop sys.boot_completed") == "1\n"
    rig.faults.apply(FaultKind.BOOT_DELAY, seconds=20)
    assert await rig.out("getprop sys.boot_completed") == "0\n"
    assert await rig.out("getprop init.svc.bootanim") == "running\n"
    rig.clock.now += 21
    assert await rig.out("getprop sys.boot_completed") == "1\n"


# -- dumpsys -------------------------------------------------------------------------
BATTERY_GOLDEN = """Current Battery Service state:
  AC powered: false
  USB powered: true
  Wireless powered: false
  Dock powered: false
  Max charging current: 500000
  Max charging voltage: 5000000
  Charge counter: 3269950
  status: 2
  health: 2
  present: true
  level: 85
  scale: 100
  voltage: 4350
  temperature: 274
  technology: Li-ion
  Charging state: 1
  Charging policy: 1
"""


async def test_dumpsys_battery_golden(rig: Rig) -> None:
    assert await rig.out("dumpsys battery") == BATTERY_GOLDEN


async def test_dumpsys_battery_under_faults(rig: Rig) -> None:
    rig.faults.apply(FaultKind.OVERHEAT, value=48)
    out = await rig.out("dumpsys battery")
    assert "  temperature: 480\n" in out and "  health: 3\n" in out
    rig.faults.apply(FaultKind.LOW_BATTERY, value=4)
    out = await rig.out("dumpsys battery")
    assert "  level: 4\n" in out and "  status: 3\n" in out and "  USB powered: false\n" in out
    rig.faults.clear()
    rig.faults.battery.level = 85  # clear() keeps the level a low-battery fault left
    rig.faults.apply(FaultKind.BATTERY_DRAIN, value=6)
    rig.clock.now += 60
    assert "  level: 79\n" in await rig.out("dumpsys battery")
    await rig.run("dumpsys battery set level 50")
    out = await rig.out("dumpsys battery")
    assert "(UPDATES STOPPED -- use 'reset' to restart)" in out and "  level: 50\n" in out
    await rig.run("dumpsys battery reset")
    assert "UPDATES STOPPED" not in await rig.out("dumpsys battery")


async def test_dumpsys_window_focus(rig: Rig) -> None:
    for cmd in ("dumpsys window", "dumpsys window windows", "dumpsys window displays"):
        out = await rig.out(cmd)
        m = re.search(r"mCurrentFocus=Window{.*\s+(?P<package>[^\s]+)/(?P<activity>[^\s]+)\}",
                      out)  # adbutils app_current()
        assert m, cmd
        assert (m["package"], m["activity"]) == ("com.android.launcher3",
                                                 "com.android.launcher3.Launcher")
        assert re.search(r"^  mFocusedApp=ActivityRecord\{[0-9a-f]+ u0 com\.android\.launcher3/"
                         r"\.Launcher t1\}$", out, re.M), cmd
    assert "mCurrentRotation=ROTATION_0" in await rig.out("dumpsys window | grep mCurrentRotation")


async def test_dumpsys_activity(rig: Rig) -> None:
    await rig.run("am start -n com.android.settings/.Settings")
    out = await rig.out("dumpsys activity activities")
    m = re.search(r"mResumedActivity: ActivityRecord\{.*?\s+(?P<package>[^\s]+)/"
                  r"(?P<activity>[^\s]+)\s.*?\}", out)
    assert m and (m["package"], m["activity"]) == ("com.android.settings", ".Settings")
    assert re.search(r"^  ResumedActivity: ActivityRecord\{[0-9a-f]+ u0 com.android.settings/"
                     r"\.Settings t\d+\}$", out, re.M)
    assert "* Hist  #0: ActivityRecord{" in out
    top = await rig.out("dumpsys activity top")
    m2 = re.search(r"ACTIVITY (?P<package>[^\s]+)/(?P<activity>[^/\s]+) \w+ pid=(?P<pid>\d+)",
                   top)
    assert m2 and (m2["package"], m2["activity"]) == ("com.android.settings", ".Settings")


async def test_dumpsys_display_viewport_first(rig: Rig) -> None:
    out = await rig.out("dumpsys display")
    first = next(ln for ln in out.splitlines() if re.search(r"orientation=\d+", ln))
    assert "DisplayViewport{" in first
    m = re.match(r".*DisplayViewport{.*?valid=true, .*?orientation=(?P<o>\d+), "
                 r".*?deviceWidth=(?P<w>\d+), deviceHeight=(?P<h>\d+).*", first)
    assert m and (m["o"], m["w"], m["h"]) == ("0", "1080", "2400")
    fake(rig).rotation = 1
    out = await rig.out("dumpsys display")
    assert "orientation=1, logicalFrame=Rect(0, 0 - 2400, 1080)" in out
    assert "deviceWidth=2400, deviceHeight=1080" in out


async def test_dumpsys_power_and_input(rig: Rig) -> None:
    out = await rig.out("dumpsys power")
    assert "  mWakefulness=Awake\n" in out and "mHoldingDisplaySuspendBlocker=true" in out
    fake(rig).screen_on = False
    out = await rig.out("dumpsys power")
    assert "  mWakefulness=Asleep\n" in out and "mHoldingDisplaySuspendBlocker=false" in out
    out = await rig.out("dumpsys input | grep -E 'physicalFrame|logicalFrame|SurfaceOrientation'")
    assert re.search(r"logicalFrame=\[0, 0, 1080, 2400\]", out)
    assert re.search(r"physicalFrame=\[0, 0, 1080, 2400\]", out)
    assert "SurfaceOrientation: 0" in out
    r = await rig.run("dumpsys nosuchservice")
    assert r.stderr_bytes == b"Can't find service: nosuchservice\n"


async def test_dumpsys_package_for_adbutils_app_info(rig: Rig) -> None:
    out = await rig.out("dumpsys package com.android.settings")
    assert re.search(r"versionName=\S+", out) and re.search(r"versionCode=\d+", out)
    assert re.search(r"firstInstallTime=[-\d]+\s+[:\d]+", out)
    assert re.search(r"pkgFlags=\[\s*(.*)\s*\]", out)


# -- am / monkey ---------------------------------------------------------------------
async def test_am_start(rig: Rig) -> None:
    r = await rig.run("am start -n com.android.settings/.Settings")
    assert r.stdout_bytes == b"Starting: Intent { cmp=com.android.settings/.Settings }\n"
    assert r.exit_code == 0
    r = await rig.run("am start -W -n com.android.settings/com.android.settings.Settings")
    assert r.stdout_bytes.startswith(
        b"Starting: Intent { cmp=com.android.settings/.Settings }\n"
        b"Warning: Activity not started, its current task has been brought to the front\n")
    await rig.run("am force-stop com.android.settings")
    out = await rig.out("am start -W -n com.android.settings/.Settings")
    assert re.fullmatch(
        r"Starting: Intent \{ cmp=com.android.settings/.Settings \}\nStatus: ok\n"
        r"LaunchState: COLD\nActivity: com.android.settings/.Settings\nTotalTime: \d+\n"
        r"WaitTime: \d+\nComplete\n", out)
    r = await rig.run("am start -a android.intent.action.MAIN -n com.x/.Main")
    assert r.stdout_bytes == (b"Starting: Intent { act=android.intent.action.MAIN "
                              b"cmp=com.x/.Main }\n")
    assert r.stderr_bytes == (b"Error type 3\n"
                              b"Error: Activity class {com.x/com.x.Main} does not exist.\n")


async def test_am_force_stop(rig: Rig) -> None:
    await rig.run("am start -n com.android.settings/.Settings")
    r = await rig.run("am force-stop com.android.settings")
    assert (r.exit_code, r.stdout_bytes) == (0, b"")
    assert ("force_stop", "com.android.settings") in fake(rig).calls


async def test_monkey(rig: Rig) -> None:
    r = await rig.run("monkey -p com.android.settings -c android.intent.category.LAUNCHER 1")
    assert r.exit_code == 0
    assert b"Events injected: 1\n" in r.stdout_bytes
    assert r.stdout_bytes.startswith(b"  bash arg: -p\n")
    assert fake(rig).current_focus() == ("com.android.settings", "com.android.settings.Settings")
    r = await rig.run("monkey -p com.nope 1")
    assert r.exit_code != 0
    assert r.stderr_bytes.endswith(b"** No activities found to run, monkey aborted.\n")


# -- pm / cmd package ----------------------------------------------------------------
async def test_pm_list_path_clear(rig: Rig) -> None:
    assert await rig.out("pm list packages") == (
        "package:com.android.launcher3\npackage:com.android.phone\npackage:com.android.settings\n")
    assert await rig.out("pm list packages -3") == ""
    assert await rig.out("pm list packages -s sett") == "package:com.android.settings\n"
    assert await rig.out("cmd package list packages settings") == "package:com.android.settings\n"
    assert await rig.out("pm path com.android.settings") == (
        "package:/system/priv-app/Settings/Settings.apk\n")
    r = await rig.run("pm path com.nope")
    assert (r.exit_code, r.stdout_bytes) == (1, b"")
    assert await rig.out("pm clear com.android.settings") == "Success\n"
    assert await rig.out("pm clear com.nope") == "Failed\n"
    # printResolveInfo prints ComponentName.flattenToShortString()
    assert await rig.out("pm resolve-activity --brief com.android.settings | tail -n 1") == (
        "com.android.settings/.Settings\n")


# -- settings / svc ------------------------------------------------------------------
async def test_settings(rig: Rig) -> None:
    assert await rig.out("settings get global wifi_on") == "1\n"
    assert await rig.out("settings get system nope") == "null\n"
    assert await rig.out("settings put secure my_key 'a b'; settings get secure my_key") == "a b\n"
    assert await rig.out("settings delete secure my_key") == "Deleted 1 rows\n"
    assert await rig.out("settings get secure my_key") == "null\n"
    assert "screen_brightness=102\n" in await rig.out("settings list system")
    assert await rig.out("settings --user 0 get GLOBAL wifi_on") == "1\n"
    r = await rig.run("settings get bogus x")
    assert r.exit_code != 0 and r.stderr_bytes == b"Invalid namespace 'bogus'\n"
    assert await rig.out("svc wifi disable; settings get global wifi_on") == "0\n"
    assert await rig.out("svc wifi enable; settings get global wifi_on") == "1\n"
    assert (await rig.run("svc data disable")).exit_code == 0
    assert (await rig.run("cmd statusbar expand-notifications")).exit_code == 0


# -- files / misc --------------------------------------------------------------------
async def test_fs_commands(rig: Rig) -> None:
    out = await rig.out("mkdir -p /sdcard/a/b && echo -n hi > /sdcard/a/b/f; cat /sdcard/a/b/f")
    assert out == "hi"
    assert await rig.out("ls /sdcard/a") == "b\n"
    out = await rig.out("ls -l /sdcard/a/b")
    assert re.fullmatch(r"total 1\n-rw-r--r-- 1 shell shell +2 \d{4}-\d\d-\d\d \d\d:\d\d f\n", out)
    assert "." in (await rig.out("ls -a /sdcard/a")).split()
    r = await rig.run("rm /sdcard/a")
    assert r.exit_code == 1 and r.stderr_bytes == b"rm: /sdcard/a: Is a directory\n"
    assert (await rig.run("rm -r /sdcard/a")).exit_code == 0
    assert not rig.vfs.exists("/sdcard/a")
    r = await rig.run("ls /nope")
    assert r.exit_code == 1 and r.stderr_bytes == b"ls: /nope: No such file or directory\n"
    r = await rig.run("mkdir /sdcard")
    assert r.stderr_bytes == b"mkdir: '/sdcard': File exists\n"
    assert (await rig.run("rm -f /nope")).exit_code == 0


async def test_misc_commands(rig: Rig) -> None:
    assert await rig.out("whoami") == "shell\n"
    assert (await rig.out("id")).startswith("uid=2000(shell) gid=2000(shell)")
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}\n", await rig.out("date"))
    assert re.fullmatch(r"\d+\n", await rig.out("date +%s"))
    assert await rig.out("echo -n a; echo b") == "ab\n"
    assert await rig.out("true; echo $?; false; echo $?") == "0\n1\n"
    assert await rig.out("printf '%s-%d\\n' a 5") == "a-5\n"


async def test_logcat(rig: Rig) -> None:
    rig.logcat.log("I", "ActivityManager", "hello", pid=123, tid=456)
    rig.logcat.log("D", "Reward", "reward: 0.5", pid=5583, tid=5658)
    out = await rig.out("logcat -d")
    assert out == ("--------- beginning of main\n"
                   "11-14 22:13:20.250   123   456 I ActivityManager: hello\n"
                   "11-14 22:13:20.250  5583  5658 D Reward  : reward: 0.5\n")
    out = await rig.out("logcat -d -v epoch Reward:V *:S")
    assert out.splitlines()[1] == "         1700000000.250  5583  5658 D Reward  : reward: 0.5"
    assert await rig.out("logcat -d -v brief -s ActivityManager") == (
        "--------- beginning of main\nI/ActivityManager(  123): hello\n")
    assert await rig.out("logcat -d *:W") == ""
    await rig.run("logcat -b all -c")
    assert await rig.out("logcat -d") == ""

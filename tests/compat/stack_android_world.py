"""android_world (and the android_env controller under it) against a sim phone.

android_env runs every request as ``adb -P PORT -s SERIAL …`` through subprocess and
treats a non-zero exit as an error; android_world's ``adb_utils`` builds its commands
on top of that and parses the output with regular expressions. The sequences and
parsers below follow their public code (``adb_call_parser.py``, ``adb_utils.py``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from farm.sim.shell.apk import build_test_apk
from tests.compat.harness import Case, Rig

SETTINGS = "com.android.settings/.Settings"
SETTINGS_FULL = "com.android.settings/com.android.settings.Settings"
LAUNCHER = "com.google.android.apps.nexuslauncher"


def _ok(rig: Rig, *args: str) -> str:
    """android_env's _execute_command: stdout, or the request failed."""
    proc = rig.adb(*args)
    assert proc.returncode == 0, (args, proc.returncode, proc.stderr)
    return str(proc.stdout)


def _current_activity(rig: Rig) -> str:
    # adb_call_parser._get_current_activity: the visible task's {component}
    out = _ok(rig, "shell", "am", "stack", "list", "|", "grep", "-E", "visible=true")
    m = re.compile(r".*\{(.*)\}").search(out)
    assert m is not None, out
    return m.group(1)


def start_activity(rig: Rig) -> None:
    # '' is the unset force-stop flag; -W waits for the launch
    out = _ok(rig, "shell", "am", "start", "", "-W", "-n", SETTINGS)
    assert not re.match(r".*Error.*", str(out.encode())), out
    assert _current_activity(rig) == SETTINGS_FULL


def force_stop(rig: Rig) -> None:
    _ok(rig, "shell", "am", "start", "-n", SETTINGS)
    _ok(rig, "shell", "am", "force-stop", "com.android.settings")
    assert _current_activity(rig).startswith(LAUNCHER + "/")


def press_buttons(rig: Rig) -> None:
    _ok(rig, "shell", "am", "start", "-n", SETTINGS)
    _ok(rig, "shell", "input", "keyevent", "KEYCODE_ENTER")
    _ok(rig, "shell", "input", "keyevent", "KEYCODE_BACK")
    _ok(rig, "shell", "input", "keyevent", "KEYCODE_HOME")
    assert _current_activity(rig).startswith(LAUNCHER + "/")


def tap_and_long_press(rig: Rig) -> None:
    _ok(rig, "shell", "input", "tap", "540", "1200")
    _ok(rig, "shell", "input", "swipe", "540", "1200", "540", "1200", "1000")
    # generate_swipe_command leaves the duration empty when it is not given
    _ok(rig, "shell", "input", "swipe", "540", "1800", "540", "600", "")


def input_text(rig: Rig) -> None:
    # type_text: word by word, spaces as %s, shell metacharacters backslash-escaped
    for word in ("hello", "%s", "it\\'s", "%s", "a\\&b"):
        _ok(rig, "shell", "input", "text", word)


def orientation_from_dumpsys_input(rig: Rig) -> None:
    out = _ok(rig, "shell", "dumpsys", "input")
    found = None
    skip = False
    for line in out.split("\n"):
        width = re.match(r"\s+PhysicalWidth:\s+(-?\d+)px", line)
        if width:
            skip = int(width.group(1)) < 0
        m = re.match(r"\s+(SurfaceOrientation|InputDeviceOrientation):\s+(\d)", line)
        if m and not skip:
            found = int(m.group(2))
            break
    assert found == 0, out[:400]


def orientation_from_dumpsys_window(rig: Rig) -> None:
    out = _ok(rig, "shell", "dumpsys window | grep mCurrentRotation")
    assert [int(m) // 90 for m in re.findall(r"mCurrentRotation=ROTATION_(\d+)", out)][:1] == [0]


def change_orientation(rig: Rig) -> None:
    _ok(rig, "shell", "settings", "put", "system", "accelerometer_rotation", "0")
    _ok(rig, "shell", "settings", "put", "system", "user_rotation", "1")
    try:
        out = _ok(rig, "shell", "dumpsys window | grep mCurrentRotation")
        assert re.findall(r"mCurrentRotation=ROTATION_(\d+)", out)[:1] == ["90"], out
        dump = _ok(rig, "shell", "uiautomator dump /sdcard/rot.xml >/dev/null && "
                                 "cat /sdcard/rot.xml")
        assert '<hierarchy rotation="1">' in dump and "[0,0][2400,1080]" in dump, dump[:300]
    finally:
        _ok(rig, "shell", "settings", "put", "system", "user_rotation", "0")


def screen_sizes(rig: Rig) -> None:
    out = _ok(rig, "shell", "wm size")
    m = re.search(r"Physical size: (\d+)x(\d+)", out)
    assert m is not None and (int(m.group(1)), int(m.group(2))) == (1080, 2400)
    out = _ok(rig, "shell", "dumpsys input | grep logicalFrame")
    frames = [m for m in re.findall(r"logicalFrame=\[0, 0, (\d+), (\d+)\]", out)
              if m != ("0", "0")]
    assert frames[0] == ("1080", "2400"), out
    out = _ok(rig, "shell", "dumpsys input | grep physicalFrame")
    assert re.findall(r"physicalFrame=\[(\d+), (\d+), (\d+), (\d+)\]", out)[0] == (
        "0", "0", "1080", "2400")


def api_level(rig: Rig) -> None:
    assert int(_ok(rig, "shell", "getprop ro.build.version.sdk")) >= 29


def settings_get_put_list(rig: Rig) -> None:
    _ok(rig, "shell", "settings", "put", "system", "screen_brightness", "255")
    assert _ok(rig, "shell", "settings", "get", "system", "screen_brightness").strip() == "255"
    _ok(rig, "shell", "settings", "put", "system", "screen_brightness", "1")
    listed = dict(line.split("=", 1) for line in _ok(
        rig, "shell", "settings", "list", "global").splitlines() if "=" in line)
    for key in ("airplane_mode_on", "wifi_on", "bluetooth_on", "heads_up_notifications_enabled",
                "stay_on_while_plugged_in", "auto_time"):
        assert key in listed, key
    _ok(rig, "shell", "settings", "delete", "system", "distrl_compat_key")


def airplane_mode(rig: Rig) -> None:
    _ok(rig, "shell", "settings", "put", "global", "airplane_mode_on", "1")
    out = _ok(rig, "shell", "settings", "get", "global", "airplane_mode_on")
    assert out.strip("\n") == "1"
    _ok(rig, "shell", "settings", "put", "global", "airplane_mode_on", "0")


def toggle_svc(rig: Rig) -> None:
    _ok(rig, "shell", "svc", "wifi", "disable")
    assert _ok(rig, "shell", "settings", "get", "global", "wifi_on").strip() == "0"
    _ok(rig, "shell", "svc", "wifi", "enable")
    _ok(rig, "shell", "svc", "bluetooth", "enable")


def default_app_and_headsup(rig: Rig) -> None:
    _ok(rig, "shell", "settings", "put", "secure", "sms_default_application",
        "com.simplemobiletools.smsmessenger")
    assert _ok(rig, "shell", "settings", "get", "secure", "sms_default_application").strip() == (
        "com.simplemobiletools.smsmessenger")
    _ok(rig, "shell", "settings", "put", "global", "heads_up_notifications_enabled", "0")
    assert _ok(rig, "shell", "settings", "get", "global",
               "heads_up_notifications_enabled").strip() == "0"


def package_manager(rig: Rig) -> None:
    out = _ok(rig, "shell", "pm", "list", "packages")
    items = [x[len("package:"):] for x in out.split() if x.startswith("package:")]
    assert {"com.android.chrome", "com.android.settings", "com.google.android.contacts"} <= set(
        items)
    assert "Success" in _ok(rig, "shell", "pm", "clear", "com.android.chrome")
    _ok(rig, "shell", "pm", "grant", "com.google.android.contacts",
        "android.permission.READ_CONTACTS")
    # delete_contacts clears the contacts provider
    assert "Success" in _ok(rig, "shell", "pm", "clear", "com.android.providers.contacts")


def install_and_uninstall(rig: Rig) -> None:
    apk = rig.tmp / "compat.apk"
    apk.write_bytes(build_test_apk("org.distrl.compat", label="Compat"))
    out = _ok(rig, "install", "-r", "-t", "-g", str(apk))
    assert "Success" in out, out
    assert "package:org.distrl.compat" in _ok(rig, "shell", "pm", "list", "packages").split()
    assert "Success" in _ok(rig, "uninstall", "org.distrl.compat")


def push_and_pull(rig: Rig) -> None:
    src = rig.tmp / "push.bin"
    src.write_bytes(bytes(range(256)) * 64)
    _ok(rig, "push", str(src), "/sdcard/Download/push.bin")
    dst = rig.tmp / "pull.bin"
    _ok(rig, "pull", "/sdcard/Download/push.bin", str(dst))
    assert dst.read_bytes() == src.read_bytes()


def ui_dump(rig: Rig) -> None:
    _ok(rig, "shell", "uiautomator", "dump", "/sdcard/window_dump.xml")
    local = rig.tmp / "window_dump.xml"
    _ok(rig, "pull", "/sdcard/window_dump.xml", str(local))
    root = ET.parse(local).getroot()
    assert root.tag == "hierarchy"
    assert any(n.get("clickable") == "true" for n in root.iter("node"))


def open_default_apps(rig: Rig) -> None:
    # _launch_default_app: VIEW on each default URI
    for uri, package in (("http://", "com.android.chrome"),
                         ("content://contacts/people/", "com.google.android.contacts")):
        out = _ok(rig, "shell", "am", "start", "-a", "android.intent.action.VIEW", "-d", uri)
        assert "Error" not in out, out
        assert _current_activity(rig).split("/")[0] == package


def launch_by_package(rig: Rig) -> None:
    out = _ok(rig, "shell", "monkey", "-p", "com.google.android.deskclock", "1")
    assert "Events injected: 1" in out, out
    assert _current_activity(rig).startswith("com.google.android.deskclock/")


def close_recents(rig: Rig) -> None:
    # close_recents: every "id=N" in the recents dump is handed to `am stack remove`;
    # on a phone that also catches uids, so each remove must simply not fail
    _ok(rig, "shell", "am", "start", "-n", SETTINGS)
    _ok(rig, "shell", "am", "start", "-n", "com.android.chrome/com.google.android.apps.chrome.Main")
    out = _ok(rig, "shell", "dumpsys", "activity", "recents")
    ids = re.findall(r"id=(\d+)", out)
    assert ids, out
    for task_id in ids:
        _ok(rig, "shell", "am", "stack", "remove", task_id)
    # the tasks themselves, by the id `Task{… #N` shows, are removable the same way
    for task_id in re.findall(r"Recent #\d+: Task\{\w+ #(\d+)", out):
        _ok(rig, "shell", "am", "stack", "remove", task_id)
    assert "Recent #" not in _ok(rig, "shell", "dumpsys", "activity", "recents")
    assert _current_activity(rig).startswith(LAUNCHER + "/")


def screen_pinning(rig: Rig) -> None:
    _ok(rig, "shell", "am", "start", "-n", SETTINGS)
    stack = _ok(rig, "shell", "am", "stack", "list")
    regex = re.compile(r"^\ *taskId=(?P<id>[0-9]*): (?P<base_activity>[^\s]*) .*visible=true"
                       r".*topActivity=ComponentInfo{(?P<top_activity>[^\s]*)}$")
    ids = [m.group("id") for line in stack.splitlines() if (m := regex.search(line))
           and SETTINGS_FULL in (m.group("base_activity"), m.group("top_activity"))]
    assert ids, stack
    _ok(rig, "shell", "am", "task", "lock", ids[0])


def broadcast(rig: Rig) -> None:
    out = _ok(rig, "shell", "am", "broadcast", "-a", "com.example.androidworld.RESET")
    assert "Broadcast completed: result=0" in out


def clipboard_via_clipper(rig: Rig) -> None:
    # android_world's set-up installs the Clipper app (here a stand-in with its package)
    apk = rig.tmp / "clipper.apk"
    apk.write_bytes(build_test_apk("ca.zgrs.clipper", "Clipper"))
    assert rig.adb("install", str(apk)).returncode == 0
    out = _ok(rig, "shell", "am", "broadcast", "-a", "clipper.set", "-e", "text", "'two words'")
    assert 'result=-1, data="Text is copied into clipboard."' in out, out
    out = _ok(rig, "shell", "am", "broadcast", "-a", "clipper.get")
    # extract_broadcast_data: result=-1 with data= when Clipper answered
    assert 'Broadcast completed: result=-1, data="two words"' in out, out


def sqlite_evaluator(rig: Rig) -> None:
    out = _ok(rig, "shell", "sqlite3 /data/data/com.android.providers.contacts/databases/"
                           "contacts2.db \"SELECT count(*) FROM raw_contacts;\"")
    assert out.strip().isdigit(), out


def call_state(rig: Rig) -> None:
    out = _ok(rig, "shell", "dumpsys", "telephony.registry")
    m = re.search(r"mCallState=(\d)", out)
    assert m is not None and m.group(1) == "0", out[:200]


def clear_call_log(rig: Rig) -> None:
    _ok(rig, "shell", "content", "delete", "--uri", "content://call_log/calls")


def emulator_console(rig: Rig) -> None:
    _ok(rig, "emu", "gsm", "call", "5551234")
    # the call rings: RINGING with its number, as android_world's call tasks check
    out = _ok(rig, "shell", "dumpsys", "telephony.registry")
    assert "mCallState=1" in out and "mCallIncomingNumber=5551234" in out, out[:300]
    _ok(rig, "emu", "gsm", "cancel", "5551234")
    assert "mCallState=0" in _ok(rig, "shell", "dumpsys", "telephony.registry")


def call_phone_number(rig: Rig) -> None:
    out = _ok(rig, "shell", "am", "start", "-a", "android.intent.action.CALL", "-d", "tel:5551234")
    assert "Error" not in out, out
    assert "mCallState=2" in _ok(rig, "shell", "dumpsys", "telephony.registry")
    _ok(rig, "shell", "input", "keyevent", "KEYCODE_ENDCALL")  # end_call
    assert "mCallState=0" in _ok(rig, "shell", "dumpsys", "telephony.registry")


CASES: list[Case] = [
    Case("start_activity -W -n + get_current_activity (am stack list)", start_activity),
    Case("force_stop", force_stop),
    Case("press_button HOME/BACK/ENTER", press_buttons),
    Case("tap, long_press, swipe without duration", tap_and_long_press),
    Case("type_text (escaped words, %s)", input_text),
    Case("get_orientation (dumpsys input SurfaceOrientation)", orientation_from_dumpsys_input),
    Case("get_orientation (dumpsys window mCurrentRotation)", orientation_from_dumpsys_window),
    Case("change_orientation (user_rotation 1 -> ROTATION_90)", change_orientation),
    Case("get_screen_size / logical / physical frame", screen_sizes),
    Case("get_api_level", api_level),
    Case("settings get/put/list/delete", settings_get_put_list),
    Case("toggle/check airplane mode", airplane_mode),
    Case("svc wifi/bluetooth", toggle_svc),
    Case("set_default_app, heads-up notifications", default_app_and_headsup),
    Case("pm list/clear/grant (and delete_contacts)", package_manager),
    Case("install -r -t -g / uninstall", install_and_uninstall),
    Case("push / pull", push_and_pull),
    Case("uiautomator dump + pull + parse", ui_dump),
    Case("_launch_default_app (VIEW http://, content://contacts)", open_default_apps),
    Case("launch_app by package (monkey -p)", launch_by_package),
    Case("close_recents (dumpsys activity recents + am stack remove)", close_recents),
    Case("start_screen_pinning (am stack list regex + am task lock)", screen_pinning),
    Case("send_broadcast", broadcast),
    Case("get_clipboard_contents (Clipper broadcast)", clipboard_via_clipper),
    Case("execute_sql_command (sqlite3)", sqlite_evaluator),
    Case("get_call_state (dumpsys telephony.registry)", call_state),
    Case("clear call log (content delete call_log)", clear_call_log),
    Case("call_emulator (adb emu gsm call)", emulator_console),
    Case("call_phone_number (CALL tel:)", call_phone_number),
]

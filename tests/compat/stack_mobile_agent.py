"""Mobile-Agent (v2's ``controller.py``; v3/E's IME set-up) against a sim phone.

Commands are ``subprocess.run(adb_path + " shell …", shell=True)`` with the result
ignored except where parsed: ``dumpsys input_method`` for the keyboard state and
the hint text, the pulled screenshot for the next step.
"""

from __future__ import annotations

from PIL import Image

from farm.sim.shell.apk import build_test_apk
from tests.compat.harness import Case, Rig


def run(rig: Rig, line: str) -> str:
    return str(rig.adb_line(line).stdout)


def get_screenshot(rig: Rig) -> None:
    run(rig, "shell rm /sdcard/screenshot.png")
    run(rig, "shell screencap -p /sdcard/screenshot.png")
    shots = rig.tmp / "screenshot"
    shots.mkdir(exist_ok=True)
    proc = rig.adb_line(f"pull /sdcard/screenshot.png {shots}")
    assert proc.returncode == 0, proc.stderr
    img = Image.open(shots / "screenshot.png").convert("RGB")
    img.save(shots / "screenshot.jpg", "JPEG")
    assert img.size == (1080, 2400)


def get_keyboard(rig: Rig) -> tuple[bool, str | None]:
    output = run(rig, "shell dumpsys input_method").strip()
    for line in output.split("\n"):
        if "mInputShown" in line:
            if "mInputShown=true" in line:
                hint = None
                for other in output.split("\n"):
                    if "hintText" in other:
                        hint = other.split("hintText=")[-1].split(" label")[0]
                        break
                return True, hint
            if "mInputShown=false" in line:
                return False, None
    raise AssertionError("no mInputShown line in dumpsys input_method")


def _focus_omnibox(rig: Rig) -> None:
    run(rig, "shell am start -n com.android.chrome/com.google.android.apps.chrome.Main")
    import xml.etree.ElementTree as ET

    run(rig, "shell uiautomator dump /sdcard/ma.xml")
    local = rig.tmp / "ma.xml"
    rig.adb("pull", "/sdcard/ma.xml", str(local))
    for node in ET.parse(local).getroot().iter("node"):
        if "search_box" in node.get("resource-id", "") or node.get("text") == (
                "Search or type web address"):
            b = node.get("bounds", "")[1:-1].split("][")
            x1, y1 = map(int, b[0].split(","))
            x2, y2 = map(int, b[1].split(","))
            run(rig, f"shell input tap {(x1 + x2) // 2} {(y1 + y2) // 2}")
            return
    raise AssertionError("no omnibox on screen")


def keyboard_state(rig: Rig) -> None:
    run(rig, "shell input keyevent 3")
    assert get_keyboard(rig) == (False, None)
    _focus_omnibox(rig)
    shown, hint = get_keyboard(rig)
    assert shown and hint == "Search or type web address", (shown, hint)


def _type(rig: Rig, text: str) -> None:
    """controller.type: one adb call per character, by kind of character."""
    text = text.replace("\\n", "_").replace("\n", "_")
    for char in text:
        if char == " ":
            run(rig, "shell input text %s")
        elif char == "_":
            run(rig, "shell input keyevent 66")
        elif "a" <= char <= "z" or "A" <= char <= "Z" or char.isdigit():
            run(rig, f"shell input text {char}")
        elif char in "-.,!?@'°/:;()":
            run(rig, f'shell input text "{char}"')
        else:
            run(rig, f'shell am broadcast -a ADB_INPUT_TEXT --es msg "{char}"')


def _omnibox_text(rig: Rig) -> str:
    import xml.etree.ElementTree as ET

    run(rig, "shell uiautomator dump /sdcard/mt.xml")
    local = rig.tmp / "mt.xml"
    rig.adb("pull", "/sdcard/mt.xml", str(local))
    for node in ET.parse(local).getroot().iter("node"):
        if node.get("class") == "android.widget.EditText":
            return node.get("text", "")
    return ""


def type_ascii(rig: Rig) -> None:
    _focus_omnibox(rig)
    _type(rig, "Hi, 2 cats!")
    assert _omnibox_text(rig) == "Hi, 2 cats!"


ADB_IME = "com.android.adbkeyboard/.AdbIME"


def _install_adb_keyboard(rig: Rig) -> None:
    """What its README asks of a user: install ADBKeyboard.apk (here a stand-in with the
    keyboard's package name, which the sim phone knows as an input method)."""
    if "package:com.android.adbkeyboard" in run(rig, "shell pm list packages adbkeyboard"):
        return
    apk = rig.tmp / "ADBKeyboard.apk"
    apk.write_bytes(build_test_apk("com.android.adbkeyboard", "ADB Keyboard"))
    assert rig.adb("install", str(apk)).returncode == 0


def type_unicode_via_adb_keyboard(rig: Rig) -> None:
    _install_adb_keyboard(rig)
    run(rig, f"shell ime enable {ADB_IME}")
    run(rig, f"shell ime set {ADB_IME}")
    run(rig, "shell am force-stop com.android.chrome")  # a fresh omnibox, not the last case's
    _focus_omnibox(rig)
    _type(rig, "café ☕")
    assert _omnibox_text(rig) == "café ☕"
    # and the system keyboard back, as the stack does when a task ends
    run(rig, "shell ime reset")
    run(rig, 'shell am broadcast -a ADB_INPUT_TEXT --es msg "é"')
    assert _omnibox_text(rig) == "café ☕"  # nobody listens any more


def tap_slide_back_home(rig: Rig) -> None:
    run(rig, "shell am start -n com.android.settings/.Settings")
    assert rig.adb_line("shell input tap 540 1200").returncode == 0
    assert rig.adb_line("shell input swipe 540 1800 540 600 500").returncode == 0
    assert rig.adb_line("shell input keyevent 4").returncode == 0
    out = run(rig, "shell am start -a android.intent.action.MAIN -c android.intent.category.HOME")
    assert "Error" not in out, out
    focus = run(rig, "shell dumpsys window | grep mCurrentFocus")
    assert "nexuslauncher" in focus, focus


def ime_setup(rig: Rig) -> None:
    _install_adb_keyboard(rig)
    for line in ("shell ime enable com.android.adbkeyboard/.AdbIME",
                 "shell ime set com.android.adbkeyboard/.AdbIME"):
        proc = rig.adb_line(line)
        assert proc.returncode == 0 and "not found" not in proc.stdout + proc.stderr, (
            line, proc.stdout, proc.stderr)


CASES: list[Case] = [
    Case("get_screenshot (rm, screencap -p, pull, JPEG)", get_screenshot),
    Case("get_keyboard (dumpsys input_method mInputShown/hintText)", keyboard_state),
    Case("type: ASCII per character (text, %s, keyevent)", type_ascii),
    Case("type: non-ASCII via ADB_INPUT_TEXT broadcast", type_unicode_via_adb_keyboard),
    Case("tap / slide / back / home (MAIN+HOME intent)", tap_slide_back_home),
    Case("ime enable/set (v3, Mobile-Agent-E)", ime_setup),
]

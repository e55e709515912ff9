"""AppAgent's ``and_controller`` against a sim phone.

Every action is ``subprocess.run(f"adb -s {device} shell …", shell=True)``; the
controller keeps ``stdout.strip()`` when the exit status is 0 and treats anything
else as ``"ERROR"``. Screens are read by ``screencap -p``/``uiautomator dump`` to
/sdcard, pulled, and walked with ElementTree for clickable/focusable nodes.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from PIL import Image

from tests.compat.harness import Case, Rig


def execute_adb(rig: Rig, line: str) -> str:
    proc = rig.adb_line(line)
    return str(proc.stdout).strip() if proc.returncode == 0 else "ERROR"


def _elements(path: str, attrib: str) -> list[tuple[str, tuple[int, int]]]:
    """traverse_tree: (resource-id or class, centre) of nodes with attrib="true"."""
    out = []
    for event, elem in ET.iterparse(path, ["start"]):
        if event == "start" and elem.attrib.get(attrib) == "true":
            b = elem.attrib["bounds"][1:-1].split("][")
            x1, y1 = map(int, b[0].split(","))
            x2, y2 = map(int, b[1].split(","))
            name = elem.attrib.get("resource-id") or elem.attrib["class"]
            out.append((name + "|" + elem.attrib.get("content-desc", "") + "|"
                        + elem.attrib.get("text", ""), ((x1 + x2) // 2, (y1 + y2) // 2)))
    return out


def _screen(rig: Rig, prefix: str) -> str:
    assert execute_adb(rig, f"shell uiautomator dump /sdcard/{prefix}.xml") != "ERROR"
    local = rig.tmp / f"{prefix}.xml"
    assert execute_adb(rig, f"pull /sdcard/{prefix}.xml {local}") != "ERROR"
    return str(local)


def list_devices(rig: Rig) -> None:
    result = execute_adb(rig, "devices")
    assert result != "ERROR"
    devices = [d.split()[0] for d in result.split("\n")[1:]]
    assert rig.serial in devices


def device_size(rig: Rig) -> None:
    result = execute_adb(rig, "shell wm size")
    assert tuple(map(int, result.split(": ")[1].split("x"))) == (1080, 2400)


def screenshot(rig: Rig) -> None:
    assert execute_adb(rig, "shell screencap -p /sdcard/0_before.png") != "ERROR"
    local = rig.tmp / "0_before.png"
    assert execute_adb(rig, f"pull /sdcard/0_before.png {local}") != "ERROR"
    assert Image.open(local).size == (1080, 2400)


def xml_elements(rig: Rig) -> None:
    path = _screen(rig, "0")
    clickable = _elements(path, "clickable")
    focusable = _elements(path, "focusable")
    assert clickable and focusable
    assert any("Settings" in name for name, _ in clickable)


def tap_opens_the_app(rig: Rig) -> None:
    execute_adb(rig, "shell input keyevent KEYCODE_HOME")
    path = _screen(rig, "1")
    target = next(c for name, c in _elements(path, "clickable") if "|Settings|" in name
                  or name.endswith("|Settings"))
    assert execute_adb(rig, f"shell input tap {target[0]} {target[1]}") != "ERROR"
    focus = execute_adb(rig, "shell dumpsys window | grep mCurrentFocus")
    assert "com.android.settings" in focus, focus


def text_into_a_field(rig: Rig) -> None:
    execute_adb(rig, "shell am start -n com.android.chrome/com.google.android.apps.chrome.Main")
    path = _screen(rig, "2")
    box = next(c for name, c in _elements(path, "clickable") if "search_box" in name
               or "url_bar" in name or "Search or type" in name)
    execute_adb(rig, f"shell input tap {box[0]} {box[1]}")
    # AndroidController.text: spaces → %s, single quotes dropped
    typed = "weather in paris".replace(" ", "%s").replace("'", "")
    assert execute_adb(rig, f"shell input text {typed}") != "ERROR"
    path = _screen(rig, "3")
    texts = [e.attrib.get("text", "") for e in ET.parse(path).getroot().iter("node")]
    assert "weather in paris" in texts, texts


def back_long_press_swipe(rig: Rig) -> None:
    assert execute_adb(rig, "shell input keyevent KEYCODE_BACK") != "ERROR"
    assert execute_adb(rig, "shell input swipe 540 1200 540 1200 1000") != "ERROR"
    unit = 1080 // 10 * 2
    assert execute_adb(rig, f"shell input swipe 540 1600 540 {1600 - 2 * unit} 400") != "ERROR"
    assert execute_adb(rig, "shell input swipe 900 1200 100 1200 100") != "ERROR"


CASES: list[Case] = [
    Case("list_all_devices (adb devices)", list_devices),
    Case("get_device_size (wm size)", device_size),
    Case("get_screenshot (screencap -p to /sdcard + pull)", screenshot),
    Case("get_xml + traverse_tree (clickable/focusable)", xml_elements),
    Case("tap on a parsed element opens the app", tap_opens_the_app),
    Case("text (%s for spaces) into a focused field", text_into_a_field),
    Case("back / long_press / swipe", back_long_press_swipe),
]

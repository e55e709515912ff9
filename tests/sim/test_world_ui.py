"""The Android world through the eyes of an agent: uiautomator XML, taps, keys, apps.

Every interaction finds its target by parsing ``ui_xml()`` (text / resource-id) and
tapping the centre of the dumped bounds, as a UI-tree policy or a real-phone test would.
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from farm.sim.faults import Faults
from farm.sim.spec import LogBuffer, PhoneSpec, ScreenSpec
from farm.sim.vfs import VirtualFS
from farm.sim.world import World
from farm.sim.world.views import View

WALL = 1_700_000_000.0  # a fixed wall clock: the status-bar time does not tick in tests
LAUNCHER = "com.google.android.apps.nexuslauncher"
SETTINGS = "com.android.settings"
WIFI = "Wi\u2011Fi"


class Phone:
    def __init__(self, preset: str = "phone") -> None:
        self.now = 100.0
        self.faults = Faults(clock=lambda: self.now)
        self.logcat = LogBuffer(clock=lambda: WALL)
        self.world = World(PhoneSpec(screen=ScreenSpec.preset(preset)), VirtualFS(),
                           self.faults, self.logcat, random.Random(1), clock=lambda: self.now)

    def nodes(self) -> list[ET.Element]:
        return list(ET.fromstring(self.world.ui_xml()).iter("node"))

    def find(self, **attrs: str) -> ET.Element | None:
        for n in self.nodes():
            if all(n.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                return n
        return None

    def get(self, **attrs: str) -> ET.Element:
        n = self.find(**attrs)
        assert n is not None, f"no node {attrs} on screen {self.world.current_focus()}"
        return n

    def tap(self, **attrs: str) -> None:
        self.world.tap(*center(self.get(**attrs)))

    def scroll_to(self, **attrs: str) -> ET.Element:
        for _ in range(10):
            n = self.find(**attrs)
            if n is not None and bounds_of(n)[3] < self.world.height * 0.8:
                return n
            self.world.swipe(self.world.width / 2, self.world.height * 0.7,
                             self.world.width / 2, self.world.height * 0.35, 300)
        return self.get(**attrs)

    def crop(self, bounds: tuple[int, int, int, int]) -> np.ndarray:
        w = self.world
        frame = np.frombuffer(w.frame_rgba(), np.uint8).reshape(w.height, w.width, 4)
        left, top, right, bottom = bounds
        return frame[top:bottom, left:right].copy()


def bounds_of(n: ET.Element) -> tuple[int, int, int, int]:
    left, top, right, bottom = map(int, re.findall(r"-?\d+", n.get("bounds", "")))
    return left, top, right, bottom


def center(n: ET.Element) -> tuple[float, float]:
    left, top, right, bottom = bounds_of(n)
    return (left + right) / 2, (top + bottom) / 2


def switch_in_row(phone: Phone, title: str) -> ET.Element:
    """The Switch of the preference row whose android:id/title is ``title``."""
    for row in ET.fromstring(phone.world.ui_xml()).iter("node"):
        titles = [c for c in row.iter("node") if c.get("resource-id") == "android:id/title"]
        switches = [c for c in row.iter("node") if c.get("class") == "android.widget.Switch"]
        if row.get("clickable") == "true" and len(titles) == 1 and switches \
                and titles[0].get("text") == title:
            return switches[0]
    raise AssertionError(f"no switch row {title!r}")


@pytest.fixture
def phone() -> Phone:
    return Phone()


# ── XML format ─────────────────────────────────────────────────────────────────────────
ATTRS = ["index", "text", "resource-id", "class", "package", "content-desc", "checkable",
         "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
         "long-clickable", "password", "selected", "bounds"]


def test_dump_is_one_line_aosp_format(phone: Phone) -> None:
    xml = phone.world.ui_xml()
    assert "\n" not in xml
    assert xml.startswith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
                          '<hierarchy rotation="0"><node index="0" text="" resource-id="" '
                          'class="android.widget.FrameLayout" '
                          f'package="{LAUNCHER}" content-desc="" checkable="false" '
                          'checked="false" clickable="false" enabled="true" focusable="false" '
                          'focused="false" scrollable="false" long-clickable="false" '
                          'password="false" selected="false" bounds="[0,0][1080,2400]">')
    assert xml.endswith("</hierarchy>")
    for tag in re.findall(r"<node [^>]*>", xml):
        names = re.findall(r' ([a-z-]+)="', tag)
        assert names == ATTRS, tag


def test_bounds_inside_screen_and_indexes_count_visible_siblings(phone: Phone) -> None:
    phone.world.launch_package(SETTINGS)
    root = ET.fromstring(phone.world.ui_xml())
    for n in root.iter("node"):
        left, top, right, bottom = bounds_of(n)
        assert 0 <= left < right <= 1080 and 0 <= top < bottom <= 2400, n.attrib
        kids = list(n)
        assert [int(k.get("index", "-1")) for k in kids] == list(range(len(kids)))
    # system UI windows come with the dump, like a multi-window dump
    clock = phone.find(resource_id="com.android.systemui:id/clock")
    assert clock is not None and clock.get("package") == "com.android.systemui"
    assert phone.find(content_desc="Back", package="com.android.systemui") is not None


def test_dump_matches_view_tree(phone: Phone) -> None:
    phone.world.launch_package(SETTINGS)
    dumped = [(n.get("text"), n.get("resource-id"), n.get("bounds")) for n in phone.nodes()]
    tree: list[tuple[str, str, str]] = []
    for win in phone.world.windows():
        for v in win.walk():
            vis = v.vis
            assert vis is not None
            tree.append((v.text, v.rid, f"[{vis[0]},{vis[1]}][{vis[2]},{vis[3]}]"))
    assert dumped == tree


def test_text_is_xml_escaped(phone: Phone) -> None:
    phone.world.launch_package(SETTINGS)
    assert 'text="Network &amp; internet"' in phone.world.ui_xml()
    assert phone.get(text="Network & internet").get("resource-id") == "android:id/title"


def test_scrolled_rows_are_clipped_to_the_list(phone: Phone) -> None:
    phone.world.launch_package(SETTINGS)
    lst = bounds_of(phone.get(resource_id="com.android.settings:id/recycler_view"))
    assert phone.get(resource_id="com.android.settings:id/recycler_view").get("scrollable") \
        == "true"
    about = phone.find(text="About phone")
    assert about is None or bounds_of(about)[3] == lst[3]  # below the fold, or cut by it
    about = phone.scroll_to(text="About phone")
    b = bounds_of(about)
    assert lst[1] <= b[1] and b[3] < lst[3]
    for n in phone.get(resource_id="com.android.settings:id/recycler_view").iter("node"):
        nb = bounds_of(n)
        assert lst[1] <= nb[1] and nb[3] <= lst[3]
    title = phone.find(resource_id="com.android.settings:id/homepage_title")
    assert title is not None and title.get("text") == "Settings"


# ── Walks through the UI ───────────────────────────────────────────────────────────────
def test_wifi_toggle_walk_changes_setting_and_pixels(phone: Phone) -> None:
    w = phone.world
    phone.tap(text="Settings", content_desc="Settings")
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    phone.tap(text="Network & internet")
    phone.tap(text="Internet")
    assert w.current_focus() == (SETTINGS, "com.android.settings.SubSettings")
    sw = switch_in_row(phone, WIFI)
    assert sw.get("checked") == "true" and sw.get("checkable") == "true"
    box = bounds_of(sw)
    before = phone.crop(box)
    phone.tap(text=WIFI)
    assert w.settings.get("global", "wifi_on") == "0"
    sw = switch_in_row(phone, WIFI)
    assert sw.get("checked") == "false" and bounds_of(sw) == box
    assert np.abs(phone.crop(box).astype(int) - before.astype(int)).sum() > 1000
    assert phone.find(text="AndroidWifi") is None
    # and the status bar's Wi-Fi icon went away
    assert phone.find(resource_id="com.android.systemui:id/wifi_signal") is None


def test_settings_put_from_shell_updates_ui(phone: Phone) -> None:
    w = phone.world
    w.start_activity("com.android.settings/.Settings$NetworkDashboardActivity")
    assert switch_in_row(phone, "Airplane mode").get("checked") == "false"
    v = w.version
    w.settings.put("global", "airplane_mode_on", "1")
    assert w.version > v
    assert switch_in_row(phone, "Airplane mode").get("checked") == "true"
    assert phone.find(resource_id="com.android.systemui:id/airplane") is not None
    phone.tap(text="Airplane mode")
    assert w.settings.get("global", "airplane_mode_on") == "0"


def test_dark_theme_switch_makes_background_dark(phone: Phone) -> None:
    w = phone.world
    phone.tap(text="Settings")
    phone.tap(text="Display")
    light = np.median(phone.crop((0, 300, 1080, 400)))
    phone.scroll_to(text="Dark theme")
    phone.tap(text="Dark theme")
    assert w.settings.get("secure", "ui_night_mode") == "2"
    assert switch_in_row(phone, "Dark theme").get("checked") == "true"
    dark = np.median(phone.crop((0, 300, 1080, 400)))
    assert light > 200 and dark < 80


def test_brightness_slider_writes_setting(phone: Phone) -> None:
    w = phone.world
    w.start_activity("com.android.settings/.Settings$DisplaySettingsActivity")
    bar = phone.get(resource_id="com.android.settings:id/seekbar")
    assert bar.get("class") == "android.widget.SeekBar"
    left, top, right, bottom = bounds_of(bar)
    w.tap(right - 1, (top + bottom) / 2)
    assert w.settings.get("system", "screen_brightness") == "255"
    w.swipe(right - 1, (top + bottom) / 2, left + (right - left) / 2, (top + bottom) / 2, 300)
    assert w.settings.get("system", "screen_brightness") == "128"
    phone.get(text="50%", resource_id="android:id/summary")


def test_bluetooth_and_about_phone(phone: Phone) -> None:
    w = phone.world
    w.start_activity("com.android.settings/.Settings$ConnectedDeviceDashboardActivity")
    phone.tap(text="Bluetooth")
    assert w.settings.get("global", "bluetooth_on") == "1"
    w.start_activity("com.android.settings/.Settings$MyDeviceInfoActivity")
    phone.get(text="DistRL Sim Phone", resource_id="android:id/summary")
    phone.get(text="14")


def test_home_and_back(phone: Phone) -> None:
    w = phone.world
    w.launch_package(SETTINGS)
    phone.tap(text="Display")
    assert len(w.activity_stack()) == 3
    w.key(4)
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    w.key(3)
    assert w.current_focus() is not None and w.current_focus()[0] == LAUNCHER
    assert w.launch_package(SETTINGS)
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    w.key(4)  # BACK on the root: the task goes behind home
    assert w.current_focus() is not None and w.current_focus()[0] == LAUNCHER
    # the nav bar's Back/Home buttons are real nodes too
    w.launch_package(SETTINGS)
    phone.tap(text="Battery")
    phone.tap(content_desc="Back")
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    phone.tap(content_desc="Home")
    assert w.current_focus() is not None and w.current_focus()[0] == LAUNCHER


def test_keyboard_search_and_typing(phone: Phone) -> None:
    w = phone.world
    w.launch_package(SETTINGS)
    full = bounds_of(phone.get(resource_id="android:id/content"))
    phone.tap(resource_id="com.android.settings:id/search_action_bar")
    assert w.current_focus() is not None
    assert w.current_focus()[0] == "com.google.android.settings.intelligence"
    edit = phone.get(resource_id="android:id/search_src_text")
    assert edit.get("class") == "android.widget.EditText"
    assert edit.get("focused") == "true" and edit.get("text") == "Search settings"
    ime = phone.get(package="com.google.android.inputmethod.latin")
    assert len(list(ime)) == 0  # keys are drawn, not exposed
    shrunk = bounds_of(phone.get(resource_id="android:id/content"))
    assert shrunk[3] < full[3] and shrunk[3] == bounds_of(ime)[1]
    w.input_text("dark")
    assert phone.get(resource_id="android:id/search_src_text").get("text") == "dark"
    phone.get(text="Dark theme")
    w.key(67)
    assert phone.get(resource_id="android:id/search_src_text").get("text") == "dar"
    # tapping keys on the drawn keyboard types too
    kb = bounds_of(ime)
    from farm.sim.world import keyboard
    k = next(k for k in keyboard.keys(kb, w.density) if k.label == "k")
    w.tap((k.rect[0] + k.rect[2]) / 2, (k.rect[1] + k.rect[3]) / 2)
    assert phone.get(resource_id="android:id/search_src_text").get("text") == "dark"
    w.key(4)  # BACK closes the keyboard first
    assert phone.find(package="com.google.android.inputmethod.latin") is None
    assert w.current_focus() is not None
    assert w.current_focus()[0] == "com.google.android.settings.intelligence"
    phone.tap(text="Dark theme")
    assert w.current_focus() == (SETTINGS, "com.android.settings.SubSettings")
    phone.get(text="Display")


def test_rename_device_dialog(phone: Phone) -> None:
    w = phone.world
    w.start_activity("com.android.settings/.Settings$MyDeviceInfoActivity")
    phone.tap(text="Device name")
    edit = phone.get(resource_id="android:id/edit")
    assert edit.get("text") == "DistRL Sim Phone" and edit.get("focused") == "true"
    for _ in range(len("Phone")):
        w.key(67)
    w.input_text("Box")
    phone.tap(text="OK", resource_id="android:id/button1")
    assert w.settings.get("global", "device_name") == "DistRL Sim Box"
    assert phone.find(resource_id="android:id/edit") is None
    phone.get(text="DistRL Sim Box")


def test_anr_dialog_close_app(phone: Phone) -> None:
    w = phone.world
    w.launch_package(SETTINGS)
    phone.faults.apply("anr")
    assert phone.get(resource_id="android:id/alertTitle").get("text") == \
        "Settings isn't responding"
    phone.get(resource_id="android:id/aerr_wait", text="Wait")
    phone.tap(text="Network & internet")  # modal: the app underneath gets nothing
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    phone.tap(resource_id="android:id/aerr_close", text="Close app")
    assert phone.find(resource_id="android:id/aerr_close") is None
    assert w.current_focus() is not None and w.current_focus()[0] == LAUNCHER
    assert not w.running(SETTINGS)
    assert not phone.faults.anr_requested
    assert any("ANR in com.android.settings" in line[5] for line in phone.logcat.lines)


def test_anr_wait_and_fault_clear(phone: Phone) -> None:
    w = phone.world
    w.launch_package(SETTINGS)
    w.show_anr()
    phone.tap(resource_id="android:id/aerr_wait")
    assert phone.find(resource_id="android:id/aerr_wait") is None
    assert w.current_focus() == (SETTINGS, "com.android.settings.Settings")
    phone.faults.apply("anr")
    phone.faults.clear()
    assert phone.find(resource_id="android:id/aerr_wait") is None


# ── Activity / package manager ─────────────────────────────────────────────────────────
def test_start_activity_outcomes(phone: Phone) -> None:
    w = phone.world
    r = w.start_activity("com.android.settings/.Settings")
    assert (r.outcome, r.package, r.activity) == ("ok", SETTINGS, "com.android.settings.Settings")
    r = w.start_activity("com.android.settings/com.android.settings.Settings")
    assert r.outcome == "brought_to_front"
    assert w.start_activity("com.android.settings/.Nope").outcome == "no_such_activity"
    assert w.start_activity("com.nope/.Main").outcome == "no_such_activity"
    assert w.start_activity("garbage").outcome == "no_such_activity"
    r = w.start_activity("com.android.settings/.Settings$DisplaySettingsActivity")
    assert r.outcome == "ok"
    stack = w.activity_stack()
    assert stack[0].activity == "com.android.settings.Settings$DisplaySettingsActivity"
    assert stack[0].task_id == stack[1].task_id and stack[-1].package == LAUNCHER
    logs = [line[5] for line in phone.logcat.lines if line[4] == "ActivityTaskManager"]
    assert "START u0 {flg=0x10000000 cmp=com.android.settings/.Settings} from uid 2000" in logs


def test_packages_install_uninstall_clear(phone: Phone) -> None:
    w = phone.world
    names = {p.name for p in w.packages()}
    assert {"android", "com.android.systemui", SETTINGS, LAUNCHER,
            "com.google.android.inputmethod.latin", "com.android.shell"} <= names
    assert not w.launch_package("com.android.systemui")
    w.install_package("/data/app/foo.apk", "com.example.foo", "Foo")
    info = next(p for p in w.packages() if p.name == "com.example.foo")
    assert not info.system and info.launcher_activity == "com.example.foo.MainActivity"
    phone.tap(text="Foo", content_desc="Foo")  # the launcher shows its icon
    assert w.current_focus() == ("com.example.foo", "com.example.foo.MainActivity")
    phone.get(text="Foo", package="com.example.foo")
    assert w.clear_package("com.example.foo") and not w.running("com.example.foo")
    assert w.current_focus() is not None and w.current_focus()[0] == LAUNCHER
    assert not w.uninstall_package(SETTINGS)
    assert w.uninstall_package("com.example.foo")
    assert phone.find(text="Foo") is None
    assert not w.clear_package("com.example.foo")


def test_force_stop_from_app_info(phone: Phone) -> None:
    w = phone.world
    w.install_package("/data/app/bar.apk", "com.example.bar", "Bar")
    w.launch_package("com.example.bar")
    w.start_activity("com.android.settings/.Settings$ManageApplicationsActivity")
    phone.scroll_to(text="Bar")
    phone.tap(text="Bar")
    phone.tap(text="Force stop", resource_id="com.android.settings:id/button3")
    phone.tap(text="OK", resource_id="android:id/button1")
    assert not w.running("com.example.bar")
    btn = phone.get(resource_id="com.android.settings:id/button3")
    assert btn.get("enabled") == "false"


def test_launcher_drawer(phone: Phone) -> None:
    w = phone.world
    w.swipe(540, 1800, 540, 600, 300)
    lst = phone.get(resource_id=f"{LAUNCHER}:id/apps_list_view")
    assert lst.get("scrollable") == "false"
    phone.get(text="Settings")
    w.key(4)
    assert phone.find(resource_id=f"{LAUNCHER}:id/apps_list_view") is None


def test_views_walk_skips_hidden() -> None:
    from farm.sim.world.views import finalize
    root = View(bounds=(0, 0, 100, 100))
    root.add(View(bounds=(0, 0, 10, 10), hidden=True), View(bounds=(200, 0, 300, 10)),
             View(bounds=(50, 50, 150, 150)))
    finalize(root, "p", (0, 0, 100, 100))
    assert [v.vis for v in root.walk()] == [(0, 0, 100, 100), (50, 50, 100, 100)]


def test_small_preset_works() -> None:
    p = Phone("small")
    p.tap(text="Settings")
    p.tap(text="Network & internet")
    p.tap(text="Internet")
    p.tap(text=WIFI)
    assert p.world.settings.get("global", "wifi_on") == "0"
    assert len(p.world.frame_rgba()) == 360 * 800 * 4

"""Settings (com.android.settings): homepage, sub-pages, toggles bound to the settings store.

Every switch reads its ``settings`` key when the screen is built and writes it when
tapped, so the store stays the single source of truth. Navigation inside the app starts
``SubSettings`` with a page argument, as the real app does; the ``Settings$…Activity``
aliases start a page directly (``am start -n com.android.settings/.Settings$Display…``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from farm.sim.intents import (
    IntentFilter,
    IntentQuery,
)
from farm.sim.world import widgets as w
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.views import Paint, TextField, View

PKG = "com.android.settings"
MAIN = "com.android.settings.Settings"
SUB = "com.android.settings.SubSettings"
SEARCH_PKG = "com.google.android.settings.intelligence"
SEARCH_ACTIVITY = "com.google.android.settings.intelligence.modules.search.activity.SearchActivity"

WIFI = "Wi\u2011Fi"  # AOSP spells it with a non-breaking hyphen

# Activity aliases → page. Keys are fully qualified class names.
ALIASES: dict[str, str] = {
    MAIN: "top",
    SUB: "top",
    f"{PKG}.Settings$NetworkDashboardActivity": "network",
    f"{PKG}.Settings$NetworkProviderSettingsActivity": "internet",
    f"{PKG}.Settings$WifiSettingsActivity": "internet",
    f"{PKG}.Settings$ConnectedDeviceDashboardActivity": "connected",
    f"{PKG}.Settings$BluetoothSettingsActivity": "connected",
    f"{PKG}.Settings$AppDashboardActivity": "apps",
    f"{PKG}.Settings$ManageApplicationsActivity": "all_apps",
    f"{PKG}.Settings$PowerUsageSummaryActivity": "battery",
    f"{PKG}.Settings$StorageDashboardActivity": "storage",
    f"{PKG}.Settings$SoundSettingsActivity": "sound",
    f"{PKG}.Settings$DisplaySettingsActivity": "display",
    f"{PKG}.Settings$LocationSettingsActivity": "location",
    f"{PKG}.Settings$MyDeviceInfoActivity": "about",
    f"{PKG}.Settings$DeviceInfoSettingsActivity": "about",
    f"{PKG}.Settings$BatterySaverSettingsActivity": "battery",
    f"{PKG}.applications.InstalledAppDetails": "app_info",
}

# Intent actions of ``am start -a`` for the shell: action → component.
ACTIONS: dict[str, str] = {
    "android.settings.SETTINGS": f"{PKG}/.Settings",
    "android.settings.WIRELESS_SETTINGS": f"{PKG}/.Settings$NetworkDashboardActivity",
    "android.settings.WIFI_SETTINGS": f"{PKG}/.Settings$WifiSettingsActivity",
    "android.settings.BLUETOOTH_SETTINGS": f"{PKG}/.Settings$BluetoothSettingsActivity",
    "android.settings.AIRPLANE_MODE_SETTINGS": f"{PKG}/.Settings$NetworkDashboardActivity",
    "android.settings.DISPLAY_SETTINGS": f"{PKG}/.Settings$DisplaySettingsActivity",
    "android.settings.SOUND_SETTINGS": f"{PKG}/.Settings$SoundSettingsActivity",
    "android.settings.LOCATION_SOURCE_SETTINGS": f"{PKG}/.Settings$LocationSettingsActivity",
    "android.settings.DEVICE_INFO_SETTINGS": f"{PKG}/.Settings$MyDeviceInfoActivity",
    "android.settings.APPLICATION_SETTINGS": f"{PKG}/.Settings$ManageApplicationsActivity",
    "android.settings.INTERNAL_STORAGE_SETTINGS": f"{PKG}/.Settings$StorageDashboardActivity",
    "android.intent.action.POWER_USAGE_SUMMARY": f"{PKG}/.Settings$PowerUsageSummaryActivity",
    "android.settings.NETWORK_PROVIDER_SETTINGS":
        f"{PKG}/.Settings$NetworkProviderSettingsActivity",
    "android.settings.MANAGE_APPLICATIONS_SETTINGS":
        f"{PKG}/.Settings$ManageApplicationsActivity",
    "android.settings.MANAGE_ALL_APPLICATIONS_SETTINGS":
        f"{PKG}/.Settings$ManageApplicationsActivity",
    "android.settings.BATTERY_SAVER_SETTINGS": f"{PKG}/.Settings$BatterySaverSettingsActivity",
    "android.settings.APPLICATION_DETAILS_SETTINGS": f"{PKG}/.applications.InstalledAppDetails",
}
# actions whose intent carries data (APPLICATION_DETAILS_SETTINGS: package:NAME)
DATA_SCHEMES = {"android.settings.APPLICATION_DETAILS_SETTINGS": ("package",)}


def _filters() -> tuple[IntentFilter, ...]:
    # (its MAIN/LAUNCHER filter is left out: matched without a package, a phone shows
    # the chooser, which the sim does not have)
    out: list[IntentFilter] = []
    for action, component in ACTIONS.items():
        cls = PKG + component.partition("/")[2]
        out.append(IntentFilter(cls, (action,), schemes=DATA_SCHEMES.get(action, ())))
    return tuple(out)

TITLES = {
    "top": "Settings", "network": "Network & internet", "internet": "Internet",
    "connected": "Connected devices", "apps": "Apps", "all_apps": "All apps",
    "app_info": "App info", "battery": "Battery", "storage": "Storage",
    "sound": "Sound & vibration", "display": "Display", "location": "Location",
    "about": "About phone",
}

# The homepage: page, title, static summary, icon glyph, icon colour.
TOP_LEVEL = [
    ("network", f"Mobile, {WIFI}, hotspot", "internet", "#1a73e8"),
    ("connected", "Bluetooth, pairing", "devices", "#00897b"),
    ("apps", "Assistant, recent apps, default apps", "apps", "#e8710a"),
    ("battery", "", "battery", "#1e8e3e"),
    ("storage", "", "storage", "#9334e6"),
    ("sound", "Volume, haptics, Do Not Disturb", "sound", "#129eaf"),
    ("display", "Dark theme, font size, brightness", "display", "#f29900"),
    ("location", "", "location", "#7cb342"),
    ("about", "", "info", "#5f6368"),
]

TIMEOUTS = [(15000, "15 seconds"), (30000, "30 seconds"), (60000, "1 minute"),
            (120000, "2 minutes"), (300000, "5 minutes"), (600000, "10 minutes"),
            (1800000, "30 minutes")]

# What the search page can find: (title, page it is on).
SEARCH_INDEX: list[tuple[str, str]] = [
    (TITLES[p], p) for p, *_ in TOP_LEVEL
] + [
    ("Internet", "network"), ("Airplane mode", "network"), (WIFI, "internet"),
    ("Bluetooth", "connected"), ("All apps", "apps"), ("Battery Saver", "battery"),
    ("Battery percentage", "battery"), ("Media volume", "sound"),
    ("Do Not Disturb", "sound"), ("Brightness level", "display"),
    ("Adaptive brightness", "display"), ("Screen timeout", "display"),
    ("Dark theme", "display"), ("Use location", "location"), ("Device name", "about"),
    ("Model", "about"), ("Android version", "about"),
]


def human_bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.2f} GB"
    return f"{n / (1 << 20):.0f} MB"


@dataclass(frozen=True)
class Toggle:
    namespace: str
    key: str
    on: str = "1"
    off: str = "0"


class SettingsActivity(Activity):
    """One Settings screen; ``page`` picks which."""

    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.page = args.get("page") or ALIASES.get(name, "top")
        self.rename = TextField(hint="Device name")

    # ── helpers ──────────────────────────────────────────────────────────────────────
    def on(self, t: Toggle) -> bool:
        return self.host.store.get(t.namespace, t.key) == t.on

    def flip(self, t: Toggle) -> Callable[[], None]:
        def do() -> None:
            self.host.store.put(t.namespace, t.key, t.off if self.on(t) else t.on)
        return do

    def open(self, page: str, **extra: str) -> Callable[[], None]:
        def do() -> None:
            self.host.start(PKG, SUB, {"page": page, **extra})
        return do

    def pref(self, ctx: w.Ctx, title: str, summary: str = "", *, icon: str = "",
             icon_bg: str = "", on_click: Callable[[], None] | None = None,
             toggle: Toggle | None = None, enabled: bool = True) -> w.Row:
        checked = self.on(toggle) if toggle is not None else None
        click = self.flip(toggle) if toggle is not None and on_click is None else on_click

        def build(y: int) -> View:
            return w.pref_row(ctx, y, title, summary, icon_name=icon, icon_bg=icon_bg,
                              on_click=click if enabled else None, checked=checked,
                              enabled=enabled)
        return (w.pref_height(ctx, summary), build)

    def cat(self, ctx: w.Ctx, title: str) -> w.Row:
        return (ctx.dp(48), lambda y: w.category(ctx, y, title))

    def slider(self, ctx: w.Ctx, title: str, namespace: str, key: str, hi: int, default: int,
               rid: str, fmt: Callable[[int], str]) -> w.Row:
        value = max(0, min(hi, self.host.store.get_int(namespace, key, default)))

        def set_fraction(f: float) -> None:
            self.host.store.put(namespace, key, str(round(f * hi)))

        def build(y: int) -> View:
            return w.slider_row(ctx, y, title, fmt(value), value / hi, set_fraction, rid)
        probe = w.slider_row(ctx, 0, title, fmt(value), 0.0, set_fraction, rid)
        return (probe.bounds[3], build)

    # ── screens ──────────────────────────────────────────────────────────────────────
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.LINEAR, bounds=c, paint=Paint("fill", bg="bg"))
        if self.page == "top":
            header_bottom = self._homepage_header(ctx, root)
        else:
            bar = w.app_bar(ctx, TITLES.get(self.page, "Settings"), self.finish, PKG)
            root.add(bar)
            header_bottom = bar.bounds[3]
        rows = getattr(self, f"_page_{self.page}", self._page_top)(ctx)
        root.add(w.scroll_list(ctx, self.scroll, self.page, (0, header_bottom, ctx.width, c[3]),
                               rows, rid=f"{PKG}:id/recycler_view", bottom_pad=ctx.dp(16)))
        return root

    def _homepage_header(self, ctx: w.Ctx, root: View) -> int:
        c = ctx.content
        pad = ctx.dp(24)
        y = c[1] + ctx.dp(28)
        root.add(w.text(ctx, pad, y, ctx.width - 2 * pad, "Settings", 36,
                        rid=f"{PKG}:id/homepage_title"))
        y += ctx.line(36) + ctx.dp(20)
        bh = ctx.dp(56)
        bar = View(cls=w.FRAME, bounds=(pad, y, ctx.width - pad, y + bh),
                   rid=f"{PKG}:id/search_action_bar", clickable=True, focusable=True,
                   on_click=lambda: self.host.start(SEARCH_PKG, SEARCH_ACTIVITY),
                   paint=Paint("fill", bg="search_bg", radius=28))
        isz = ctx.dp(24)
        bar.add(w.icon(ctx, pad + ctx.dp(16), y + (bh - isz) // 2, 24, "search"))
        tx = pad + ctx.dp(56)
        bar.add(w.text(ctx, tx, y + (bh - ctx.line(16)) // 2, ctx.width - pad - tx,
                       "Search settings", 16, "on_surface_var",
                       rid=f"{PKG}:id/search_action_bar_title"))
        root.add(bar)
        return y + bh + ctx.dp(16)

    def _page_top(self, ctx: w.Ctx) -> list[w.Row]:
        rows = []
        for page, summary, glyph, color in TOP_LEVEL:
            rows.append(self.pref(ctx, TITLES[page], summary or self._top_summary(page),
                                  icon=glyph, icon_bg=color, on_click=self.open(page)))
        return rows

    def _top_summary(self, page: str) -> str:
        st = self.host.store
        if page == "battery":
            return self._battery_summary()
        if page == "storage":
            used, cap = self.host.vfs.used_bytes, self.host.vfs.capacity
            return f"{used * 100 // max(1, cap)}% used - {human_bytes(cap - used)} free"
        if page == "location":
            return "On" if st.get_int("secure", "location_mode", 0) != 0 else "Off"
        if page == "about":
            return st.get("global", "device_name") or self.host.spec.model
        return ""

    def _battery_summary(self) -> str:
        level = self.host.battery_level()
        status = self.host.battery.status
        if status == 5:
            return f"{level}% - Fully charged"
        if status == 2:
            return f"{level}% - Charging"
        return f"{level}%"

    def _page_network(self, ctx: w.Ctx) -> list[w.Row]:
        st = self.host.store
        airplane = st.get_bool("global", "airplane_mode_on")
        wifi = st.get_bool("global", "wifi_on")
        internet = "Airplane mode" if airplane and not wifi else ("AndroidWifi" if wifi else "Off")
        return [
            self.pref(ctx, "Internet", internet, icon="internet", on_click=self.open("internet")),
            self.pref(ctx, "Airplane mode", icon="airplane",
                      toggle=Toggle("global", "airplane_mode_on")),
        ]

    def _page_internet(self, ctx: w.Ctx) -> list[w.Row]:
        rows = [self.pref(ctx, WIFI, toggle=Toggle("global", "wifi_on"))]
        if self.host.store.get_bool("global", "wifi_on"):
            rows.append(self.cat(ctx, "Available networks"))
            rows.append(self.pref(ctx, "AndroidWifi", "Connected", icon="wifi"))
            rows.append(self.pref(ctx, "Guest-5G", "Saved", icon="wifi"))
        else:
            rows.append(self.pref(ctx, f"To see available networks, turn {WIFI} on"))
        return rows

    def _page_connected(self, ctx: w.Ctx) -> list[w.Row]:
        bt = Toggle("global", "bluetooth_on")
        return [
            self.cat(ctx, "Connection preferences"),
            self.pref(ctx, "Bluetooth", "On" if self.on(bt) else "Off", icon="devices",
                      toggle=bt),
        ]

    def _page_apps(self, ctx: w.Ctx) -> list[w.Row]:
        n = len(self.host.packages())
        return [self.pref(ctx, f"See all {n} apps", on_click=self.open("all_apps"))]

    def _page_all_apps(self, ctx: w.Ctx) -> list[w.Row]:
        rows = []
        for info in sorted(self.host.packages(), key=lambda p: (p.label or p.name).lower()):
            size = 4 + zlib.crc32(info.name.encode()) % 120
            rows.append(self.pref(ctx, info.label or info.name, f"{size} MB", icon="app",
                                  on_click=self.open("app_info", package=info.name)))
        return rows

    def _page_app_info(self, ctx: w.Ctx) -> list[w.Row]:
        pkg = self.args.get("package", "")
        app = self.host.app(pkg)
        if app is None:
            return [self.pref(ctx, "App not installed")]
        running = self.host.running(pkg)

        def buttons(y: int) -> View:
            row = View(cls=w.LINEAR, bounds=(0, y, ctx.width, y + ctx.dp(72)))
            bw = (ctx.width - ctx.dp(24) * 2 - ctx.dp(16) * 2) // 3
            specs: list[tuple[str, str, bool, Callable[[], None]]] = [
                     ("Open", "button1", app.launcher_activity is not None,
                      lambda: self._open_app(pkg)),
                     ("Uninstall" if not app.system else "Disable", "button2", not app.system,
                      lambda: self._uninstall(pkg)),
                     ("Force stop", "button3", running, self._ask_force_stop)]
            for i, (label, rid, enabled, action) in enumerate(specs):
                x = ctx.dp(24) + i * (bw + ctx.dp(16))
                row.add(w.button(ctx, (x, y + ctx.dp(12), x + bw, y + ctx.dp(60)), label,
                                 rid=f"{PKG}:id/{rid}", filled=enabled, enabled=enabled,
                                 on_click=action if enabled else None))
            return row

        return [
            (ctx.dp(64), lambda y: w.text(ctx, ctx.dp(24), y + ctx.dp(12), ctx.width - ctx.dp(48),
                                          app.label, 24, rid=f"{PKG}:id/entity_header_title")),
            (ctx.dp(72), buttons),
            self.pref(ctx, "Package name", pkg),
        ]

    def _open_app(self, pkg: str) -> None:
        self.host.launch_package(pkg)

    def _uninstall(self, pkg: str) -> None:
        if self.host.uninstall_package(pkg):
            self.finish()

    def _ask_force_stop(self) -> None:
        self.dialog_open = "force_stop"

    def _page_battery(self, ctx: w.Ctx) -> list[w.Row]:
        level = self.host.battery_level()
        return [
            (ctx.dp(72), lambda y: w.text(ctx, ctx.dp(24), y + ctx.dp(8), ctx.width - ctx.dp(48),
                                          f"{level}%", 40, rid=f"{PKG}:id/battery_level")),
            self.pref(ctx, "Battery status", self._battery_summary()),
            self.pref(ctx, "Battery Saver", toggle=Toggle("global", "low_power")),
            self.pref(ctx, "Battery percentage", "Show battery percentage in status bar",
                      toggle=Toggle("system", "status_bar_show_battery_percent")),
        ]

    def _page_storage(self, ctx: w.Ctx) -> list[w.Row]:
        used, cap = self.host.vfs.used_bytes, self.host.vfs.capacity
        return [
            self.pref(ctx, f"{used * 100 // max(1, cap)}% used",
                      f"{human_bytes(used)} used of {human_bytes(cap)}"),
            self.pref(ctx, "Free space", human_bytes(cap - used)),
        ]

    def _page_sound(self, ctx: w.Ctx) -> list[w.Row]:
        return [
            self.slider(ctx, "Media volume", "system", "volume_music_speaker", 15, 5,
                        f"{PKG}:id/seekbar", lambda v: f"{round(v * 100 / 15)}%"),
            self.pref(ctx, "Do Not Disturb", toggle=Toggle("global", "zen_mode")),
            self.pref(ctx, "Vibration & haptics",
                      toggle=Toggle("system", "haptic_feedback_enabled")),
        ]

    def _page_display(self, ctx: w.Ctx) -> list[w.Row]:
        timeout = self.host.store.get_int("system", "screen_off_timeout", 60000)
        label = dict(TIMEOUTS).get(timeout, f"{timeout // 1000} seconds")
        return [
            self.cat(ctx, "Brightness"),
            self.slider(ctx, "Brightness level", "system", "screen_brightness", 255, 102,
                        f"{PKG}:id/seekbar", lambda v: f"{round(v * 100 / 255)}%"),
            self.pref(ctx, "Adaptive brightness", "Optimize brightness level for light",
                      toggle=Toggle("system", "screen_brightness_mode")),
            self.cat(ctx, "Lock display"),
            self.pref(ctx, "Screen timeout", f"After {label} of inactivity",
                      on_click=self._open_dialog("timeout")),
            self.cat(ctx, "Appearance"),
            self.pref(ctx, "Dark theme", toggle=Toggle("secure", "ui_night_mode", "2", "1")),
        ]

    def _page_location(self, ctx: w.Ctx) -> list[w.Row]:
        return [self.pref(ctx, "Use location", toggle=Toggle("secure", "location_mode", "3", "0"))]

    def _page_about(self, ctx: w.Ctx) -> list[w.Row]:
        spec = self.host.spec
        name = self.host.store.get("global", "device_name") or spec.model
        return [
            self.pref(ctx, "Device name", name, on_click=self._open_rename),
            self.cat(ctx, "Device details"),
            self.pref(ctx, "Model", spec.model),
            self.pref(ctx, "Android version", spec.release),
            self.pref(ctx, "Serial number", spec.serialno),
        ]

    # ── dialogs ──────────────────────────────────────────────────────────────────────
    def _open_dialog(self, which: str) -> Callable[[], None]:
        def do() -> None:
            self.dialog_open = which
        return do

    def _open_rename(self) -> None:
        self.rename.set(self.host.store.get("global", "device_name") or "")
        self.rename.on_submit = lambda _t: self._save_rename()
        self.dialog_open = "rename"
        self.host.focus(self, self.rename)

    def _close(self) -> None:
        self.dialog_open = ""
        self.host.focus(self, None)

    def _save_rename(self) -> None:
        name = self.rename.text.strip()
        if name:
            self.host.store.put("global", "device_name", name)
        self._close()

    def build_dialog(self, ctx: w.Ctx) -> View | None:
        if self.dialog_open == "rename":
            def body(x: int, y: int, width: int) -> tuple[list[View], int]:
                h = ctx.dp(56)
                return [w.edit_text(ctx, (x, y, x + width, y + h), self.rename,
                                    self.focus is self.rename, rid="android:id/edit",
                                    on_focus=self.focus_field(self.rename), boxed=False)], h

            return w.dialog(ctx, "Device name", body,
                            [("OK", "android:id/button1", self._save_rename),
                             ("Cancel", "android:id/button2", self._close)], package=PKG)
        if self.dialog_open == "timeout":
            current = self.host.store.get_int("system", "screen_off_timeout", 60000)

            def radios(x: int, y: int, width: int) -> tuple[list[View], int]:
                out = []
                h = ctx.dp(48)
                for i, (ms, label) in enumerate(TIMEOUTS):
                    top = y + i * h

                    def pick(ms: int = ms) -> None:
                        self.host.store.put("system", "screen_off_timeout", str(ms))
                        self._close()
                    out.append(View(cls="android.widget.RadioButton",
                                    bounds=(x, top, x + width, top + h), text=label,
                                    checkable=True, checked=ms == current, clickable=True,
                                    focusable=True, on_click=pick,
                                    paint=Paint("radio", size=16, color="on_surface")))
                return out, h * len(TIMEOUTS)

            return w.dialog(ctx, "Screen timeout", radios,
                            [("Cancel", "android:id/button2", self._close)], package=PKG)
        if self.dialog_open == "force_stop":
            pkg = self.args.get("package", "")

            def message(x: int, y: int, width: int) -> tuple[list[View], int]:
                v = w.text(ctx, x, y, width, "If you force stop an app, it may misbehave.", 14,
                           "on_surface_var", rid="android:id/message", lines=2)
                return [v], v.bounds[3] - v.bounds[1]

            def stop() -> None:
                self._close()
                self.host.force_stop(pkg)

            return w.dialog(ctx, "Force stop?", message,
                            [("OK", "android:id/button1", stop),
                             ("Cancel", "android:id/button2", self._close)], package=PKG)
        return None

    def on_back(self) -> bool:
        if self.dialog_open:
            self._close()
            return True
        return False


class SearchActivity(Activity):
    """Settings search: an EditText that filters an index of setting titles."""

    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        self.query = TextField(hint="Search settings")
        self.query.on_submit = lambda _t: self.host.focus(self, None)
        self.focus = self.query  # opens with the keyboard up, as on a phone

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        pad = ctx.dp(16)
        root = View(cls=w.LINEAR, bounds=c, paint=Paint("fill", bg="bg"))
        bh = ctx.dp(56)
        y = c[1] + ctx.dp(12)
        bar = View(cls=w.LINEAR, bounds=(pad, y, ctx.width - pad, y + bh),
                   rid=f"{SEARCH_PKG}:id/search_bar", paint=Paint("fill", bg="search_bg",
                                                                   radius=28))
        s = ctx.dp(48)
        bar.add(View(cls=w.IMAGE_BUTTON, bounds=(pad + ctx.dp(4), y + (bh - s) // 2,
                                                 pad + ctx.dp(4) + s, y + (bh + s) // 2),
                     desc="Navigate up", clickable=True, focusable=True, on_click=self.finish,
                     paint=Paint("icon", icon="arrow_back", color="on_surface", size=24)))
        ex = pad + ctx.dp(56)
        bar.add(w.edit_text(ctx, (ex, y, ctx.width - pad - ctx.dp(16), y + bh), self.query,
                            self.focus is self.query, rid="android:id/search_src_text",
                            on_focus=self.focus_field(self.query), boxed=False))
        root.add(bar)
        q = _norm(self.query.text.strip())
        hits = [(t, p) for t, p in SEARCH_INDEX if q and q in _norm(t)] if q else []
        rows: list[w.Row] = []
        for title, page in hits:
            crumb = "Settings" if title == TITLES.get(page) else f"Settings > {TITLES[page]}"

            def go(page: str = page) -> None:
                self.host.start(PKG, SUB, {"page": page})
            rows.append(_result_row(ctx, title, crumb, go))
        top = y + bh + ctx.dp(12)
        root.add(w.scroll_list(ctx, self.scroll, "results", (0, top, ctx.width, c[3]), rows,
                               rid=f"{SEARCH_PKG}:id/list_results"))
        return root


def _norm(s: str) -> str:
    """Case-folded, with the non-breaking hyphen typed as '-' (``input text`` is ASCII)."""
    return s.lower().replace("\u2011", "-")


def _result_row(ctx: w.Ctx, title: str, crumb: str, go: Callable[[], None]) -> w.Row:
    return (w.pref_height(ctx, crumb),
            lambda y: w.pref_row(ctx, y, title, crumb, icon_name="search", on_click=go))


@register
class SettingsApp(App):
    package = PKG
    label = "Settings"
    apk_path = "/system_ext/priv-app/SettingsGoogle/SettingsGoogle.apk"
    launcher_activity = MAIN
    icon = "settings"
    icon_color = "#4a5a6a"
    activities: ClassVar[dict[str, type[Activity]]] = {
        name: SettingsActivity for name in ALIASES}
    intent_filters = _filters()

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        if intent.data.startswith("package:"):
            return {"package": intent.data[len("package:"):]}
        return {}


@register
class SettingsIntelligence(App):
    package = SEARCH_PKG
    label = "Settings Services"
    apk_path = ("/system_ext/priv-app/SettingsIntelligenceGooglePrebuilt/"
                "SettingsIntelligenceGooglePrebuilt.apk")
    activities: ClassVar[dict[str, type[Activity]]] = {SEARCH_ACTIVITY: SearchActivity}

"""The Android world of one simulated phone: apps, tasks, input, and what the screen shows.

``World`` implements ``farm.sim.spec.WorldAPI``. All state changes (input, ``am``/``pm``,
``settings put``, battery, the status-bar clock) only mark the world dirty; the next
observation rebuilds the view tree, and ``version`` bumps only when the rebuilt tree
differs from the last one (its signature covers everything drawn). Frames and dumps are
cached per version, so repeated observations of an unchanged screen cost microseconds.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable

from farm.sim.faults import Faults
from farm.sim.intents import IntentQuery, ResolveInfo, resolve
from farm.sim.spec import (
    ActivityRecord,
    LogBuffer,
    PackageInfo,
    PhoneSpec,
    SettingsAPI,
    StartResult,
)
from farm.sim.vfs import VirtualFS
from farm.sim.world import keyboard, systemui, uixml
from farm.sim.world import widgets as w
from farm.sim.world.activity import Task, TaskStack
from farm.sim.world.apps import REGISTRY, SYSTEM_PACKAGES
from farm.sim.world.apps.base import Activity, App
from farm.sim.world.apps.dialer import PKG as DIALER_PKG
from farm.sim.world.apps.dialer import Dialer
from farm.sim.world.apps.launcher import ACTIVITY as HOME_ACTIVITY
from farm.sim.world.apps.launcher import PKG as HOME_PKG
from farm.sim.world.apps.userapp import make_user_app
from farm.sim.world.notifications import Notification, Notifications
from farm.sim.world.notifications import dump as notification_dump
from farm.sim.world.render import Renderer
from farm.sim.world.settings_store import SettingsStore, default_settings
from farm.sim.world.views import (
    Paint,
    Rect,
    TextField,
    View,
    finalize,
    find_hit,
    hit,
    signature,
)

IME_PACKAGE = PackageInfo(keyboard.PACKAGE,
                          "/product/app/LatinIMEGooglePrebuilt/LatinIMEGooglePrebuilt.apk",
                          True, None, keyboard.LABEL)

# KEYCODE_* → character, for ``input keyevent KEYCODE_A`` and friends
_KEY_CHARS = {**{29 + i: chr(ord("a") + i) for i in range(26)},
              **{7 + i: str(i) for i in range(10)},
              55: ",", 56: ".", 62: " ", 69: "-", 70: "=", 76: "/", 77: "@", 81: "+"}
LONG_PRESS_MS = 500


def short_component(package: str, cls: str) -> str:
    """``pkg/.Act`` when the class is inside the package, as Android prints components."""
    if cls.startswith(package + "."):
        return f"{package}/{cls[len(package):]}"
    return f"{package}/{cls}"


class World:
    """One phone's Android model (see module doc)."""

    def __init__(self, spec: PhoneSpec, vfs: VirtualFS, faults: Faults, logcat: LogBuffer,
                 rng: random.Random, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.spec = spec
        self.vfs = vfs
        self.faults = faults
        self.logcat = logcat
        self.rng = rng
        self.clock = clock
        # the status-bar clock shows wall time; logcat's clock is the phone's wall clock
        self._wall = wall_clock or logcat.clock
        self.width, self.height, self.density = spec.screen.width, spec.screen.height, \
            spec.screen.density
        self.store = SettingsStore(default_settings(spec.model, rng))
        self.store.listeners.append(self._setting_changed)
        # the WorldAPI face of the same store (the protocol attribute is typed SettingsAPI)
        self.settings: SettingsAPI = self.store
        self.battery = faults.battery
        self.screen_on = True
        self.rotation = 0

        self._apps: dict[str, App] = {}
        self._motion: tuple[float, float, float] | None = None  # motionevent DOWN: x, y, t
        for cls in REGISTRY:
            self._apps[cls.package] = cls(self)
        self._pids: dict[str, int] = {}
        self.stack = TaskStack(rng)
        self._ime = False
        self._shift = False
        self._anr: tuple[str, str] | None = None  # (package, activity) of the ANR dialog
        self.notifications = Notifications()
        self.shade_open = False  # the notification shade is pulled down
        self.overview_open = False  # Overview (recents) is shown
        self._overview_pick = 0  # its selected card (0 = the most recent task)

        self._renderer = Renderer(self.width, self.height, self.density)
        self._version = 0
        self._dirty = True
        self._live: tuple[object, ...] = ()
        self._sig: tuple[object, ...] = ()
        self._windows: list[View] = []
        self._kb_rect: Rect | None = None
        self._dialog_window: View | None = None
        self._anr_window: View | None = None
        self._shade_window: View | None = None
        self._overview_window: View | None = None
        self._frame: bytes | None = None
        self._png: bytes | None = None
        self._xml: str | None = None

        faults.on_anr.append(self.show_anr)
        self._start_process(HOME_PKG, HOME_ACTIVITY)
        self.stack.new_task(HOME_PKG, self._apps[HOME_PKG].create(HOME_ACTIVITY, {}))

    # ── Host (what apps may call) ────────────────────────────────────────────────────
    def battery_level(self) -> int:
        return self.battery.current_level(self.clock())

    def wall_time(self) -> float:
        return self._wall()

    def app(self, package: str) -> App | None:
        return self._apps.get(package)

    def running(self, package: str) -> bool:
        return package in self._pids

    def pid(self, package: str) -> int | None:
        """Process id of a running package (for ``pidof``/``ps``), None when stopped."""
        return self._pids.get(package)

    def start(self, package: str, activity: str, args: dict[str, str] | None = None, *,
              new_task: bool = False) -> None:
        """An app starts an activity: it goes on top of the current task, or (``new_task``,
        FLAG_ACTIVITY_NEW_TASK as launchers start things) on its own app's task, brought
        to the front."""
        app = self._apps.get(package)
        if app is None or app.resolve(activity) is None:
            return
        task = self.stack.front()
        if new_task:
            task = self.stack.task_for(package)
            if task is not None:
                self.stack.to_front(task)
        act = app.create(activity, dict(args or {}))
        extras = " (has extras)" if args else ""
        caller = self.stack.top()
        uid = self._uid(caller.activity.package) if caller else 1000
        self._log_start(f"cmp={short_component(package, activity)}{extras}", uid)
        self._start_process(package, activity)
        if task is None or (new_task and task.affinity != package):
            self.stack.new_task(package, act)
        else:
            self.stack.push(task, act)
        self._after_switch()

    def finish(self, activity: Activity) -> None:
        self.stack.remove_activity(activity)
        self._ensure_home()
        self._after_switch()

    def focus(self, activity: Activity, field: TextField | None) -> None:
        activity.focus = field
        self._ime = field is not None
        self._shift = False
        self._touch()

    # ── input ────────────────────────────────────────────────────────────────────────
    def tap(self, x: float, y: float) -> None:
        if not self.screen_on:
            return
        self._ensure()
        self._touch()
        if self._anr_window is not None:
            node = find_hit(self._anr_window, x, y, _clickable)
            if node is not None and node.on_click is not None:
                node.on_click()
            return  # the ANR dialog is modal
        if self._kb_rect is not None and hit(self._kb_rect, x, y):
            key = keyboard.key_at(self._kb_rect, self.density, x, y)
            if key is not None:
                self._press_ime_key(key.action, key.label)
            return
        for win in reversed(self._windows):
            node = find_hit(win, x, y, _clickable)
            if node is not None:
                if node.on_click is not None:
                    node.on_click()
                elif node.on_drag is not None:
                    node.on_drag(x, y)
                return
            if win is self._overview_window and not self._on_nav_bar(y):
                self.overview_open = False
                self.go_home()  # empty space in Overview: home, as on a phone
                return
            if win is self._shade_window and not self._on_nav_bar(y):
                self.collapse_shade()  # a tap on the shade's empty space closes it
                return
            if win is self._dialog_window and not self._on_nav_bar(y):
                # outside a dialog but not on the nav bar: tapping outside cancels it
                top = self.stack.top()
                if top is not None:
                    top.activity.on_back()
                return

    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int) -> None:
        if not self.screen_on:
            return
        slop = 8 * self.density / 160.0
        if abs(x2 - x1) <= slop and abs(y2 - y1) <= slop:
            if duration_ms >= LONG_PRESS_MS:
                self._long_press(x1, y1)
            else:
                self.tap(x1, y1)
            return
        self._ensure()
        self._touch()
        if self.overview_open and not self._on_nav_bar(y1):
            self._overview_swipe(x2 - x1, y2 - y1, 4 * slop)
            return
        if self._anr_window is None:
            pull = 4 * slop  # SystemUI's touch slop for the shade, roughly
            if not self.shade_open and y1 <= systemui.status_bar_height(self.density) \
                    and y2 - y1 >= pull:
                self.expand_shade()
                return
            if self.shade_open and y1 - y2 >= pull and not self._on_nav_bar(y1):
                self.collapse_shade()
                return
        windows = ([self._anr_window] if self._anr_window is not None
                   else list(reversed(self._windows)))
        for win in windows:
            if win.vis is None or not hit(win.vis, x1, y1):
                continue
            drag = find_hit(win, x1, y1, lambda v: v.on_drag is not None and v.enabled)
            if drag is not None and drag.on_drag is not None:
                drag.on_drag(x2, y2)
                return
            # the innermost scrollable under the finger takes it (no nested scrolling)
            node = find_hit(win, x1, y1, lambda v: v.on_scroll is not None)
            if node is not None and node.on_scroll is not None:
                node.on_scroll(int(x2 - x1), int(y2 - y1))
            return  # the topmost window under the finger takes the gesture

    def _long_press(self, x: float, y: float) -> None:
        self._ensure()
        for win in reversed(self._windows):
            node = find_hit(win, x, y, lambda v: v.on_long_click is not None)
            if node is not None and node.on_long_click is not None:
                self._touch()
                node.on_long_click()
                return
        # without a long-click handler Android performs the click on release
        self.tap(x, y)

    def input_text(self, text: str) -> None:
        field = self._focused_field()
        if field is not None and text:
            field.insert(text)
            self._touch()

    def select_all(self) -> None:
        """Ctrl+A in the focused field."""
        field = self._focused_field()
        if field is not None:
            field.select_all()
            self._touch()

    def motion(self, action: str, x: float, y: float) -> None:
        """``input motionevent``: DOWN starts a gesture, MOVE follows it, UP ends it as
        the tap, long press or swipe it was (by distance and the time held); CANCEL
        drops it."""
        now = time.monotonic()
        if action == "DOWN":
            self._motion = (x, y, now)
        elif action == "CANCEL":
            self._motion = None
        elif self._motion is not None and action == "UP":
            x0, y0, t0 = self._motion
            self._motion = None
            self.swipe(x0, y0, x, y, round((now - t0) * 1000))

    def clear_text(self) -> None:
        field = self._focused_field()
        if field is not None and field.text:
            field.set("")
            self._touch()

    def key(self, keycode: int) -> None:
        self._touch()
        if keycode == 26:  # POWER
            self.screen_on = not self.screen_on
            return
        if keycode == 224:  # WAKEUP
            self.screen_on = True
            return
        if keycode == 223:  # SLEEP
            self.screen_on = False
            return
        if not self.screen_on:
            return
        if self.shade_open and keycode in (3, 4, 187):  # HOME, BACK, APP_SWITCH close it
            self.collapse_shade()
            if keycode == 4:
                return
        if self.overview_open and keycode in (3, 4):  # out of Overview
            self.overview_open = False
            if keycode == 4:
                self._touch()
                return
        if keycode == 6:  # ENDCALL
            dialer = self._apps.get(DIALER_PKG)
            if isinstance(dialer, Dialer):
                dialer.end_call()
        elif keycode == 3:  # HOME
            self._ime = False
            self.go_home()
        elif keycode == 4:  # BACK
            self.back()
        elif keycode == 187:  # APP_SWITCH: Overview; pressed again there, the previous app
            if self.overview_open:
                self.overview_open = False
                tasks = self._recent_tasks()
                if len(tasks) > 1 or (tasks and self.stack.front() is not tasks[0]):
                    target = tasks[1] if self.stack.front() is tasks[0] else tasks[0]
                    self.stack.to_front(target)
                self._after_switch()
            else:
                self.overview_open = True
                self._ime = False
                # the card in the middle: the previous app when one is open, else the newest
                tasks = self._recent_tasks()
                self._overview_pick = 1 if len(tasks) > 1 and \
                    self.stack.front() is tasks[0] else 0
                self._touch()
        elif keycode in (66, 160):  # ENTER, NUMPAD_ENTER
            self._enter()
        elif keycode in (67, 112):  # DEL, FORWARD_DEL (caret is always at the end)
            field = self._focused_field()
            if field is not None and keycode == 67:
                field.delete()
        elif keycode in (24, 25):  # VOLUME_UP / VOLUME_DOWN: media volume
            cur = self.store.get_int("system", "volume_music_speaker", 5)
            new = max(0, min(15, cur + (1 if keycode == 24 else -1)))
            self.settings.put("system", "volume_music_speaker", str(new))
        elif keycode in _KEY_CHARS:
            self.input_text(_KEY_CHARS[keycode])

    def back(self) -> None:
        if self._anr is not None:
            return
        if self._ime:
            self._ime = False
            return
        top = self.stack.top()
        if top is None:
            return
        if top.activity.on_back():
            return
        task = self.stack.front()
        assert task is not None
        app = top.activity.app
        if task.affinity == HOME_PKG:
            return
        if len(task.records) == 1 and top.activity.name == app.launcher_activity:
            # Android 12+: BACK on a launched app's root moves its task behind, not finished
            self.stack.tasks.remove(task)
            self.stack.tasks.insert(0, task)
            self._after_switch()
            return
        self.finish(top.activity)

    def go_home(self) -> None:
        home = self.stack.task_for(HOME_PKG)
        if home is None:
            self._ensure_home()
            home = self.stack.task_for(HOME_PKG)
        assert home is not None
        root = home.root
        if root is not None:
            root.activity.on_back()  # closes the all-apps drawer
        if self.stack.front() is not home:
            self._log_start("act=android.intent.action.MAIN cat=[android.intent.category.HOME] "
                            f"flg=0x10200000 cmp={short_component(HOME_PKG, HOME_ACTIVITY)}",
                            1000)
            self.stack.to_front(home)
        self._after_switch()

    def _enter(self) -> None:
        field = self._focused_field()
        if field is not None:
            if field.on_submit is not None:
                field.on_submit(field.text)
            else:
                self._ime = False
            return
        top = self.stack.top()
        if top is not None:
            top.activity.on_enter()

    def _press_ime_key(self, action: str, label: str) -> None:
        field = self._focused_field()
        if action == "shift":
            self._shift = not self._shift
        elif action == "enter":
            self._enter()
        elif field is None:
            return
        elif action == "del":
            field.delete()
        elif action == "space":
            field.insert(" ")
        elif action == "char":
            field.insert(label.upper() if self._shift else label)
            self._shift = False

    def _focused_field(self) -> TextField | None:
        top = self.stack.top()
        return top.activity.focus if top is not None else None

    def _on_nav_bar(self, y: float) -> bool:
        return y >= self.height - systemui.nav_bar_height(self.density)

    # ── observation ──────────────────────────────────────────────────────────────────
    @property
    def version(self) -> int:
        self._ensure()
        return self._version

    def frame_rgba(self) -> bytes:
        self._ensure()
        if self._frame is None:
            self._frame = self._renderer.render(self._windows, self._dark(), self.screen_on)
        return self._frame

    def frame_png(self) -> bytes:
        self._ensure()
        if self._png is None:
            self._png = Renderer.png(self.frame_rgba(), self.width, self.height)
        return self._png

    def ui_xml(self) -> str:
        self._ensure()
        if self._xml is None:
            self._xml = uixml.dump(self._windows, self.rotation)
        return self._xml

    def windows(self) -> list[View]:
        """The finalized window roots, bottom first (for tests and tools)."""
        self._ensure()
        return self._windows

    def _touch(self) -> None:
        self._dirty = True

    def data_changed(self) -> None:
        """A provider's rows changed (``content delete``): screens showing them redraw,
        as apps observing a provider do."""
        self._touch()

    def _dark(self) -> bool:
        return self.settings.get("secure", "ui_night_mode") == "2"

    def _setting_changed(self, namespace: str, key: str) -> None:
        self._touch()
        if key in ("user_rotation", "accelerometer_rotation"):
            self._sync_rotation()  # the size is read before any frame: change it now

    def _sync_rotation(self) -> None:
        """With auto-rotate off the display takes ``user_rotation`` (0-3, quarter turns);
        with it on, a sim phone is held upright. A quarter turn swaps the logical size:
        apps lay out, screencap draws, the UI dump and taps all use landscape pixels."""
        rotation = 0
        if self.store.get("system", "accelerometer_rotation") != "1":
            value = self.store.get("system", "user_rotation") or "0"
            rotation = int(value) % 4 if value.isdecimal() else 0
        if rotation == self.rotation:
            return
        self.rotation = rotation
        pw, ph = self.spec.screen.width, self.spec.screen.height
        self.width, self.height = (ph, pw) if rotation % 2 else (pw, ph)
        self._renderer = Renderer(self.width, self.height, self.density)
        self._dirty = True

    def _ensure(self) -> None:
        b = self.battery
        live = (int(self._wall() // 60), b.current_level(self.clock()), b.status,
                self.screen_on, self.rotation)
        if self._anr is not None and not self.faults.anr_requested:
            self._anr = None  # `fault clear` ended it
            self._dirty = True
        if not self._dirty and live == self._live:
            return
        self._live = live
        self._dirty = False
        windows = self._build()
        sig = (live[3], self.rotation, self._dark(), tuple(signature(v) for v in windows))
        self._windows = windows
        if sig != self._sig:
            self._sig = sig
            self._version += 1
            self._frame = self._png = None
            self._xml = None

    def _build(self) -> list[View]:
        """Build and finalize every window for the current state."""
        top = self.stack.top()
        if top is None:
            self._ensure_home()
            top = self.stack.top()
        assert top is not None
        act = top.activity
        if act.focus is None:
            self._ime = False
        sb_h = systemui.status_bar_height(self.density)
        nav_h = systemui.nav_bar_height(self.density)
        kb_h = keyboard.height(self.density) if self._ime else 0
        bottom = self.height - nav_h - kb_h
        ctx = w.Ctx(self.width, self.height, self.density, (0, sb_h, self.width, bottom))
        screen: Rect = (0, 0, self.width, self.height)
        is_home = act.shows_wallpaper

        app_root = View(cls=w.FRAME, bounds=screen, package=act.package, clips=True,
                        paint=Paint("wallpaper") if is_home else Paint("fill", bg="bg"))
        decor = View(cls=w.LINEAR, bounds=screen)
        content = View(cls=w.FRAME, bounds=ctx.content, rid="android:id/content")
        content.add(act.build(ctx))
        decor.add(content)
        app_root.add(decor)
        windows = [app_root]

        # z-order: app, its dialog (dims the app), ANR, system bars, then the IME on top
        dctx = w.Ctx(self.width, bottom, self.density, ctx.content)
        dialog = act.build_dialog(dctx)
        self._dialog_window = dialog
        if dialog is not None:
            windows.append(dialog)
        self._anr_window = None
        if self._anr is not None:
            pkg = self._anr[0]
            app = self._apps.get(pkg)
            self._anr_window = systemui.anr_dialog(dctx, app.label if app else pkg,
                                                   self._anr_close, self._anr_wait)
            windows.append(self._anr_window)
        self._overview_window = None  # under the status bar, as Quickstep's
        if self.overview_open:
            self._overview_window = systemui.overview(
                w.Ctx(self.width, self.height, self.density, ctx.content), self._recent_cards(),
                self._overview_pick, self._clear_recents)
            windows.append(self._overview_window)
        b = self.battery
        st = self.store
        fg = "on_wallpaper" if is_home and not self.overview_open else "on_surface"
        windows.append(systemui.status_bar(
            ctx, self._wall(), self.battery_level(), b.status in (2, 5),
            st.get_bool("global", "wifi_on"), st.get_bool("global", "airplane_mode_on"),
            st.get_bool("system", "status_bar_show_battery_percent"), fg))
        self._shade_window = None
        if self.shade_open:
            self._shade_window = systemui.notification_shade(
                w.Ctx(self.width, self.height, self.density, ctx.content), self._wall(),
                self._quick_tiles(), self._shade_items(), self._clear_notifications)
            windows.append(self._shade_window)
        nav_bg = "kb_bg" if self._ime else ("" if is_home else "nav_bg")
        windows.append(systemui.nav_bar(ctx, "on_wallpaper" if is_home else "on_surface_var",
                                        nav_bg, self.back, self.go_home,
                                        lambda: self.key(187)))
        self._kb_rect = None
        if self._ime:
            rect = (0, bottom, self.width, bottom + kb_h)
            self._kb_rect = rect
            field = act.focus
            word = field.text.rsplit(" ", 1)[-1] if field is not None else ""
            windows.append(keyboard.window(rect, self._shift, word))
        for win in windows:
            finalize(win, win.package or act.package, screen)
        return windows

    # ── notifications and the shade ──────────────────────────────────────────────────
    def post_notification(self, package: str, title: str, text: str,
                          tag: str | None = None) -> Notification:
        """Post as ``package`` (its uid; com.android.shell is 2000, as on a phone)."""
        uid = 2000 if package == "com.android.shell" else self._uid(package)
        n = self.notifications.post(package, title, text, uid=uid, tag=tag,
                                    when_ms=int(self._wall() * 1000))
        self._touch()
        return n

    def cancel_notification(self, key: str) -> bool:
        gone = self.notifications.cancel(key)
        self._touch()
        return gone

    def notification_dump(self, redact: bool = True) -> str:
        return notification_dump(self.notifications.items, redact=redact)

    def expand_shade(self) -> None:
        if self.screen_on and self._anr is None:
            self.shade_open = True
            self._ime = False
            self._touch()

    def collapse_shade(self) -> None:
        self.shade_open = False
        self._touch()

    def _quick_tiles(self) -> list[systemui.QuickTile]:
        st = self.store

        def flip(ns: str, key: str, on: str = "1", off: str = "0") -> Callable[[], None]:
            def do() -> None:
                self.settings.put(ns, key, off if st.get(ns, key) == on else on)
                self._touch()
            return do

        return [systemui.QuickTile(label, glyph, st.get(ns, key) == on, flip(ns, key, on, off))
                for label, glyph, ns, key, on, off in (
                    ("Internet", "wifi", "global", "wifi_on", "1", "0"),
                    ("Bluetooth", "devices", "global", "bluetooth_on", "1", "0"),
                    ("Airplane mode", "airplane", "global", "airplane_mode_on", "1", "0"),
                    ("Do Not Disturb", "sound", "global", "zen_mode", "1", "0"),
                    ("Dark theme", "display", "secure", "ui_night_mode", "2", "1"),
                    ("Battery Saver", "battery", "global", "low_power", "1", "0"))]

    def _shade_items(self) -> list[systemui.ShadeItem]:
        def open_it(n: Notification) -> Callable[[], None]:
            def do() -> None:  # the content intent: its app comes to the front
                self.notifications.cancel(n.key)
                self.collapse_shade()
                self.launch_package(n.package)
            return do

        labels = {"com.android.shell": "Shell", **{p.name: p.label for p in self.packages()}}
        return [systemui.ShadeItem(labels.get(n.package, n.package), n.title, n.text,
                                   open_it(n))
                for n in self.notifications.newest_first()]

    def _clear_notifications(self) -> None:
        self.notifications.clear_all()
        self.collapse_shade()

    # ── Overview (recents) ───────────────────────────────────────────────────────────
    def _recent_tasks(self) -> list[Task]:
        """Tasks but home's, most recent first (Overview's order)."""
        return [t for t in reversed(self.stack.tasks) if t.affinity != HOME_PKG]

    def _recent_cards(self) -> list[systemui.RecentCard]:
        labels = {p.name: p.label for p in self.packages()}

        def open_task(task: Task) -> Callable[[], None]:
            def do() -> None:
                self.overview_open = False
                if task in self.stack.tasks:
                    self.stack.to_front(task)
                self._after_switch()
            return do

        tasks = self._recent_tasks()
        self._overview_pick = max(0, min(self._overview_pick, len(tasks) - 1))
        return [systemui.RecentCard(labels.get(t.affinity, t.affinity), _APP_GLYPHS.get(
                    t.affinity, "app"), open_task(t)) for t in tasks]

    def _overview_swipe(self, dx: float, dy: float, pull: float) -> None:
        tasks = self._recent_tasks()
        if abs(dx) >= abs(dy) and abs(dx) >= pull:  # sideways: the next or previous card
            step = -1 if dx > 0 else 1
            self._overview_pick = max(0, min(self._overview_pick + step, len(tasks) - 1))
        elif dy <= -pull and tasks:  # up: dismiss the card in the middle
            self.remove_task(tasks[self._overview_pick].task_id)
            self.overview_open = True  # remove_task's switch keeps Overview up
        self._touch()

    def _clear_recents(self) -> None:
        for task in self._recent_tasks():
            self.stack.remove(task)
        self.overview_open = False
        self.go_home()

    # ── activity manager ─────────────────────────────────────────────────────────────
    def current_focus(self) -> tuple[str, str] | None:
        if self.overview_open:  # Overview is the launcher's activity, resumed over the tasks
            return HOME_PKG, HOME_ACTIVITY
        top = self.stack.top()
        return (top.activity.package, top.activity.name) if top is not None else None

    def activity_stack(self) -> list[ActivityRecord]:
        return self.stack.records()

    def start_activity(self, component: str,
                       args: dict[str, str] | None = None) -> StartResult:
        """``am start -n``; ``args`` carry a resolved implicit intent's data to the app.

        An intent with data that reaches a running instance is delivered to it
        (``delivered_to_top``), as ``onNewIntent`` would; without data the task is
        only brought to the front.
        """
        pkg, sep, cls = component.partition("/")
        if not sep or not pkg or not cls:
            return StartResult("no_such_activity", component)
        # ComponentName.unflattenFromString: a leading '.' is relative to the package
        full = pkg + cls if cls.startswith(".") else cls
        app = self._apps.get(pkg)
        resolved = app.resolve(full) if app is not None else None
        if resolved is None and app is not None and getattr(app, "home_activity", None) == full:
            resolved = full
        if app is None or resolved is None:
            return StartResult("no_such_activity", component, pkg, full)
        self._touch()
        if args:
            app.on_intent(resolved, args)
        if pkg == HOME_PKG:
            front = self.stack.front()
            was_front = front is not None and front.affinity == HOME_PKG
            self.go_home()
            outcome = "delivered_to_top" if args is not None else "brought_to_front"
            return StartResult(outcome if was_front else "ok", component, pkg, full)
        task = self.stack.task_for(pkg)
        if task is not None and task.root is not None and task.root.activity.name == resolved:
            self.stack.to_front(task)
            self._after_switch()
            outcome = "delivered_to_top" if args else "brought_to_front"
            return StartResult(outcome, component, pkg, resolved)
        self._log_start(f"flg=0x10000000 cmp={short_component(pkg, resolved)}", 2000)
        self._start_process(pkg, resolved)
        act = app.create(resolved, dict(args or {}))
        if task is not None:
            self.stack.push(task, act)
            self.stack.to_front(task)
        else:
            self.stack.new_task(pkg, act)
        self._after_switch()
        return StartResult("ok", component, pkg, resolved)

    def call_state(self) -> tuple[int, str]:
        """(TelephonyManager call state, incoming number): idle without a Phone app."""
        dialer = self._apps.get(DIALER_PKG)
        return dialer.line_state() if isinstance(dialer, Dialer) else (0, "")

    def input_method_state(self) -> tuple[bool, str, str]:
        """(keyboard shown, focused field's hint, its package) for ``dumpsys input_method``."""
        self._ensure()
        field = self._focused_field()
        top = self.stack.top()
        pkg = top.activity.package if top is not None else ""
        return self._ime, field.hint if field is not None else "", pkg

    def remove_task(self, task_id: int) -> bool:
        """``am stack remove`` / swiping a card away in recents: the task is gone."""
        for task in self.stack.tasks:
            if task.task_id == task_id:
                if task.affinity == HOME_PKG:
                    return True  # the home task is never removed
                self.stack.remove(task)
                self._ensure_home(front=self.stack.front() is None)
                self._after_switch()
                return True
        return False

    def has_activity(self, package: str, activity: str) -> bool:
        app = self._apps.get(package)
        return app is not None and (app.resolve(activity) is not None
                                    or getattr(app, "home_activity", None) == activity)

    def resolve_intent(self, intent: IntentQuery) -> list[ResolveInfo]:
        """Activities an implicit intent reaches, best first (``resolve-activity``)."""
        filters = [(app.package, app.label, f) for app in self._apps.values()
                   for f in app.intent_filters]
        return resolve(filters, intent)

    def intent_args(self, info: ResolveInfo, intent: IntentQuery) -> dict[str, str]:
        app = self._apps.get(info.package)
        return app.intent_args(info.activity, intent) if app is not None else {}

    def launch_package(self, package: str) -> bool:
        app = self._apps.get(package)
        if app is None or app.launcher_activity is None:
            return False
        self._touch()
        task = self.stack.task_for(package)
        self._log_start("act=android.intent.action.MAIN cat=[android.intent.category.LAUNCHER] "
                        f"flg=0x10200000 cmp={short_component(package, app.launcher_activity)}",
                        self._uid(HOME_PKG))
        if task is not None:
            self.stack.to_front(task)
        else:
            self._start_process(package, app.launcher_activity)
            self.stack.new_task(package, app.create(app.launcher_activity, {}))
        self._after_switch()
        return True

    def force_stop(self, package: str) -> None:
        if package not in self._apps:
            return
        self._touch()
        pid = self._pids.pop(package, None)
        self.stack.remove_package(package)
        if self._anr is not None and self._anr[0] == package:
            self._dismiss_anr()
        self.logcat.log("I", "ActivityManager",
                        f"Force stopping {package} appid={self._uid(package)} user=0: "
                        f"from pid {pid or self._system_pid()}")
        self._ensure_home(front=package == HOME_PKG)
        self._after_switch()

    def clear_package(self, package: str) -> bool:
        app = self._apps.get(package)
        if app is None:
            return False
        self.force_stop(package)
        app.reset()
        self.logcat.log("I", "ActivityManager", f"Clearing user data for {package}")
        return True

    def packages(self) -> list[PackageInfo]:
        return [*SYSTEM_PACKAGES, IME_PACKAGE, *(a.info() for a in self._apps.values())]

    def install_package(self, apk_path: str, package: str, label: str) -> None:
        old = self._apps.get(package)
        if old is not None and old.system:
            raise ValueError(f"cannot replace system package {package}")
        self._touch()
        if old is not None:
            self.force_stop(package)
        cls = make_user_app(package, label, apk_path)
        app = cls(self)
        self._apps[package] = app
        self.logcat.log("I", "PackageManager", f"Package {package} codePath changed to {apk_path}")

    def uninstall_package(self, package: str) -> bool:
        app = self._apps.get(package)
        if app is None or app.system:
            return False
        self.force_stop(package)
        del self._apps[package]
        self.logcat.log("I", "PackageManager", f"Removing package {package}")
        self._touch()
        return True

    def show_anr(self) -> None:
        top = self.stack.top()
        if top is None:
            return
        act = top.activity
        self._anr = (act.package, act.name)
        self.faults.anr_requested = True
        self._ime = False
        self.logcat.log("E", "ActivityManager",
                        f"ANR in {act.package} ({short_component(act.package, act.name)})")
        self._touch()

    def anr_shown(self) -> bool:
        self._ensure()
        return self._anr is not None

    def _anr_close(self) -> None:
        if self._anr is not None:
            pkg = self._anr[0]
            self._dismiss_anr()
            self.force_stop(pkg)

    def _anr_wait(self) -> None:
        self._dismiss_anr()

    def _dismiss_anr(self) -> None:
        self._anr = None
        self.faults.anr_requested = False
        self._touch()

    # ── bookkeeping ──────────────────────────────────────────────────────────────────
    def _after_switch(self) -> None:
        """A different activity may be on top now: IME follows its focused field."""
        top = self.stack.top()
        self._ime = top is not None and top.activity.focus is not None
        self._shift = False
        self._touch()

    def _ensure_home(self, front: bool = False) -> None:
        """Restart the launcher if it is gone: in front if it was stopped, else behind."""
        if self.stack.task_for(HOME_PKG) is None:
            self._start_process(HOME_PKG, HOME_ACTIVITY)
            home = self.stack.new_task(HOME_PKG, self._apps[HOME_PKG].create(HOME_ACTIVITY, {}))
            if not front:
                self.stack.tasks.remove(home)
                self.stack.tasks.insert(0, home)

    def _uid(self, package: str) -> int:
        if package in ("com.android.settings", "android"):
            return 1000
        return 10000 + zlib.crc32(package.encode()) % 300

    def _system_pid(self) -> int:
        return 1000 + self.spec.seed % 500

    def _start_process(self, package: str, activity: str) -> None:
        if package in self._pids:
            return
        pid = self.rng.randrange(2000, 32000)
        self._pids[package] = pid
        self.logcat.log("I", "ActivityManager",
                        f"Start proc {pid}:{package}/u0a{self._uid(package) % 10000} for "
                        f"next-top-activity {{{short_component(package, activity)}}}",
                        pid=self._system_pid(), tid=self._system_pid())

    def _log_start(self, intent: str, uid: int) -> None:
        tag = "ActivityTaskManager" if self.spec.sdk >= 29 else "ActivityManager"
        self.logcat.log("I", tag, f"START u0 {{{intent}}} from uid {uid}",
                        pid=self._system_pid(), tid=self._system_pid())


#: Overview's card icons for the apps that have a glyph of their own
_APP_GLYPHS = {"com.android.settings": "settings", "com.android.chrome": "internet",
               "org.distrl.shop": "apps", "com.google.android.dialer": "sound"}


def _clickable(v: View) -> bool:
    return v.clickable and v.enabled and (v.on_click is not None or v.on_drag is not None)

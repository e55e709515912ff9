"""Clock (com.google.android.deskclock): alarms with a tappable time picker, plus a clock tab.

Alarms are app data (``pm clear`` deletes them) and are served by the AOSP DeskClock
provider, ``content query --uri content://com.android.deskclock/alarms``, with the
columns of its ``alarm_templates`` table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from farm.sim.intents import IntentFilter, IntentQuery
from farm.sim.world import widgets as w
from farm.sim.world.apps import kit
from farm.sim.world.apps.base import Activity, App, Host, register
from farm.sim.world.apps.provider import Cursor
from farm.sim.world.views import Paint, TextField, View

PKG = "com.google.android.deskclock"
MAIN = "com.android.deskclock.DeskClock"
AUTHORITY = "com.android.deskclock"
RID = f"{PKG}:id/"
RINGTONE = "content://settings/system/alarm_alert"
COLUMNS = ["_id", "hour", "minutes", "daysofweek", "enabled", "vibrate", "label", "ringtone",
           "delete_after_use"]
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TABS = (("alarm", "Alarm", "alarm"), ("clock", "Clock", "clock"), ("timer", "Timer", "timer"),
        ("stopwatch", "Stopwatch", "stopwatch"))
TEXT_MODE = "Switch to text input mode for the time input."
CLOCK_MODE = "Switch to clock mode for the time input."


@dataclass
class Alarm:
    id: int
    hour: int  # 0-23
    minutes: int
    enabled: bool = True
    label: str = ""
    days: int = 0  # bit 0 = Monday … bit 6 = Sunday (AOSP Weekdays encoding)
    vibrate: bool = True

    def row(self) -> dict[str, str | int | None]:
        return {"_id": self.id, "hour": self.hour, "minutes": self.minutes,
                "daysofweek": self.days, "enabled": int(self.enabled),
                "vibrate": int(self.vibrate), "label": self.label, "ringtone": RINGTONE,
                "delete_after_use": 0}


def fmt_time(hour: int, minute: int, h24: bool) -> str:
    if h24:
        return f"{hour:02d}:{minute:02d}"
    return f"{(hour % 12) or 12}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def days_summary(a: Alarm, now: time.struct_time) -> str:
    if a.days == 0x7F:
        return "Every day"
    if a.days:
        return ", ".join(DAYS[i][:3] for i in range(7) if a.days >> i & 1)
    if not a.enabled:
        return "Not scheduled"
    later = (a.hour, a.minutes) > (now.tm_hour, now.tm_min)
    return "Today" if later else "Tomorrow"


@dataclass
class Picker:
    """State of the open time-picker dialog."""

    hour: int  # 0-23
    minute: int
    alarm_id: int | None  # None: a new alarm
    pick: str = "hour"  # which the dial sets: hour | minute
    text_mode: bool = False
    error: str = ""


class DeskClock(Activity):
    def __init__(self, app: App, host: Host, name: str, args: dict[str, str]) -> None:
        super().__init__(app, host, name, args)
        assert isinstance(app, Clock)
        self.clock = app
        self.tab = args.get("tab", "alarm")
        self.expanded: int | None = None
        self.picker: Picker | None = None
        self.hour_field = kit.SelectAllField(hint="hh")
        self.minute_field = kit.SelectAllField(hint="mm")
        self.label_field = TextField(hint="Label")
        self.label_for = 0

    def h24(self) -> bool:
        return self.host.store.get("system", "time_12_24") == "24"

    # ── screen ───────────────────────────────────────────────────────────────────────
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        nav_h = ctx.dp(80)
        title = dict((k, t) for k, t, _ in TABS)[self.tab]
        tb = kit.toolbar(ctx, title, PKG, actions=[("more", "More options", "", lambda: None)],
                         title_size=24, title_rid=f"{RID}action_bar_title")
        root.add(tb)
        area = (0, tb.bounds[3], ctx.width, c[3] - nav_h)
        if self.tab == "alarm":
            root.add(self._alarms(ctx, area))
            root.add(kit.fab(ctx_above(ctx, nav_h), "add", "Add alarm", f"{RID}fab",
                             self._new_alarm))
        else:
            root.add(self._other_tab(ctx, area))
        root.add(self._bottom_nav(ctx, (0, c[3] - nav_h, ctx.width, c[3])))
        return root

    def _bottom_nav(self, ctx: w.Ctx, rect: tuple[int, int, int, int]) -> View:
        nav = View(cls=w.FRAME, bounds=rect, rid=f"{RID}tabs",
                   paint=Paint("fill", bg="dialog"))
        tw = ctx.width // len(TABS)
        for i, (key, label, glyph) in enumerate(TABS):
            x = i * tw
            sel = key == self.tab

            def pick(key: str = key) -> None:
                self.tab = key
            item = View(cls=w.FRAME, bounds=(x, rect[1], x + tw, rect[3]), desc=label,
                        rid=f"{RID}tab_menu_{key}", clickable=True, focusable=True,
                        selected=sel, on_click=pick)
            pw = ctx.dp(64)
            px = x + (tw - pw) // 2
            item.add(View(cls=w.IMAGE_VIEW, bounds=(px, rect[1] + ctx.dp(12), px + pw,
                                                    rect[1] + ctx.dp(44)),
                          paint=Paint("fill", bg="surface_var" if sel else "dialog",
                                      radius=16)))
            item.add(w.icon(ctx, x + (tw - ctx.dp(24)) // 2, rect[1] + ctx.dp(16), 24, glyph,
                            color="on_surface" if sel else "on_surface_var"))
            item.add(w.text(ctx, x, rect[1] + ctx.dp(48), tw, label, 12, align="center",
                            color="on_surface" if sel else "on_surface_var",
                            rid=f"{RID}navigation_bar_item_large_label_view"))
            nav.add(item)
        return nav

    def _other_tab(self, ctx: w.Ctx, area: tuple[int, int, int, int]) -> View:
        box = View(cls=w.FRAME, bounds=area)
        y = area[1] + ctx.dp(48)
        if self.tab == "clock":
            t = time.localtime(self.host.wall_time())
            box.add(w.text(ctx, 0, y, ctx.width, fmt_time(t.tm_hour, t.tm_min, self.h24()), 56,
                           align="center", rid=f"{RID}digital_clock"))
            y += ctx.line(56) + ctx.dp(8)
            box.add(w.text(ctx, 0, y, ctx.width, time.strftime("%a, %b ", t) + str(t.tm_mday),
                           18, "on_surface_var", align="center", rid=f"{RID}date"))
        elif self.tab == "timer":
            box.add(w.text(ctx, 0, y, ctx.width, "00h 00m 00s", 48, align="center",
                           rid=f"{RID}timer_setup_time"))
        else:
            box.add(w.text(ctx, 0, y, ctx.width, "00:00.00", 56, align="center",
                           rid=f"{RID}stopwatch_time_text"))
        return box

    def _alarms(self, ctx: w.Ctx, area: tuple[int, int, int, int]) -> View:
        alarms = sorted(self.clock.alarms, key=lambda a: (a.hour, a.minutes, a.id))
        rows: list[w.Row] = [self._alarm_card(ctx, a) for a in alarms]
        if not alarms:
            rows.append(kit.para(ctx, "No alarms", 18, color="on_surface_var",
                                 rid=f"{RID}alarms_empty_view", x=ctx.dp(24)))
        return w.scroll_list(ctx, self.scroll, "alarms", area, rows,
                             rid=f"{RID}alarm_recycler_view", bottom_pad=ctx.dp(96))

    def _alarm_card(self, ctx: w.Ctx, a: Alarm) -> w.Row:
        open_ = self.expanded == a.id
        m = ctx.dp(16)
        h = ctx.dp(148) + (ctx.dp(208) if open_ else 0) + (ctx.line(14) if a.label else 0)
        now = time.localtime(self.host.wall_time())

        def build(y: int) -> View:
            card = View(cls=w.FRAME, bounds=(m, y + ctx.dp(6), ctx.width - m, y + h - ctx.dp(6)),
                        clickable=True, focusable=True, on_click=self._toggle_expand(a.id),
                        desc=f"{fmt_time(a.hour, a.minutes, self.h24())} alarm",
                        paint=Paint("fill", bg="dialog", radius=24))
            x0, x1 = m + ctx.dp(20), ctx.width - m - ctx.dp(16)
            ty = y + ctx.dp(18)
            if a.label:
                card.add(w.text(ctx, x0, ty, x1 - x0 - ctx.dp(56), a.label, 14,
                                "on_surface_var", rid=f"{RID}label"))
                ty += ctx.line(14)
            tv = w.text(ctx, x0, ty, ctx.text_w("00:00 PM", 44) + ctx.dp(8),
                        fmt_time(a.hour, a.minutes, self.h24()), 44,
                        "on_surface" if a.enabled else "on_surface_var",
                        rid=f"{RID}digital_clock")
            tv.clickable = tv.focusable = True
            tv.on_click = self._edit_time(a)
            card.add(tv)
            card.add(kit.icon_button(ctx, x1 - ctx.dp(48), y + ctx.dp(12),
                                     "chevron_up" if open_ else "chevron_down",
                                     "Collapse alarm" if open_ else "Expand alarm",
                                     f"{RID}arrow", self._toggle_expand(a.id)))
            sy = ty + ctx.line(44) + ctx.dp(10)
            card.add(w.text(ctx, x0, sy + (ctx.dp(32) - ctx.line(14)) // 2,
                            x1 - x0 - ctx.dp(64), days_summary(a, now), 14, "on_surface_var",
                            rid=f"{RID}days_of_week"))
            sw = w.switch(ctx, x1, sy + ctx.dp(16), a.enabled, rid=f"{RID}onoff")
            sw.clickable = sw.focusable = True
            sw.on_click = self._flip(a)
            card.add(sw)
            if open_:
                self._expanded_body(ctx, card, a, sy + ctx.dp(44), x0, x1)
            return card
        return (h, build)

    def _expanded_body(self, ctx: w.Ctx, card: View, a: Alarm, y: int, x0: int,
                       x1: int) -> None:
        n = len(DAYS)
        d = ctx.dp(36)
        gap = (x1 - x0 - n * d) // (n - 1)
        for i, day in enumerate(DAYS):
            on = bool(a.days >> i & 1)
            x = x0 + i * (d + gap)
            card.add(View(cls="android.widget.CheckBox", bounds=(x, y, x + d, y + d),
                          text=day[0], desc=day, rid=f"{RID}day_button_{i}", checkable=True,
                          checked=on, clickable=True, focusable=True,
                          on_click=self._flip_day(a, i),
                          paint=Paint("button", color="on_primary" if on else "on_surface",
                                      bg="primary" if on else "surface_var", size=14,
                                      radius=18)))
        y += d + ctx.dp(16)
        rh = ctx.dp(48)
        rows: list[tuple[str, str, str, Callable[[], None], bool | None]] = [
            ("label", a.label or "Add label", f"{RID}edit_label", self._open_label(a), None),
            ("alarm", "Vibrate", f"{RID}vibrate_onoff", self._flip_vibrate(a), a.vibrate),
            ("delete", "Delete", f"{RID}delete", self._delete(a), None),
        ]
        for glyph, text, rid, click, checked in rows:
            cls = "android.widget.CheckBox" if checked is not None else w.TEXT_VIEW
            row = View(cls=cls, bounds=(x0, y, x1, y + rh), text=text, rid=rid, clickable=True,
                       focusable=True, checkable=checked is not None, checked=bool(checked),
                       on_click=click, paint=Paint("icon_text", icon=glyph, size=16))
            if checked is not None:
                row.add(View(cls=w.IMAGE_VIEW, bounds=(x1 - ctx.dp(28), y + ctx.dp(12),
                                                       x1 - ctx.dp(4), y + ctx.dp(36)),
                             paint=Paint("icon", icon="check" if checked else "close", size=20,
                                         color="primary" if checked else "on_surface_var")))
            card.add(row)
            y += rh + ctx.dp(4)

    # ── alarm actions ────────────────────────────────────────────────────────────────
    def _toggle_expand(self, aid: int) -> Callable[[], None]:
        def do() -> None:
            self.expanded = None if self.expanded == aid else aid
        return do

    def _flip(self, a: Alarm) -> Callable[[], None]:
        def do() -> None:
            a.enabled = not a.enabled
            self.clock.changed()
        return do

    def _flip_vibrate(self, a: Alarm) -> Callable[[], None]:
        def do() -> None:
            a.vibrate = not a.vibrate
            self.clock.changed()
        return do

    def _flip_day(self, a: Alarm, i: int) -> Callable[[], None]:
        def do() -> None:
            a.days ^= 1 << i
            self.clock.changed()
        return do

    def _delete(self, a: Alarm) -> Callable[[], None]:
        def do() -> None:
            self.clock.alarms = [x for x in self.clock.alarms if x.id != a.id]
            self.expanded = None
            self.clock.changed()
        return do

    def _open_label(self, a: Alarm) -> Callable[[], None]:
        def do() -> None:
            self.label_for = a.id
            self.label_field.set(a.label)
            self.label_field.on_submit = lambda _t: self._save_label()
            self.dialog_open = "label"
            self.host.focus(self, self.label_field)
        return do

    def _save_label(self) -> None:
        for a in self.clock.alarms:
            if a.id == self.label_for:
                a.label = self.label_field.text.strip()
        self.clock.changed()
        self._close()

    def _close(self) -> None:
        self.dialog_open = ""
        self.picker = None
        self.host.focus(self, None)

    def on_back(self) -> bool:
        if self.dialog_open:
            self._close()
            return True
        return False

    # ── time picker ──────────────────────────────────────────────────────────────────
    def _new_alarm(self) -> None:
        self._open_picker(Picker(hour=8, minute=0, alarm_id=None))

    def _edit_time(self, a: Alarm) -> Callable[[], None]:
        return lambda: self._open_picker(Picker(hour=a.hour, minute=a.minutes, alarm_id=a.id))

    def _open_picker(self, p: Picker) -> None:
        self.picker = p
        self.dialog_open = "time"
        self.host.focus(self, None)

    def _picker_ok(self) -> None:
        p = self.picker
        if p is None:
            return
        if p.text_mode and not self._read_fields(p):
            return
        if p.alarm_id is None:
            a = self.clock.add(p.hour, p.minute)
            self.expanded = a.id
        else:
            for a in self.clock.alarms:
                if a.id == p.alarm_id:
                    a.hour, a.minutes, a.enabled = p.hour, p.minute, True
            self.clock.changed()
        self._close()

    def _read_fields(self, p: Picker) -> bool:
        try:
            hh, mm = int(self.hour_field.text), int(self.minute_field.text)
        except ValueError:
            p.error = "Enter a valid time"
            return False
        lo, hi = (0, 23) if self.h24() else (1, 12)
        if not (lo <= hh <= hi and 0 <= mm <= 59):
            p.error = "Enter a valid time"
            return False
        if not self.h24():
            hh = hh % 12 + (12 if p.hour >= 12 else 0)
        p.hour, p.minute = hh, mm
        return True

    def _toggle_text_mode(self) -> None:
        p = self.picker
        if p is None:
            return
        if p.text_mode:
            if self._read_fields(p):
                p.text_mode = False
                p.error = ""
                self.host.focus(self, None)
            return
        p.text_mode = True
        hh = p.hour if self.h24() else (p.hour % 12) or 12
        self.hour_field.set(f"{hh:02d}" if self.h24() else str(hh))
        self.minute_field.set(f"{p.minute:02d}")
        self.hour_field.on_submit = lambda _t: self._select(self.minute_field)()
        self.minute_field.on_submit = lambda _t: self._picker_ok()
        self._select(self.hour_field)()

    def _select(self, field: kit.SelectAllField) -> Callable[[], None]:
        """Focus a time field with its text selected, so typing replaces it."""
        def do() -> None:
            field.selected = bool(field.text)
            self.host.focus(self, field)
        return do

    def _set_pm(self, pm: bool) -> Callable[[], None]:
        def do() -> None:
            if self.picker is not None:
                self.picker.hour = self.picker.hour % 12 + (12 if pm else 0)
        return do

    def _set_pick(self, which: str) -> Callable[[], None]:
        def do() -> None:
            if self.picker is not None:
                self.picker.pick = which
        return do

    def _dial_value(self, value: int) -> Callable[[], None]:
        def do() -> None:
            p = self.picker
            if p is None:
                return
            if p.pick == "hour":
                if self.h24():
                    p.hour = value
                else:
                    p.hour = value % 12 + (12 if p.hour >= 12 else 0)
                p.pick = "minute"
            else:
                p.minute = value
        return do

    def build_dialog(self, ctx: w.Ctx) -> View | None:
        if self.dialog_open == "label":
            def body(x: int, y: int, width: int) -> tuple[list[View], int]:
                h = ctx.dp(56)
                return [w.edit_text(ctx, (x, y, x + width, y + h), self.label_field,
                                    self.focus is self.label_field,
                                    rid=f"{RID}label_input_field",
                                    on_focus=self.focus_field(self.label_field), boxed=False)], h
            return w.dialog(ctx, "Label", body,
                            [("OK", "android:id/button1", self._save_label),
                             ("Cancel", "android:id/button2", self._close)], package=PKG)
        if self.dialog_open == "time" and self.picker is not None:
            p = self.picker
            return w.dialog(ctx, "Enter time" if p.text_mode else "Select time",
                            lambda x, y, wd: self._picker_body(ctx, p, x, y, wd),
                            [("OK", "android:id/button1", self._picker_ok),
                             ("Cancel", "android:id/button2", self._close)], package=PKG)
        return None

    def _picker_body(self, ctx: w.Ctx, p: Picker, x: int, y: int,
                     width: int) -> tuple[list[View], int]:
        out: list[View] = []
        h24 = self.h24()
        hh = f"{p.hour:02d}" if h24 else str((p.hour % 12) or 12)
        hdr = ctx.dp(72)
        ampm_w = 0 if h24 else ctx.dp(52)
        sep = ctx.dp(24)
        box = (width - ampm_w - sep - (ctx.dp(12) if ampm_w else 0)) // 2
        size = 36 if p.text_mode else 44
        for i, (text, rid, which, field) in enumerate(
                ((hh, "hours", "hour", self.hour_field),
                 (f"{p.minute:02d}", "minutes", "minute", self.minute_field))):
            # clock mode: android:id/hours|minutes; text mode: android:id/input_hour|minute
            bx = x + i * (box + sep)
            rect = (bx, y, bx + box, y + hdr)
            if p.text_mode:
                out.append(w.edit_text(ctx, rect, field, self.focus is field,
                                       rid=f"android:id/input_{which}",
                                       on_focus=self._select(field), size=size))
                continue
            sel = p.pick == which
            out.append(View(cls=w.TEXT_VIEW, bounds=rect, text=text, rid=f"android:id/{rid}",
                            clickable=True, focusable=True, selected=sel,
                            on_click=self._set_pick(which),
                            paint=Paint("button", color="primary" if sel else "on_surface",
                                        bg="surface_var", size=size, radius=12)))
        out.append(w.text(ctx, x + box, y + (hdr - ctx.line(size)) // 2, sep, ":", size,
                          align="center", rid="android:id/input_separator" if p.text_mode
                          else "android:id/separator"))
        if ampm_w:
            ax = x + width - ampm_w
            for i, (label, rid, pm) in enumerate((("AM", "am_label", False),
                                                  ("PM", "pm_label", True))):
                on = (p.hour >= 12) == pm
                ay = y + i * (hdr // 2)
                out.append(View(cls="android.widget.CheckedTextView",
                                bounds=(ax, ay, ax + ampm_w, ay + hdr // 2),
                                text=label, rid=f"android:id/{rid}", checkable=True, checked=on,
                                clickable=True, focusable=True, on_click=self._set_pm(pm),
                                paint=Paint("button", color="on_primary" if on else "on_surface",
                                            bg="primary" if on else "surface_var", size=16,
                                            radius=8)))
        y1 = y + hdr + ctx.dp(16)
        if p.error:
            out.append(w.text(ctx, x, y1, width, p.error, 14, "#d93025",
                              rid="android:id/label_error"))
            y1 += ctx.line(14) + ctx.dp(8)
        if not p.text_mode:
            dial, dh = self._dial(ctx, p, x, y1, width)
            out.append(dial)
            y1 += dh + ctx.dp(8)
        s = ctx.dp(48)
        out.append(kit.icon_button(ctx, x - ctx.dp(8), y1, "clock" if p.text_mode else "keyboard",
                                   CLOCK_MODE if p.text_mode else TEXT_MODE,
                                   "android:id/toggle_mode", self._toggle_text_mode,
                                   color="on_surface_var"))
        return out, y1 + s - y

    def _dial(self, ctx: w.Ctx, p: Picker, x: int, y: int, width: int) -> tuple[View, int]:
        size = min(width, ctx.dp(256))
        cx, cy = x + width // 2, y + size // 2
        dial = View(cls=w.VIEW_GROUP, bounds=(cx - size // 2, y, cx + size // 2, y + size),
                    rid="android:id/radial_picker",
                    paint=Paint("fill", bg="surface_var", radius=size / 2 * 160 / ctx.density))
        r_out = size / 2 - ctx.dp(24)
        values: list[tuple[int, str, float]] = []  # value, label, radius
        if p.pick == "hour":
            if self.h24():
                values = [(h, f"{h}", r_out) for h in range(1, 13)]
                values += [(h % 24, f"{h % 24:02d}", r_out - ctx.dp(36)) for h in range(13, 25)]
                current = p.hour
            else:
                values = [(h % 12, str(h), r_out) for h in range(1, 13)]
                current = p.hour % 12
        else:
            values = [(m, f"{m:02d}", r_out) for m in range(0, 60, 5)]
            current = p.minute
        cell = ctx.dp(40)
        for value, label, r in values:
            step = (value % 12) if p.pick == "hour" else value // 5
            ang = math.radians(step * 30 - 90)
            nx, ny = cx + r * math.cos(ang), cy + r * math.sin(ang)
            sel = value == current
            dial.add(View(cls=w.TEXT_VIEW, bounds=(int(nx - cell / 2), int(ny - cell / 2),
                                                   int(nx + cell / 2), int(ny + cell / 2)),
                          text=label, desc=label, clickable=True, focusable=True, selected=sel,
                          on_click=self._dial_value(value),
                          paint=Paint("button", color="on_primary" if sel else "on_surface",
                                      bg="primary" if sel else "", size=16, radius=20)))
        return dial, size


def ctx_above(ctx: w.Ctx, h: int) -> w.Ctx:
    """The same screen with the content area ending ``h`` pixels higher."""
    c = ctx.content
    return w.Ctx(ctx.width, ctx.height, ctx.density, (c[0], c[1], c[2], c[3] - h))


@register
class Clock(App):
    package = PKG
    label = "Clock"
    apk_path = "/product/app/DeskClockGoogle/DeskClockGoogle.apk"
    launcher_activity = MAIN
    icon = "clock"
    icon_color = "#1a73e8"
    activities: ClassVar[dict[str, type[Activity]]] = {MAIN: DeskClock}
    # AlarmClock's actions; the real app routes them through HandleApiCalls to DeskClock
    intent_filters = (
        IntentFilter(MAIN, ("android.intent.action.SHOW_ALARMS",
                            "android.intent.action.SET_ALARM")),
        IntentFilter(MAIN, ("android.intent.action.SHOW_TIMERS",
                            "android.intent.action.SET_TIMER")),
    )

    def intent_args(self, activity: str, intent: IntentQuery) -> dict[str, str]:
        return {"tab": "timer" if "TIMER" in intent.action else "alarm"}
    authorities: ClassVar[tuple[str, ...]] = (AUTHORITY,)

    def reset(self) -> None:
        self.alarms: list[Alarm] = []
        self.next_id = 1

    def add(self, hour: int, minutes: int, label: str = "") -> Alarm:
        a = Alarm(self.next_id, hour, minutes, label=label)
        self.next_id += 1
        self.alarms.append(a)
        self.changed()
        return a

    def changed(self) -> None:
        """Alarm data changed (a real app would write its database and reschedule)."""

    def query(self, authority: str, path: list[str]) -> Cursor | None:
        if authority != AUTHORITY or not path or path[0] != "alarms" or len(path) > 2:
            return None
        rows = [a.row() for a in sorted(self.alarms, key=lambda a: a.id)]
        if len(path) == 2:
            rows = [r for r in rows if str(r["_id"]) == path[1]]
        return list(COLUMNS), rows


"""System UI windows: status bar, 3-button navigation bar and the ANR dialog.

They are separate window roots in the dump (package com.android.systemui / android),
with SystemUI's resource-ids, drawn over the app like on a phone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from farm.sim.world import widgets as w
from farm.sim.world.views import Paint, View

SYSTEMUI = "com.android.systemui"


def status_bar_height(density: int) -> int:
    return round(32 * density / 160.0)


def nav_bar_height(density: int) -> int:
    return round(48 * density / 160.0)


def clock_text(wall: float) -> str:
    """12-hour clock without AM/PM, as the en-US status bar shows it."""
    t = time.localtime(wall)
    return f"{(t.tm_hour % 12) or 12}:{t.tm_min:02d}"


def status_bar(ctx: w.Ctx, wall: float, battery: int, charging: bool, wifi: bool,
               airplane: bool, show_percent: bool, fg: str) -> View:
    h = status_bar_height(ctx.density)
    root = View(cls=w.FRAME, bounds=(0, 0, ctx.width, h), package=SYSTEMUI,
                rid=f"{SYSTEMUI}:id/status_bar_container")
    bar = View(cls=w.FRAME, bounds=(0, 0, ctx.width, h), rid=f"{SYSTEMUI}:id/status_bar")
    root.add(bar)
    pad = ctx.dp(16)
    clock = clock_text(wall)
    cw = ctx.text_w(clock, 14) + ctx.dp(2)
    cy = (h - ctx.line(14)) // 2
    t = time.localtime(wall)
    ampm = "AM" if t.tm_hour < 12 else "PM"
    clock_v = w.text(ctx, pad, cy, cw, clock, 14, fg, rid=f"{SYSTEMUI}:id/clock")
    clock_v.desc = f"{clock} {ampm}"
    bar.add(clock_v)
    x = ctx.width - pad
    isz = ctx.dp(18)
    iy = (h - isz) // 2
    if show_percent:
        pct = f"{battery}%"
        pw = ctx.text_w(pct, 14) + ctx.dp(2)
        bar.add(w.text(ctx, x - pw, cy, pw, pct, 14, fg,
                       rid=f"{SYSTEMUI}:id/battery_percentage_view"))
        x -= pw + ctx.dp(2)
    state = "charging, " if charging else ""
    batt = View(cls=w.LINEAR, bounds=(x - isz, iy, x, iy + isz), rid=f"{SYSTEMUI}:id/battery",
                desc=f"Battery {state}{battery} percent.",
                paint=Paint("battery", color=fg, value=float(battery),
                            extra=("charging",) if charging else ()))
    bar.add(batt)
    x -= isz + ctx.dp(6)
    if airplane:
        bar.add(View(cls=w.IMAGE_VIEW, bounds=(x - isz, iy, x, iy + isz),
                     rid=f"{SYSTEMUI}:id/airplane", desc="Airplane mode.",
                     paint=Paint("icon", icon="airplane", color=fg, size=18)))
        x -= isz + ctx.dp(6)
    elif wifi:
        bar.add(View(cls=w.IMAGE_VIEW, bounds=(x - isz, iy, x, iy + isz),
                     rid=f"{SYSTEMUI}:id/wifi_signal", desc="Wifi signal full.",
                     paint=Paint("icon", icon="wifi", color=fg, size=18)))
    return root


def nav_bar(ctx: w.Ctx, fg: str, bg: str, on_back: Callable[[], None],
            on_home: Callable[[], None], on_recents: Callable[[], None]) -> View:
    h = nav_bar_height(ctx.density)
    top = ctx.height - h
    root = View(cls=w.FRAME, bounds=(0, top, ctx.width, ctx.height), package=SYSTEMUI,
                rid=f"{SYSTEMUI}:id/navigation_bar_frame",
                paint=Paint("fill", bg=bg) if bg else None)
    inner = View(cls=w.FRAME, bounds=(0, top, ctx.width, ctx.height),
                 rid=f"{SYSTEMUI}:id/navigation_bar_view")
    root.add(inner)
    bw = ctx.dp(72)
    for i, (rid, desc, glyph, action) in enumerate((
            ("back", "Back", "nav_back", on_back), ("home", "Home", "nav_home", on_home),
            ("recent_apps", "Overview", "nav_recents", on_recents))):
        cx = ctx.width * (2 * i + 1) // 6
        inner.add(View(cls=w.IMAGE_VIEW, bounds=(cx - bw // 2, top, cx + bw // 2, ctx.height),
                       rid=f"{SYSTEMUI}:id/{rid}", desc=desc, clickable=True,
                       long_clickable=rid != "back", on_click=action,
                       paint=Paint("icon", icon=glyph, color=fg, size=22)))
    return root


def anr_dialog(ctx: w.Ctx, app_label: str, on_close: Callable[[], None],
               on_wait: Callable[[], None]) -> View:
    """AOSP AppNotRespondingDialog: title + list-style buttons Close app / Wait."""
    item_h = ctx.dp(48)

    def body(x: int, y: int, width: int) -> tuple[list[View], int]:
        views = []
        for i, (label, rid, glyph, action) in enumerate((
                ("Close app", "android:id/aerr_close", "close", on_close),
                ("Wait", "android:id/aerr_wait", "wait", on_wait))):
            top = y + i * item_h
            views.append(View(cls=w.BUTTON, bounds=(x, top, x + width, top + item_h),
                               text=label, rid=rid, clickable=True, focusable=True,
                               on_click=action,
                               paint=Paint("icon_text", icon=glyph, color="on_surface",
                                           size=16)))
        return views, 2 * item_h

    return w.dialog(ctx, f"{app_label} isn't responding", body, [], package="android")

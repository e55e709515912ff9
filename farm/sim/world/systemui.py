"""System UI windows: status bar, 3-button navigation bar, the ANR dialog and the
notification shade (Quick Settings tiles and posted notifications).

They are separate window roots in the dump (package com.android.systemui / android),
with SystemUI's resource-ids, drawn over the app like on a phone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class QuickTile:
    """A Quick Settings tile: label, glyph, and whether it is on."""

    label: str
    icon: str
    on: bool
    on_click: Callable[[], None]


@dataclass(frozen=True)
class ShadeItem:
    """A notification as the shade shows it."""

    app_label: str
    title: str
    text: str
    on_click: Callable[[], None]


def notification_shade(ctx: w.Ctx, wall: float, tiles: list[QuickTile],
                       items: list[ShadeItem], on_clear_all: Callable[[], None]) -> View:
    """The pulled-down shade (window NotificationShade): clock and date, two columns of
    Quick Settings tiles, then the notifications newest first (as many as fit) and
    "Clear all". Over the app and the status bar; the navigation bar stays on top."""
    h = ctx.height - nav_bar_height(ctx.density)
    root = View(cls=w.FRAME, bounds=(0, 0, ctx.width, h), package=SYSTEMUI,
                rid=f"{SYSTEMUI}:id/notification_panel", paint=Paint("fill", bg="drawer"))
    pad, gap = ctx.dp(16), ctx.dp(8)
    y = status_bar_height(ctx.density) + ctx.dp(8)
    t = time.localtime(wall)
    root.add(w.text(ctx, pad, y, ctx.width // 2, clock_text(wall), 28,
                    rid=f"{SYSTEMUI}:id/clock"))
    date = time.strftime("%a, %b ", t) + str(t.tm_mday)
    root.add(w.text(ctx, pad, y + ctx.line(28), ctx.width // 2, date, 14, "on_surface_var",
                    rid=f"{SYSTEMUI}:id/date"))
    y += ctx.line(28) + ctx.line(14) + ctx.dp(16)
    qs = View(cls=w.VIEW_GROUP, bounds=(0, y, ctx.width, y),
              rid=f"{SYSTEMUI}:id/quick_settings_panel")
    root.add(qs)
    tw, th = (ctx.width - 2 * pad - gap) // 2, ctx.dp(64)
    for i, tile in enumerate(tiles):
        x0 = pad + (i % 2) * (tw + gap)
        y0 = y + (i // 2) * (th + gap)
        box = View(cls=w.SWITCH, bounds=(x0, y0, x0 + tw, y0 + th), desc=tile.label,
                   clickable=True, focusable=True, checkable=True, checked=tile.on,
                   on_click=tile.on_click, rid=f"{SYSTEMUI}:id/tile",
                   paint=Paint("card", bg="primary" if tile.on else "surface_var", radius=20))
        ink = "on_primary" if tile.on else "on_surface"
        box.add(w.icon(ctx, x0 + ctx.dp(16), y0 + (th - ctx.dp(24)) // 2, 24, tile.icon, ink,
                       rid=f"{SYSTEMUI}:id/icon"))
        lx = x0 + ctx.dp(52)
        box.add(w.text(ctx, lx, y0 + ctx.dp(12), tw - ctx.dp(60), tile.label, 14, ink,
                       rid=f"{SYSTEMUI}:id/tile_label", bold=True))
        box.add(w.text(ctx, lx, y0 + ctx.dp(12) + ctx.line(14), tw - ctx.dp(60),
                       "On" if tile.on else "Off", 12, ink, rid=f"{SYSTEMUI}:id/secondary_label"))
        qs.add(box)
    rows = (len(tiles) + 1) // 2
    y += rows * (th + gap)
    qs.bounds = (0, qs.bounds[1], ctx.width, y)
    y += ctx.dp(8)
    stack = View(cls=w.VIEW_GROUP, bounds=(0, y, ctx.width, h),
                 rid=f"{SYSTEMUI}:id/notification_stack_scroller")
    root.add(stack)
    if not items:
        stack.add(w.text(ctx, pad, y + ctx.dp(24), ctx.width - 2 * pad, "No notifications",
                         16, "on_surface_var", align="center",
                         rid=f"{SYSTEMUI}:id/no_notifications"))
        return root
    ch = ctx.dp(88)
    clear_h = ctx.dp(40)
    for item in items:
        if y + ch + gap + clear_h > h:
            break  # the rest are below the fold (the real shade scrolls)
        card = View(cls=w.FRAME, bounds=(pad, y, ctx.width - pad, y + ch), clickable=True,
                    focusable=True, on_click=item.on_click,
                    rid=f"{SYSTEMUI}:id/expandableNotificationRow",
                    paint=Paint("card", bg="bg", radius=16))
        ix, iw = pad + ctx.dp(16), ctx.width - 2 * pad - ctx.dp(32)
        cy = y + ctx.dp(12)
        card.add(w.text(ctx, ix, cy, iw, item.app_label, 12, "on_surface_var",
                        rid="android:id/app_name_text"))
        cy += ctx.line(12) + ctx.dp(2)
        card.add(w.text(ctx, ix, cy, iw, item.title, 15, rid="android:id/title", bold=True))
        cy += ctx.line(15)
        card.add(w.text(ctx, ix, cy, iw, item.text, 14, "on_surface_var", rid="android:id/text"))
        stack.add(card)
        y += ch + gap
    bw = ctx.text_w("Clear all", 14) + ctx.dp(32)
    stack.add(w.button(ctx, (ctx.width - pad - bw, y, ctx.width - pad, y + clear_h),
                       "Clear all", rid=f"{SYSTEMUI}:id/clear_all", on_click=on_clear_all))
    return root


LAUNCHER = "com.google.android.apps.nexuslauncher"  # Overview is the launcher's (Quickstep)


@dataclass(frozen=True)
class RecentCard:
    """A task in Overview: its app's label and icon."""

    label: str
    icon: str
    on_open: Callable[[], None]


def overview(ctx: w.Ctx, cards: list[RecentCard], selected: int,
             on_clear_all: Callable[[], None]) -> View:
    """Overview (Quickstep's recents, drawn by the launcher): the selected task's card in
    the middle, its neighbours peeking at the sides, "Clear all" below; "No recent items"
    when there are none. Swipes are the world's: sideways to move, up to dismiss."""
    h = ctx.height - nav_bar_height(ctx.density)
    root = View(cls=w.FRAME, bounds=(0, 0, ctx.width, h), package=LAUNCHER,
                rid=f"{LAUNCHER}:id/overview_panel", paint=Paint("fill", bg="surface_var"))
    if not cards:
        root.add(w.text(ctx, 0, h // 2 - ctx.line(16), ctx.width, "No recent items", 16,
                        "on_surface_var", align="center", rid=f"{LAUNCHER}:id/empty_message"))
        return root
    cw, ch = ctx.width * 7 // 10, h * 6 // 10
    gap = ctx.dp(16)
    top = (h - ch) // 2
    cx = (ctx.width - cw) // 2
    for i, card in enumerate(cards):
        x0 = cx + (i - selected) * (cw + gap)
        if x0 + cw <= 0 or x0 >= ctx.width:
            continue  # off screen
        task = View(cls=w.FRAME, bounds=(x0, top - ctx.dp(56), x0 + cw, top + ch),
                    rid=f"{LAUNCHER}:id/task_view", desc=card.label, clickable=True,
                    focusable=True, on_click=card.on_open)
        task.add(w.icon(ctx, x0 + (cw - ctx.dp(40)) // 2, top - ctx.dp(52), 40, card.icon,
                        "on_primary", rid=f"{LAUNCHER}:id/icon", desc=card.label,
                        bg="primary"))
        snap = View(cls=w.VIEW_GROUP, bounds=(x0, top, x0 + cw, top + ch),
                    rid=f"{LAUNCHER}:id/snapshot", desc=card.label,
                    paint=Paint("card", bg="bg", radius=24))
        snap.add(w.text(ctx, x0, top + ch // 2 - ctx.line(20), cw, card.label, 20,
                        align="center", bold=True))
        task.add(snap)
        root.add(task)
    bw = ctx.text_w("Clear all", 14) + ctx.dp(32)
    by = top + ch + ctx.dp(32)
    root.add(w.button(ctx, ((ctx.width - bw) // 2, by, (ctx.width + bw) // 2, by + ctx.dp(40)),
                      "Clear all", rid=f"{LAUNCHER}:id/clear_all", on_click=on_clear_all))
    return root

"""Pixel Launcher: home workspace with app icons, and the all-apps drawer (swipe up).

Icons are TextViews whose text and content-desc are the app label, as in a real
Launcher3 dump; tapping one launches the package like a launcher intent. A long press
opens the icon's popup (Launcher3's deep shortcuts container): the app's shortcuts,
then "App info" (Settings' page for the package); a tap outside or BACK closes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from farm.sim.intents import ACTION_MAIN, CATEGORY_DEFAULT, CATEGORY_HOME, IntentFilter
from farm.sim.world import widgets as w
from farm.sim.world.apps.base import Activity, App, register
from farm.sim.world.views import Paint, View

PKG = "com.google.android.apps.nexuslauncher"
ACTIVITY = "com.google.android.apps.nexuslauncher.NexusLauncherActivity"
COLUMNS = 4
SETTINGS = "com.android.settings"
#: app shortcuts (label → the activity and extras they start), as apps declare them
SHORTCUTS: dict[str, tuple[tuple[str, str, str, dict[str, str]], ...]] = {
    SETTINGS: (("Battery", SETTINGS, "com.android.settings.SubSettings", {"page": "battery"}),
               ("Internet", SETTINGS, "com.android.settings.SubSettings",
                {"page": "internet"})),
}


class LauncherActivity(Activity):
    """``drawer`` is per-instance state: HOME or BACK close it."""

    drawer = False
    popup: str | None = None  # the package whose icon's popup is open
    _popup_anchor: tuple[int, int, int, int] | None = None  # its icon, this build

    @property
    def shows_wallpaper(self) -> bool:
        return not self.drawer

    def _apps(self) -> list[tuple[str, str, str, str]]:
        """(package, label, icon glyph, icon colour) of launchable apps, install order."""
        out = []
        for info in self.host.packages():
            if info.launcher_activity is None or info.name == PKG:
                continue
            app = self.host.app(info.name)
            glyph = app.icon if app is not None else "letter"
            color = app.icon_color if app is not None else "#5f6368"
            out.append((info.name, info.label or info.name, glyph, color))
        return out

    def _icon(self, ctx: w.Ctx, rect: tuple[int, int, int, int], pkg: str, label: str,
              glyph: str, color: str, on_wallpaper: bool) -> View:
        def launch() -> None:
            self.drawer = False
            self.host.launch_package(pkg)

        def open_popup() -> None:
            self.popup = pkg

        if pkg == self.popup:
            self._popup_anchor = rect
        return View(cls=w.TEXT_VIEW, bounds=rect, text=label, desc=label, clickable=True,
                    focusable=True, long_clickable=True, on_click=launch,
                    on_long_click=open_popup,
                    paint=Paint("app_icon", icon=glyph, bg=color, size=56,
                                color="on_wallpaper" if on_wallpaper else "on_surface"))

    def on_back(self) -> bool:
        if self.popup is not None:
            self.popup = None
            return True
        if self.drawer:
            self.drawer = False
            return True
        return True  # BACK on the home screen does nothing

    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, rid=f"{PKG}:id/launcher")
        drag = View(cls=w.FRAME, bounds=c, rid=f"{PKG}:id/drag_layer")
        root.add(drag)
        apps = self._apps()
        pad = ctx.dp(16)
        cell_w = (ctx.width - 2 * pad) // COLUMNS
        cell_h = ctx.dp(104)
        self._popup_anchor = None
        if self.drawer:
            drag.add(self._drawer(ctx, apps, pad, cell_w, cell_h))
            self._add_popup(ctx, drag)
            return root
        ws = View(cls="android.widget.ScrollView", bounds=c, rid=f"{PKG}:id/workspace",
                  on_scroll=self._workspace_scroll)
        drag.add(ws)
        t = time.localtime(self.host.wall_time())
        date = time.strftime("%a, %b ", t) + str(t.tm_mday)
        ws.add(w.text(ctx, ctx.dp(24), c[1] + ctx.dp(24), ctx.width - ctx.dp(48), date, 24,
                      "on_wallpaper", rid=f"{PKG}:id/date"))
        y0 = c[1] + ctx.dp(24) + ctx.line(24) + ctx.dp(32)
        rows = max(1, (c[3] - y0 - ctx.dp(16)) // cell_h)
        for i, (pkg, label, glyph, color) in enumerate(apps[: rows * COLUMNS]):
            x = pad + (i % COLUMNS) * cell_w
            y = y0 + (i // COLUMNS) * cell_h
            ws.add(self._icon(ctx, (x, y, x + cell_w, y + cell_h), pkg, label, glyph, color,
                              True))
        self._add_popup(ctx, drag)
        return root

    def _add_popup(self, ctx: w.Ctx, parent: View) -> None:
        """The open popup over everything, above its icon (below it near the top), with
        a full-screen catcher under it: a tap anywhere else closes it."""
        pkg, anchor = self.popup, self._popup_anchor
        if pkg is None or anchor is None:
            self.popup = None  # its icon is not on this screen any more
            return

        def close() -> None:
            self.popup = None

        def go(target: str, activity: str, args: dict[str, str]) -> Callable[[], None]:
            def do() -> None:
                self.popup, self.drawer = None, False
                self.host.start(target, activity, args, new_task=True)
            return do

        items = [(label, go(t, a, dict(extra))) for label, t, a, extra in
                 SHORTCUTS.get(pkg, ())]
        items.append(("App info", go(SETTINGS, "com.android.settings.SubSettings",
                                     {"page": "app_info", "package": pkg})))
        row_h, width = ctx.dp(48), ctx.dp(200)
        h = row_h * len(items) + ctx.dp(16)
        x0 = max(ctx.dp(8), min(anchor[0], ctx.width - width - ctx.dp(8)))
        above = anchor[1] - h - ctx.dp(4)
        y0 = above if above >= ctx.content[1] else anchor[3] + ctx.dp(4)
        c = ctx.content
        parent.add(View(cls=w.FRAME, bounds=c, clickable=True, on_click=close,
                        rid=f"{PKG}:id/popup_scrim"))
        box = View(cls=w.LINEAR, bounds=(x0, y0, x0 + width, y0 + h),
                   rid=f"{PKG}:id/deep_shortcuts_container",
                   paint=Paint("card", bg="dialog", radius=20))
        for i, (label, action) in enumerate(items):
            top = y0 + ctx.dp(8) + i * row_h
            box.add(View(cls=w.TEXT_VIEW, bounds=(x0, top, x0 + width, top + row_h),
                         text=label, desc=label, clickable=True, focusable=True,
                         on_click=action, rid=f"{PKG}:id/bubble_text",
                         paint=Paint("text", color="on_surface", size=14,
                                     text=f"   {label}")))
        parent.add(box)

    def _workspace_scroll(self, _dx: int, dy: int) -> bool:
        if dy < 0:  # finger moved up: open all apps
            self.drawer = True
            return True
        return False

    def _drawer(self, ctx: w.Ctx, apps: list[tuple[str, str, str, str]], pad: int,
                cell_w: int, cell_h: int) -> View:
        c = ctx.content
        view = View(cls=w.FRAME, bounds=c, rid=f"{PKG}:id/apps_view",
                    paint=Paint("fill", bg="drawer"))
        apps = sorted(apps, key=lambda a: a[1].lower())
        rows: list[w.Row] = []
        for r in range(0, len(apps), COLUMNS):
            chunk = apps[r:r + COLUMNS]

            def build_row(y: int, chunk: list[tuple[str, str, str, str]] = chunk) -> View:
                row = View(cls=w.VIEW_GROUP, bounds=(pad, y, pad + COLUMNS * cell_w, y + cell_h))
                for j, (pkg, label, glyph, color) in enumerate(chunk):
                    x = pad + j * cell_w
                    row.add(self._icon(ctx, (x, y, x + cell_w, y + cell_h), pkg, label, glyph,
                                       color, False))
                return row

            rows.append((cell_h, build_row))
        top = c[1] + ctx.dp(24)
        lst = w.scroll_list(ctx, self.scroll, "drawer", (0, top, ctx.width, c[3]), rows,
                            rid=f"{PKG}:id/apps_list_view")
        inner = lst.on_scroll

        def scroll(dx: int, dy: int) -> bool:
            # pulling down at the top of the list closes the drawer, as on a Pixel
            if dy > 0 and self.scroll.get("drawer", 0) == 0:
                self.drawer = False
                return True
            return inner(dx, dy) if inner else False

        lst.on_scroll = scroll
        view.add(lst)
        return view


@register
class Launcher(App):
    package = PKG
    label = "Pixel Launcher"
    apk_path = "/system_ext/priv-app/NexusLauncherRelease/NexusLauncherRelease.apk"
    launcher_activity = None  # it is the HOME activity; it has no LAUNCHER entry
    home_activity = ACTIVITY
    activities: ClassVar[dict[str, type[Activity]]] = {ACTIVITY: LauncherActivity}
    intent_filters = (IntentFilter(ACTIVITY, (ACTION_MAIN,), (CATEGORY_HOME, CATEGORY_DEFAULT)),)

"""Apps installed with ``pm install``/``adb install``: a blank activity showing the label.

The APK is not executed; the package gets a ``<package>.MainActivity`` launcher activity
so it can be launched, listed, force-stopped, cleared and uninstalled like a real app.
"""

from __future__ import annotations

import zlib

from farm.sim.world import widgets as w
from farm.sim.world.apps.base import Activity, App
from farm.sim.world.views import Paint, View

_COLORS = ("#1a73e8", "#d93025", "#188038", "#e37400", "#9334e6", "#007b83", "#c5221f")


class BlankActivity(Activity):
    def build(self, ctx: w.Ctx) -> View:
        c = ctx.content
        root = View(cls=w.FRAME, bounds=c, paint=Paint("fill", bg="bg"))
        bar_h = ctx.dp(64)
        bar = View(cls=w.VIEW_GROUP, bounds=(c[0], c[1], c[2], c[1] + bar_h),
                   rid=f"{self.package}:id/action_bar")
        bar.add(w.text(ctx, ctx.dp(16), c[1] + (bar_h - ctx.line(22)) // 2,
                       ctx.width - ctx.dp(32), self.app.label, 22))
        root.add(bar)
        return root


def make_user_app(package: str, label: str, apk_path: str) -> type[App]:
    """A new App class for an installed package (class attributes describe a package)."""
    activity = f"{package}.MainActivity"
    attrs = {
        "package": package, "label": label or package, "apk_path": apk_path, "system": False,
        "launcher_activity": activity, "icon": "letter",
        "icon_color": _COLORS[zlib.crc32(package.encode()) % len(_COLORS)],
        "activities": {activity: BlankActivity},
    }
    return type(f"UserApp_{package.replace('.', '_')}", (App,), attrs)

"""Small view builders shared by the bundled apps (Chrome, Shop, Clock, Contacts).

The Settings-style builders live in ``widgets``; these are the extra pieces the other
apps need: a toolbar with action icons, a FAB, wrapped paragraphs, a snackbar, and an
EditText whose text starts selected (typing replaces it, like Chrome's omnibox).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence

from farm.sim.vfs import VirtualFS
from farm.sim.world import fonts
from farm.sim.world import widgets as w
from farm.sim.world.apps import glyphs  # noqa: F401  (registers the glyphs below)
from farm.sim.world.views import Paint, Rect, TextField, View

Action = tuple[str, str, str, Callable[[], None]]  # icon, content-desc, resource-id, click


class SelectAllField(TextField):
    """A TextField whose current text is selected: the first edit replaces it all."""

    selected = False

    def insert(self, s: str) -> None:
        if self.selected:
            self.selected = False
            self.text = ""
        super().insert(s)

    def delete(self) -> None:
        if self.selected:
            self.selected = False
            self.set("")
            return
        super().delete()

    def set(self, s: str) -> None:
        self.selected = False
        super().set(s)


def icon_button(ctx: w.Ctx, x: int, y: int, glyph: str, desc: str, rid: str,
                on_click: Callable[[], None] | None, size: int = 48, color: str = "on_surface",
                bg: str = "") -> View:
    s = ctx.dp(size)
    return View(cls=w.IMAGE_BUTTON, bounds=(x, y, x + s, y + s), desc=desc, rid=rid,
                clickable=on_click is not None, focusable=True, on_click=on_click,
                paint=Paint("icon", icon=glyph, color=color, size=size if bg else 24, bg=bg))


def toolbar(ctx: w.Ctx, title: str, pkg: str, *, on_up: Callable[[], None] | None = None,
            up_desc: str = "Navigate up", up_icon: str = "arrow_back",
            actions: Sequence[Action] = (), title_size: float = 22, title_rid: str = "",
            top: int | None = None) -> View:
    """A 64dp Toolbar: optional up button, title, action icons on the right."""
    y0 = ctx.content[1] if top is None else top
    h = ctx.dp(64)
    bar = View(cls=w.VIEW_GROUP, bounds=(0, y0, ctx.width, y0 + h), rid=f"{pkg}:id/toolbar")
    s = ctx.dp(48)
    by = y0 + (h - s) // 2
    x = ctx.dp(16)
    if on_up is not None:
        bar.add(icon_button(ctx, ctx.dp(4), by, up_icon, up_desc, "", on_up))
        x = ctx.dp(60)
    right = ctx.width - ctx.dp(4)
    for glyph, desc, rid, click in reversed(actions):
        right -= s
        bar.add(icon_button(ctx, right, by, glyph, desc, rid, click))
    if title:
        bar.add(w.text(ctx, x, y0 + (h - ctx.line(title_size)) // 2, right - x - ctx.dp(4),
                       title, title_size, rid=title_rid))
    return bar


def fab(ctx: w.Ctx, glyph: str, desc: str, rid: str, on_click: Callable[[], None],
        label: str = "") -> View:
    """A floating action button anchored bottom-right of the content area."""
    s = ctx.dp(56)
    c = ctx.content
    width = s if not label else ctx.dp(56) + ctx.text_w(label, 14) + ctx.dp(8)
    x1 = ctx.width - ctx.dp(16)
    y1 = c[3] - ctx.dp(16)
    v = View(cls=w.IMAGE_BUTTON if not label else w.BUTTON, bounds=(x1 - width, y1 - s, x1, y1),
             rid=rid, desc=desc, text=label, clickable=True, focusable=True, on_click=on_click,
             paint=Paint("fill", bg="surface_var", radius=16))
    v.add(View(cls=w.IMAGE_VIEW, bounds=(x1 - width, y1 - s, x1 - width + s, y1),
               paint=Paint("icon", icon=glyph, color="primary", size=24)))
    if label:
        v.add(View(cls=w.TEXT_VIEW, bounds=(x1 - width + s - ctx.dp(8), y1 - s, x1, y1),
                   paint=Paint("text", text=label, color="primary", size=14, bold=True)))
    return v


def wrapped(ctx: w.Ctx, text: str, size: float, width: int) -> int:
    """How many lines ``text`` takes at ``size`` sp in ``width`` pixels."""
    return len(fonts.wrap(text, ctx.sp(size), width))


def para(ctx: w.Ctx, text: str, size: float, *, color: str = "on_surface", rid: str = "",
         x: int | None = None, width: int | None = None, gap: float = 8, bold: bool = False,
         on_click: Callable[[], None] | None = None, cls: str = w.TEXT_VIEW) -> w.Row:
    """A wrapped TextView as a list row (height includes ``gap`` dp below it)."""
    x0 = ctx.dp(16) if x is None else x
    wd = ctx.width - 2 * x0 if width is None else width
    n = wrapped(ctx, text, size, wd)

    def build(y: int) -> View:
        v = w.text(ctx, x0, y, wd, text, size, color, rid=rid, lines=n, bold=bold, cls=cls)
        if on_click is not None:
            v.clickable = v.focusable = True
            v.on_click = on_click
        return v
    return (ctx.line(size) * n + ctx.dp(gap), build)


def spacer(ctx: w.Ctx, dp: float) -> w.Row:
    return (ctx.dp(dp), lambda y: View(cls=w.VIEW_GROUP, bounds=(0, y, ctx.width, y + 1),
                                       hidden=True))


def divider(ctx: w.Ctx, y: int, left: int = 0, right: int | None = None) -> View:
    r = ctx.width if right is None else right
    return View(cls=w.VIEW_GROUP, bounds=(left, y, r, y + max(1, ctx.dp(1))),
                paint=Paint("divider"))


def snackbar(ctx: w.Ctx, message: str, pkg: str) -> View:
    """A Material snackbar above the bottom of the content area."""
    c = ctx.content
    h = ctx.dp(48)
    m = ctx.dp(12)
    rect: Rect = (m, c[3] - m - h, ctx.width - m, c[3] - m)
    bar = View(cls=w.FRAME, bounds=rect, rid=f"{pkg}:id/snackbar_layout",
               paint=Paint("fill", bg="on_surface", radius=6))
    bar.add(w.text(ctx, m + ctx.dp(16), rect[1] + (h - ctx.line(14)) // 2,
                   rect[2] - rect[0] - ctx.dp(32), message, 14, "bg",
                   rid=f"{pkg}:id/snackbar_text"))
    return bar


def chip(ctx: w.Ctx, x: int, y: int, label: str, rid: str, on_click: Callable[[], None] | None,
         selected: bool = False, height: float = 32) -> View:
    h = ctx.dp(height)
    wd = ctx.text_w(label, 14) + ctx.dp(32)
    return View(cls=w.BUTTON if on_click else w.TEXT_VIEW, bounds=(x, y, x + wd, y + h),
                text=label, rid=rid, clickable=on_click is not None, focusable=True,
                selected=selected, on_click=on_click,
                paint=Paint("button", color="on_primary" if selected else "on_surface",
                            bg="primary" if selected else "surface_var", size=14,
                            radius=height / 2))


def write_json(vfs: VirtualFS, path: str, obj: object, mtime: float) -> None:
    """Write app state where ``run-as PKG cat files/…`` reads it (pretty, sorted, stable)."""
    write(vfs, path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode(), mtime)


def write(vfs: VirtualFS, path: str, data: bytes, mtime: float) -> None:
    """Write an app's file (mtime from the phone's wall clock, so runs are reproducible)."""
    with contextlib.suppress(OSError):  # a full phone loses the write, as an app's would
        vfs.write(path, data, make_parents=True, mtime=int(mtime))


def remove(vfs: VirtualFS, path: str) -> None:
    with contextlib.suppress(OSError):
        vfs.remove(path, recursive=True)

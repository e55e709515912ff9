"""Material components as view-tree builders: rows, switches, sliders, lists, dialogs.

Each builder returns ``View`` nodes with absolute bounds and the AOSP class names and
resource-ids a real Settings/AppCompat screen exposes, so apps are short declarative
code and look alike. Sizes are dp/sp converted with the screen density.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from farm.sim.world import fonts
from farm.sim.world.views import Paint, Rect, TextField, View

TEXT_VIEW = "android.widget.TextView"
IMAGE_VIEW = "android.widget.ImageView"
IMAGE_BUTTON = "android.widget.ImageButton"
LINEAR = "android.widget.LinearLayout"
RELATIVE = "android.widget.RelativeLayout"
FRAME = "android.widget.FrameLayout"
SWITCH = "android.widget.Switch"
SEEK_BAR = "android.widget.SeekBar"
EDIT_TEXT = "android.widget.EditText"
BUTTON = "android.widget.Button"
RECYCLER = "androidx.recyclerview.widget.RecyclerView"
VIEW_GROUP = "android.view.ViewGroup"


@dataclass
class Ctx:
    """What a builder needs to know about the screen it builds for."""

    width: int
    height: int
    density: int
    content: Rect  # the activity's area: below the status bar, above nav bar / keyboard
    screen: Rect = field(init=False)

    def __post_init__(self) -> None:
        self.screen = (0, 0, self.width, self.height)

    def dp(self, v: float) -> int:
        return round(v * self.density / 160.0)

    def sp(self, v: float) -> int:
        return self.dp(v)

    def line(self, size_sp: float) -> int:
        """Height of one text line of this size (TextView bounds)."""
        return round(self.sp(size_sp) * 1.34)

    def text_w(self, text: str, size_sp: float) -> int:
        return fonts.text_width(text, self.sp(size_sp))


def text(ctx: Ctx, x: int, y: int, w: int, s: str, size: float, color: str = "on_surface",
         rid: str = "", align: str = "left", bold: bool = False, cls: str = TEXT_VIEW,
         lines: int = 1) -> View:
    """A TextView whose bounds are its line box(es) at (x, y) and width ``w``."""
    h = ctx.line(size) * lines
    extra = ("wrap",) if lines > 1 else ()
    return View(cls=cls, bounds=(x, y, x + w, y + h), text=s, rid=rid,
                paint=Paint("text", color=color, size=size, align=align, bold=bold,
                            extra=extra))


def icon(ctx: Ctx, x: int, y: int, size_dp: float, name: str, color: str = "on_surface_var",
         rid: str = "", desc: str = "", bg: str = "") -> View:
    s = ctx.dp(size_dp)
    return View(cls=IMAGE_VIEW, bounds=(x, y, x + s, y + s), rid=rid, desc=desc,
                paint=Paint("icon", icon=name, color=color, size=size_dp, bg=bg))


def switch(ctx: Ctx, right: int, cy: int, checked: bool, enabled: bool = True,
           rid: str = "android:id/switch_widget") -> View:
    """M3 switch; like SwitchPreference's widget it is not itself clickable: the row is."""
    w, h = ctx.dp(52), ctx.dp(32)
    return View(cls=SWITCH, bounds=(right - w, cy - h // 2, right, cy + h // 2), rid=rid,
                text="ON" if checked else "OFF", checkable=True, checked=checked,
                enabled=enabled, paint=Paint("switch"))


def pref_row(ctx: Ctx, y: int, title: str, summary: str = "", *,
             icon_name: str = "", icon_bg: str = "", on_click: Callable[[], None] | None = None,
             checked: bool | None = None, enabled: bool = True, left: int = 0,
             right: int | None = None) -> View:
    """A Preference row: icon_frame, title/summary, widget_frame (switch when checked is set)."""
    right = ctx.width if right is None else right
    row_h = pref_height(ctx, summary)
    row = View(cls=LINEAR, bounds=(left, y, right, y + row_h), clickable=on_click is not None,
               focusable=on_click is not None, enabled=enabled, on_click=on_click)
    pad = ctx.dp(24)
    x = left + pad
    if icon_name:
        frame_w = ctx.dp(56) if not icon_bg else ctx.dp(64)
        isz = 40 if icon_bg else 24
        frame = View(cls=LINEAR, bounds=(x, y, x + frame_w, y + row_h), rid="android:id/icon_frame")
        frame.add(icon(ctx, x, y + (row_h - ctx.dp(isz)) // 2, isz, icon_name,
                       color="on_icon_bg" if icon_bg else "on_surface_var",
                       rid="android:id/icon", bg=icon_bg))
        row.add(frame)
        x += frame_w
    widget_w = ctx.dp(52) + pad * 2 if checked is not None else pad
    text_w = right - widget_w - x
    tl = ctx.line(18)
    sl = ctx.line(14) if summary else 0
    ty = y + (row_h - tl - sl) // 2
    body = View(cls=RELATIVE, bounds=(x, ty, x + text_w, ty + tl + sl))
    color = "on_surface" if enabled else "disabled"
    body.add(text(ctx, x, ty, text_w, title, 18, color, rid="android:id/title"))
    if summary:
        body.add(text(ctx, x, ty + tl, text_w, summary, 14,
                      "on_surface_var" if enabled else "disabled", rid="android:id/summary"))
    row.add(body)
    if checked is not None:
        wf = View(cls=LINEAR, bounds=(right - widget_w + pad, y, right - pad, y + row_h),
                  rid="android:id/widget_frame")
        wf.add(switch(ctx, right - pad, y + row_h // 2, checked, enabled))
        row.add(wf)
    return row


def pref_height(ctx: Ctx, summary: str = "") -> int:
    return ctx.dp(72) if not summary else max(ctx.dp(80), ctx.line(18) + ctx.line(14)
                                                 + ctx.dp(32))


def category(ctx: Ctx, y: int, title: str) -> View:
    h = ctx.dp(48)
    pad = ctx.dp(24)
    row = View(cls=LINEAR, bounds=(0, y, ctx.width, y + h))
    row.add(text(ctx, pad, y + h - ctx.line(14) - ctx.dp(6), ctx.width - 2 * pad, title, 14,
                 "primary", rid="android:id/title", bold=True))
    return row


def slider_row(ctx: Ctx, y: int, title: str, summary: str, fraction: float,
               on_set: Callable[[float], None], rid: str) -> View:
    """Title + summary + a SeekBar; tapping or dragging on the bar sets the value."""
    pad = ctx.dp(24)
    tl, sl = ctx.line(18), ctx.line(14)
    bar_h = ctx.dp(48)
    h = ctx.dp(16) + tl + sl + bar_h + ctx.dp(8)
    row = View(cls=LINEAR, bounds=(0, y, ctx.width, y + h))
    ty = y + ctx.dp(16)
    row.add(text(ctx, pad, ty, ctx.width - 2 * pad, title, 18, rid="android:id/title"))
    row.add(text(ctx, pad, ty + tl, ctx.width - 2 * pad, summary, 14, "on_surface_var",
                 rid="android:id/summary"))
    by = ty + tl + sl
    left, right = pad, ctx.width - pad

    def set_at(x: float, _y: float) -> None:
        on_set(min(1.0, max(0.0, (x - left) / max(1, right - left))))

    bar = View(cls=SEEK_BAR, bounds=(left, by, right, by + bar_h), rid=rid, text="",
               clickable=True, focusable=True, scrollable=False,
               paint=Paint("slider", value=fraction), on_drag=set_at)
    row.add(bar)
    return row


def button(ctx: Ctx, rect: Rect, label: str, *, rid: str = "", filled: bool = False,
           on_click: Callable[[], None] | None = None, enabled: bool = True) -> View:
    paint = Paint("button", color="on_primary" if filled else "primary",
                  bg="primary" if filled else "", size=14, radius=20, bold=True)
    return View(cls=BUTTON, bounds=rect, text=label, rid=rid, clickable=True, focusable=True,
                enabled=enabled, on_click=on_click, paint=paint)


def edit_text(ctx: Ctx, rect: Rect, field_: TextField, focused: bool, *, rid: str,
              on_focus: Callable[[], None], size: float = 18, boxed: bool = True) -> View:
    """An EditText; empty, its node text is the hint, as TextView reports for accessibility."""
    shown = field_.text or field_.hint
    return View(cls=EDIT_TEXT, bounds=rect, text=shown, rid=rid, clickable=True,
                focusable=True, focused=focused, long_clickable=True, edit=field_,
                on_click=on_focus,
                paint=Paint("edit", color="on_surface" if field_.text else "on_surface_var",
                            size=size, extra=("boxed",) if boxed else ()))


def app_bar(ctx: Ctx, title: str, on_up: Callable[[], None] | None, pkg_id: str) -> View:
    """Collapsing toolbar of a Settings sub-page: Navigate up + large title."""
    top = ctx.content[1]
    bar_h, title_h = ctx.dp(64), ctx.dp(76)
    bar = View(cls=FRAME, bounds=(0, top, ctx.width, top + bar_h + title_h),
               rid=f"{pkg_id}:id/collapsing_toolbar", desc=title)
    tb = View(cls=VIEW_GROUP, bounds=(0, top, ctx.width, top + bar_h),
              rid=f"{pkg_id}:id/action_bar")
    if on_up is not None:
        s = ctx.dp(48)
        x0, y0 = ctx.dp(8), top + (bar_h - s) // 2
        tb.add(View(cls=IMAGE_BUTTON, bounds=(x0, y0, x0 + s, y0 + s), desc="Navigate up",
                    clickable=True, focusable=True, on_click=on_up,
                    paint=Paint("icon", icon="arrow_back", color="on_surface", size=24)))
    bar.add(tb)
    pad = ctx.dp(24)
    bar.add(text(ctx, pad, top + bar_h + (title_h - ctx.line(34)) // 2, ctx.width - 2 * pad,
                 title, 34))
    return bar


Row = tuple[int, Callable[[int], View]]  # (height, build(top_y) → view)


def scroll_list(ctx: Ctx, scroll: dict[str, int], key: str, rect: Rect, rows: Sequence[Row],
                rid: str, cls: str = RECYCLER, bottom_pad: int = 0) -> View:
    """A vertically scrolling list; rows outside ``rect`` are clipped away by finalize."""
    total = sum(h for h, _ in rows) + bottom_pad
    view_h = rect[3] - rect[1]
    max_scroll = max(0, total - view_h)
    off = min(max(0, scroll.get(key, 0)), max_scroll)
    scroll[key] = off  # keep the state consistent when the viewport shrinks (keyboard)

    def on_scroll(_dx: int, dy: int) -> bool:
        new = min(max(0, scroll.get(key, 0) - dy), max_scroll)
        if new == scroll.get(key, 0):
            return False
        scroll[key] = new
        return True

    lst = View(cls=cls, bounds=rect, rid=rid, scrollable=max_scroll > 0, focusable=True,
               clips=True, on_scroll=on_scroll)
    y = rect[1] - off
    for h, build in rows:
        if y + h > rect[1] and y < rect[3]:  # RecyclerView only has views for visible rows
            lst.add(build(y))
        y += h
    return lst


def dialog(ctx: Ctx, title: str, body: Callable[[int, int, int], tuple[list[View], int]],
           buttons: list[tuple[str, str, Callable[[], None]]], package: str,
           title_rid: str = "android:id/alertTitle") -> View:
    """An AlertDialog window: card centred on screen, title, custom body, text buttons.

    ``body(x, y, w)`` returns its views and height; buttons are (label, rid, action).
    """
    pad = ctx.dp(24)
    w = min(ctx.width - ctx.dp(48), ctx.dp(312) if ctx.width < ctx.dp(360) else ctx.dp(340))
    x0 = (ctx.width - w) // 2
    tl = ctx.line(22)
    title_lines = fonts.wrap(title, ctx.sp(22), w - 2 * pad)
    title_h = tl * len(title_lines)
    body_views, body_h = body(x0 + pad, 0, w - 2 * pad)
    btn_h = ctx.dp(40) if buttons else 0
    h = pad + title_h + ctx.dp(16) + body_h + (ctx.dp(24) + btn_h if buttons else 0) + pad
    y0 = (ctx.height - h) // 2
    card = View(cls=FRAME, bounds=(x0, y0, x0 + w, y0 + h), package=package,
                paint=Paint("card", bg="dialog", radius=28, extra=("scrim",)))
    panel = View(cls=LINEAR, bounds=(x0, y0, x0 + w, y0 + h), rid="android:id/parentPanel")
    card.add(panel)
    panel.add(text(ctx, x0 + pad, y0 + pad, w - 2 * pad, title, 22, rid=title_rid,
                   lines=len(title_lines)))
    by = y0 + pad + title_h + ctx.dp(16)
    for v in body_views:
        _shift(v, by)
        panel.add(v)
    bx = x0 + w - pad
    btn_y = y0 + h - pad - btn_h
    for label, rid, action in buttons:
        bw = ctx.text_w(label, 14) + ctx.dp(24)
        panel.add(button(ctx, (bx - bw, btn_y, bx, btn_y + btn_h), label, rid=rid,
                         on_click=action))
        bx -= bw + ctx.dp(8)
    return card


def _shift(v: View, dy: int) -> None:
    b = v.bounds
    v.bounds = (b[0], b[1] + dy, b[2], b[3] + dy)
    for c in v.children:
        _shift(c, dy)

"""The soft keyboard (Gboard's package): drawn, tappable, never in the dump.

Real IMEs draw their keys on one canvas and expose no key nodes to uiautomator, so the
dump only gets the IME window's root node; tapping a key by coordinates types it. The
keyboard area is taken from the app's window (adjustResize), shrinking what it shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from farm.sim.world.views import Paint, Rect, View

PACKAGE = "com.google.android.inputmethod.latin"
LABEL = "Gboard"
SERVICE = "com.android.inputmethod.latin.LatinIME"

ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


@dataclass(frozen=True, slots=True)
class Key:
    label: str
    rect: Rect
    action: str  # char | shift | del | enter | space | symbols


def height(density: int) -> int:
    """Suggestion strip + four rows of keys + bottom padding, in pixels."""
    return round((40 + 4 * 54 + 8) * density / 160.0)


def keys(rect: Rect, density: int) -> list[Key]:
    """The key layout for a keyboard occupying ``rect``; the renderer and taps share it."""

    def dp(v: float) -> int:
        return round(v * density / 160.0)

    left, top, right, _ = rect
    width = right - left
    row_h = dp(54)
    key_w = width / 10.0
    y = top + dp(40)
    out: list[Key] = []
    for i, letters in enumerate(ROWS):
        x0 = left + (width - key_w * len(letters)) / 2
        if i == 2:
            out.append(Key("shift", (left, y, int(x0), y + row_h), "shift"))
            out.append(Key("del", (int(x0 + key_w * len(letters)), y, right, y + row_h), "del"))
        for j, ch in enumerate(letters):
            out.append(Key(ch, (int(x0 + j * key_w), y, int(x0 + (j + 1) * key_w), y + row_h),
                           "char"))
        y += row_h
    # bottom row: ?123  ,  space  .  enter
    spec = [("?123", 1.5, "symbols"), (",", 1.0, "char"), (" ", 5.0, "space"),
            (".", 1.0, "char"), ("enter", 1.5, "enter")]
    x = float(left)
    for label, units, action in spec:
        w = units * key_w
        out.append(Key(label, (int(x), y, int(x + w), y + row_h), action))
        x += w
    return out


def key_at(rect: Rect, density: int, x: float, y: float) -> Key | None:
    for k in keys(rect, density):
        r = k.rect
        if r[0] <= x < r[2] and r[1] <= y < r[3]:
            return k
    return None


def window(rect: Rect, shifted: bool, suggestion: str) -> View:
    """The IME window root: one node, painted as a whole keyboard."""
    return View(cls="android.widget.FrameLayout", bounds=rect, package=PACKAGE, clips=True,
                paint=Paint("keyboard", extra=("shift" if shifted else "", suggestion)))

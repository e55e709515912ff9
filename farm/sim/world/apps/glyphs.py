"""Extra Material-style glyphs for the bundled apps, added to ``icons.GLYPHS`` on import.

Same conventions as ``icons.py``: drawn on a 24×24 design grid in one colour.
"""

from __future__ import annotations

import math

from PIL import ImageDraw

from farm.sim.world import icons
from farm.sim.world.icons import RGBA, Pen

CLEAR = (0, 0, 0, 0)


def _w(u: Pen, v: float) -> int:
    """A stroke width of ``v`` design units (``u`` maps positions, offset included)."""
    return max(1, int(u(v) - u(0)))


def _add(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    w = _w(u, 2.4)
    d.line([(u(12), u(4)), (u(12), u(20))], fill=c, width=w)
    d.line([(u(4), u(12)), (u(20), u(12))], fill=c, width=w)


def _remove(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.line([(u(5), u(12)), (u(19), u(12))], fill=c, width=_w(u, 2.4))


def _delete(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rectangle((u(4), u(5), u(20), u(7)), fill=c)
    d.rectangle((u(9), u(3), u(15), u(5)), fill=c)
    d.polygon([(u(6), u(8)), (u(18), u(8)), (u(17), u(21)), (u(7), u(21))], fill=c)
    for x in (10, 14):
        d.line([(u(x), u(10.5)), (u(x), u(18.5))], fill=CLEAR, width=_w(u, 1.4))


def _person(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(8), u(3), u(16), u(11)), fill=c)
    d.pieslice((u(4), u(13), u(20), u(29)), 180, 360, fill=c)


def _cart(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    w = _w(u, 2)
    d.line([(u(2), u(4)), (u(5), u(4)), (u(8), u(15)), (u(19), u(15)), (u(21), u(7)),
            (u(6.2), u(7))], fill=c, width=w, joint="curve")
    d.ellipse((u(7), u(17.5), u(10), u(20.5)), fill=c)
    d.ellipse((u(16), u(17.5), u(19), u(20.5)), fill=c)


def _edit(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(3), u(21)), (u(3.5), u(17)), (u(16), u(4.5)), (u(19.5), u(8)), (u(7), u(20.5))],
              fill=c)


def _more(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    for y in (5, 12, 19):
        d.ellipse((u(10), u(y - 2), u(14), u(y + 2)), fill=c)


def _home(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(12), u(3)), (u(21), u(11)), (u(18.5), u(11)), (u(18.5), u(20)),
               (u(14), u(20)), (u(14), u(14)), (u(10), u(14)), (u(10), u(20)), (u(5.5), u(20)),
               (u(5.5), u(11)), (u(3), u(11))], fill=c)


def _star(d: ImageDraw.ImageDraw, u: Pen, c: RGBA, filled: bool = True) -> None:
    pts = []
    for i in range(10):
        a = -math.pi / 2 + i * math.pi / 5
        r = 10 if i % 2 == 0 else 4.2
        pts.append((u(12 + r * math.cos(a)), u(12.5 + r * math.sin(a))))
    if filled:
        d.polygon(pts, fill=c)
    else:
        d.polygon(pts, outline=c, width=_w(u, 1.8))


def _star_border(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    _star(d, u, c, filled=False)


def _alarm(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(4), u(5), u(20), u(21)), outline=c, width=_w(u, 2))
    d.line([(u(12), u(8.5)), (u(12), u(13)), (u(15), u(15))], fill=c, width=_w(u, 2))
    d.line([(u(2.5), u(6)), (u(6.5), u(2.5))], fill=c, width=_w(u, 2))
    d.line([(u(21.5), u(6)), (u(17.5), u(2.5))], fill=c, width=_w(u, 2))


def _timer(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(4), u(5), u(20), u(21)), outline=c, width=_w(u, 2))
    d.rectangle((u(9), u(1.5), u(15), u(3.5)), fill=c)
    d.line([(u(12), u(13)), (u(12), u(8))], fill=c, width=_w(u, 2))


def _stopwatch(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    _timer(d, u, c)
    d.line([(u(18), u(5)), (u(20), u(7))], fill=c, width=_w(u, 2))


def _bed(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.pieslice((u(4), u(3), u(20), u(19)), 90, 270, fill=c)
    d.ellipse((u(8), u(2), u(22), u(18)), fill=CLEAR)


def _keyboard(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(2), u(6), u(22), u(18)), radius=u(2), outline=c, width=_w(u, 1.8))
    for row, xs in ((9, (5, 8.5, 12, 15.5, 19)), (12, (5, 8.5, 12, 15.5, 19))):
        for x in xs:
            d.rectangle((u(x - 0.8), u(row - 0.8), u(x + 0.8), u(row + 0.8)), fill=c)
    d.rectangle((u(7), u(14.3), u(17), u(15.7)), fill=c)


def _phone(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(4), u(5)), (u(8), u(3)), (u(10.5), u(8)), (u(8.5), u(10)), (u(14), u(15.5)),
               (u(16), u(13.5)), (u(21), u(16)), (u(19), u(20)), (u(15), u(20.5)),
               (u(8), u(16)), (u(3.5), u(9))], fill=c)


def _email(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(2), u(5), u(22), u(19)), radius=u(1.5), fill=c)
    d.line([(u(3), u(6.5)), (u(12), u(13)), (u(21), u(6.5))], fill=CLEAR, width=_w(u, 1.6))


def _check(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.line([(u(4.5), u(12.5)), (u(9.5), u(17.5)), (u(19.5), u(7))], fill=c, width=_w(u, 2.4),
           joint="curve")


def _chevron_down(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.line([(u(6), u(9)), (u(12), u(15)), (u(18), u(9))], fill=c, width=_w(u, 2.2),
           joint="curve")


def _chevron_up(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.line([(u(6), u(15)), (u(12), u(9)), (u(18), u(15))], fill=c, width=_w(u, 2.2),
           joint="curve")


def _label(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(3), u(6)), (u(16), u(6)), (u(21), u(12)), (u(16), u(18)), (u(3), u(18))],
              fill=c)


def _chrome(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    # the Chrome mark in four colours (``c`` is ignored: it is a logo)
    box = (u(1), u(1), u(23), u(23))
    d.pieslice(box, 210, 330, fill=(219, 68, 55, 255))
    d.pieslice(box, 330, 450, fill=(244, 180, 0, 255))
    d.pieslice(box, 90, 210, fill=(15, 157, 88, 255))
    d.ellipse((u(6.5), u(6.5), u(17.5), u(17.5)), fill=(255, 255, 255, 255))
    d.ellipse((u(8), u(8), u(16), u(16)), fill=(66, 133, 244, 255))


def _bag(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(4), u(8)), (u(20), u(8)), (u(19), u(21)), (u(5), u(21))], fill=c)
    d.arc((u(8), u(3), u(16), u(13)), 180, 360, fill=c, width=_w(u, 2))
    d.line([(u(8), u(8)), (u(8), u(7.8))], fill=c, width=_w(u, 2))


def _clock(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(3), u(3), u(21), u(21)), outline=c, width=_w(u, 2))
    d.line([(u(12), u(7)), (u(12), u(12)), (u(16), u(14))], fill=c, width=_w(u, 2),
           joint="curve")


def _history(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.arc((u(4), u(4), u(20), u(20)), 200, 520, fill=c, width=_w(u, 2))
    d.line([(u(12), u(8)), (u(12), u(12)), (u(15), u(14))], fill=c, width=_w(u, 2))


def _tabs(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(4), u(4), u(20), u(20)), radius=u(2.5), outline=c, width=_w(u, 2))


NEW_GLYPHS = {
    "add": _add, "remove": _remove, "delete": _delete, "person": _person, "cart": _cart,
    "edit": _edit, "more": _more, "home": _home, "star": _star, "star_border": _star_border,
    "alarm": _alarm, "timer": _timer, "stopwatch": _stopwatch, "bedtime": _bed,
    "keyboard": _keyboard, "phone": _phone, "email": _email, "check": _check,
    "chevron_down": _chevron_down, "chevron_up": _chevron_up, "label": _label,
    "chrome": _chrome, "bag": _bag, "clock": _clock, "history": _history, "tabs": _tabs,
}

for _name, _fn in NEW_GLYPHS.items():
    icons.GLYPHS.setdefault(_name, _fn)

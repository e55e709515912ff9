"""Vector icons drawn once at 4× and downsampled (anti-aliased), cached as RGBA sprites.

Glyphs are drawn on a 24×24 design grid like Material icons, in one colour; the caller
composites the sprite, so a frame costs one paste per icon.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

from PIL import Image, ImageDraw

from farm.sim.world import fonts

RGBA = tuple[int, int, int, int]
SS = 4  # supersampling factor

Pen = Callable[[float], float]


def _wifi(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    # a filled quarter-fan, like the Material "signal_wifi_4_bar" glyph
    d.pieslice((u(1), u(3.5), u(23), u(25.5)), 225, 315, fill=c)


def _airplane(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    pts = [(12, 2), (13.5, 3.5), (13.5, 9), (22, 14), (22, 16), (13.5, 13.5), (13.5, 19),
           (16, 21), (16, 22.5), (12, 21.5), (8, 22.5), (8, 21), (10.5, 19), (10.5, 13.5),
           (2, 16), (2, 14), (10.5, 9), (10.5, 3.5)]
    d.polygon([(u(x), u(y)) for x, y in pts], fill=c)


def _back_arrow(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    w = u(2)
    d.line([(u(5), u(12)), (u(20), u(12))], fill=c, width=int(w))
    d.line([(u(12), u(4.5)), (u(4.6), u(12)), (u(12), u(19.5))], fill=c, width=int(w),
           joint="curve")


def _search(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(3), u(3), u(16), u(16)), outline=c, width=int(u(2.2) - u(0)))
    d.line([(u(14), u(14)), (u(21), u(21))], fill=c, width=int(u(2.6) - u(0)))


def _nav_back(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(17), u(4)), (u(17), u(20)), (u(5), u(12))], outline=c, width=int(u(2) - u(0)))


def _nav_home(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(4), u(4), u(20), u(20)), outline=c, width=int(u(2) - u(0)))


def _nav_recents(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(5), u(5), u(19), u(19)), radius=u(1.5), outline=c,
                        width=int(u(2) - u(0)))


def _gear(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    cx = cy = 12.0
    pts = []
    for i in range(48):
        a = i / 48 * 2 * math.pi
        r = 10.0 if (i // 3) % 2 == 0 else 7.6
        pts.append((u(cx + r * math.cos(a)), u(cy + r * math.sin(a))))
    d.polygon(pts, fill=c)
    d.ellipse((u(8.6), u(8.6), u(15.4), u(15.4)), fill=(0, 0, 0, 0))


def _devices(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    # bluetooth rune
    w = int(u(2) - u(0))
    d.line([(u(6.5), u(7)), (u(17), u(16.5)), (u(12), u(21)), (u(12), u(3)), (u(17), u(7.5)),
            (u(6.5), u(17))], fill=c, width=w, joint="curve")


def _apps(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    for gx in (4, 13.5):
        for gy in (4, 13.5):
            d.rounded_rectangle((u(gx), u(gy), u(gx + 6.5), u(gy + 6.5)), radius=u(1.5), fill=c)


def _battery(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(7), u(4), u(17), u(22)), radius=u(1.5), fill=c)
    d.rectangle((u(10), u(2), u(14), u(4)), fill=c)


def _storage(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    for y in (4, 10.5, 17):
        d.rounded_rectangle((u(3), u(y), u(21), u(y + 4)), radius=u(1), fill=c)


def _sound(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.polygon([(u(3), u(9)), (u(7), u(9)), (u(12), u(4)), (u(12), u(20)), (u(7), u(15)),
               (u(3), u(15))], fill=c)
    d.arc((u(8), u(7), u(17), u(17)), -55, 55, fill=c, width=int(u(2) - u(0)))
    d.arc((u(7), u(3), u(21), u(21)), -55, 55, fill=c, width=int(u(2) - u(0)))


def _display(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(7), u(7), u(17), u(17)), fill=c)
    for i in range(8):
        a = i / 8 * 2 * math.pi
        d.line([(u(12 + 7 * math.cos(a)), u(12 + 7 * math.sin(a))),
                (u(12 + 10 * math.cos(a)), u(12 + 10 * math.sin(a)))],
               fill=c, width=int(u(2) - u(0)))


def _location(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(5), u(2), u(19), u(16)), fill=c)
    d.polygon([(u(5.6), u(11.5)), (u(18.4), u(11.5)), (u(12), u(22))], fill=c)
    d.ellipse((u(9.5), u(6.5), u(14.5), u(11.5)), fill=(0, 0, 0, 0))


def _info(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(2), u(2), u(22), u(22)), fill=c)
    clear = (0, 0, 0, 0)
    d.rectangle((u(11), u(10.5), u(13), u(17.5)), fill=clear)
    d.ellipse((u(10.8), u(6.3), u(13.2), u(8.7)), fill=clear)


def _internet(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    _wifi(d, u, c)


def _app(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.rounded_rectangle((u(5), u(5), u(19), u(19)), radius=u(3), fill=c)


def _close(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    w = int(u(2.2) - u(0))
    d.line([(u(6), u(6)), (u(18), u(18))], fill=c, width=w)
    d.line([(u(18), u(6)), (u(6), u(18))], fill=c, width=w)


def _wait(d: ImageDraw.ImageDraw, u: Pen, c: RGBA) -> None:
    d.ellipse((u(3), u(3), u(21), u(21)), outline=c, width=int(u(2) - u(0)))
    d.line([(u(12), u(7)), (u(12), u(12)), (u(16), u(14))], fill=c, width=int(u(2) - u(0)))


GLYPHS: dict[str, Callable[[ImageDraw.ImageDraw, Pen, RGBA], None]] = {
    "wifi": _wifi, "airplane": _airplane, "arrow_back": _back_arrow, "search": _search,
    "nav_back": _nav_back, "nav_home": _nav_home, "nav_recents": _nav_recents,
    "settings": _gear, "devices": _devices, "apps": _apps, "battery": _battery,
    "storage": _storage, "sound": _sound, "display": _display, "location": _location,
    "info": _info, "internet": _internet, "app": _app, "close": _close, "wait": _wait,
    "dot": lambda d, u, c: None,  # just the background circle (slider thumb)
}


@lru_cache(maxsize=512)
def sprite(name: str, px: int, color: RGBA, bg: RGBA | None = None,
           letter: str = "") -> Image.Image:
    """``name`` drawn ``px`` pixels square in ``color``, on a ``bg`` circle if given.

    With a background the glyph takes 60 % of the circle (Material adaptive icon look);
    ``letter`` draws a letter instead of a glyph (installed apps without artwork).
    """
    big = px * SS
    img = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    if bg is not None:
        d.ellipse((0, 0, big - 1, big - 1), fill=bg)
        glyph_px = big * 0.58
        off = (big - glyph_px) / 2
    else:
        glyph_px = float(big)
        off = 0.0
    if letter:
        f = fonts.font(int(glyph_px * 0.8))
        d.text((big / 2, big / 2), letter, font=f, fill=color, anchor="mm")
    else:
        layer = Image.new("RGBA", (big, big), (0, 0, 0, 0))
        ld = ImageDraw.Draw(layer)

        def u(v: float) -> float:
            return off + v / 24.0 * glyph_px

        GLYPHS.get(name, _app)(ld, u, color)
        img.alpha_composite(layer)
    return img.resize((px, px), Image.Resampling.LANCZOS)

"""The app's screen as a picture: every cell of the compositor's strips becomes two
pixels stacked (a half-block ``▀`` is its foreground above its background, any other
cell its background, a glyph tinted a quarter towards its foreground), so what the
terminal would show can be measured with numpy instead of eyeballed."""

from __future__ import annotations

import numpy as np
from rich.color import Color
from textual.app import App
from textual.geometry import Region

__all__ = ["crop", "raster"]

_DEFAULT_FG = (224, 224, 224)
_DEFAULT_BG = (0, 0, 0)


def _rgb(c: Color | None, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if c is None or c.is_default:
        return default
    t = c.get_truecolor()
    return (t.red, t.green, t.blue)


def raster(app: App[object]) -> np.ndarray:
    """(2·rows, cols, 3) uint8 picture of the whole screen as it is now."""
    strips = app.screen._compositor.render_strips()
    w, h = app.size
    out = np.zeros((2 * h, w, 3), dtype=np.uint8)
    for y, strip in enumerate(strips[:h]):
        x = 0
        for seg in strip:
            text, style = seg.text, seg.style
            fg = _rgb(style.color if style else None, _DEFAULT_FG)
            bg = _rgb(style.bgcolor if style else None, _DEFAULT_BG)
            if style is not None and style.reverse:
                fg, bg = bg, fg
            for ch in text:
                if x >= w:
                    break
                if ch == "▀":
                    top, bottom = fg, bg
                elif ch.strip():
                    tint = tuple((3 * b + f) // 4 for f, b in zip(fg, bg, strict=True))
                    top = bottom = tint  # type: ignore[assignment]
                else:
                    top = bottom = bg
                out[2 * y, x] = top
                out[2 * y + 1, x] = bottom
                x += 1
    return out


def crop(picture: np.ndarray, region: Region) -> np.ndarray:
    """The pixels of a region given in cells."""
    return picture[2 * region.y:2 * (region.y + region.height), region.x:region.right]

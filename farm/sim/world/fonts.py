"""Pillow's built-in FreeType font (Aileron), cached per pixel size, plus text masks.

FreeType rasterising costs ~0.2 ms per string, so rendered text masks are cached by
(text, size): steady-state frames paste masks instead of rasterising again.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

from PIL import Image, ImageFont

# Glyphs Aileron lacks, drawn as their closest ASCII look-alike. The node text keeps the
# real character (AOSP writes "Wi‑Fi" with U+2011), only the pixels use the fallback.
_FALLBACK = str.maketrans({"\u2011": "-", "\u2010": "-", "\u2013": "-", "\u2014": "-",
                           "\u2022": "·", "\u00a0": " ", "\u202f": " ", "\u2019": "'"})


def glyphs(s: str) -> str:
    return s.translate(_FALLBACK)


@lru_cache(maxsize=64)
def font(px: int) -> ImageFont.FreeTypeFont:
    f = ImageFont.load_default(size=max(px, 1))
    assert isinstance(f, ImageFont.FreeTypeFont)
    return f


@lru_cache(maxsize=4096)
def text_width(text: str, px: int) -> int:
    return int(font(px).getlength(glyphs(text)) + 0.999)


def ellipsize(text: str, px: int, width: int) -> str:
    """Cut ``text`` to fit ``width`` pixels, ending in an ellipsis like TextView."""
    if text_width(text, px) <= width:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[:mid].rstrip() + "…", px) <= width:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


def wrap(text: str, px: int, width: int) -> list[str]:
    """Greedy word wrap."""
    lines: list[str] = []
    cur = ""
    for word in text.split(" "):
        trial = f"{cur} {word}" if cur else word
        if cur and text_width(trial, px) > width:
            lines.append(cur)
            cur = word
        else:
            cur = trial
    if cur or not lines:
        lines.append(cur)
    return lines


def _mask(f: ImageFont.FreeTypeFont, text: str, stroke: int) -> tuple[Image.Image, tuple[int, int]]:
    core, offset = f.getmask2(text, mode="L", anchor="ls", stroke_width=stroke)
    mask = Image.new("L", core.size)
    if core.size[0] and core.size[1]:
        mask.im = core
    return mask, (int(offset[0]), int(offset[1]))


class MaskCache:
    """LRU of rendered text masks: (text, px, bold) → (L image, x offset, y offset)."""

    def __init__(self, capacity: int = 3000) -> None:
        self.capacity = capacity
        self._d: OrderedDict[tuple[str, int, bool], tuple[Image.Image, int, int]] = OrderedDict()

    def get(self, text: str, px: int, bold: bool = False) -> tuple[Image.Image, int, int]:
        key = (text, px, bold)
        got = self._d.get(key)
        if got is not None:
            self._d.move_to_end(key)
            return got
        f = font(px)
        # anchor "ls": x at the left edge, y at the baseline; bold = a thin stroke
        stroke = px // 40 if bold else 0  # a stroke smears small text: bold only when big
        mask, offset = _mask(f, glyphs(text), 0)
        if stroke:
            # FreeType's stroker yields only the outline ring: fill it with the plain glyphs
            ring, ring_offset = _mask(f, glyphs(text), stroke)
            ring.paste(255, (offset[0] - ring_offset[0], offset[1] - ring_offset[1]), mask)
            mask, offset = ring, ring_offset
        got = (mask, offset[0], offset[1])
        self._d[key] = got
        if len(self._d) > self.capacity:
            self._d.popitem(last=False)
        return got

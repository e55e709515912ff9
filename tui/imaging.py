"""Phone screens as terminal cells: JPEG/PNG → resized RGB → half-block lines (``▀``
with the upper pixel as foreground and the lower one as background), plus the agent's
last actions drawn on the picture (tap points, swipe arrows).

Pure functions on immutable values, safe to call from the decoder thread: nothing
here touches a widget."""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

from distrl_sdk.actions import DIRECTIONS, scroll_gesture

__all__ = ["HalfBlock", "Mark", "decode", "draw_marks", "fit_cells", "halfblock", "marks_of"]

_UPPER = "▀"
_TAP = (255, 40, 40)
_SWIPE = (255, 220, 0)
_style_cache: dict[int, Style] = {}


def _style(key: int) -> Style:
    """One cached Style per quantised (fg, bg) pair: thousands of identical cells share
    it, which keeps Rich's and Textual's style caches small."""
    st = _style_cache.get(key)
    if st is None:
        if len(_style_cache) > 65_536:
            _style_cache.clear()
        fg, bg = key >> 24, key & 0xFFFFFF
        st = Style(color=Color.from_rgb(fg >> 16, (fg >> 8) & 255, fg & 255),
                   bgcolor=Color.from_rgb(bg >> 16, (bg >> 8) & 255, bg & 255))
        _style_cache[key] = st
    return st


@dataclass(frozen=True)
class HalfBlock:
    """A picture as ``rows`` lines of ``cols`` cells; a Rich renderable of fixed size."""

    lines: tuple[tuple[Segment, ...], ...]
    cols: int

    @property
    def rows(self) -> int:
        return len(self.lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        new_line = Segment.line()
        for line in self.lines:
            yield from line
            yield new_line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(self.cols, self.cols)


def decode(data: bytes, min_size: tuple[int, int] | None = None) -> Image.Image:
    """JPEG/PNG bytes → RGB image (raises on garbage: the caller counts it). With
    ``min_size``, a JPEG is decoded at the smallest DCT scale still at least that big
    (much cheaper than a full decode followed by a downscale)."""
    img = Image.open(io.BytesIO(data))
    if min_size is not None:
        img.draft("RGB", min_size)
    return img.convert("RGB")


def fit_cells(width: int, height: int, max_cols: int, max_rows: int) -> tuple[int, int]:
    """The largest (cols, rows) box of half-block cells that keeps the aspect ratio of a
    ``width``×``height`` picture (a cell is one pixel wide, two high)."""
    scale = min(max_cols / width, 2 * max_rows / height)
    cols = max(1, min(max_cols, round(width * scale)))
    rows = max(1, min(max_rows, math.ceil(height * scale / 2)))
    return cols, rows


def halfblock(img: Image.Image, cols: int, rows: int, *, resize: bool = True) -> HalfBlock:
    """``img`` resized to ``cols``×``2·rows`` pixels (box filter) as half-block cells.
    Colours are quantised to 5 bits per channel and equal neighbours merged."""
    if resize and img.size != (cols, rows * 2):
        img = img.resize((cols, rows * 2), Image.Resampling.BOX)
    px = np.asarray(img.convert("RGB"), dtype=np.uint32) & 0xF8
    packed = (px[..., 0] << 16) | (px[..., 1] << 8) | px[..., 2]
    keys = (packed[0::2].astype(np.uint64) << 24) | packed[1::2].astype(np.uint64)
    lines: list[tuple[Segment, ...]] = []
    for row in keys.tolist():
        segs: list[Segment] = []
        run_key, run = row[0], 0
        for k in row:
            if k == run_key:
                run += 1
                continue
            segs.append(Segment(_UPPER * run, _style(run_key)))
            run_key, run = k, 1
        segs.append(Segment(_UPPER * run, _style(run_key)))
        lines.append(tuple(segs))
    return HalfBlock(tuple(lines), cols)


# ---------------------------------------------------------------- actions


@dataclass(frozen=True)
class Mark:
    """An action to draw, in normalised screen coordinates (0..1)."""

    kind: str  # tap | long_press | swipe
    x: float
    y: float
    x2: float | None = None
    y2: float | None = None


def _num(d: Mapping[str, Any], key: str) -> float | None:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def _coord(d: Mapping[str, Any], key: str, size: int) -> float | None:
    """A coordinate normalised to 0..1: ``<key>_px`` or an int are device pixels (the
    farm's thumbnails send pixels, ``distrl deploy`` adds ``*_px``), a float ≤ 1 is
    already normalised (distrl_sdk.actions JSON)."""
    px = _num(d, f"{key}_px")
    if px is not None:
        return px / size
    v = _num(d, key)
    if v is None:
        return None
    raw = d.get(key)
    if isinstance(raw, int) or v > 1.0:
        return v / size
    return v


def marks_of(actions: Iterable[Mapping[str, Any]], screen_w: int, screen_h: int
             ) -> list[Mark]:
    """Marks for the actions that have a place on screen: ``click``/``tap``/
    ``long_press`` (and typing at a point) with x, y; ``swipe`` with x1, y1, x2, y2;
    ``scroll`` with a direction (drawn as the finger's path). Anything else is
    skipped, never an error."""
    out: list[Mark] = []
    for a in actions:
        if not isinstance(a, Mapping):
            continue
        kind = str(a.get("action_type") or a.get("kind") or a.get("type") or "")
        if kind == "scroll":
            direction = a.get("direction")
            if direction in DIRECTIONS:
                g = scroll_gesture(direction)
                out.append(Mark("swipe", g.x1, g.y1, g.x2, g.y2))
            continue
        if kind in ("swipe", "drag"):
            pts = [_coord(a, k, screen_w if k[0] == "x" else screen_h)
                   for k in ("x1", "y1", "x2", "y2")]
            nums = [v for v in pts if v is not None]
            if len(nums) == 4:
                out.append(Mark("swipe", *nums))
            continue
        x, y = _coord(a, "x", screen_w), _coord(a, "y", screen_h)
        if x is not None and y is not None:
            out.append(Mark("long_press" if kind == "long_press" else "tap", x, y))
    return out


def draw_marks(img: Image.Image, marks: Sequence[Mark]) -> Image.Image:
    """A copy of ``img`` (already at display size) with the marks drawn, oldest faint,
    newest bright: taps as a ring with a dot, swipes as an arrow."""
    if not marks:
        return img
    out = img.copy()
    d = ImageDraw.Draw(out)
    w, h = out.size
    r = max(1, min(w, h) // 24)
    for i, m in enumerate(marks):
        fade = 0.4 + 0.6 * (i + 1) / len(marks)
        x, y = m.x * (w - 1), m.y * (h - 1)
        if m.kind == "swipe" and m.x2 is not None and m.y2 is not None:
            col = tuple(int(c * fade) for c in _SWIPE)
            x2, y2 = m.x2 * (w - 1), m.y2 * (h - 1)
            d.line([(x, y), (x2, y2)], fill=col, width=1)
            ang = math.atan2(y2 - y, x2 - x)
            head = max(2.0, r * 1.5)
            for da in (2.6, -2.6):
                d.line([(x2, y2), (x2 + head * math.cos(ang + da),
                                   y2 + head * math.sin(ang + da))], fill=col, width=1)
        else:
            col = tuple(int(c * fade) for c in _TAP)
            rr = r * (2 if m.kind == "long_press" else 1)
            d.ellipse([x - rr - 1, y - rr - 1, x + rr + 1, y + rr + 1], outline=col)
            d.point((x, y), fill=col)
    return out

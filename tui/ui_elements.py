"""The Device screen's "UI elements" panel: the compact elements a frame carries
(``DeviceFrame.elements``, see :func:`distrl_sdk.wire.compact_elements`) as one line
each, the one under the newest tap highlighted. Pure functions of the frame (no Textual),
so they are tested directly and cost nothing unless the Device screen is open."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from distrl_sdk.wire import DeviceFrame
from tui.imaging import marks_of

__all__ = ["element_label", "elements_text", "tapped_element"]


def _str(e: Mapping[str, Any], key: str) -> str:
    v = e.get(key)
    return v if isinstance(v, str) else ""


def _bounds(e: Mapping[str, Any]) -> tuple[float, float, float, float] | None:
    b = e.get("bounds")
    if (isinstance(b, list | tuple) and len(b) == 4
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in b)):
        return float(b[0]), float(b[1]), float(b[2]), float(b[3])
    return None  # elements come off the wire: a bad one is shown, never an error


def element_label(e: Mapping[str, Any]) -> str:
    """What a person would call it: text, else content-desc, else the id's name."""
    return _str(e, "text") or _str(e, "desc") or _str(e, "id").rpartition("/")[2] or "?"


def tapped_element(frame: DeviceFrame) -> int | None:
    """Index in ``frame.elements`` of the smallest element under the newest tap or long
    press among ``frame.actions`` (the innermost target), or ``None``."""
    taps = [m for m in marks_of(frame.actions, frame.screen_width, frame.screen_height)
            if m.kind in ("tap", "long_press")]
    if not taps:
        return None
    x, y = taps[-1].x * frame.screen_width, taps[-1].y * frame.screen_height
    best: tuple[float, int] | None = None
    for i, e in enumerate(frame.elements):
        b = _bounds(e)
        if b is None or not (b[0] <= x < b[2] and b[1] <= y < b[3]):
            continue
        area = (b[2] - b[0]) * (b[3] - b[1])
        if best is None or area < best[0]:
            best = (area, i)
    return None if best is None else best[1]


#: a label longer than this is cut so the class name stays on the line
MAX_LABEL = 40


def _line(e: Mapping[str, Any], hit: bool) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    click = e.get("click") is True
    if hit:
        t.append("▶ ", style="bold red")
    else:
        t.append("› " if click else "  ", style="bold cyan")
    checked = e.get("checked")
    if checked is True:
        t.append("[x] ", style="green")
    elif checked is False:
        t.append("[ ] ", style="dim")
    label = element_label(e)
    if len(label) > MAX_LABEL:
        label = label[: MAX_LABEL - 1] + "…"
    t.append(label, style="bold" if click else "")
    cls = _str(e, "cls")
    if cls:
        t.append(" " + cls, style="dim")
    if hit:
        t.stylize("reverse")
    return t


def elements_text(frame: DeviceFrame | None, *, limit: int = 64) -> Text:
    """The panel: a title line, then one line per element in document order (``›``:
    clickable, ``[x]``/``[ ]``: checked or not); the tapped one is reverse-highlighted."""
    out = Text(no_wrap=True, overflow="ellipsis")  # one line per element, cut at the edge
    out.append("UI elements", style="bold")
    elements: Sequence[Mapping[str, Any]] = frame.elements if frame is not None else []
    if not elements:
        out.append("\nnone in this frame" if frame is not None else "\nwaiting for a frame…",
                   style="dim")
        return out
    hit = tapped_element(frame) if frame is not None else None
    out.append(f" ({len(elements)}" + (", ▶ newest tap" if hit is not None else "") + ")",
               style="dim")
    for i, e in enumerate(elements[:limit]):
        if not isinstance(e, Mapping):
            continue
        out.append("\n")
        out.append_text(_line(e, i == hit))
    return out

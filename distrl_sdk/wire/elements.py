"""Compact UI elements for :class:`~distrl_sdk.wire.schemas.DeviceFrame` (``elements``).

A full uiautomator dump has hundreds of layout nodes; a viewer needs only the ones a
person (or the agent) can act on or read. This keeps those, in document order, as small
JSON dicts so a frame header stays a few KB."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from distrl_sdk.uitree import UIElement

#: the most elements one frame carries (the schema's ``max_length``)
MAX_ELEMENTS = 64
#: longer text / ids / descriptions are cut: the frame is a live view, not a dump archive
MAX_TEXT = 80


def _cut(s: str) -> str:
    return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"


def _interesting(e: UIElement) -> bool:
    if e.bounds.width <= 0 or e.bounds.height <= 0:
        return False  # off screen or collapsed: nothing to see or tap
    return bool(e.clickable or e.long_clickable or e.checkable or e.text or e.content_desc)


def compact_element(e: UIElement) -> dict[str, Any]:
    """One element as the wire dict: ``text``, ``id`` (resource-id), ``desc`` (content-desc),
    ``cls`` (short class name), ``bounds`` [l,t,r,b] device pixels, ``click``, ``checked``
    (``None`` when the element is not checkable)."""
    b = e.bounds
    return {
        "text": _cut(e.text),
        "id": _cut(e.resource_id),
        "desc": _cut(e.content_desc),
        "cls": e.class_name.rpartition(".")[2][:40],
        "bounds": [b.left, b.top, b.right, b.bottom],
        "click": bool(e.clickable or e.long_clickable),
        "checked": bool(e.checked) if e.checkable else None,
    }


def compact_elements(elements: Sequence[UIElement],
                     limit: int = MAX_ELEMENTS) -> list[dict[str, Any]]:
    """The interesting elements (clickable, checkable, or with text or content-desc; never
    zero-size) in document order, at most ``limit`` (clamped to :data:`MAX_ELEMENTS`)."""
    limit = max(0, min(limit, MAX_ELEMENTS))
    out: list[dict[str, Any]] = []
    for e in elements:
        if len(out) >= limit:
            break
        if _interesting(e):
            out.append(compact_element(e))
    return out

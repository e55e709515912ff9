"""``uiautomator dump`` output, byte-exact with AOSP AccessibilityNodeInfoDumper.

One line, no indentation, attribute order index, text, resource-id, class, package,
content-desc, checkable, checked, clickable, enabled, focusable, focused, scrollable,
long-clickable, password, selected, bounds; ``index`` is the position among the visible
siblings; invalid XML characters become ``.``; empty elements close with ``/>``.
Each window root is dumped with index 0, as androidx ``dumpWindowHierarchy`` does.
"""

from __future__ import annotations

import re
from functools import lru_cache

from farm.sim.world.views import View

HEADER = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"

# AccessibilityNodeInfoDumper.stripInvalidXMLChars: these become '.'
_INVALID = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u0084\u0086-\u009f"
    "\ud800-\udfff\ufdd0-\ufddf\ufffe\uffff]"
)
# KXmlSerializer attribute escaping (quote char is '"')
_ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
        "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
_NEEDS_ESC = re.compile('[&<>"\n\r\t]')


@lru_cache(maxsize=8192)
def escape(s: str) -> str:
    """Cached: a dump escapes ~120 strings per screen (texts, class and package names,
    ids), nearly all the same as in the last dump."""
    if not s:
        return s
    s = _INVALID.sub(".", s)
    return _NEEDS_ESC.sub(lambda m: _ESC[m.group(0)], s)


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def _node(v: View, index: int, out: list[str]) -> None:
    vis = v.vis
    assert vis is not None
    out.append(
        f'<node index="{index}" text="{escape(v.text)}" resource-id="{escape(v.rid)}" '
        f'class="{escape(v.cls)}" package="{escape(v.package)}" '
        f'content-desc="{escape(v.desc)}" checkable="{_b(v.checkable)}" '
        f'checked="{_b(v.checked)}" clickable="{_b(v.clickable)}" '
        f'enabled="{_b(v.enabled)}" focusable="{_b(v.focusable)}" '
        f'focused="{_b(v.focused)}" scrollable="{_b(v.scrollable)}" '
        f'long-clickable="{_b(v.long_clickable)}" password="{_b(v.password)}" '
        f'selected="{_b(v.selected)}" bounds="[{vis[0]},{vis[1]}][{vis[2]},{vis[3]}]"'
    )
    kids = [c for c in v.children if c.vis is not None]
    if not kids:
        out.append("/>")
        return
    out.append(">")
    for i, c in enumerate(kids):
        _node(c, i, out)
    out.append("</node>")


def dump(roots: list[View], rotation: int = 0) -> str:
    """The whole dump for these window roots (already finalized), bottom window first."""
    out = [HEADER, f'<hierarchy rotation="{rotation}">']
    for r in roots:
        if r.vis is not None:
            _node(r, 0, out)
    out.append("</hierarchy>")
    return "".join(out)

"""Parse a ``uiautomator dump`` into flat, typed UI elements.

Works on the AOSP dumper's output and the richer androidx/Appium variants (extra
attributes are kept in ``extra``). Elements come out in document order, each with
its depth and parent index, so policies can read them as a sequence and
evaluators can query them like a tree.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field

from distrl_sdk.errors import ProtocolError

__all__ = ["Bounds", "UIElement", "find_elements", "parse_ui_dump"]

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_BOOL_ATTRS = (
    "checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable",
    "long-clickable", "password", "selected",
)
_KNOWN = {"index", "text", "resource-id", "class", "package", "content-desc", "bounds",
          *_BOOL_ATTRS}


@dataclass(frozen=True, slots=True)
class Bounds:
    left: int
    top: int
    right: int
    bottom: int

    def __str__(self) -> str:
        return f"[{self.left},{self.top}][{self.right},{self.bottom}]"

    @property
    def center(self) -> tuple[int, int]:
        return (self.left + self.right) // 2, (self.top + self.bottom) // 2

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top

    def contains(self, x: float, y: float) -> bool:
        return self.left <= x < self.right and self.top <= y < self.bottom

    @classmethod
    def parse(cls, text: str) -> Bounds:
        m = _BOUNDS.fullmatch(text.strip())
        if not m:
            raise ProtocolError(f"bad bounds {text!r}; expected [l,t][r,b]")
        left, top, right, bottom = (int(g) for g in m.groups())
        return cls(left, top, right, bottom)


@dataclass(frozen=True, slots=True)
class UIElement:
    """One ``<node>`` of the dump."""

    index: int  # position in document order (0 = root node)
    depth: int
    parent: int | None
    text: str
    resource_id: str
    class_name: str
    package: str
    content_desc: str
    bounds: Bounds
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """What a person would call it: text, else content-desc, else the id's name."""
        return self.text or self.content_desc or self.resource_id.rpartition("/")[2]

    @property
    def is_text_field(self) -> bool:
        """A field one types into (its text is typed input or a hint, not a label):
        EditText, the subclasses dumps name by their own class (AutoCompleteTextView,
        MultiAutoCompleteTextView, SearchView's SearchAutoComplete — a search box), or a
        node a richer dumper marks ``editable``."""
        c = self.class_name
        return "EditText" in c or "AutoComplete" in c or self.extra.get("editable") == "true"


def parse_ui_dump(xml: str | bytes) -> list[UIElement]:
    """Parse a dump; raises :class:`ProtocolError` on anything that is not one."""
    if isinstance(xml, bytes):
        xml = xml.decode("utf-8", errors="replace")
    start = xml.find("<?xml")
    end = xml.rfind("</hierarchy>")
    if start < 0 or end < 0:
        raise ProtocolError("not a uiautomator dump: no <?xml … </hierarchy> found")
    try:
        root = ET.fromstring(xml[start : end + len("</hierarchy>")].encode())
    except ET.ParseError as exc:
        raise ProtocolError(f"malformed uiautomator dump: {exc}") from None
    out: list[UIElement] = []

    def visit(node: ET.Element, depth: int, parent: int | None) -> None:
        for child in node:
            if child.tag != "node":
                continue
            a = child.attrib
            idx = len(out)
            out.append(UIElement(
                index=idx, depth=depth, parent=parent,
                text=a.get("text", ""), resource_id=a.get("resource-id", ""),
                class_name=a.get("class", ""), package=a.get("package", ""),
                content_desc=a.get("content-desc", ""),
                bounds=Bounds.parse(a.get("bounds", "[0,0][0,0]")),
                **{k.replace("-", "_"): a.get(k) == "true" for k in _BOOL_ATTRS if k in a},
                extra={k: v for k, v in a.items() if k not in _KNOWN},
            ))
            visit(child, depth + 1, idx)

    visit(root, 0, None)
    return out


def find_elements(
    elements: Iterable[UIElement],
    *,
    text: str | None = None,
    text_contains: str | None = None,
    resource_id: str | None = None,
    class_name: str | None = None,
    content_desc: str | None = None,
    clickable: bool | None = None,
) -> list[UIElement]:
    """Elements matching every given selector (exact unless ``…_contains``)."""
    found = []
    for e in elements:
        if text is not None and e.text != text:
            continue
        if text_contains is not None and text_contains.lower() not in e.text.lower():
            continue
        if resource_id is not None and e.resource_id != resource_id:
            continue
        if class_name is not None and e.class_name != class_name:
            continue
        if content_desc is not None and e.content_desc != content_desc:
            continue
        if clickable is not None and e.clickable != clickable:
            continue
        found.append(e)
    return found

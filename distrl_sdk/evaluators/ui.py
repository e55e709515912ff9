"""``UIPredicate``: does the screen show (or not show) elements matching selectors?

    UIPredicate(text="Wi-Fi", checked=False)              # some element, exact text
    UIPredicate(text_regex=r"Alarm .* {hour}:{minute:02d}", count=1)
    UIPredicate(resource_id="com.android.settings:id/search", exists=False)
    UIPredicate(xpath=".//node[@text='Wi-Fi']/../node[@checked='true']")

Attribute selectors read ``device.ui_elements()``. ``xpath`` runs ElementTree's XPath
subset on the raw ``uiautomator dump`` XML (``device.ui_xml()`` when the device has it,
else ``uiautomator dump /dev/tty``), relative to the ``<hierarchy>`` root.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from distrl_sdk.device import Device
from distrl_sdk.errors import ProtocolError, TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig, check_regex, compile_regex, short
from distrl_sdk.trajectory import Trajectory
from distrl_sdk.uitree import UIElement

__all__ = ["CountRange", "UIPredicate", "read_ui_xml"]

_STR_SELECTORS = ("text", "text_contains", "text_regex", "resource_id", "class_name",
                  "content_desc", "content_desc_contains", "package")
_BOOL_SELECTORS = ("checked", "selected", "enabled", "focused", "clickable", "checkable",
                   "scrollable")


class CountRange(BaseModel):
    """How many elements must match: ``min`` ≤ n ≤ ``max`` (``max`` None: unbounded)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    min: int = Field(default=1, ge=0)
    max: int | None = Field(default=None, ge=0)


class UIConfig(EvaluatorConfig):
    text: str | None = None
    text_contains: str | None = None
    text_regex: str | None = None
    resource_id: str | None = None
    class_name: str | None = None
    content_desc: str | None = None
    content_desc_contains: str | None = None
    package: str | None = None
    checked: bool | None = None
    selected: bool | None = None
    enabled: bool | None = None
    focused: bool | None = None
    clickable: bool | None = None
    checkable: bool | None = None
    scrollable: bool | None = None
    xpath: str | None = None
    count: int | CountRange | None = None
    exists: bool = True


async def read_ui_xml(device: Device) -> str:
    """The raw dump: ``device.ui_xml()`` if the device offers it, else ``uiautomator dump``."""
    ui_xml = getattr(device, "ui_xml", None)
    if callable(ui_xml):
        xml = await ui_xml()
        return xml.decode("utf-8", "replace") if isinstance(xml, bytes) else str(xml)
    out = await device.shell("uiautomator dump /dev/tty")
    return out.stdout


def _hierarchy(xml: str) -> ET.Element:
    start, end = xml.find("<?xml"), xml.rfind("</hierarchy>")
    if start < 0:
        start = xml.find("<hierarchy")
    if start < 0 or end < 0:
        raise ProtocolError("not a uiautomator dump: no <hierarchy> … </hierarchy> found")
    try:
        return ET.fromstring(xml[start : end + len("</hierarchy>")].encode())
    except ET.ParseError as exc:
        raise ProtocolError(f"malformed uiautomator dump: {exc}") from None


class UIPredicate(RewardEvaluator):
    """1.0 when the number of matching elements is within ``count`` (default: at least one).

    ``exists=False`` inverts it: 1.0 when nothing matches. Selectors are ANDed; string
    selectors are exact except ``*_contains`` (case-insensitive substring) and
    ``text_regex`` (``re.search``). A ``resource_id`` without ``:id/`` matches the id's
    last part (``"search"`` matches ``com.android.settings:id/search``). ``count`` is an
    int (exactly n) or ``CountRange(min, max)`` / ``{"min": …, "max": …}``.
    """

    name = "ui"
    config_model = UIConfig

    def __init__(
        self,
        *,
        text: str | None = None,
        text_contains: str | None = None,
        text_regex: str | None = None,
        resource_id: str | None = None,
        class_name: str | None = None,
        content_desc: str | None = None,
        content_desc_contains: str | None = None,
        package: str | None = None,
        checked: bool | None = None,
        selected: bool | None = None,
        enabled: bool | None = None,
        focused: bool | None = None,
        clickable: bool | None = None,
        checkable: bool | None = None,
        scrollable: bool | None = None,
        xpath: str | None = None,
        count: int | CountRange | Mapping[str, int | None] | None = None,
        exists: bool = True,
    ) -> None:
        self.strings: dict[str, str] = {k: v for k, v in {
            "text": text, "text_contains": text_contains, "text_regex": text_regex,
            "resource_id": resource_id, "class_name": class_name,
            "content_desc": content_desc, "content_desc_contains": content_desc_contains,
            "package": package}.items() if v is not None}
        self.flags: dict[str, bool] = {k: v for k, v in {
            "checked": checked, "selected": selected, "enabled": enabled,
            "focused": focused, "clickable": clickable, "checkable": checkable,
            "scrollable": scrollable}.items() if v is not None}
        self.xpath = xpath
        self.exists = exists
        if xpath is not None and (self.strings or self.flags):
            raise TaskError("ui: `xpath` cannot be combined with attribute selectors "
                            f"({', '.join([*self.strings, *self.flags])}); put them in the XPath")
        if xpath is None and not (self.strings or self.flags):
            raise TaskError("ui: give at least one selector (text, resource_id, …) or an xpath")
        if text_regex is not None:
            check_regex(text_regex, "ui.text_regex")
        if xpath is not None:
            try:
                ET.Element("hierarchy").findall(fill(xpath, {}))
            except (SyntaxError, KeyError) as exc:
                raise TaskError(f"ui.xpath {xpath!r} is not in ElementTree's XPath subset: "
                                f"{exc}") from None
        if count is not None and not exists:
            raise TaskError("ui: `count` and `exists=False` contradict; use count={'max': 0}")
        if count is None:
            self.count = CountRange(min=0, max=0) if not exists else CountRange()
        elif isinstance(count, int):
            self.count = CountRange(min=count, max=count)
        elif isinstance(count, CountRange):
            self.count = count
        else:
            self.count = CountRange.model_validate(dict(count))
        if self.count.max is not None and self.count.max < self.count.min:
            raise TaskError(f"ui.count: max {self.count.max} < min {self.count.min}")

    # -- matching ----------------------------------------------------------------------
    def matches(self, elements: list[UIElement], params: Mapping[str, Any]) -> list[UIElement]:
        """The elements that satisfy every attribute selector."""
        want = {k: fill(v, params) for k, v in self.strings.items() if k != "text_regex"}
        rx = (compile_regex(self.strings["text_regex"], params, what="ui.text_regex")
              if "text_regex" in self.strings else None)
        out = []
        for e in elements:
            if not all(getattr(e, k) == v for k, v in self.flags.items()):
                continue
            if "text" in want and e.text != want["text"]:
                continue
            if "text_contains" in want and want["text_contains"].lower() not in e.text.lower():
                continue
            if rx is not None and not rx.search(e.text):
                continue
            if "resource_id" in want and not _id_matches(e.resource_id, want["resource_id"]):
                continue
            if "class_name" in want and e.class_name != want["class_name"]:
                continue
            if "content_desc" in want and e.content_desc != want["content_desc"]:
                continue
            if ("content_desc_contains" in want
                    and want["content_desc_contains"].lower() not in e.content_desc.lower()):
                continue
            if "package" in want and e.package != want["package"]:
                continue
            out.append(e)
        return out

    async def count_matches(self, device: Device, params: Mapping[str, Any]) -> int:
        if self.xpath is None:
            return len(self.matches(await device.ui_elements(), params))
        root = _hierarchy(await read_ui_xml(device))
        path = fill(self.xpath, params)
        try:
            return len(root.findall(path))
        except (SyntaxError, KeyError) as exc:
            raise TaskError(f"ui.xpath {path!r}: {exc}") from None

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        n = await self.count_matches(device, params)
        hi = math.inf if self.count.max is None else self.count.max
        return 1.0 if self.count.min <= n <= hi else 0.0

    def describe(self) -> str:
        parts = [f"xpath={short(self.xpath, 60)}"] if self.xpath is not None else []
        parts += [f"{k}={short(v)}" for k, v in self.strings.items()]
        parts += [f"{k}={v}" for k, v in self.flags.items()]
        c = self.count
        if not self.exists:
            parts.append("absent")
        elif c.max == c.min:
            parts.append(f"count={c.min}")
        elif c.max is None:
            if c.min != 1:
                parts.append(f"count≥{c.min}")
        else:
            parts.append(f"count∈[{c.min},{c.max}]")
        return "ui(" + ", ".join(parts) + ")"


def _id_matches(actual: str, wanted: str) -> bool:
    if ":id/" in wanted or "/" in wanted:
        return actual == wanted
    return actual.rpartition("/")[2] == wanted


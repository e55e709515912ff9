"""compact_elements: the UI elements a frame carries for the TUI's Device screen."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from distrl_sdk.uitree import Bounds, UIElement, parse_ui_dump
from distrl_sdk.wire import (
    MAX_ELEMENTS,
    DeviceFrame,
    Message,
    compact_elements,
    encode_frame,
    parse_message,
    topics,
)

DUMP = """<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="p"
 content-desc="" checkable="false" checked="false" clickable="false" enabled="true"
 focusable="false" focused="false" scrollable="false" long-clickable="false" password="false"
 selected="false" bounds="[0,0][1080,2400]">
 <node index="0" text="Settings" resource-id="p:id/title" class="android.widget.TextView"
  package="p" content-desc="" checkable="false" checked="false" clickable="false"
  enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false"
  password="false" selected="false" bounds="[0,100][1080,200]" />
 <node index="1" text="" resource-id="p:id/hidden" class="android.widget.Button" package="p"
  content-desc="" checkable="false" checked="false" clickable="true" enabled="true"
  focusable="false" focused="false" scrollable="false" long-clickable="false"
  password="false" selected="false" bounds="[10,10][10,50]" />
 <node index="2" text="" resource-id="p:id/wifi" class="android.widget.Switch" package="p"
  content-desc="Wi-Fi" checkable="true" checked="true" clickable="true" enabled="true"
  focusable="true" focused="false" scrollable="false" long-clickable="false"
  password="false" selected="false" bounds="[900,300][1040,400]" />
 <node index="3" text="" resource-id="p:id/spacer" class="android.view.View" package="p"
  content-desc="" checkable="false" checked="false" clickable="false" enabled="true"
  focusable="false" focused="false" scrollable="false" long-clickable="false"
  password="false" selected="false" bounds="[0,400][1080,500]" />
 <node index="4" text="" resource-id="p:id/menu" class="android.widget.ImageButton"
  package="p" content-desc="" checkable="false" checked="false" clickable="true"
  enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false"
  password="false" selected="false" bounds="[0,2200][200,2400]" />
</node>
</hierarchy>"""


def _el(i: int, *, text: str = "", clickable: bool = False,
        bounds: Bounds | None = None) -> UIElement:
    return UIElement(index=i, depth=1, parent=0, text=text, resource_id="", class_name="V",
                     package="p", content_desc="",
                     bounds=bounds or Bounds(0, i, 100, i + 10), clickable=clickable)


def test_keeps_interesting_in_document_order() -> None:
    out = compact_elements(parse_ui_dump(DUMP))
    assert out == [
        {"text": "Settings", "id": "p:id/title", "desc": "", "cls": "TextView",
         "bounds": [0, 100, 1080, 200], "click": False, "checked": None},
        {"text": "", "id": "p:id/wifi", "desc": "Wi-Fi", "cls": "Switch",
         "bounds": [900, 300, 1040, 400], "click": True, "checked": True},
        {"text": "", "id": "p:id/menu", "desc": "", "cls": "ImageButton",
         "bounds": [0, 2200, 200, 2400], "click": True, "checked": None},
    ]  # root, the zero-width button and the plain spacer are left out


def test_limit_and_long_text() -> None:
    many = [_el(i, text=f"row {i}") for i in range(200)]
    out = compact_elements(many)
    assert len(out) == MAX_ELEMENTS and [e["text"] for e in out[:2]] == ["row 0", "row 1"]
    assert len(compact_elements(many, limit=5)) == 5
    assert len(compact_elements(many, limit=1000)) == MAX_ELEMENTS  # the schema's cap
    assert compact_elements(many, limit=0) == [] and compact_elements([]) == []
    (long,) = compact_elements([_el(0, text="x" * 500)])
    assert len(long["text"]) <= 80 and long["text"].endswith("…")
    assert compact_elements([_el(0, clickable=True, bounds=Bounds(5, 5, 5, 9))]) == []


def test_frame_round_trip_and_backwards_compatible() -> None:
    elements = compact_elements(parse_ui_dump(DUMP))
    frame = DeviceFrame(device_id="d1", width=10, height=20, screen_width=1080,
                        screen_height=2400, step=3, elements=elements)
    m = parse_message(topics.frame("f", "d1"), encode_frame(frame, b"img", farm_id="f"))
    assert isinstance(m, Message) and isinstance(m.body, DeviceFrame)
    assert m.body.elements == elements and m.data == b"img"
    old = DeviceFrame.model_validate({"device_id": "d1", "width": 1, "height": 1,
                                      "screen_width": 1, "screen_height": 1})
    assert old.elements == []  # frames from older farms still parse


def test_too_many_elements_rejected_by_schema() -> None:
    body = DeviceFrame(device_id="d1", width=1, height=1, screen_width=1,
                       screen_height=1).model_dump(mode="json")
    body["elements"] = [{"text": "x"}] * (MAX_ELEMENTS + 1)
    with pytest.raises(ValidationError, match="elements"):
        DeviceFrame.model_validate(body)

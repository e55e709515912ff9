"""The Device screen's UI elements panel: lines, markers and the tapped element."""

from __future__ import annotations

from typing import Any

from distrl_sdk.wire import DeviceFrame
from tui import fakefeed as ff
from tui.ui_elements import element_label, elements_text, tapped_element


def _frame(elements: list[dict[str, Any]], actions: list[dict[str, Any]] | None = None
           ) -> DeviceFrame:
    return DeviceFrame(device_id="d", width=108, height=240, screen_width=1080,
                       screen_height=2400, step=1, elements=elements, actions=actions or [])


def test_lines_and_markers() -> None:
    els = ff.screen_elements(3, step=2)
    t = elements_text(_frame(els)).plain.splitlines()
    assert t[0] == f"UI elements ({len(els)})"
    assert t[1].strip() == "App 3 TextView"  # not clickable: no marker
    assert t[2] == "› Row 0 LinearLayout"
    assert "› Row 2 (current) LinearLayout" in t  # step 2's row
    assert "› [x] Wi-Fi Switch" in t  # checked on even steps; desc when no text
    assert "› [ ] Wi-Fi Switch" in elements_text(_frame(ff.screen_elements(3, 1))).plain
    assert t[-1] == "› next ImageButton"  # the id's name when no text nor desc
    assert element_label({"bounds": "junk"}) == "?"


def test_empty_and_garbage() -> None:
    assert "waiting for a frame" in elements_text(None).plain
    assert "none in this frame" in elements_text(_frame([])).plain
    junk: list[dict[str, Any]] = [{"text": 5, "bounds": "x", "click": "yes"},
                                  {"text": "ok", "bounds": [1, 2]}]
    plain = elements_text(_frame(junk, [{"action_type": "click", "x": 1, "y": 2}])).plain
    assert plain.splitlines()[1:] == ["  ?", "  ok"]  # shown, never an error


def test_newest_tap_is_highlighted() -> None:
    els = ff.screen_elements(0, step=0)
    row1 = next(i for i, e in enumerate(els) if e["id"] == "fake:id/row1")
    left, top, right, bottom = els[row1]["bounds"]
    tap_px = {"action_type": "click", "x": (left + right) // 2, "y": (top + bottom) // 2}
    frame = _frame(els, [{"action_type": "click", "x": 5, "y": 5}, tap_px])
    assert tapped_element(frame) == row1
    text = elements_text(frame)
    lines = text.plain.splitlines()
    assert "newest tap" in lines[0] and lines[1 + row1].startswith("▶ Row 1")
    hit_start = text.plain.index("▶ Row 1")
    assert any("reverse" in str(s.style) and s.start <= hit_start < s.end for s in text.spans)
    # normalised coordinates (distrl_sdk.actions JSON) work too; swipes are not taps
    norm = {"action_type": "long_press", "x": (left + 5) / 1080, "y": (top + 5) / 2400}
    assert tapped_element(_frame(els, [norm])) == row1
    swipe = {"action_type": "swipe", "x1": 0.5, "y1": 0.5, "x2": 0.5, "y2": 0.1}
    assert tapped_element(_frame(els, [swipe])) is None
    assert tapped_element(_frame(els, [{"action_type": "click", "x": 1079, "y": 5}])) is None
    # nested: the smallest element under the tap wins
    outer = {"text": "card", "bounds": [0, 0, 1080, 1000], "click": True}
    inner = {"text": "ok", "bounds": [100, 100, 300, 200], "click": True}
    assert tapped_element(_frame([outer, inner], [
        {"action_type": "click", "x": 150, "y": 150}])) == 1

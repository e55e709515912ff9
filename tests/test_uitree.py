from __future__ import annotations

import pytest

from distrl_sdk import ProtocolError
from distrl_sdk.uitree import Bounds, find_elements, parse_ui_dump

DUMP = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
    'package="com.android.settings" content-desc="" checkable="false" checked="false" '
    'clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" '
    'long-clickable="false" password="false" selected="false" bounds="[0,0][1080,2400]">'
    '<node index="0" text="Wi&#8209;Fi &amp; more" resource-id="android:id/title" '
    'class="android.widget.TextView" package="com.android.settings" content-desc="" '
    'checkable="false" checked="false" clickable="true" enabled="true" focusable="true" '
    'focused="false" scrollable="false" long-clickable="false" password="false" '
    'selected="false" bounds="[40,300][700,380]" drawing-order="2"/>'
    "</node></hierarchy>"
)


def test_parse_flattens_in_document_order() -> None:
    els = parse_ui_dump("UI hierchary dumped to: /dev/tty\n" + DUMP)
    assert [e.depth for e in els] == [0, 1]
    title = els[1]
    assert title.parent == 0 and title.text == "Wi\u2011Fi & more"
    assert title.clickable and not title.checked
    assert title.bounds == Bounds(40, 300, 700, 380) and title.bounds.center == (370, 340)
    assert title.extra == {"drawing-order": "2"}
    assert find_elements(els, resource_id="android:id/title", clickable=True) == [title]
    assert find_elements(els, text_contains="wi\u2011fi") == [title]


def _node(cls: str, extra: str = "") -> str:
    return (f'<?xml version="1.0"?><hierarchy><node index="0" text="" resource-id="" '
            f'class="{cls}" package="p" content-desc="" bounds="[0,0][10,10]" {extra}/>'
            "</hierarchy>")


@pytest.mark.parametrize(("cls", "extra", "field"), [
    ("android.widget.EditText", "", True),
    ("android.widget.AutoCompleteTextView", "", True),
    ("android.widget.SearchView$SearchAutoComplete", "", True),
    ("android.view.View", 'editable="true"', True),  # a richer dumper's flag
    ("android.widget.TextView", "", False),
    ("android.widget.Button", 'editable="false"', False),
])
def test_text_fields_are_edittexts_their_subclasses_or_marked_editable(
        cls: str, extra: str, field: bool) -> None:
    [e] = parse_ui_dump(_node(cls, extra))
    assert e.is_text_field is field


@pytest.mark.parametrize(
    "bad", ["", "ERROR: could not get idle state.", "<?xml <hierarchy></hierarchy>"]
)
def test_garbage_raises_protocol_error(bad: str) -> None:
    with pytest.raises(ProtocolError):
        parse_ui_dump(bad)


def test_architecture_configs_are_bounded() -> None:
    """A pointer's config is built by every farm that receives it: sizes are bounded, and
    ``check_config`` says so without building anything."""
    from distrl_sdk.errors import ConfigError
    from distrl_sdk.policies import check_config

    check_config("uitree", {})
    check_config("vlm", {"tiny": {"seed": 0}})
    for kind, config, why in [
        ("uitree", {"buckets": 8_000_000}, "buckets must be ≤"),
        ("uitree", {"buckets": 1 << 20, "embed_dim": 64}, "buckets × embed_dim"),
        ("uitree", {"hidden": 100_000}, "hidden must be ≤"),
        ("uitree", {"bogus": 1}, "unknown uitree config keys"),
        ("vlm", {"tiny": {"hidden_size": 65536}}, "above the test model's bounds"),
        ("vlm", {"tiny": {"num_layers": 1000}}, "above the test model's bounds"),
        ("other", {}, "unknown policy kind"),
    ]:
        with pytest.raises(ConfigError, match=why):
            check_config(kind, config)

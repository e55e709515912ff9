"""Action text formats: JSON and AitW round trips, real model output, fuzzing."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from distrl_sdk.actions import (
    Action,
    Answer,
    Complete,
    Impossible,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    TypeText,
    Wait,
    action_from_dict,
    parse_action,
    parse_aitw,
    parse_json,
    to_aitw,
    to_dict,
    to_json,
)
from distrl_sdk.uitree import parse_ui_dump

ACTION_TYPES = (Tap, LongPress, Swipe, Scroll, TypeText, Key, OpenApp, Wait, Complete,
                Impossible, Answer)

# ── strategies ──────────────────────────────────────────────────────────────────────

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
texts = st.text(min_size=1, max_size=40)
app_names = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() == s and s != "")

actions_st: st.SearchStrategy[Action] = st.one_of(
    st.builds(Tap, unit, unit),
    st.builds(LongPress, unit, unit),
    st.builds(Swipe, unit, unit, unit, unit, st.integers(1, 60_000)),
    st.builds(Scroll, st.sampled_from(["up", "down", "left", "right"])),
    st.builds(TypeText, texts),
    st.builds(lambda t, x, y: TypeText(t, x, y), texts, unit, unit),
    st.builds(Key, st.sampled_from(["home", "back", "enter"])),
    st.builds(OpenApp, app_names),
    st.builds(Wait, st.floats(0, 600, allow_nan=False)),
    st.just(Complete()),
    st.just(Impossible()),
    st.builds(Answer, st.text(max_size=40)),
)


def _far_swipe(x1: float, y1: float, x2: float, y2: float) -> Swipe:
    assume(math.hypot(x2 - x1, y2 - y1) > 0.05)
    return Swipe(x1, y1, x2, y2)


aitw_st: st.SearchStrategy[Action] = st.one_of(
    st.builds(Tap, unit, unit),
    st.builds(_far_swipe, unit, unit, unit, unit),
    st.builds(TypeText, texts),
    st.builds(Key, st.sampled_from(["home", "back", "enter"])),
    st.just(Complete()),
    st.just(Impossible()),
)


def ok(result: object) -> bool:
    """Always an Action or an InvalidAction, and never the parser's own failure."""
    if isinstance(result, InvalidAction):
        assert not result.reason.startswith("internal"), result.reason
        assert result.reason
        return True
    return isinstance(result, ACTION_TYPES)


# ── round trips ─────────────────────────────────────────────────────────────────────


@given(actions_st)
def test_json_round_trip(action: Action) -> None:
    text = to_json(action)
    json.loads(text)  # real JSON
    assert parse_json(text) == action
    assert parse_action(text) == action
    assert action_from_dict(to_dict(action)) == action


@given(aitw_st)
def test_aitw_round_trip(action: Action) -> None:
    text = to_aitw(action)
    assert parse_aitw(text) == action
    assert parse_action(text) == action
    assert parse_action(to_aitw(action, plan=["DUAL_POINT", "TYPE"])) == action


def test_aitw_shape_matches_autoui() -> None:
    text = to_aitw(Tap(0.4187, 0.911), plan=["DUAL_POINT", "TYPE"])
    assert text == (
        'Action Plan: [DUAL_POINT,TYPE] ; Action Decision: "action_type": "DUAL_POINT", '
        '"touch_point": "[0.911, 0.4187]", "lift_point": "[0.911, 0.4187]", "typed_text": ""'
    )
    assert to_aitw(Key("back")).startswith('Action Decision: "action_type": "PRESS_BACK"')
    assert '"typed_text": "best buy"' in to_aitw(TypeText("best buy"))


def test_aitw_scroll_is_its_swipe_and_unrepresentable_raise() -> None:
    g = parse_action(to_aitw(Scroll("down")))
    assert isinstance(g, Swipe) and g.y2 < g.y1
    for a in (LongPress(0.1, 0.1), OpenApp("Chrome"), Wait(), Answer("x"),
              TypeText("hi", 0.5, 0.5)):
        with pytest.raises(ValueError, match="AitW has no form"):
            to_aitw(a)


def test_json_shapes() -> None:
    assert to_dict(Tap(0.5, 0.25)) == {"action_type": "click", "x": 0.5, "y": 0.25}
    assert to_dict(Key("enter")) == {"action_type": "keyboard_enter"}
    assert to_dict(Complete()) == {"action_type": "status", "goal_status": "complete"}
    assert to_dict(Impossible()) == {"action_type": "status", "goal_status": "infeasible"}
    assert to_dict(TypeText("hi", 0.5, 0.1)) == {"action_type": "input_text", "text": "hi",
                                                 "x": 0.5, "y": 0.1}


# ── real, messy model output ────────────────────────────────────────────────────────

AITW_NONE = '"touch_point": "[-1.0, -1.0]", "lift_point": "[-1.0, -1.0]"'
MESSY: list[tuple[str, Action]] = [
    ('```json\n{"action_type": "click", "x": 0.5, "y": 0.3}\n```', Tap(0.5, 0.3)),
    ("Sure! I'll tap the search bar.\n{'action_type': 'click', 'x': 0.52, 'y': 0.18}\n"
     "This should open search.", Tap(0.52, 0.18)),
    ('{"action_type": "click", "x": "0.5", "y": "0.3",}', Tap(0.5, 0.3)),
    ('{"Action_Type": "CLICK", "X": 0.5, "Y": 0.3}', Tap(0.5, 0.3)),
    ('{"action_type": "click", "coordinate": "[0.5, 0.3]"}', Tap(0.5, 0.3)),
    ('{"action_type": "tap", "x": "50%", "y": "30%"}', Tap(0.5, 0.3)),
    ('{"action_type": "click", "coordinates": [0.25, 0.5, 0.75, 1.0]}', Tap(0.5, 0.75)),
    ("Action Plan: [DUAL_POINT,TYPE] ; Action Decision: \"action_type\": \"DUAL_POINT\", "
     "\"touch_point\": \"[0.911, 0.4187]\", \"lift_point\": \"[0.911, 0.4187]\", "
     "\"typed_text\": \"\"", Tap(0.4187, 0.911)),
    ('Action Decision: "action_type": "DUAL_POINT", "touch_point": "[0.8, 0.5]", '
     '"lift_point": "[0.2, 0.5]", "typed_text": ""', Swipe(0.5, 0.8, 0.5, 0.2)),
    ('{"action_type": "DUAL_POINT", "touch_point": "[0.5, 0.5]", "lift_point": "[0.52, 0.5]"}',
     Tap(0.5, 0.5)),
    (f'Action Plan: [TYPE,PRESS_ENTER] ; Action Decision: "action_type": "TYPE", {AITW_NONE}, '
     '"typed_text": "best buy"', TypeText("best buy")),
    (f'Action Plan: [PRESS_HOME] ; Action Decision: "action_type": "PRESS_HOME", {AITW_NONE}, '
     '"typed_text": ""', Key("home")),
    (f'Action Decision: "action_type": "STATUS_TASK_COMPLETE", {AITW_NONE}, "typed_text": ""',
     Complete()),
    ('Action Decision: "action_type": "TASK_IMPOSSIBLE"', Impossible()),
    ("{'action_type': 'input_text', 'text': \"it's 5 o'clock\"}", TypeText("it's 5 o'clock")),
    ("{'action_type': 'input_text', 'text': 'it's 5 o'clock'}", TypeText("it's 5 o'clock")),
    ('{"action_type": "input_text", "text": "say "hi" now"}', TypeText('say "hi" now')),
    ("{'action_type': 'status', 'goal_status': 'complete', 'confident': True, 'why': None}",
     Complete()),
    ('{"action_type": "scroll", "direction": "DOWN"}', Scroll("down")),
    ('{"action": {"type": "open_app", "app_name": "Settings"}}', OpenApp("Settings")),
    ('Reason: nothing can be done here.\nAction: {"action_type": "status", '
     '"goal_status": "infeasible"}', Impossible()),
    ('{"action_type": "answer", "text": "The capital is Paris"}', Answer("The capital is Paris")),
    ('{"action_type": "wait"}', Wait()),
    ('{"action_type": "wait", "seconds": "2s"}', Wait(2.0)),
    ("click(0.25, 0.75)", Tap(0.25, 0.75)),
    ('type(text="hello world")', TypeText("hello world")),
    ('scroll(direction="down")', Scroll("down")),
    ('{"action_type": "input_text", "text": "hello"', TypeText("hello")),  # cut off
    ('```python\n{"action_type": "long_press", "x": 0.1, "y": 0.9}\n```', LongPress(0.1, 0.9)),
    ('{"actionType": "swipe", "start": [0.5, 0.8], "end": [0.5, 0.2]}',
     Swipe(0.5, 0.8, 0.5, 0.2)),
    ('{"action_type": "swipe", "x1": 0.5, "y1": 0.9, "x2": 0.5, "y2": 0.1, "duration": "500"}',
     Swipe(0.5, 0.9, 0.5, 0.1, 500)),
    ('{"action_type": "swipe", "direction": "up"}', Swipe(0.5, 0.75, 0.5, 0.25)),
    ("PRESS_BACK", Key("back")),
    ("Action: navigate_back", Key("back")),
    ('{"action_type": "keyboard_enter"}', Key("enter")),
    ('{"action_type": "key", "key": "KEYCODE_HOME"}', Key("home")),
    ('{"name": "click", "arguments": {"x": 0.5, "y": 0.5}}', Tap(0.5, 0.5)),
    ('{"thought": "hmm", "action": "scroll_down"}', Scroll("down")),
    ('{"thought": "first look"} then {"action_type": "click", "x": 0.2, "y": 0.2}', Tap(0.2, 0.2)),
    ('Thought: {broken json here\nAction: {"action_type": "navigate_home"}', Key("home")),
    ('{"action_type": "open_app", "app_name": "Chrome"}  // launching chrome', OpenApp("Chrome")),
    ("{action_type: click, x: .5, y: .25}", Tap(0.5, 0.25)),
    ('{"click": {"x": 0.1, "y": 0.2}}', Tap(0.1, 0.2)),
    ('{"action_type":"input_text","text":"wifi","x":0.5,"y":0.1}', TypeText("wifi", 0.5, 0.1)),
    ("<action>{\"action_type\": \"status\", \"goal_status\": \"done\"}</action>", Complete()),
]


@pytest.mark.parametrize(("text", "expected"), MESSY, ids=[f"m{i}" for i in range(len(MESSY))])
def test_messy_model_output(text: str, expected: Action) -> None:
    assert parse_action(text) == expected


INVALID: list[tuple[str, str]] = [
    ('{"action_type": "fly"}', "unknown action_type 'fly'"),
    ('{"action_type": "click", "x": 1.7, "y": 0.3}', "tap x=1.7 outside [0, 1]"),
    ('{"action_type":"click","x":540,"y":1200}', "tap x=540 outside [0, 1] (coordinates are "
                                                 "normalised to [0, 1], not pixels)"),
    ("I am not sure what to do.", "no action found in model output"),
    ("", "empty model output"),
    ('{"action_type": "click", "index": 2}', "tap index=2 given but no UI elements"),
    ('{"action_type": "input_text", "text": "", }', "type_text text is empty"),
    ('{"action_type": "scroll", "direction": "sideways"}', "scroll direction 'sideways' is not"),
    ('{"action_type": "click", "x": 0.5}', "tap needs both x and y"),
    ('{"action_type": "click", "x": "left", "y": 0.5}', "tap x is 'left', not a number"),
    ('{"action_type": 5}', "action_type must be a string"),
    ('{"action_type": "status", "goal_status": "maybe"}', "status goal_status 'maybe' is not"),
    ('{"action_type": "key", "key": "volume_up"}', "unsupported key 'volume_up'"),
    ('{"thought": "only thinking"}', "JSON object without an action_type"),
    ('{"action_type": "open_app"}', "open_app needs an app_name"),
    ('{"action_type": "click"}', "tap needs x and y"),
    ('Action Decision: "action_type": "DUAL_POINT", "touch_point": "[0.5]"',
     "DUAL_POINT touch_point needs 2 numbers"),
]


@pytest.mark.parametrize(("text", "reason"), INVALID, ids=[f"i{i}" for i in range(len(INVALID))])
def test_invalid_output_has_precise_reason(text: str, reason: str) -> None:
    got = parse_action(text)
    assert isinstance(got, InvalidAction)
    assert got.reason.startswith(reason), got.reason
    assert got.raw == text


DUMP = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="p" '
    'content-desc="" bounds="[0,0][1000,2000]">'
    '<node index="0" text="Search" resource-id="p:id/search" class="android.widget.EditText" '
    'package="p" content-desc="" clickable="true" bounds="[100,200][300,400]"/>'
    '<node index="1" text="OK" resource-id="p:id/ok" class="android.widget.Button" '
    'package="p" content-desc="" clickable="true" bounds="[500,1500][700,1700]"/>'
    "</node></hierarchy>"
)


def test_index_resolves_to_element_centre() -> None:
    els = parse_ui_dump(DUMP)
    assert parse_action('{"action_type": "click", "index": 2}', elements=els) == Tap(0.6, 0.8)
    assert parse_action('{"action_type": "long_press", "index": "1"}',
                        elements=els) == LongPress(0.2, 0.15)
    assert parse_action('{"action_type": "input_text", "text": "hi", "index": 1}',
                        elements=els) == TypeText("hi", 0.2, 0.15)
    # an explicit screen size wins over the inferred one
    assert parse_action('{"action_type": "click", "index": 2}', elements=els,
                        screen=(2000, 4000)) == Tap(0.3, 0.4)
    bad = parse_action('{"action_type": "click", "index": 9}', elements=els)
    assert isinstance(bad, InvalidAction) and "index=9 out of range (3 UI elements)" in bad.reason


def test_parse_json_and_parse_aitw_stay_in_their_lane() -> None:
    aitw = 'Action Decision: "action_type": "PRESS_HOME"'
    assert parse_aitw(aitw) == Key("home")
    assert isinstance(parse_json(aitw), InvalidAction)
    assert parse_json("not json") == InvalidAction("no action found in model output", "not json")


def test_decision_wins_over_braces_inside_typed_text() -> None:
    text = to_aitw(TypeText('{"action_type": "click", "x": 0.5, "y": 0.5}'))
    assert parse_action(text) == TypeText('{"action_type": "click", "x": 0.5, "y": 0.5}')


def test_non_text_and_huge_inputs() -> None:
    assert isinstance(parse_action(None), InvalidAction)  # type: ignore[arg-type]
    assert parse_action(b'{"action_type": "navigate_back"}') == Key("back")  # type: ignore[arg-type]
    huge = parse_action("x" * 300_000)
    assert isinstance(huge, InvalidAction) and "too long" in huge.reason
    deep = parse_action("[" * 5000 + "{" * 5000)
    assert ok(deep) and isinstance(deep, InvalidAction)


# ── fuzzing: never an exception, always Action or InvalidAction ─────────────────────

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
                      st.sampled_from(["click", "tap", "DUAL_POINT", "TYPE", "scroll", "status",
                                       "[0.5, 0.2]", "50%", "down", "home", "complete"]))
json_values = st.recursive(
    json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.sampled_from(["action_type", "action", "type", "x", "y", "text",
                                         "direction", "index", "touch_point", "lift_point",
                                         "goal_status", "app_name", "arguments", "key",
                                         "coordinate", "start", "end", "seconds"]) | st.text(
                                             max_size=6), kids, max_size=5),
    ),
    max_leaves=12,
)
VALID_SEEDS = [text for text, _ in MESSY] + [to_json(Swipe(0.1, 0.2, 0.3, 0.4, 700))]
FUZZ = settings(max_examples=int(os.environ.get("DISTRL_FUZZ_EXAMPLES", "300")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=300))
def test_fuzz_random_text(text: str) -> None:
    assert ok(parse_action(text))
    assert ok(parse_json(text))
    assert ok(parse_aitw(text))


@FUZZ
@given(json_values, st.sampled_from(["json", "py", "fields", "fenced"]))
def test_fuzz_json_ish(value: object, style: str) -> None:
    if style == "json":
        text = json.dumps(value)
    elif style == "py":
        text = repr(value)
    elif style == "fields":
        text = "Action Decision: " + json.dumps(value).strip("{}")
    else:
        text = f"Thought: hmm\n```json\n{json.dumps(value, indent=1)}\n```\nDone."
    assert ok(parse_action(text))
    if isinstance(value, dict):
        assert ok(action_from_dict(value))


@FUZZ
@given(st.sampled_from(VALID_SEEDS), st.data())
def test_fuzz_mutated_valid_output(seed: str, data: st.DataObject) -> None:
    text = seed
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["del", "ins", "sub", "cut", "dup"]))
        i = data.draw(st.integers(0, max(0, len(text) - 1)))
        if op == "del":
            text = text[:i] + text[i + 1:]
        elif op == "ins":
            text = text[:i] + data.draw(st.sampled_from(list("{}[]()\"',:;% \\\n0.-xé"))) + text[i:]
        elif op == "sub":
            text = text[:i] + data.draw(st.characters()) + text[i + 1:]
        elif op == "cut":
            text = text[:i]
        else:
            text = text[:i] + text[i:] + text[i:]
    assert ok(parse_action(text))

"""Typed actions: construction, validation, terminality."""

from __future__ import annotations

import math

import pytest

from distrl_sdk import actions
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
    is_terminal,
    scroll_gesture,
)


def test_kinds_are_distinct_literals() -> None:
    made: list[Action] = [Tap(0.1, 0.2), LongPress(0.1, 0.2), Swipe(0, 0, 1, 1), Scroll("up"),
            TypeText("a"), Key("home"), OpenApp("Settings"), Wait(), Complete(),
            Impossible(), Answer("x")]
    kinds = [a.kind for a in made]
    assert len(set(kinds)) == len(kinds)
    assert InvalidAction("r", "raw").kind == "invalid"


def test_ints_become_floats_and_equal() -> None:
    t = Tap(1, 0)
    assert t == Tap(1.0, 0.0) and isinstance(t.x, float)
    assert Wait(2).seconds == 2.0


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Tap(1.7, 0.3), "tap x=1.7 outside [0, 1]"),
    (lambda: Tap(0.3, -0.1), "tap y=-0.1 outside [0, 1]"),
    (lambda: Tap(math.nan, 0.1), "outside [0, 1]"),
    (lambda: Tap(True, 0.1), "must be a number"),
    (lambda: LongPress(0.5, 2), "long_press y=2 outside"),
    (lambda: Swipe(0, 0, 1, 1.01), "swipe y2=1.01 outside"),
    (lambda: Swipe(0, 0, 1, 1, duration_ms=0), "duration_ms"),
    (lambda: Swipe(0, 0, 1, 1, duration_ms=1.5), "duration_ms"),  # type: ignore[arg-type]
    (lambda: Scroll("sideways"), "not one of up, down, left, right"),  # type: ignore[arg-type]
    (lambda: Key("volume_up"), "not one of home, back, enter"),  # type: ignore[arg-type]
    (lambda: TypeText(""), "empty"),
    (lambda: TypeText("a", x=0.5), "both x and y"),
    (lambda: TypeText("a", x=0.5, y=3), "outside"),
    (lambda: OpenApp("  "), "blank"),
    (lambda: Wait(-1), "outside"),
    (lambda: Wait(math.inf), "outside"),
])
def test_constructors_validate(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        make()  # type: ignore[operator]


def test_frozen() -> None:
    t = Tap(0.1, 0.2)
    with pytest.raises(AttributeError):
        t.x = 0.5  # type: ignore[misc]


def test_is_terminal() -> None:
    assert is_terminal(Complete()) and is_terminal(Impossible()) and is_terminal(Answer(""))
    for a in (Tap(0, 0), Key("back"), Wait(), TypeText("x"), InvalidAction("r", "")):
        assert not is_terminal(a)


def test_scroll_convention() -> None:
    """Scroll down reveals what is below: the finger moves up (AndroidWorld)."""
    down = scroll_gesture("down")
    assert down.y2 < down.y1 and down.x1 == down.x2
    up = scroll_gesture("up")
    assert up.y2 > up.y1
    right = scroll_gesture("right")
    assert right.x2 < right.x1  # content to the right comes in: finger moves left
    left = scroll_gesture("left")
    assert left.x2 > left.x1


def test_all_exports_exist() -> None:
    for name in actions.__all__:
        assert hasattr(actions, name), name

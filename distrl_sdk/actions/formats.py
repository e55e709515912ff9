"""Actions as text: AndroidWorld-style JSON, the AitW/AutoUI format, and a tolerant parser.

**JSON** (AndroidWorld's ``JSONAction`` vocabulary, normalised coordinates)::

    {"action_type": "click", "x": 0.5, "y": 0.3}
    {"action_type": "long_press", "x": 0.5, "y": 0.3}
    {"action_type": "swipe", "x1": 0.5, "y1": 0.8, "x2": 0.5, "y2": 0.2, "duration_ms": 300}
    {"action_type": "scroll", "direction": "down"}
    {"action_type": "input_text", "text": "hello", "x": 0.5, "y": 0.1}   # x, y optional
    {"action_type": "navigate_home"} / {"action_type": "navigate_back"}
    {"action_type": "keyboard_enter"}
    {"action_type": "open_app", "app_name": "Settings"}
    {"action_type": "wait", "seconds": 1.0}
    {"action_type": "status", "goal_status": "complete"}   # or "infeasible"
    {"action_type": "answer", "text": "42"}

Where a point is expected, ``"index": N`` names a UI element instead (its centre is
tapped) when the caller passes the screen's elements. A ``swipe`` given only a
``direction`` moves the finger that way (``"up"``: bottom to top); a ``scroll``
direction is the way the *content* comes from (``"down"`` shows what is below).

**AitW** (the format AutoUI emits in DigiRL/DistRL; points are ``[y, x]``)::

    Action Plan: [DUAL_POINT,TYPE] ; Action Decision: "action_type": "DUAL_POINT",
    "touch_point": "[0.3, 0.5]", "lift_point": "[0.3, 0.5]", "typed_text": ""

A dual point whose touch and lift lie within 0.04 (normalised, AitW's threshold) is a
tap at the touch point, otherwise a swipe. ``TYPE``, ``PRESS_HOME``, ``PRESS_BACK``,
``PRESS_ENTER``, ``STATUS_TASK_COMPLETE`` and ``STATUS_TASK_IMPOSSIBLE`` (also
``TASK_IMPOSSIBLE``) are the other types.

:func:`parse_action` reads either from real model output and never raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Final

from distrl_sdk.actions.lenient import LenientError, find_objects, parse_fields, parse_prefix
from distrl_sdk.actions.types import (
    DIRECTIONS,
    Action,
    Answer,
    Complete,
    Direction,
    Impossible,
    InvalidAction,
    Key,
    KeyName,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    TypeText,
    Wait,
    scroll_gesture,
)
from distrl_sdk.uitree import UIElement

__all__ = [
    "AITW_TAP_THRESHOLD",
    "action_from_dict",
    "parse_action",
    "parse_aitw",
    "parse_json",
    "to_aitw",
    "to_dict",
    "to_json",
]

AITW_TAP_THRESHOLD: Final = 0.04
MAX_OUTPUT_CHARS: Final = 100_000
MAX_CALLS: Final = 32
Screen = tuple[int, int]

# ── writing ─────────────────────────────────────────────────────────────────────────


def to_dict(action: Action) -> dict[str, object]:
    """The JSON object for ``action`` (see the module docstring)."""
    match action:
        case Tap(x=x, y=y):
            return {"action_type": "click", "x": x, "y": y}
        case LongPress(x=x, y=y):
            return {"action_type": "long_press", "x": x, "y": y}
        case Swipe(x1=x1, y1=y1, x2=x2, y2=y2, duration_ms=ms):
            return {"action_type": "swipe", "x1": x1, "y1": y1, "x2": x2, "y2": y2,
                    "duration_ms": ms}
        case Scroll(direction=d):
            return {"action_type": "scroll", "direction": d}
        case TypeText(text=t, x=x, y=y):
            out: dict[str, object] = {"action_type": "input_text", "text": t}
            if x is not None and y is not None:
                out.update(x=x, y=y)
            return out
        case Key(key=k):
            return {"action_type": _KEY_TYPES[k]}
        case OpenApp(app_name=name):
            return {"action_type": "open_app", "app_name": name}
        case Wait(seconds=s):
            return {"action_type": "wait", "seconds": s}
        case Complete():
            return {"action_type": "status", "goal_status": "complete"}
        case Impossible():
            return {"action_type": "status", "goal_status": "infeasible"}
        case Answer(text=t):
            return {"action_type": "answer", "text": t}
    raise TypeError(f"not an Action: {action!r}")


_KEY_TYPES: Final[dict[KeyName, str]] = {
    "home": "navigate_home", "back": "navigate_back", "enter": "keyboard_enter",
}


def to_json(action: Action) -> str:
    """``action`` as one line of JSON; :func:`parse_json` reads it back exactly."""
    return json.dumps(to_dict(action), ensure_ascii=False)


def _yx(x: float, y: float) -> str:
    return f"[{y!r}, {x!r}]"


def to_aitw(action: Action, *, plan: Sequence[str] | None = None) -> str:
    """``action`` in the AitW/AutoUI text format.

    Taps and swipes become ``DUAL_POINT`` (a scroll becomes the swipe that performs
    it); long presses, app launches, waits, answers and typing at a point have no AitW
    form and raise :class:`ValueError`. ``plan`` adds the ``Action Plan: […] ;`` prefix.
    """
    none = _yx(-1.0, -1.0)
    touch = lift = none
    text = ""
    match action:
        case Tap(x=x, y=y):
            kind, touch, lift = "DUAL_POINT", _yx(x, y), _yx(x, y)
        case Swipe(x1=x1, y1=y1, x2=x2, y2=y2):
            kind, touch, lift = "DUAL_POINT", _yx(x1, y1), _yx(x2, y2)
        case Scroll(direction=d):
            g = scroll_gesture(d)
            kind, touch, lift = "DUAL_POINT", _yx(g.x1, g.y1), _yx(g.x2, g.y2)
        case TypeText(text=t, x=None):
            kind, text = "TYPE", t
        case Key(key=k):
            kind = {"home": "PRESS_HOME", "back": "PRESS_BACK", "enter": "PRESS_ENTER"}[k]
        case Complete():
            kind = "STATUS_TASK_COMPLETE"
        case Impossible():
            kind = "STATUS_TASK_IMPOSSIBLE"
        case _:
            raise ValueError(f"AitW has no form for {action!r}")
    decision = (f'Action Decision: "action_type": "{kind}", "touch_point": "{touch}", '
                f'"lift_point": "{lift}", "typed_text": {json.dumps(text, ensure_ascii=False)}')
    if plan is None:
        return decision
    return f"Action Plan: [{','.join(plan)}] ; {decision}"


# ── reading ─────────────────────────────────────────────────────────────────────────


class _Bad(Exception):
    """A precise reason the output is no valid action."""


class _NoType(Exception):
    """A JSON object that names no action type (may be some other object)."""


def _snake(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key.strip())
    return re.sub(r"[\s\-]+", "_", key.lower())


_TYPE_KEYS: Final = ("action_type", "actiontype", "action", "type", "action_name",
                     "function", "name", "act", "operation", "command", "cmd")
_NESTED: Final = ("arguments", "args", "params", "parameters", "action_inputs", "inputs",
                  "input_args", "kwargs")

# normalised action type → (kind, preset)
_ALIASES: Final[dict[str, tuple[str, str | None]]] = {
    **dict.fromkeys(("click", "tap", "touch", "single_tap", "left_click", "press_point",
                     "click_element", "tap_element"), ("tap", None)),
    **dict.fromkeys(("long_press", "longpress", "long_click", "long_tap", "press_and_hold",
                     "hold"), ("long_press", None)),
    **dict.fromkeys(("swipe", "drag", "fling", "swipe_screen"), ("swipe", None)),
    "scroll": ("scroll", None),
    **dict.fromkeys(("input_text", "type", "type_text", "input", "enter_text", "text",
                     "write", "typing", "set_text", "text_input"), ("type", None)),
    **dict.fromkeys(("navigate_home", "home", "press_home", "go_home", "go_to_home"),
                    ("key", "home")),
    **dict.fromkeys(("navigate_back", "back", "press_back", "go_back"), ("key", "back")),
    **dict.fromkeys(("keyboard_enter", "enter", "press_enter", "submit"), ("key", "enter")),
    **dict.fromkeys(("key", "press_key", "keyevent", "key_event", "press", "press_button",
                     "button", "system_button", "navigate"), ("key", None)),
    **dict.fromkeys(("open_app", "launch_app", "open", "launch", "start_app",
                     "open_application", "launch_application", "openapp"),
                    ("open_app", None)),
    **dict.fromkeys(("wait", "sleep", "pause"), ("wait", None)),
    "status": ("status", None),
    **dict.fromkeys(("complete", "completed", "done", "finish", "finished", "task_complete",
                     "status_task_complete", "success", "stop", "terminate"),
                    ("complete", None)),
    **dict.fromkeys(("impossible", "infeasible", "task_impossible", "status_task_impossible",
                     "task_infeasible", "give_up", "abort"), ("impossible", None)),
    **dict.fromkeys(("answer", "respond", "reply", "final_answer", "response"),
                    ("answer", None)),
    "dual_point": ("dual_point", None),
    **{f"scroll_{d}": ("scroll", d) for d in DIRECTIONS},
    **{f"swipe_{d}": ("swipe", d) for d in DIRECTIONS},
}
_DIR_ALIASES: Final[dict[str, Direction]] = {
    **{d: d for d in DIRECTIONS},
    **{f"{d}wards": d for d in DIRECTIONS}, **{f"{d}ward": d for d in DIRECTIONS},
}
_KEY_ALIASES: Final[dict[str, KeyName]] = {
    "home": "home", "3": "home", "back": "back", "4": "back", "enter": "enter",
    "66": "enter", "return": "enter", "navigate_home": "home", "navigate_back": "back",
    "keyboard_enter": "enter", "go_back": "back", "go_home": "home", "press_home": "home",
    "press_back": "back", "press_enter": "enter",
}
_COMPLETE: Final = frozenset({"complete", "completed", "success", "successful", "succeeded",
                              "done", "finished", "true", "task_complete"})
_INFEASIBLE: Final = frozenset({"infeasible", "impossible", "failed", "fail", "failure",
                                "unachievable", "false", "task_impossible", "not_possible"})
_NUM_IN_TEXT: Final = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?")


def _show(v: object, limit: int = 40) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _num(v: object, label: str) -> float:
    """A number from a JSON value: numbers, numeric strings, percentages ("50%")."""
    if isinstance(v, bool) or v is None:
        raise _Bad(f"{label} is {_show(v)}, not a number")
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        s = v.strip().rstrip("fF")
        m = re.fullmatch(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(%?)", s)
        if m:
            f = float(m.group(1))
            return f / 100.0 if m.group(2) else f
    if isinstance(v, list) and len(v) == 1:
        return _num(v[0], label)
    raise _Bad(f"{label} is {_show(v)}, not a number")


def _numbers(v: object, label: str) -> list[float]:
    """Several numbers from ``[0.5, 0.3]``, ``"[0.5, 0.3]"``, ``"(50%, 30%)"``, ``{x:, y:}``."""
    if isinstance(v, dict):
        d = {_snake(str(k)): val for k, val in v.items()}
        if "x" in d and "y" in d:
            return [_num(d["x"], f"{label} x"), _num(d["y"], f"{label} y")]
        raise _Bad(f"{label} {_show(v)} has no x and y")
    if isinstance(v, list | tuple):
        flat: list[float] = []
        for item in v:
            flat.extend(_numbers(item, label) if isinstance(item, list | tuple | str)
                        else [_num(item, label)])
        return flat
    if isinstance(v, str):
        toks = _NUM_IN_TEXT.findall(v)
        if not toks:
            raise _Bad(f"{label} {_show(v)} holds no numbers")
        return [_num(t, label) for t in toks]
    return [_num(v, label)]


def _screen_of(elements: Sequence[UIElement], screen: Screen | None) -> Screen:
    if screen is not None:
        return screen
    w = max((e.bounds.right for e in elements), default=0)
    h = max((e.bounds.bottom for e in elements), default=0)
    if w <= 0 or h <= 0:
        raise _Bad("cannot normalise an element's position: screen size unknown")
    return w, h


class _Ctx:
    def __init__(self, elements: Sequence[UIElement] | None, screen: Screen | None) -> None:
        self.elements = elements
        self.screen = screen

    def element_point(self, v: object, what: str) -> tuple[float, float]:
        try:
            idx_f = _num(v, f"{what} index")
        except _Bad:
            raise _Bad(f"{what} index {_show(v)} is not an integer") from None
        if not math.isfinite(idx_f) or idx_f != int(idx_f):
            raise _Bad(f"{what} index {_show(v)} is not an integer")
        idx = int(idx_f)
        if self.elements is None:
            raise _Bad(f"{what} index={idx} given but no UI elements were passed to resolve it")
        found = [e for e in self.elements if e.index == idx]
        if not found:
            raise _Bad(f"{what} index={idx} out of range ({len(self.elements)} UI elements)")
        w, h = _screen_of(self.elements, self.screen)
        cx, cy = found[0].bounds.center
        return min(max(cx / w, 0.0), 1.0), min(max(cy / h, 0.0), 1.0)


_POINT_KEYS: Final = ("coordinate", "coordinates", "coords", "point", "position", "pos",
                      "location", "xy", "center", "click_point", "tap_point", "target",
                      "start_box", "box", "bbox")
_INDEX_KEYS: Final = ("index", "element_index", "element", "element_id", "idx", "ui_index")


def _pair(nums: list[float], label: str) -> tuple[float, float]:
    if len(nums) == 2:
        return nums[0], nums[1]
    if len(nums) == 4:  # a box: its centre
        return (nums[0] + nums[2]) / 2, (nums[1] + nums[3]) / 2
    raise _Bad(f"{label} needs 2 numbers, got {len(nums)}")


def _point(d: dict[str, object], what: str, ctx: _Ctx) -> tuple[float, float] | None:
    if "x" in d or "y" in d:
        if d.get("x") is None or d.get("y") is None:
            raise _Bad(f"{what} needs both x and y")
        return _num(d["x"], f"{what} x"), _num(d["y"], f"{what} y")
    for k in _POINT_KEYS:
        if d.get(k) is not None:
            return _pair(_numbers(d[k], f"{what} {k}"), f"{what} {k}")
    if d.get("touch_point") is not None:
        yx = _numbers(d["touch_point"], f"{what} touch_point")
        if len(yx) == 2 and min(yx) >= 0:
            return yx[1], yx[0]
    for k in _INDEX_KEYS:
        v = d.get(k)
        if v is not None and not (isinstance(v, str) and not v.strip().isdecimal()):
            return ctx.element_point(v, what)
    return None


def _first_str(d: dict[str, object], keys: Sequence[str]) -> str | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, str):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return str(v)
    return None


def _direction(v: object, what: str) -> Direction:
    s = _snake(v) if isinstance(v, str) else ""
    if s in _DIR_ALIASES:
        return _DIR_ALIASES[s]
    raise _Bad(f"{what} direction {_show(v)} is not one of {', '.join(DIRECTIONS)}")


def _duration_ms(d: dict[str, object]) -> int:
    for k in ("duration_ms", "duration", "ms", "time_ms"):
        if d.get(k) is not None:
            v = _num(d[k], f"swipe {k}")
            if not math.isfinite(v) or v != int(v):
                raise _Bad(f"swipe {k}={_show(d[k])} is not a whole number of milliseconds")
            return int(v)
    return 300


def _swipe_direction(direction: Direction) -> Swipe:
    """A swipe whose finger moves toward ``direction`` (the scroll that shows the opposite)."""
    opposite: dict[Direction, Direction] = {"up": "down", "down": "up", "left": "right",
                                            "right": "left"}
    g = scroll_gesture(opposite[direction])
    return Swipe(g.x1, g.y1, g.x2, g.y2)


def _swipe_points(d: dict[str, object], what: str) -> tuple[float, float, float, float] | None:
    for names in (("x1", "y1", "x2", "y2"), ("start_x", "start_y", "end_x", "end_y")):
        if all(d.get(k) is not None for k in names):
            p, q, r, s = (_num(d[n], f"{what} {n}") for n in names)
            return p, q, r, s
    for a, b in (("start", "end"), ("from", "to"), ("start_point", "end_point"),
                 ("start_box", "end_box"), ("start_coordinate", "end_coordinate"),
                 ("coordinate", "coordinate2")):
        if d.get(a) is not None and d.get(b) is not None:
            p1 = _pair(_numbers(d[a], f"{what} {a}"), f"{what} {a}")
            p2 = _pair(_numbers(d[b], f"{what} {b}"), f"{what} {b}")
            return (*p1, *p2)
    if d.get("touch_point") is not None and d.get("lift_point") is not None:
        t = _numbers(d["touch_point"], f"{what} touch_point")
        li = _numbers(d["lift_point"], f"{what} lift_point")
        if len(t) == 2 and len(li) == 2:
            return t[1], t[0], li[1], li[0]
    return None


def _hint(msg: str, d: dict[str, object]) -> str:
    """Point out pixel coordinates, the most common cause of out-of-range points."""
    if "outside [0, 1]" in msg and re.search(r"=\d{2,}(\s|$)", msg):
        return msg + " (coordinates are normalised to [0, 1], not pixels)"
    return msg


def _type_of(d: dict[str, object]) -> tuple[str, str | None, str]:
    for k in _TYPE_KEYS:
        v = d.get(k)
        if v is None or isinstance(v, dict):
            continue
        if not isinstance(v, str):
            raise _Bad(f"action_type must be a string, got {_show(v)}")
        t = _snake(v)
        if t in _ALIASES:
            kind, preset = _ALIASES[t]
            return kind, preset, v
        if k in ("action_type", "actiontype", "action"):
            raise _Bad(f"unknown action_type {_show(v.strip())}")
    if d.get("goal_status") is not None or d.get("status") is not None:
        return "status", None, "status"
    if d.get("answer") is not None:
        return "answer", None, "answer"
    if len(d) == 1:
        (k, v), = d.items()
        if isinstance(v, dict) and _snake(k) in _ALIASES:
            kind, preset = _ALIASES[_snake(k)]
            return kind, preset, k
    for k in ("type", "name", "function", "command"):
        v = d.get(k)
        if isinstance(v, str):
            raise _Bad(f"unknown action_type {_show(v.strip())}")
    raise _NoType(f"JSON object without an action_type (keys: {', '.join(list(d)[:8])})")


def _flatten(obj: dict[str, object], depth: int = 0) -> dict[str, object]:
    d: dict[str, object] = {}
    for k, v in obj.items():
        d.setdefault(_snake(str(k)), v)
    inner = d.get("action")
    if isinstance(inner, dict) and depth < 4:
        merged = _flatten(inner, depth + 1)
        for k, v in d.items():
            if k != "action":
                merged.setdefault(k, v)
        return merged
    for k in _NESTED:
        v = d.get(k)
        if isinstance(v, dict):
            for k2, v2 in v.items():
                d.setdefault(_snake(str(k2)), v2)
    if len(d) == 1:
        (k, v), = d.items()
        if isinstance(v, dict) and _snake(k) in _ALIASES:
            flat = _flatten(v, depth + 1)
            flat.setdefault("action_type", k)
            return flat
    return d


def _convert(obj: dict[str, object], ctx: _Ctx) -> Action:
    d = _flatten(obj)
    kind, preset, raw_type = _type_of(d)
    what = _snake(raw_type) if kind not in ("tap", "long_press") else kind
    try:
        return _build(kind, preset, d, ctx, what)
    except ValueError as exc:  # a constructor's range check
        raise _Bad(_hint(str(exc), d)) from None


def _build(kind: str, preset: str | None, d: dict[str, object], ctx: _Ctx,
           what: str) -> Action:
    if kind in ("tap", "long_press"):
        pt = _point(d, kind, ctx)
        if pt is None:
            raise _Bad(f"{kind} needs x and y (or an element index)")
        return Tap(*pt) if kind == "tap" else LongPress(*pt)
    if kind == "swipe":
        pts = _swipe_points(d, "swipe")
        if pts is not None:
            return Swipe(*pts, duration_ms=_duration_ms(d))
        dv = preset or d.get("direction") or d.get("dir")
        if dv is None:
            raise _Bad("swipe needs x1, y1, x2, y2 or a direction")
        return _swipe_direction(_direction(dv, "swipe"))
    if kind == "scroll":
        dv = preset or d.get("direction") or d.get("dir") or d.get("scroll_direction")
        if dv is None:
            pts = _swipe_points(d, "scroll")
            if pts is not None:
                return Swipe(*pts, duration_ms=_duration_ms(d))
            raise _Bad(f"scroll needs a direction ({', '.join(DIRECTIONS)})")
        return Scroll(_direction(dv, "scroll"))
    if kind == "type":
        text = _first_str(d, ("text", "typed_text", "content", "value", "input", "string",
                              "input_text", "message", "keys"))
        if text is None:
            raise _Bad(f"{what} needs a text")
        pt = _point(d, "type_text", ctx)
        if pt is None:
            return TypeText(text)
        return TypeText(text, *pt)
    if kind == "key":
        if preset is not None:
            return Key(_KEY_ALIASES[preset])
        kv = _first_str(d, ("key", "keycode", "key_code", "button", "value", "name"))
        if kv is None:
            pt = _point(d, "tap", ctx)
            if pt is not None:  # {"action": "press", "x": …, "y": …}
                return Tap(*pt)
            raise _Bad(f"{what} needs a key (home, back, enter)")
        k = _snake(kv).removeprefix("keycode_").removeprefix("key_")
        if k not in _KEY_ALIASES:
            raise _Bad(f"unsupported key {_show(kv)} (home, back, enter)")
        return Key(_KEY_ALIASES[k])
    if kind == "open_app":
        name = _first_str(d, ("app_name", "app", "appname", "package", "package_name",
                              "application", "app_package", "name", "text", "value", "target"))
        if name is None or not name.strip():
            raise _Bad("open_app needs an app_name")
        return OpenApp(name.strip())
    if kind == "wait":
        for k in ("seconds", "duration", "time", "secs", "value"):
            v = d.get(k)
            if v is not None:
                if isinstance(v, str):
                    v = v.strip().removesuffix("seconds").removesuffix("s").strip()
                return Wait(_num(v, f"wait {k}"))
        return Wait()
    if kind == "status":
        sv = d.get("goal_status", d.get("status", d.get("value", d.get("result"))))
        s = _snake(str(sv)) if sv is not None else ""
        if s in _COMPLETE:
            return Complete()
        if s in _INFEASIBLE:
            return Impossible()
        raise _Bad(f"status goal_status {_show(sv)} is not complete or infeasible")
    if kind == "complete":
        return Complete()
    if kind == "impossible":
        return Impossible()
    if kind == "answer":
        text = _first_str(d, ("text", "answer", "content", "message", "response", "value"))
        if text is None:
            raise _Bad("answer needs a text")
        return Answer(text)
    if kind == "dual_point":
        touch = d.get("touch_point")
        if touch is None:
            raise _Bad("DUAL_POINT needs a touch_point")
        ty, tx = _pair(_numbers(touch, "DUAL_POINT touch_point"), "DUAL_POINT touch_point")
        lift = d.get("lift_point")
        ly, lx = ty, tx
        if lift is not None:
            ly, lx = _pair(_numbers(lift, "DUAL_POINT lift_point"), "DUAL_POINT lift_point")
            if ly < 0 and lx < 0:  # "[-1.0, -1.0]": unused
                ly, lx = ty, tx
        if math.hypot(lx - tx, ly - ty) <= AITW_TAP_THRESHOLD:
            return Tap(tx, ty)
        return Swipe(tx, ty, lx, ly)
    raise _Bad(f"unknown action_type {what!r}")  # pragma: no cover - table and code agree


def action_from_dict(
    obj: dict[str, object],
    *,
    elements: Sequence[UIElement] | None = None,
    screen: Screen | None = None,
) -> Action | InvalidAction:
    """An action from an already decoded JSON object (any vocabulary this module reads)."""
    try:
        return _convert(obj, _Ctx(elements, screen))
    except (_Bad, _NoType) as exc:
        return InvalidAction(str(exc), _raw(obj))
    except Exception as exc:  # never raise on model output
        return InvalidAction(f"internal parser error: {type(exc).__name__}: {exc}", _raw(obj))


def _raw(obj: object) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(obj)


def _precheck(text: object) -> str | InvalidAction:
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return InvalidAction(f"model output is {type(text).__name__}, not text", repr(text))
    if not text.strip():
        return InvalidAction("empty model output", text)
    if len(text) > MAX_OUTPUT_CHARS:
        return InvalidAction(f"model output too long ({len(text)} > {MAX_OUTPUT_CHARS} chars)",
                             text)
    return text


def _from_objects(text: str, ctx: _Ctx) -> Action | InvalidAction | str | None:
    """First object naming an action; else the best reason found (str) or None."""
    reason: str | None = None
    for cand in find_objects(text):
        if isinstance(cand, LenientError):
            reason = reason or f"malformed JSON object: {cand}"
            continue
        try:
            return _convert(cand, ctx)
        except _Bad as exc:
            return InvalidAction(str(exc), text)
        except _NoType as exc:
            reason = str(exc)
    return reason


_TYPE_FIELD: Final = re.compile(r"""["']?action[_ ]?type["']?\s*[:=]""", re.I)
_DECISION: Final = re.compile(r"action\s+decision\s*:", re.I)


def _from_fields(text: str, ctx: _Ctx) -> Action | InvalidAction | str | None:
    m = _DECISION.search(text)
    start = m.end() if m else None
    t = _TYPE_FIELD.search(text, start or 0)
    if t is None:
        return None
    if start is None or text[start:t.start()].strip():
        start = t.start()
    try:
        fields = parse_fields(text, start)
    except LenientError as exc:
        return f"malformed action fields: {exc}"
    try:
        return _convert(fields, ctx)
    except (_Bad, _NoType) as exc:
        return InvalidAction(str(exc), text)


_CALL: Final = re.compile(r"\b([A-Za-z_][\w]*)\s*\(")
_POSITIONAL: Final[dict[str, tuple[str, ...]]] = {
    "tap": ("x", "y"), "long_press": ("x", "y"), "swipe": ("x1", "y1", "x2", "y2"),
    "scroll": ("direction",), "type": ("text",), "key": ("key",), "open_app": ("app_name",),
    "wait": ("seconds",), "status": ("goal_status",), "answer": ("text",),
}


def _from_call(text: str, ctx: _Ctx) -> Action | InvalidAction | None:
    """``click(0.5, 0.3)``, ``type(text="hi")``, ``scroll("down")``, ``press_home()``."""
    for n, m in enumerate(_CALL.finditer(text)):
        if n >= MAX_CALLS:
            break
        name = _snake(m.group(1))
        if name not in _ALIASES:
            continue
        kind, _ = _ALIASES[name]
        try:
            args, kwargs = _call_args(text, m.end() - 1)
        except LenientError:
            continue
        d: dict[str, object] = {"action_type": name, **kwargs}
        slots = _POSITIONAL.get(kind, ())
        if kind in ("tap", "long_press") and len(args) == 1:
            d["coordinate"] = args[0]
        elif kind == "swipe" and len(args) == 1:
            d["direction"] = args[0]
        elif kind == "swipe" and len(args) == 2:
            d["start"], d["end"] = args
        else:
            for slot, val in zip(slots, args, strict=False):
                d.setdefault(slot, val)
        try:
            return _convert(d, ctx)
        except (_Bad, _NoType) as exc:
            return InvalidAction(str(exc), text)
    return None


def _call_args(text: str, pos: int) -> tuple[list[object], dict[str, object]]:
    args: list[object] = []
    kwargs: dict[str, object] = {}
    i = pos + 1
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text):
            raise LenientError("unclosed call")
        if text[i] == ")":
            return args, kwargs
        kw = re.compile(r"([A-Za-z_]\w*)\s*[=:]\s*").match(text, i)
        if kw:
            v, i = parse_prefix(text, kw.end())
            kwargs[kw.group(1)] = v
        else:
            v, i = parse_prefix(text, i)
            args.append(v)


_BARE: Final = re.compile(
    r"\b(PRESS_HOME|PRESS_BACK|PRESS_ENTER|STATUS_TASK_COMPLETE|STATUS_TASK_IMPOSSIBLE|"
    r"TASK_IMPOSSIBLE|TASK_COMPLETE|NAVIGATE_HOME|NAVIGATE_BACK|KEYBOARD_ENTER)\b", re.I)
_NO_ARGS: Final = frozenset(k for k, (kind, preset) in _ALIASES.items()
                            if (kind == "key" and preset) or kind in ("complete", "impossible"))


def _from_bare(text: str) -> Action | None:
    """A whole output that is just ``DONE`` / ``navigate_back`` / ``PRESS_HOME``…"""
    body = re.sub(r"^\s*(action|answer|output|decision)\s*:\s*", "", text.strip(), flags=re.I)
    word = _snake(body.strip(" \t\r\n.!`'\""))
    m = _BARE.search(text)
    if word not in _NO_ARGS and m:
        word = _snake(m.group(1))
    if word in _NO_ARGS:
        kind, preset = _ALIASES[word]
        if kind == "key" and preset:
            return Key(_KEY_ALIASES[preset])
        return Complete() if kind == "complete" else Impossible()
    return None


def _run(text: object, steps: str, elements: Sequence[UIElement] | None,
         screen: Screen | None) -> Action | InvalidAction:
    pre = _precheck(text)
    if isinstance(pre, InvalidAction):
        return pre
    ctx = _Ctx(elements, screen)
    reason: str | None = None
    try:
        for step in steps:
            got: Action | InvalidAction | str | None
            if step == "j":
                got = _from_objects(pre, ctx)
            elif step == "f":
                got = _from_fields(pre, ctx)
            elif step == "c":
                got = _from_call(pre, ctx)
            else:
                got = _from_bare(pre)
            if isinstance(got, str):
                reason = reason or got
            elif got is not None:
                return got if not isinstance(got, InvalidAction) else InvalidAction(
                    got.reason, pre)
    except Exception as exc:  # never raise on model output
        return InvalidAction(f"internal parser error: {type(exc).__name__}: {exc}", pre)
    return InvalidAction(reason or "no action found in model output", pre)


def parse_json(
    text: str,
    *,
    elements: Sequence[UIElement] | None = None,
    screen: Screen | None = None,
) -> Action | InvalidAction:
    """The first JSON object naming an action in ``text`` (prose and fences allowed).

    ``elements`` (the current screen's UI elements) resolve ``"index"``; ``screen``
    (width, height) normalises their centres (default: inferred from the elements).
    """
    return _run(text, "j", elements, screen)


def parse_aitw(text: str) -> Action | InvalidAction:
    """An AitW/AutoUI action (``Action Decision: "action_type": …``); never raises."""
    return _run(text, "fjb", None, None)


def parse_action(
    text: str,
    *,
    elements: Sequence[UIElement] | None = None,
    screen: Screen | None = None,
) -> Action | InvalidAction:
    """Read an action from real model output, whatever its format; never raises.

    Tries, in order: JSON objects (in ``` fences first, then anywhere; single quotes,
    Python literals, trailing commas, other key cases, numbers as strings, points as
    ``"[0.5, 0.3]"`` or ``"50%"`` all accepted), AitW decision fields, call syntax
    (``click(0.5, 0.3)``), then a bare ``PRESS_BACK``/``DONE``. The first thing that
    names an action decides: a valid :data:`Action`, or an :class:`InvalidAction`
    saying precisely what is wrong with it.
    """
    steps = "fjcb" if isinstance(text, str) and _DECISION.search(text) else "jfcb"
    return _run(text, steps, elements, screen)

"""The typed action space a policy acts in.

Coordinates are **normalised** to ``[0, 1]`` (x to the right, y downwards) so one policy
output works on every screen size; they become pixels only when executed
(:func:`distrl_sdk.actions.to_adb_commands`). Constructors validate their arguments and
raise :class:`ValueError`; parsers turn those errors into :class:`InvalidAction`.

Scroll convention (as AndroidWorld): ``Scroll("down")`` *reveals the content below*, so
the finger moves **up** the screen; ``Scroll("right")`` reveals content to the right,
so the finger moves left. A :class:`Swipe` is the raw finger motion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias, get_args

__all__ = [
    "DIRECTIONS",
    "KEYS",
    "Action",
    "Answer",
    "Complete",
    "Direction",
    "Impossible",
    "InvalidAction",
    "Key",
    "KeyName",
    "LongPress",
    "OpenApp",
    "Scroll",
    "Swipe",
    "Tap",
    "TypeText",
    "Wait",
    "is_terminal",
    "scroll_gesture",
]

Direction: TypeAlias = Literal["up", "down", "left", "right"]
KeyName: TypeAlias = Literal["home", "back", "enter"]
DIRECTIONS: Final[tuple[Direction, ...]] = get_args(Direction)
KEYS: Final[tuple[KeyName, ...]] = get_args(KeyName)
MAX_WAIT_S: Final = 600.0
MAX_SWIPE_MS: Final = 60_000


def _coord(owner: str, name: str, value: object) -> float:
    """``value`` as a float in [0, 1], or a ValueError that names it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{owner} {name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise ValueError(f"{owner} {name}={value:g} outside [0, 1]")
    return v


def _text(owner: str, name: str, value: object, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{owner} {name} must be a string, got {type(value).__name__}")
    if not empty_ok and not value:
        raise ValueError(f"{owner} {name} is empty")
    return value


@dataclass(frozen=True, slots=True)
class Tap:
    """Tap at a normalised point."""

    x: float
    y: float
    kind: Literal["tap"] = field(default="tap", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _coord("tap", "x", self.x))
        object.__setattr__(self, "y", _coord("tap", "y", self.y))


@dataclass(frozen=True, slots=True)
class LongPress:
    """Press and hold (1 s) at a normalised point."""

    x: float
    y: float
    kind: Literal["long_press"] = field(default="long_press", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "x", _coord("long_press", "x", self.x))
        object.__setattr__(self, "y", _coord("long_press", "y", self.y))


@dataclass(frozen=True, slots=True)
class Swipe:
    """The finger moves from (x1, y1) to (x2, y2) in ``duration_ms``."""

    x1: float
    y1: float
    x2: float
    y2: float
    duration_ms: int = 300
    kind: Literal["swipe"] = field(default="swipe", init=False)

    def __post_init__(self) -> None:
        for name in ("x1", "y1", "x2", "y2"):
            object.__setattr__(self, name, _coord("swipe", name, getattr(self, name)))
        d = self.duration_ms
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= MAX_SWIPE_MS:
            raise ValueError(f"swipe duration_ms={d!r} must be an integer in [1, {MAX_SWIPE_MS}]")


@dataclass(frozen=True, slots=True)
class Scroll:
    """Scroll the content so that what lies in ``direction`` comes into view.

    ``Scroll("down")`` shows what is below: the finger moves up (AndroidWorld's meaning).
    """

    direction: Direction
    kind: Literal["scroll"] = field(default="scroll", init=False)

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"scroll direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}"
            )


@dataclass(frozen=True, slots=True)
class TypeText:
    """Type ``text`` into the focused field; with ``x``/``y``, tap there first."""

    text: str
    x: float | None = None
    y: float | None = None
    kind: Literal["type_text"] = field(default="type_text", init=False)

    def __post_init__(self) -> None:
        _text("type_text", "text", self.text)
        if (self.x is None) != (self.y is None):
            raise ValueError("type_text needs both x and y to tap first, or neither")
        if self.x is not None:
            object.__setattr__(self, "x", _coord("type_text", "x", self.x))
            object.__setattr__(self, "y", _coord("type_text", "y", self.y))


@dataclass(frozen=True, slots=True)
class Key:
    """Press a system key."""

    key: KeyName
    kind: Literal["key"] = field(default="key", init=False)

    def __post_init__(self) -> None:
        if self.key not in KEYS:
            raise ValueError(f"key {self.key!r} is not one of {', '.join(KEYS)}")


@dataclass(frozen=True, slots=True)
class OpenApp:
    """Launch an app by its name (``"Settings"``) or package (``"com.android.settings"``)."""

    app_name: str
    kind: Literal["open_app"] = field(default="open_app", init=False)

    def __post_init__(self) -> None:
        _text("open_app", "app_name", self.app_name)
        if not self.app_name.strip():
            raise ValueError("open_app app_name is blank")


@dataclass(frozen=True, slots=True)
class Wait:
    """Do nothing for ``seconds`` (let the screen settle)."""

    seconds: float = 1.0
    kind: Literal["wait"] = field(default="wait", init=False)

    def __post_init__(self) -> None:
        s = self.seconds
        if isinstance(s, bool) or not isinstance(s, int | float):
            raise ValueError(f"wait seconds must be a number, got {s!r}")
        if not math.isfinite(s) or not 0.0 <= s <= MAX_WAIT_S:
            raise ValueError(f"wait seconds={s:g} outside [0, {MAX_WAIT_S:g}]")
        object.__setattr__(self, "seconds", float(s))


@dataclass(frozen=True, slots=True)
class Complete:
    """The agent declares the task done (ends the episode)."""

    kind: Literal["complete"] = field(default="complete", init=False)


@dataclass(frozen=True, slots=True)
class Impossible:
    """The agent declares the task infeasible (ends the episode)."""

    kind: Literal["impossible"] = field(default="impossible", init=False)


@dataclass(frozen=True, slots=True)
class Answer:
    """The agent answers a question (information-retrieval tasks; ends the episode)."""

    text: str
    kind: Literal["answer"] = field(default="answer", init=False)

    def __post_init__(self) -> None:
        _text("answer", "text", self.text, empty_ok=True)


Action: TypeAlias = (
    Tap | LongPress | Swipe | Scroll | TypeText | Key | OpenApp | Wait | Complete | Impossible
    | Answer
)


@dataclass(frozen=True, slots=True)
class InvalidAction:
    """Model output that is no action; *not* an :data:`Action`.

    ``reason`` says precisely what is wrong (shown to people and usable as feedback);
    ``raw`` is the model output as received. The learner's invalid-action penalty keys
    on this type.
    """

    reason: str
    raw: str
    kind: Literal["invalid"] = field(default="invalid", init=False)


def is_terminal(action: Action | InvalidAction) -> bool:
    """Whether the action ends the episode (Complete, Impossible, Answer)."""
    return isinstance(action, Complete | Impossible | Answer)


# Scroll gestures in normalised coordinates: the finger travels half the screen height
# (60 % of its width) through the centre, slowly enough not to fling.
SCROLL_DURATION_MS: Final = 500
_SCROLL: Final[dict[Direction, tuple[float, float, float, float]]] = {
    "down": (0.5, 0.75, 0.5, 0.25),   # finger up: content below comes into view
    "up": (0.5, 0.25, 0.5, 0.75),     # finger down
    "right": (0.8, 0.5, 0.2, 0.5),    # finger left: content to the right comes in
    "left": (0.2, 0.5, 0.8, 0.5),     # finger right
}


def scroll_gesture(direction: Direction) -> Swipe:
    """The finger motion that performs ``Scroll(direction)``."""
    x1, y1, x2, y2 = _SCROLL[direction]
    return Swipe(x1, y1, x2, y2, SCROLL_DURATION_MS)

"""Typed phone actions: the policy's action space, its text formats, and execution.

    from distrl_sdk.actions import parse_action, execute, Tap

    action = parse_action(model_output, elements=ui)   # Action | InvalidAction
    if not isinstance(action, InvalidAction):
        await execute(device, action)

Coordinates are normalised to [0, 1]; see :mod:`distrl_sdk.actions.types` for the
scroll convention, :mod:`~distrl_sdk.actions.formats` for the JSON and AitW formats and
:mod:`~distrl_sdk.actions.adb` for the shell commands (and how text is escaped).
"""

from distrl_sdk.actions.adb import (
    KNOWN_APPS,
    execute,
    resolve_app,
    text_commands,
    to_adb_commands,
)
from distrl_sdk.actions.formats import (
    action_from_dict,
    parse_action,
    parse_aitw,
    parse_json,
    to_aitw,
    to_dict,
    to_json,
)
from distrl_sdk.actions.types import (
    DIRECTIONS,
    KEYS,
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
    is_terminal,
    scroll_gesture,
)

__all__ = [
    "DIRECTIONS",
    "KEYS",
    "KNOWN_APPS",
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
    "action_from_dict",
    "execute",
    "is_terminal",
    "parse_action",
    "parse_aitw",
    "parse_json",
    "resolve_app",
    "scroll_gesture",
    "text_commands",
    "to_adb_commands",
    "to_aitw",
    "to_dict",
    "to_json",
]

"""Android KeyEvent keycodes (android.view.KeyEvent), the ones tools actually send."""

from __future__ import annotations

import string

_NAMED: dict[str, int] = {
    "UNKNOWN": 0, "SOFT_LEFT": 1, "SOFT_RIGHT": 2, "HOME": 3, "BACK": 4, "CALL": 5,
    "ENDCALL": 6, "STAR": 17, "POUND": 18, "DPAD_UP": 19, "DPAD_DOWN": 20,
    "DPAD_LEFT": 21, "DPAD_RIGHT": 22, "DPAD_CENTER": 23, "VOLUME_UP": 24,
    "VOLUME_DOWN": 25, "POWER": 26, "CAMERA": 27, "CLEAR": 28, "COMMA": 55, "PERIOD": 56,
    "ALT_LEFT": 57, "ALT_RIGHT": 58, "SHIFT_LEFT": 59, "SHIFT_RIGHT": 60, "TAB": 61,
    "SPACE": 62, "SYM": 63, "EXPLORER": 64, "ENVELOPE": 65, "ENTER": 66, "DEL": 67,
    "GRAVE": 68, "MINUS": 69, "EQUALS": 70, "LEFT_BRACKET": 71, "RIGHT_BRACKET": 72,
    "BACKSLASH": 73, "SEMICOLON": 74, "APOSTROPHE": 75, "SLASH": 76, "AT": 77, "NUM": 78,
    "HEADSETHOOK": 79, "FOCUS": 80, "PLUS": 81, "MENU": 82, "NOTIFICATION": 83,
    "SEARCH": 84, "MEDIA_PLAY_PAUSE": 85, "MEDIA_STOP": 86, "MEDIA_NEXT": 87,
    "MEDIA_PREVIOUS": 88, "MEDIA_REWIND": 89, "MEDIA_FAST_FORWARD": 90, "MUTE": 91,
    "PAGE_UP": 92, "PAGE_DOWN": 93, "ESCAPE": 111, "FORWARD_DEL": 112, "CTRL_LEFT": 113,
    "CTRL_RIGHT": 114, "CAPS_LOCK": 115, "SCROLL_LOCK": 116, "META_LEFT": 117,
    "META_RIGHT": 118, "FUNCTION": 119, "SYSRQ": 120, "BREAK": 121, "MOVE_HOME": 122,
    "MOVE_END": 123, "INSERT": 124, "FORWARD": 125, "MEDIA_PLAY": 126, "MEDIA_PAUSE": 127,
    "MEDIA_CLOSE": 128, "MEDIA_EJECT": 129, "MEDIA_RECORD": 130, "VOLUME_MUTE": 164,
    "INFO": 165, "CHANNEL_UP": 166, "CHANNEL_DOWN": 167, "ZOOM_IN": 168, "ZOOM_OUT": 169,
    "SETTINGS": 176, "APP_SWITCH": 187, "LANGUAGE_SWITCH": 204, "CONTACTS": 207,
    "CALENDAR": 208, "MUSIC": 209, "CALCULATOR": 210, "ASSIST": 219,
    "BRIGHTNESS_DOWN": 220, "BRIGHTNESS_UP": 221, "SLEEP": 223, "WAKEUP": 224,
    "VOICE_ASSIST": 231, "SOFT_SLEEP": 276, "CUT": 277, "COPY": 278, "PASTE": 279,
    "ALL_APPS": 284, "REFRESH": 285,
}
for _i in range(10):
    _NAMED[str(_i)] = 7 + _i
for _i, _c in enumerate(string.ascii_uppercase):
    _NAMED[_c] = 29 + _i
for _i in range(12):
    _NAMED[f"F{_i + 1}"] = 131 + _i

KEYCODES: dict[str, int] = {f"KEYCODE_{k}": v for k, v in _NAMED.items()}
NAMES: dict[int, str] = {v: k for k, v in KEYCODES.items()}
MAX_KEYCODE = 316


def keycode(arg: str) -> int | None:
    """``66``, ``ENTER`` or ``KEYCODE_ENTER`` → 66; None if unknown.

    Android tries the number first, then the name with and without the prefix.
    """
    if arg.isdecimal():
        n = int(arg)
        return n if n <= MAX_KEYCODE else None
    up = arg.upper() if arg.isascii() else arg
    if up in KEYCODES:
        return KEYCODES[up]
    return KEYCODES.get("KEYCODE_" + up)

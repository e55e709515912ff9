"""Actions as ``adb shell`` command lines, and a thin async runner over a :class:`Device`.

Points become pixels as ``round(v · size)`` clamped to the screen. A long press is a
same-point ``input swipe … 1000`` (as AndroidWorld); a scroll is the swipe from
:func:`~distrl_sdk.actions.types.scroll_gesture`.

**Typing.** ``input text`` types ASCII only and turns ``%s`` into a space. Text is sent
**word by word** (AndroidWorld's lesson: long strings lose characters or their order),
each word with the spaces that follow it written as ``%s`` — the one way to type a
space that every Android version's ``input text`` accepts — and quoted for the device
shell with POSIX single quotes (``shlex.quote``). Single quotes protect *every*
metacharacter, including the glob characters ``* ? [`` and ``~ { !`` that AndroidWorld's
backslash list misses. A literal ``%s`` in the text cannot be written inside one
``input text`` argument, so the word is split between the ``%`` and the ``s`` into two
commands. Newlines are sent as ``KEYCODE_ENTER``, tabs as ``KEYCODE_TAB``. Other
characters (non-ASCII, control characters) raise :class:`ValueError` naming them, unless
``ime="adbkeyboard"``: then the whole text goes in one
``am broadcast -a ADB_INPUT_TEXT --es msg '…'`` to the ADBKeyboard IME, which must be
installed and selected (``ime set com.android.adbkeyboard/.AdbIME``).
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from distrl_sdk.actions.types import (
    Action,
    Answer,
    Complete,
    Impossible,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    TypeText,
    Wait,
    scroll_gesture,
)
from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError

__all__ = ["IMES", "KNOWN_APPS", "execute", "resolve_app", "text_commands", "to_adb_commands"]

LONG_PRESS_MS: Final = 1000
IMES: Final = ("adbkeyboard",)
_KEYCODES: Final = {"home": "KEYCODE_HOME", "back": "KEYCODE_BACK", "enter": "KEYCODE_ENTER"}

KNOWN_APPS: Final[Mapping[str, str]] = MappingProxyType({
    "settings": "com.android.settings",
    "chrome": "com.android.chrome",
    "browser": "com.android.chrome",
    "google chrome": "com.android.chrome",
    "clock": "com.google.android.deskclock",
    "alarm": "com.google.android.deskclock",
    "contacts": "com.google.android.contacts",
    "shop": "org.distrl.shop",
    "phone": "com.google.android.dialer",
    "dialer": "com.google.android.dialer",
    "messages": "com.google.android.apps.messaging",
    "sms": "com.google.android.apps.messaging",
    "camera": "com.android.camera2",
    "calendar": "com.google.android.calendar",
    "calculator": "com.google.android.calculator",
    "gmail": "com.google.android.gm",
    "maps": "com.google.android.apps.maps",
    "google maps": "com.google.android.apps.maps",
    "youtube": "com.google.android.youtube",
    "play store": "com.android.vending",
    "google play": "com.android.vending",
    "photos": "com.google.android.apps.photos",
    "google photos": "com.google.android.apps.photos",
    "files": "com.google.android.documentsui",
    "google": "com.google.android.googlequicksearchbox",
    "search": "com.google.android.googlequicksearchbox",
    "launcher": "com.google.android.apps.nexuslauncher",
})
_PACKAGE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)+")
# one command's worth: a word with the spaces after it (or leading spaces alone)
_UNIT: Final = re.compile(r"[^ \n\t]+ *| +|\n|\t")


def resolve_app(app_name: str) -> str:
    """The package for an app name (case-insensitive, see :data:`KNOWN_APPS`).

    ``"the Settings app"`` works; a name that looks like a package is returned as is.
    """
    key = " ".join(app_name.lower().split())
    key = key.removeprefix("the ").removesuffix(" app").strip()
    if key in KNOWN_APPS:
        return KNOWN_APPS[key]
    name = app_name.strip()
    if _PACKAGE.fullmatch(name):
        return name
    raise ValueError(
        f"unknown app {app_name!r}: not a known app name and not a package name "
        f"(like com.android.settings); known apps: {', '.join(sorted(KNOWN_APPS))}"
    )


def text_commands(text: str, *, ime: str | None = None) -> list[str]:
    """Shell commands that type ``text`` into the focused field (see the module doc)."""
    if ime is not None:
        if ime != "adbkeyboard":
            raise ValueError(f"unknown ime {ime!r}; supported: {', '.join(IMES)}")
        return [f"am broadcast -a ADB_INPUT_TEXT --es msg {shlex.quote(text)}"]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    bad = sorted({c for c in text if c not in "\n\t" and not " " <= c <= "~"})
    if bad:
        shown = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in bad[:10])
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        raise ValueError(
            f"`input text` types printable ASCII only; cannot type {shown}{more}. "
            "Install and select the ADBKeyboard IME and pass ime='adbkeyboard' to type them"
        )
    cmds: list[str] = []
    for unit in _UNIT.findall(text):
        if unit == "\n":
            cmds.append("input keyevent KEYCODE_ENTER")
        elif unit == "\t":
            cmds.append("input keyevent KEYCODE_TAB")
        else:
            word = unit.rstrip(" ")
            spaces = "%s" * (len(unit) - len(word))
            # "%s" in the text itself would type a space: cut between '%' and 's'
            chunks = re.split(r"(?<=%)(?=s)", word) if word else [""]
            chunks[-1] += spaces
            cmds.extend(f"input text {shlex.quote(c)}" for c in chunks)
    return cmds


def _px(v: float, size: int) -> int:
    return min(size - 1, max(0, round(v * size)))


def to_adb_commands(
    action: Action, screen: tuple[int, int], *, ime: str | None = None
) -> list[str]:
    """The ``adb shell`` command lines that perform ``action`` on a ``screen`` (w, h).

    Wait, Complete, Impossible and Answer need no commands (``[]``). Raises
    :class:`ValueError` for text that cannot be typed and apps that cannot be resolved.
    """
    w, h = screen
    if w <= 0 or h <= 0:
        raise ValueError(f"screen size {screen!r} must be positive")
    match action:
        case Tap(x=x, y=y):
            return [f"input tap {_px(x, w)} {_px(y, h)}"]
        case LongPress(x=x, y=y):
            px, py = _px(x, w), _px(y, h)
            return [f"input swipe {px} {py} {px} {py} {LONG_PRESS_MS}"]
        case Swipe(x1=x1, y1=y1, x2=x2, y2=y2, duration_ms=ms):
            return [f"input swipe {_px(x1, w)} {_px(y1, h)} {_px(x2, w)} {_px(y2, h)} {ms}"]
        case Scroll(direction=d):
            return to_adb_commands(scroll_gesture(d), screen)
        case TypeText(text=t, x=x, y=y):
            tap = [f"input tap {_px(x, w)} {_px(y, h)}"] if x is not None and y is not None else []
            return tap + text_commands(t, ime=ime)
        case Key(key=k):
            return [f"input keyevent {_KEYCODES[k]}"]
        case OpenApp(app_name=name):
            pkg = resolve_app(name)
            return [f"monkey -p {pkg} -c android.intent.category.LAUNCHER 1"]
        case Wait() | Complete() | Impossible() | Answer():
            return []
    raise TypeError(f"not an Action: {action!r}")


def _needs_screen(action: Action) -> bool:
    if isinstance(action, TypeText):
        return action.x is not None
    return isinstance(action, Tap | LongPress | Swipe | Scroll)


async def execute(device: Device, action: Action, *, ime: str | None = None) -> None:
    """Perform ``action`` on ``device``; ``Wait`` sleeps, terminal actions do nothing.

    Commands are built before anything runs, so untypeable text or an unknown app
    raises :class:`ValueError` without touching the device. A command that fails
    raises :class:`~distrl_sdk.errors.DeviceError`.
    """
    if isinstance(action, Wait):
        await asyncio.sleep(action.seconds)
        return
    screen = await device.screen_size() if _needs_screen(action) else (1, 1)
    for cmd in to_adb_commands(action, screen, ime=ime):
        out = await device.shell(cmd)
        both = out.stdout + out.stderr
        if "monkey aborted" in both or "No activities found" in both:
            raise DeviceError(
                f"`{cmd}` launched nothing: the package is not installed or has no "
                "launcher activity (check `pm list packages`)", serial=device.serial)
        if not out.ok or "Exception" in out.stderr or out.stderr.startswith("Error"):
            detail = (out.stderr or out.stdout).strip()[:300]
            raise DeviceError(f"`{cmd}` failed (exit {out.exit_code}): {detail}",
                              serial=device.serial)

"""``input``: taps, swipes, text and key events into the world."""

from __future__ import annotations

import math
import re

from farm.sim.profiles import CommandKind
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc
from farm.sim.shell.keycodes import keycode

# Trimmed from InputShellCommand.onHelp (Android 14).
USAGE = """Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]

The commands and default sources are:
      text <string> (Default: keyboard)
      keyevent [--longpress|--duration <duration to hold key down in ms>] [--doubletap] \
[--async] [--delay <duration between keycodes in ms>] <key code number or name> ... \
(Default: keyboard)
      tap <x> <y> (Default: touchscreen)
      swipe <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      draganddrop <x1> <y1> <x2> <y2> [duration(ms)] (Default: touchscreen)
      press (Default: trackball)
      roll <dx> <dy> (Default: trackball)
      motionevent <DOWN|UP|MOVE|CANCEL> <x> <y> (Default: touchscreen)
"""

SOURCES = frozenset({
    "dpad", "keyboard", "mouse", "touchpad", "gamepad", "touchnavigation", "joystick",
    "touchscreen", "stylus", "trackball", "rotaryencoder",
})
# Java's Float.parseFloat, minus NaN/Infinity (a tap at NaN is never what was meant)
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?")
_INT = re.compile(r"[+-]?\d+")
DEFAULT_SWIPE_MS = 300


class _BadArgs(Exception):
    pass


def _float(s: str) -> float:
    if not _FLOAT.fullmatch(s):
        raise _BadArgs(s)
    v = float(s.rstrip("fFdD"))
    if not math.isfinite(v):
        raise _BadArgs(s)
    return v


def decode_text(text: str) -> str:
    """``%s`` → space, exactly as InputShellCommand.sendText scans it."""
    if "%" not in text:
        return text
    buf = list(text)
    escape = False
    i = 0
    while i < len(buf):
        if escape:
            escape = False
            if buf[i] == "s":
                buf[i] = " "
                del buf[i - 1]
                i -= 1
        if buf[i] == "%":
            escape = True
        i += 1
    return "".join(buf)


def _usage(p: Proc, cmd: str | None) -> int:
    if cmd is not None:
        p.error(f"Error: Invalid arguments for command: {cmd}\n")
    p.error(USAGE)
    return 1


@command("input", kind=CommandKind.INPUT)
async def input_cmd(p: Proc) -> int:
    args = list(p.args)
    if args and args[0] in SOURCES:
        args.pop(0)
    if len(args) >= 2 and args[0] == "-d":
        del args[:2]
    if not args:
        return _usage(p, None)
    cmd, rest = args[0], args[1:]
    world = p.phone.world
    try:
        if cmd == "tap":
            if len(rest) < 2:
                raise _BadArgs
            world.tap(_float(rest[0]), _float(rest[1]))
        elif cmd in ("swipe", "draganddrop"):
            if len(rest) < 4:
                raise _BadArgs
            x1, y1, x2, y2 = (_float(a) for a in rest[:4])
            ms = DEFAULT_SWIPE_MS
            if len(rest) > 4:
                if not _INT.fullmatch(rest[4]):
                    raise _BadArgs
                ms = max(0, min(int(rest[4]), 600_000))
            # Same point held ≥ 500 ms is a long press; the world decides from duration.
            world.swipe(x1, y1, x2, y2, ms)
        elif cmd == "text":
            if not rest:
                raise _BadArgs
            text = decode_text(rest[0])  # Android 14 types only the first argument
            if text:
                world.input_text(text)
        elif cmd == "keyevent":
            return _keyevent(p, rest)
        elif cmd == "keycombination":
            return _keycombination(p, rest)
        elif cmd == "motionevent":
            if len(rest) < 3 or rest[0].upper() not in ("DOWN", "UP", "MOVE", "CANCEL"):
                raise _BadArgs
            world.motion(rest[0].upper(), _float(rest[1]), _float(rest[2]))
        elif cmd in ("press", "roll", "scroll"):
            return 0  # accepted, nothing to simulate (no trackball, no mouse wheel)
        else:
            p.error(f"Error: Unknown command: {cmd}\n")
            p.error(USAGE)
            return 1
    except _BadArgs:
        return _usage(p, cmd)
    return 0


def _keyevent(p: Proc, rest: list[str]) -> int:
    doubletap = False
    codes: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("--longpress", "--async"):
            pass
        elif a == "--doubletap":
            doubletap = True
        elif a in ("--duration", "--delay"):
            i += 1
        else:
            codes.append(a)
        i += 1
    if not codes:
        return _usage(p, "keyevent")
    world = p.phone.world
    for arg in codes:
        code = keycode(arg)
        if code is None or code == 0:
            continue  # KeyEvent.keyCodeFromString → KEYCODE_UNKNOWN: nothing happens
        world.key(code)
        if doubletap:
            world.key(code)
    return 0


def _keycombination(p: Proc, rest: list[str]) -> int:
    """``input keycombination [-t ms] KEY KEY …``: the keys held together. Modifier
    shortcuts act on the focused field (Ctrl+A selects all, so DEL then clears it);
    a lone key is that key."""
    if rest[:1] == ["-t"]:
        rest = rest[2:]
    if len(rest) < 2:
        return _usage(p, "keycombination")
    codes = [c for c in (keycode(a) for a in rest) if c]
    world = p.phone.world
    mods = {c for c in codes if c in _MODIFIERS}
    keys = [c for c in codes if c not in _MODIFIERS]
    if mods & _CTRL and keys == [29]:  # Ctrl+A
        world.select_all()
    elif not mods:
        for c in keys:
            world.key(c)
    return 0


_CTRL = frozenset({113, 114})
_MODIFIERS = _CTRL | {57, 58, 59, 60, 117, 118, 119}  # alt, shift, meta, function

"""``wm size`` / ``wm density``: physical values plus the phone's overrides."""

from __future__ import annotations

import re

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

_SIZE = re.compile(r"(\d+)[xX](\d+)")

USAGE = """Window manager (window) commands:
  help
      Print this help text.
  size [reset|WxH|WdpxHdp] [-d DISPLAY_ID]
    Return or override display size.
  density [reset|DENSITY] [-d DISPLAY_ID]
    Return or override display density.
"""


@command("wm")
async def wm(p: Proc) -> int:
    args = [a for a in p.args]
    if "-d" in args:  # only display 0 exists
        i = args.index("-d")
        del args[i:i + 2]
    if not args or args[0] in ("help", "-h"):
        p.write(USAGE)
        return 0
    phone = p.phone
    screen = phone.spec.screen
    sub, rest = args[0], args[1:]
    if sub == "size":
        if not rest:
            p.write(f"Physical size: {screen.width}x{screen.height}\n")
            if phone.wm_size is not None:
                p.write(f"Override size: {phone.wm_size[0]}x{phone.wm_size[1]}\n")
            return 0
        if rest[0] == "reset":
            phone.wm_size = None
            return 0
        m = _SIZE.fullmatch(rest[0])
        if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
            p.error(f"Error: bad size {rest[0]}\n")
            return 255
        phone.wm_size = (int(m.group(1)), int(m.group(2)))
        return 0
    if sub == "density":
        if not rest:
            p.write(f"Physical density: {screen.density}\n")
            if phone.wm_density is not None:
                p.write(f"Override density: {phone.wm_density}\n")
            return 0
        if rest[0] == "reset":
            phone.wm_density = None
            return 0
        if not rest[0].isdecimal() or int(rest[0]) <= 0:
            p.error(f"Error: bad number {rest[0]}\n")
            return 255
        phone.wm_density = int(rest[0])
        return 0
    if sub == "user-rotation":
        return _user_rotation(p, rest)
    if sub in ("fixed-to-user-rotation", "dismiss-keyguard"):
        return 0
    p.error(f"Unknown command: {sub}\n")
    return 255


def _user_rotation(p: Proc, args: list[str]) -> int:
    """``wm user-rotation [free|lock [ROTATION]]`` through the same settings the
    rotation lock tile writes; with no argument it prints the lock state."""
    store = p.phone.world.settings
    words = [a for i, a in enumerate(args) if a != "-d" and (i == 0 or args[i - 1] != "-d")]
    if not words:
        free = store.get("system", "accelerometer_rotation") == "1"
        p.write("free\n" if free else f"lock {store.get('system', 'user_rotation') or '0'}\n")
        return 0
    if words[0] == "free":
        store.put("system", "accelerometer_rotation", "1")
        return 0
    if words[0] == "lock":
        rotation = words[1] if len(words) > 1 else None
        if rotation is not None and rotation not in ("0", "1", "2", "3"):
            p.error(f"Error: Unknown rotation: {rotation}\n")
            return 255
        store.put("system", "accelerometer_rotation", "0")
        if rotation is not None:
            store.put("system", "user_rotation", rotation)
        return 0
    p.error(f"Error: Unknown option: {words[0]}\n")
    return 255

"""``ime`` (list, enable, disable, set, reset) and the ADBKeyboard input method.

Agent stacks type text that ``input text`` cannot carry (non-ASCII, emoji) through
ADBKeyboard: install its APK, ``ime enable`` + ``ime set`` it, then broadcast
``ADB_INPUT_TEXT --es msg …``. As on a phone, the broadcasts reach the keyboard only while
it is the selected input method (it registers its receiver when the IME starts), and
``ime`` knows only the input methods of installed packages."""

from __future__ import annotations

import base64
import binascii

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Phone, Proc
from farm.sim.world.settings_store import IME_ID

ADB_KEYBOARD_PACKAGE = "com.android.adbkeyboard"
ADB_IME_ID = f"{ADB_KEYBOARD_PACKAGE}/.AdbIME"
USER = 0

HELP = """ime <command>:
  list [-a] [-s]
    prints all enabled input methods.
      -a: see all input methods
      -s: only a single summary line of each
  enable [--user <USER_ID>] <ID>
    allows the given input method ID to be used.
  disable [--user <USER_ID>] <ID>
    disallows the given input method ID to be used.
  set [--user <USER_ID>] <ID>
    switches to the given input method ID.
  reset [--user <USER_ID>]
    reset currently selected/enabled IMEs to the default ones as if the device is initially booted
"""


def available(phone: Phone) -> list[str]:
    """Input method ids of the installed packages, the system keyboard first."""
    ids = [IME_ID]
    if any(p.name == ADB_KEYBOARD_PACKAGE for p in phone.world.packages()):
        ids.append(ADB_IME_ID)
    return ids


def _expand(ime_id: str) -> str:
    """``pkg/.Cls`` and ``pkg/pkg.Cls`` name the same service."""
    pkg, _, cls = ime_id.partition("/")
    return f"{pkg}/{pkg}{cls}" if cls.startswith(".") else ime_id


def _find(phone: Phone, ime_id: str) -> str | None:
    want = _expand(ime_id)
    return next((i for i in available(phone) if _expand(i) == want), None)


def enabled(phone: Phone) -> list[str]:
    raw = phone.world.settings.get("secure", "enabled_input_methods") or ""
    known = available(phone)
    return [i for i in raw.split(":") if i and i in known]


def _set_enabled(phone: Phone, ids: list[str]) -> None:
    phone.world.settings.put("secure", "enabled_input_methods", ":".join(ids))


def _describe(ime_id: str) -> str:
    pkg, _, cls = _expand(ime_id).partition("/")
    return (f"{ime_id}:\n  mId={ime_id} mSettingsActivityName=null\n"
            f"  mIsDefaultResId=0x0\n  Service:\n    priority=0 preferredOrder=0 match=0x108000"
            f" specificIndex=-1 isDefault=false\n    ServiceInfo:\n      name={cls}\n"
            f"      packageName={pkg}\n      enabled=true exported=true directBootAware=false\n"
            f"      permission=android.permission.BIND_INPUT_METHOD\n")


def _target(args: list[str]) -> str | None:
    rest = [a for i, a in enumerate(args) if not a.startswith("-")
            and (i == 0 or args[i - 1] not in ("--user", "-u"))]
    return rest[0] if rest else None


@command("ime")
async def ime(p: Proc) -> int:
    if not p.args or p.args[0] in ("help", "-h"):
        p.write(HELP)
        return 0
    sub, rest = p.args[0], p.args[1:]
    phone = p.phone
    if sub == "list":
        ids = available(phone) if "-a" in rest else enabled(phone)
        for i in ids:
            p.write(f"{i}\n" if "-s" in rest else _describe(i))
        return 0
    if sub == "reset":
        _set_enabled(phone, [IME_ID])
        phone.world.settings.put("secure", "default_input_method", IME_ID)
        p.write(f"Reset current and enabled IMEs for user #{USER}\n  Selected: {IME_ID}\n"
                f"   Enabled: {IME_ID}\n")
        return 0
    if sub not in ("enable", "disable", "set"):
        p.error(f"Unknown command: {sub}\n")
        return 255
    target = _target(rest)
    if target is None:
        p.error(f"Error: no input method ID given\n{HELP}")
        return 255
    found = _find(phone, target)
    now = enabled(phone)
    if sub == "set":
        if found is None or found not in now:
            p.error(f"Unknown input method {target} cannot be selected for user #{USER}\n")
            return 0  # the input-method service answers errors with status 0
        phone.world.settings.put("secure", "default_input_method", found)
        p.write(f"Input method {target} selected for user #{USER}\n")
        return 0
    if found is None:
        p.error(f"Unknown input method {target} cannot be {sub}d for user #{USER}\n")
        return 0
    if sub == "enable":
        if found in now:
            p.write(f"Input method {target}: already enabled for user #{USER}\n")
        else:
            _set_enabled(phone, [*now, found])
            p.write(f"Input method {target}: now enabled for user #{USER}\n")
        return 0
    if found not in now:
        p.write(f"Input method {target}: already disabled for user #{USER}\n")
        return 0
    _set_enabled(phone, [i for i in now if i != found])
    if phone.world.settings.get("secure", "default_input_method") == found:
        phone.world.settings.put("secure", "default_input_method", IME_ID)  # falls back
    p.write(f"Input method {target}: now disabled for user #{USER}\n")
    return 0


def deliver_to_ime(phone: Phone, action: str, values: dict[str, str | int | list[int]]
                   ) -> bool:
    """An ADBKeyboard broadcast (``ADB_INPUT_TEXT`` …) acted on by the selected keyboard;
    False when no receiver takes it."""
    if not action.startswith("ADB_") or _find(phone, ADB_IME_ID) is None:
        return False
    if phone.world.settings.get("secure", "default_input_method") != _find(phone, ADB_IME_ID):
        return False  # its receiver lives while it is the current input method
    world = phone.world
    msg, code, chars = values.get("msg"), values.get("code"), values.get("chars")
    if action == "ADB_INPUT_TEXT" and isinstance(msg, str):
        world.input_text(msg)
    elif action == "ADB_INPUT_B64" and isinstance(msg, str):
        try:
            world.input_text(base64.b64decode(msg, validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            return True  # the keyboard logs and drops what it cannot decode
    elif action == "ADB_INPUT_CHARS" and isinstance(chars, list):
        world.input_text("".join(chr(c) for c in chars
                                 if 0 < c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF))
    elif action == "ADB_INPUT_CODE" and isinstance(code, int):
        world.key(code)
    elif action == "ADB_EDITOR_CODE" and isinstance(code, int):
        world.key(66)  # the field's editor action (go, search, send …) is its Enter
    elif action == "ADB_CLEAR_TEXT":
        world.clear_text()
    else:
        return False
    return True

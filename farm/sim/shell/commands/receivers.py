"""Broadcast receivers of the apps agent stacks install: ADBKeyboard's text input (see
ime.py) and Clipper's clipboard (``clipper.set -e text …`` / ``clipper.get``), which
answers with result -1 and its data as ``am broadcast`` prints it."""

from __future__ import annotations

from farm.sim.shell.commands.ime import deliver_to_ime
from farm.sim.shell.context import Phone

CLIPPER_PACKAGE = "ca.zgrs.clipper"
RESULT_OK = -1  # Activity.RESULT_OK, what a receiver sets with setResultCode
Values = dict[str, str | int | list[int]]


def _installed(phone: Phone, package: str) -> bool:
    return any(p.name == package for p in phone.world.packages())


def deliver_broadcast(phone: Phone, action: str, values: Values) -> tuple[int, str | None]:
    """(result code, result data) after the receivers that take ``action`` ran;
    (0, None) when none did, as for a broadcast nobody answers."""
    if deliver_to_ime(phone, action, values):
        return 0, None
    if action in ("clipper.set", "clipper.get") and _installed(phone, CLIPPER_PACKAGE):
        if action == "clipper.get":
            return RESULT_OK, phone.clipboard
        text = values.get("text")
        if not isinstance(text, str):
            return 0, None  # Clipper ignores a set without text
        phone.clipboard = text
        return RESULT_OK, "Text is copied into clipboard."
    return 0, None

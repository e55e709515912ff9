"""Posted notifications (NotificationManagerService's list) and their ``dumpsys`` form.

Apps post through the phone (:meth:`World.post_notification`), so does ``cmd
notification post`` (as ``com.android.shell``). A notification is keyed as Android keys
it, ``user|package|id|tag|uid``; posting the same (package, id, tag) again replaces it.
The shade (:func:`farm.sim.world.systemui.notification_shade`) shows them newest first;
tapping one opens its app and cancels it, "Clear all" removes every clearable one.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = ["Notification", "Notifications", "dump"]


@dataclass
class Notification:
    package: str
    id: int
    tag: str | None
    uid: int
    title: str
    text: str
    when_ms: int
    clearable: bool = True

    @property
    def key(self) -> str:
        return f"0|{self.package}|{self.id}|{self.tag or 'null'}|{self.uid}"


class Notifications:
    """The phone's posted notifications, oldest first."""

    def __init__(self) -> None:
        self.items: list[Notification] = []
        self._next_id = 1

    def post(self, package: str, title: str, text: str, *, uid: int, when_ms: int,
             tag: str | None = None, id: int | None = None) -> Notification:
        """Post (or replace the same package/id/tag); returns the posted notification."""
        if id is None:
            id, self._next_id = self._next_id, self._next_id + 1
        n = Notification(package, id, tag, uid, title, text, when_ms)
        self.items = [o for o in self.items if o.key != n.key] + [n]
        return n

    def cancel(self, key: str) -> bool:
        before = len(self.items)
        self.items = [n for n in self.items if n.key != key]
        return len(self.items) != before

    def clear_all(self) -> int:
        """"Clear all": the clearable ones go; returns how many."""
        kept = [n for n in self.items if not n.clearable]
        gone = len(self.items) - len(kept)
        self.items = kept
        return gone

    def newest_first(self) -> list[Notification]:
        return list(reversed(self.items))


def dump(items: list[Notification], *, redact: bool = True) -> str:
    """``dumpsys notification`` (its list section): the record line AOSP prints, then
    the extras, which show their lengths only unless ``--noredact``."""

    def extra(s: str) -> str:
        return f"String [length={len(s)}]" if redact else f"String ({s})"

    lines = ["Current Notification Manager state:", "  Notification List:"]
    for n in items:
        lines += [
            f"    NotificationRecord(0x{zlib.crc32(n.key.encode()):08x}: pkg={n.package} "
            f"user=UserHandle{{0}} id={n.id} tag={n.tag or 'null'} importance=3 "
            f"key={n.key}: Notification(channel=miscellaneous shortcut=null "
            f"contentView=null vibrate=null sound=null defaults=0x0 flags=0x"
            f"{0x0 if n.clearable else 0x2:x} color=0x00000000 vis=PRIVATE))",
            f"      uid={n.uid} userId=0",
            f"      postTime={n.when_ms}",
            "      extras={",
            f"        android.title={extra(n.title)}",
            f"        android.text={extra(n.text)}",
            "      }",
        ]
    lines += [f"  mNotificationList={len(items)}", ""]
    return "\n".join(lines)

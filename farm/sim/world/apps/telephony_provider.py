"""Phone and Messaging Storage (com.android.providers.telephony): the SMS table.

Served as ``content://sms`` (every message), ``content://sms/inbox|sent|draft|outbox|
failed|queued`` (by box, ``Telephony.Sms.MESSAGE_TYPE_*``) and ``…/ID``, with AOSP's
column names, and as ``/data/data/com.android.providers.telephony/databases/mmssms.db``
for ``sqlite3``. ``content insert`` adds a message (``address`` and ``body`` at least;
the box of the URI sets ``type``), ``content update`` marks it read, ``content delete``
removes it. ``pm clear com.android.providers.telephony`` restores the seed messages
(a few from the seed contacts, at fixed times). :meth:`SmsProvider.receive` is how a
message arrives (the emulator console's ``sms send``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from farm.sim.world.apps.base import Activity, App, register
from farm.sim.world.apps.provider import Cursor, Row, Value

PKG = "com.android.providers.telephony"
AUTHORITY = "sms"
#: Telephony.Sms.MESSAGE_TYPE_*: the path segment of each box
BOXES = {"inbox": 1, "sent": 2, "draft": 3, "outbox": 4, "failed": 5, "queued": 6}
COLUMNS = ["_id", "thread_id", "address", "person", "date", "date_sent", "protocol", "read",
           "status", "type", "reply_path_present", "subject", "body", "service_center",
           "locked", "sub_id", "error_code", "creator", "seen"]
SEED = (  # (address, body, type, minutes after 1 Nov 2026 00:00 UTC)
    ("+16505550101", "Are we still on for lunch tomorrow?", 1, 600),
    ("+16505550101", "Yes, 12:30 at the usual place.", 2, 612),
    ("+14155550103", "Your appointment is confirmed for Monday 9 AM.", 1, 1500),
    ("+12125550105", "Sent you the new logo drafts, let me know what you think.", 1, 2400),
)
EPOCH_MS = 1_793_491_200_000  # 1 Nov 2026 00:00 UTC


@register
class SmsProvider(App):
    package = PKG
    label = "Phone and Messaging Storage"
    apk_path = "/system/priv-app/TelephonyProvider/TelephonyProvider.apk"
    activities: ClassVar[dict[str, type[Activity]]] = {}
    authorities: ClassVar[tuple[str, ...]] = (AUTHORITY,)

    def reset(self) -> None:
        self.rows: list[Row] = []
        for address, body, box, minutes in SEED:
            self.add(address, body, box, EPOCH_MS + minutes * 60_000, read=box != 1)

    # ── data ─────────────────────────────────────────────────────────────────────────
    def _thread(self, address: str) -> int:
        """One conversation per address, numbered in order of first appearance."""
        threads: list[str] = []
        for r in self.rows:
            if r["address"] not in threads:
                threads.append(str(r["address"]))
        return threads.index(address) + 1 if address in threads else len(threads) + 1

    def add(self, address: str, body: str, box: int, date_ms: int, *, read: bool = False,
            creator: str = "com.google.android.apps.messaging") -> Row:
        row: Row = {"_id": max((int(r["_id"] or 0) for r in self.rows), default=0) + 1,
                    "thread_id": self._thread(address), "address": address, "person": None,
                    "date": date_ms, "date_sent": date_ms if box == 1 else 0, "protocol": 0,
                    "read": int(read), "status": -1, "type": box, "reply_path_present": 0,
                    "subject": None, "body": body, "service_center": None, "locked": 0,
                    "sub_id": 1, "error_code": 0, "creator": creator, "seen": int(read)}
        self.rows.append(row)
        return row

    def receive(self, address: str, body: str) -> Row:
        """An incoming SMS (unread, in the inbox, dated now)."""
        row = self.add(address, body, 1, int(self.host.wall_time() * 1000))
        self.host.data_changed()
        return row

    # ── provider ─────────────────────────────────────────────────────────────────────
    def _select(self, path: list[str]) -> list[Row] | None:
        rows = self.rows
        rest = path
        if rest and rest[0] in BOXES:
            rows = [r for r in rows if r["type"] == BOXES[rest[0]]]
            rest = rest[1:]
        if len(rest) > 1 or (rest and not rest[0].isdecimal()):
            return None
        if rest:
            rows = [r for r in rows if str(r["_id"]) == rest[0]]
        return rows

    def query(self, authority: str, path: list[str]) -> Cursor | None:
        if authority != AUTHORITY:
            return None
        rows = self._select(path)
        return None if rows is None else (list(COLUMNS), [dict(r) for r in rows])

    def insert(self, authority: str, path: list[str], values: dict[str, Value]) -> None:
        if authority != AUTHORITY or len(path) > 1 or (path and path[0] not in BOXES):
            raise LookupError(f"Unknown URL content://{authority}/{'/'.join(path)}")
        unknown = set(values) - set(COLUMNS)
        if unknown:
            raise ValueError(f"table sms has no column named {sorted(unknown)[0]}")
        box = BOXES[path[0]] if path else int(values.get("type") or 1)
        date = values.get("date")
        row = self.add(str(values.get("address") or ""), str(values.get("body") or ""), box,
                       int(date) if date is not None else int(self.host.wall_time() * 1000),
                       read=bool(values.get("read") or 0))
        row.update({k: v for k, v in values.items() if k not in ("_id", "thread_id")})
        self.host.data_changed()

    def update(self, authority: str, path: list[str], values: dict[str, Value],
               match: Callable[[Row], bool]) -> int | None:
        rows = self._select(path) if authority == AUTHORITY else None
        if rows is None:
            return None
        unknown = set(values) - set(COLUMNS)
        if unknown:
            raise ValueError(f"no such column: {sorted(unknown)[0]}")
        hits = [r for r in rows if match(r)]
        for r in hits:
            r.update({k: v for k, v in values.items() if k != "_id"})
        if hits:
            self.host.data_changed()
        return len(hits)

    def delete_where(self, authority: str, path: list[str],
                     match: Callable[[Row], bool]) -> int | None:
        rows = self._select(path) if authority == AUTHORITY else None
        if rows is None:
            return None
        ids = {r["_id"] for r in rows if match(r)}
        self.rows = [r for r in self.rows if r["_id"] not in ids]
        if ids:
            self.host.data_changed()
        return len(ids)

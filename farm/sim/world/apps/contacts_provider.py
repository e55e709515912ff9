"""Contacts Storage (com.android.providers.contacts): the contacts database.

As on Android, contacts belong to the provider, not to the Contacts app: ``pm clear
com.android.providers.contacts`` resets them (to the phone's fixed seed list), ``pm clear
com.google.android.contacts`` does not. Served as ``content://com.android.contacts/…``:
``contacts``, ``raw_contacts``, ``data``, ``data/phones``, ``data/emails`` (and ``/ID``).
The call log lives here too, as on Android (CallLogProvider): ``content://call_log/calls``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from farm.sim.world.apps.base import Activity, App, register
from farm.sim.world.apps.provider import Cursor, Row

PKG = "com.android.providers.contacts"
AUTHORITY = "com.android.contacts"
CALL_LOG = "call_log"
# CallLog.Calls.TYPE
INCOMING, OUTGOING, MISSED = 1, 2, 3
NAME = "vnd.android.cursor.item/name"
PHONE = "vnd.android.cursor.item/phone_v2"
EMAIL = "vnd.android.cursor.item/email_v2"
ORG = "vnd.android.cursor.item/organization"

CONTACT_COLUMNS = ["_id", "display_name", "display_name_alt", "sort_key", "lookup",
                   "has_phone_number", "starred", "times_contacted", "last_time_contacted",
                   "in_visible_group", "photo_id", "name_raw_contact_id"]
RAW_COLUMNS = ["_id", "contact_id", "account_name", "account_type", "deleted", "display_name",
               "display_name_alt", "starred", "version", "dirty"]
CALL_COLUMNS = ["_id", "number", "date", "duration", "type", "new", "name", "numbertype",
                "numberlabel", "countryiso", "is_read", "presentation", "phone_account_address"]
DATA_COLUMNS = ["_id", "raw_contact_id", "contact_id", "mimetype", "display_name", "data1",
                "data2", "data3", "data4", "is_primary", "is_super_primary"]

SEED = (
    ("Alice", "Johnson", "+1 650-555-0101", "alice.johnson@example.com", "Acme Corp"),
    ("Bob", "Smith", "+1 650-555-0102", "bob.smith@example.com", ""),
    ("Carol", "Martinez", "+1 415-555-0103", "", "City Hospital"),
    ("David", "Chen", "+1 408-555-0104", "david.chen@example.com", ""),
    ("Emma", "Wilson", "+1 212-555-0105", "emma.w@example.com", "Wilson Design"),
)


@dataclass
class Contact:
    id: int
    first: str = ""
    last: str = ""
    phone: str = ""
    email: str = ""
    company: str = ""
    starred: bool = False
    data_ids: dict[str, int] = field(default_factory=dict)  # mimetype → data row _id

    @property
    def display_name(self) -> str:
        return f"{self.first} {self.last}".strip() or self.company or self.phone or self.email

    @property
    def display_name_alt(self) -> str:
        if self.first and self.last:
            return f"{self.last}, {self.first}"
        return self.display_name


def normalize_phone(number: str) -> str | None:
    """E.164 form as ContactsProvider stores in data4 (US numbers without a country code)."""
    digits = re.sub(r"\D", "", number)
    if not digits:
        return None
    if number.strip().startswith("+"):
        return "+" + digits
    if len(digits) == 10:
        return "+1" + digits
    if len(digits) == 11 and digits.startswith("1"):
        return "+" + digits
    return None


@register
class ContactsProvider(App):
    package = PKG
    label = "Contacts Storage"
    apk_path = "/system/priv-app/ContactsProvider/ContactsProvider.apk"
    activities: ClassVar[dict[str, type[Activity]]] = {}
    authorities: ClassVar[tuple[str, ...]] = (AUTHORITY, CALL_LOG)

    def reset(self) -> None:
        self.contacts: list[Contact] = []
        self.next_id = 1
        self.next_data_id = 1
        for first, last, phone, email, company in SEED:
            self.save(None, first, last, phone, email, company)
        self.calls: list[Row] = []
        # a few calls with the seed contacts, at fixed times (1 Nov 2026, UTC)
        for i, (kind, duration) in enumerate(((INCOMING, 64), (OUTGOING, 181), (MISSED, 0))):
            self.add_call(SEED[i][2], kind, duration, 1_793_500_000_000 + i * 3_600_000)

    def add_call(self, number: str, call_type: int, duration_s: int, date_ms: int) -> Row:
        """A call log entry; its name is the contact's whose number it is."""
        who = next((c for c in self.contacts
                    if normalize_phone(c.phone) == normalize_phone(number)), None)
        row: Row = {"_id": (max((int(r["_id"] or 0) for r in self.calls), default=0) + 1),
                    "number": number, "date": date_ms, "duration": duration_s,
                    "type": call_type, "new": int(call_type == MISSED),
                    "name": who.display_name if who else None, "numbertype": 2 if who else 0,
                    "numberlabel": None, "countryiso": "US", "is_read": 0,
                    "presentation": 1, "phone_account_address": None}
        self.calls.append(row)
        return row

    # ── data ─────────────────────────────────────────────────────────────────────────
    def get(self, cid: int) -> Contact | None:
        return next((c for c in self.contacts if c.id == cid), None)

    def save(self, cid: int | None, first: str, last: str, phone: str, email: str,
             company: str = "") -> Contact:
        """Insert (``cid`` None) or update a contact; returns it."""
        c = self.get(cid) if cid is not None else None
        if c is None:
            c = Contact(self.next_id)
            self.next_id += 1
            self.contacts.append(c)
        c.first, c.last, c.phone, c.email, c.company = first, last, phone, email, company
        for mime, value in ((NAME, c.first or c.last), (ORG, c.company), (PHONE, c.phone),
                            (EMAIL, c.email)):
            if value and mime not in c.data_ids:
                c.data_ids[mime] = self.next_data_id
                self.next_data_id += 1
            elif not value:
                c.data_ids.pop(mime, None)
        return c

    def delete(self, cid: int) -> None:
        self.contacts = [c for c in self.contacts if c.id != cid]

    def sorted(self) -> list[Contact]:
        return sorted(self.contacts, key=lambda c: (c.display_name.lower(), c.id))

    # ── provider ─────────────────────────────────────────────────────────────────────
    def query(self, authority: str, path: list[str]) -> Cursor | None:
        if authority == CALL_LOG and path[:1] == ["calls"] and len(path) <= 2:
            rows = [r for r in self.calls if len(path) == 1 or str(r["_id"]) == path[1]]
            return list(CALL_COLUMNS), [dict(r) for r in rows]
        if authority != AUTHORITY or not path:
            return None
        table, rest = path[0], path[1:]
        if table == "contacts":
            cols, rows = CONTACT_COLUMNS, [self._contact_row(c) for c in self._by_id()]
        elif table == "raw_contacts":
            cols, rows = RAW_COLUMNS, [self._raw_row(c) for c in self._by_id()]
        elif table == "data":
            cols, rows = DATA_COLUMNS, self._data_rows()
            if rest and rest[0] in ("phones", "emails"):
                mime = PHONE if rest[0] == "phones" else EMAIL
                rows = [r for r in rows if r["mimetype"] == mime]
                rest = rest[1:]
        else:
            return None
        if len(rest) > 1:
            return None
        if rest:
            rows = [r for r in rows if str(r["_id"]) == rest[0]]
        return list(cols), rows

    def delete_where(self, authority: str, path: list[str],
                     match: Callable[[Row], bool]) -> int | None:
        """``content delete``: the rows of the URI that ``match`` are removed (a contact
        goes with its raw contact and data); the count, or None for a URI that cannot
        be deleted from."""
        cursor = self.query(authority, path)
        if cursor is None or (authority == AUTHORITY and path[0] == "data"):
            return None
        doomed = [r for r in cursor[1] if match(r)]
        ids = {r["_id"] for r in doomed}
        if authority == CALL_LOG:
            self.calls = [r for r in self.calls if r["_id"] not in ids]
        else:
            self.contacts = [c for c in self.contacts if c.id not in ids]
        if doomed:
            self.host.data_changed()
        return len(doomed)

    def _by_id(self) -> list[Contact]:
        return sorted(self.contacts, key=lambda c: c.id)

    def _contact_row(self, c: Contact) -> Row:
        return {"_id": c.id, "display_name": c.display_name,
                "display_name_alt": c.display_name_alt, "sort_key": c.display_name,
                "lookup": f"0r{c.id}-{c.display_name.replace(' ', '')[:24]}",
                "has_phone_number": int(bool(c.phone)), "starred": int(c.starred),
                "times_contacted": 0, "last_time_contacted": 0, "in_visible_group": 1,
                "photo_id": None, "name_raw_contact_id": c.id}

    def _raw_row(self, c: Contact) -> Row:
        return {"_id": c.id, "contact_id": c.id, "account_name": None, "account_type": None,
                "deleted": 0, "display_name": c.display_name,
                "display_name_alt": c.display_name_alt, "starred": int(c.starred),
                "version": 1, "dirty": 1}

    def _data_rows(self) -> list[Row]:
        out: list[Row] = []
        for c in self._by_id():
            for mime, did in sorted(c.data_ids.items(), key=lambda kv: kv[1]):
                row: Row = {"_id": did, "raw_contact_id": c.id, "contact_id": c.id,
                            "mimetype": mime, "display_name": c.display_name, "data1": None,
                            "data2": None, "data3": None, "data4": None, "is_primary": 0,
                            "is_super_primary": 0}
                if mime == NAME:
                    row.update(data1=c.display_name, data2=c.first or None,
                               data3=c.last or None)
                elif mime == PHONE:
                    row.update(data1=c.phone, data2=2, data4=normalize_phone(c.phone))
                elif mime == EMAIL:
                    row.update(data1=c.email, data2=1)
                else:
                    row.update(data1=c.company, data2=1)
                out.append(row)
        return out


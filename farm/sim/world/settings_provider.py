"""``content://settings/{system,secure,global}[/NAME]``: the phone's settings through the
settings provider, as android_world and other stacks read and write them with
``content query|insert|update|delete`` (columns ``_id``, ``name``, ``value``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from farm.sim.world.apps.provider import Cursor, Row, Value
from farm.sim.world.settings_store import NAMESPACES, SettingsStore

__all__ = ["AUTHORITY", "SettingsProvider"]

AUTHORITY = "settings"
COLUMNS = ["_id", "name", "value"]


class SettingsProvider:
    authorities: tuple[str, ...] = (AUTHORITY,)

    def __init__(self, store: SettingsStore) -> None:
        self.store = store

    def _namespace(self, path: list[str]) -> str | None:
        return path[0] if 1 <= len(path) <= 2 and path[0] in NAMESPACES else None

    def query(self, authority: str, path: list[str]) -> Cursor | None:
        ns = self._namespace(path)
        if ns is None:
            return None
        rows: list[Row] = [{"_id": i, "name": k, "value": v}
                           for i, (k, v) in enumerate(self.store.list(ns), 1)]
        if len(path) == 2:
            rows = [r for r in rows if r["name"] == path[1]]
        return list(COLUMNS), rows

    def insert(self, authority: str, path: list[str], values: Mapping[str, Value]) -> str:
        """A setting (``name``, ``value``) is stored, replacing an old value as the real
        provider's insert does; returns the new row's URI. ValueError: what is wrong."""
        ns = self._namespace(path)
        if ns is None or len(path) != 1:
            raise LookupError(f"Invalid URI: content://settings/{'/'.join(path)}")
        name = values.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("name must not be empty")
        bad = set(values) - {"name", "value"}
        if bad:
            raise ValueError(f"table {ns} has no column named {sorted(bad)[0]}")
        value = values.get("value")
        self.store.put(ns, name, "" if value is None else str(value))
        return f"content://settings/{ns}/{name}"

    def update(self, authority: str, path: list[str], values: Mapping[str, Value],
               match: Callable[[Row], bool]) -> int | None:
        """The matching rows get ``value`` (renaming is refused); the count, or None for
        a URI that is not a settings table."""
        cursor = self.query(authority, path)
        if cursor is None:
            return None
        bad = set(values) - {"value"}
        if bad:
            raise ValueError(f"cannot update column {sorted(bad)[0]} of a setting")
        ns, hits = path[0], [r for r in cursor[1] if match(r)]
        value = values.get("value")
        for r in hits:
            self.store.put(ns, str(r["name"]), "" if value is None else str(value))
        return len(hits)

    def delete_where(self, authority: str, path: list[str],
                     match: Callable[[Row], bool]) -> int | None:
        cursor = self.query(authority, path)
        if cursor is None:
            return None
        hits = [r for r in cursor[1] if match(r)]
        for r in hits:
            self.store.delete(path[0], str(r["name"]))
        return len(hits)

"""Implicit intent resolution: the package manager's part of ``am start -a …``.

Apps declare ``IntentFilter``s (``App.intent_filters``) the way a manifest does; the
world asks ``resolve`` which activities match an intent. Matching follows
``IntentFilter.match`` for what the shell can express: the action must be one the
filter lists, every category of the intent must be in the filter (``startActivity``
adds ``DEFAULT``, so only filters with it match), and data must match the filter's
schemes, authorities and MIME types. The match value is the one ``ResolveInfo``
prints (``MATCH_CATEGORY_EMPTY``/``SCHEME``/``HOST`` plus ``MATCH_ADJUSTMENT_NORMAL``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

ACTION_MAIN = "android.intent.action.MAIN"
ACTION_VIEW = "android.intent.action.VIEW"
CATEGORY_DEFAULT = "android.intent.category.DEFAULT"
CATEGORY_BROWSABLE = "android.intent.category.BROWSABLE"
CATEGORY_HOME = "android.intent.category.HOME"
CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"

# IntentFilter.MATCH_CATEGORY_* and MATCH_ADJUSTMENT_NORMAL
MATCH_EMPTY = 0x100000
MATCH_SCHEME = 0x200000
MATCH_HOST = 0x300000
MATCH_TYPE = 0x600000
MATCH_ADJUSTMENT_NORMAL = 0x8000


@dataclass(frozen=True, slots=True)
class IntentQuery:
    """The parts of an intent that resolution looks at."""

    action: str = ""
    categories: tuple[str, ...] = ()
    data: str = ""
    mime: str = ""
    package: str = ""

    @property
    def scheme(self) -> str:
        head, colon, _ = self.data.partition(":")
        return head.lower() if colon and head and "/" not in head else ""


@dataclass(frozen=True, slots=True)
class IntentFilter:
    """One ``<intent-filter>`` of one activity (``activity`` fully qualified)."""

    activity: str
    actions: tuple[str, ...]
    categories: tuple[str, ...] = (CATEGORY_DEFAULT,)
    schemes: tuple[str, ...] = ()  # empty: only intents without data match
    authorities: tuple[str, ...] = ()  # for content: URIs; empty: any
    mimes: tuple[str, ...] = ()
    priority: int = 0
    path: str = ""  # a regex the URI's path must match in full (pathPattern); "" = any

    def match(self, q: IntentQuery) -> int:
        """The match value (> 0) or 0 when the intent does not match this filter."""
        if q.action and q.action not in self.actions:
            return 0
        if not q.action and not self.actions:
            return 0
        if any(c not in self.categories for c in (*q.categories, CATEGORY_DEFAULT)):
            return 0
        if q.mime:
            if not self.mimes or not any(_mime_match(m, q.mime) for m in self.mimes):
                return 0
        elif self.mimes and not (q.data and self.schemes):
            return 0
        if not q.data:
            if self.schemes:
                return 0
            return (MATCH_TYPE if q.mime else MATCH_EMPTY) + MATCH_ADJUSTMENT_NORMAL
        scheme = q.scheme
        if not self.schemes or scheme not in self.schemes:
            return 0
        if self.authorities:
            parts = urlsplit(q.data)
            host = (parts.hostname or "").lower()
            if host not in self.authorities:
                return 0
            if self.path and re.fullmatch(self.path, parts.path) is None:
                return 0
            return MATCH_HOST + MATCH_ADJUSTMENT_NORMAL
        return (MATCH_TYPE if q.mime else MATCH_SCHEME) + MATCH_ADJUSTMENT_NORMAL


def _mime_match(pattern: str, mime: str) -> bool:
    if pattern == mime or pattern == "*/*":
        return True
    head, _, tail = pattern.partition("/")
    return tail == "*" and mime.partition("/")[0] == head


@dataclass(frozen=True, slots=True)
class ResolveInfo:
    """One activity an intent resolves to, as ``cmd package resolve-activity`` prints it."""

    package: str
    activity: str
    match: int
    priority: int = 0
    is_default: bool = True
    label: str = ""
    filter: IntentFilter = field(compare=False, default=IntentFilter("", ()))

    def brief(self) -> str:
        return (f"priority={self.priority} preferredOrder=0 match=0x{self.match:x} "
                f"specificIndex=-1 isDefault={str(self.is_default).lower()}\n"
                f"{self.package}/{self.activity}\n")


def resolve(filters: list[tuple[str, str, IntentFilter]], q: IntentQuery) -> list[ResolveInfo]:
    """Every matching activity, best first. ``filters`` holds (package, label, filter)."""
    found: dict[tuple[str, str], ResolveInfo] = {}
    for package, label, f in filters:
        if q.package and package != q.package:
            continue
        m = f.match(q)
        if not m:
            continue
        key = (package, f.activity)
        old = found.get(key)
        if old is None or (f.priority, m) > (old.priority, old.match):
            found[key] = ResolveInfo(package, f.activity, m, f.priority,
                                     CATEGORY_DEFAULT in f.categories, label, f)
    return sorted(found.values(), key=lambda r: (-r.priority, -r.match))

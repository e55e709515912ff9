"""Broker URLs as they may be shown: the one place that renders a URL for a log line, a
progress line or an error, with any password replaced by ``****``."""

from __future__ import annotations

import re

__all__ = ["MASK", "mask_url"]

MASK = "****"
# [scheme://][user[:password]@]host…: the credentials end at the netloc's last "@"
_NETLOC = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<netloc>[^/?#]*)(?P<rest>.*)$",
                     re.DOTALL)


def mask_url(url: str) -> str:
    """``mqtt://user:secret@host:1883`` → ``mqtt://user:****@host:1883``; a URL without a
    password is returned unchanged. Plain string work, so it never raises, even on a URL
    too broken for the parser (those are the ones that end up in error messages)."""
    m = _NETLOC.match(url)
    if m is None:  # pragma: no cover - the pattern matches every string
        return url
    cred, at, host = m["netloc"].rpartition("@")
    if not at or ":" not in cred:
        return url
    user = cred.split(":", 1)[0]
    return f"{m['scheme'] or ''}{user}:{MASK}@{host}{m['rest']}"

"""Content providers of the bundled apps, for the shell's ``content query``.

An app that owns a provider lists its authorities in ``authorities`` and implements
``query``: given the authority and the URI path segments it returns the cursor's column
names (in the provider's order) and rows, or None for a URI it does not know. The shell
finds the app through the world (``world.app(package)``) and does projection, selection
and sorting on top, like SQLiteQueryBuilder would.
"""

from __future__ import annotations

Value = str | int | None
Row = dict[str, Value]
Cursor = tuple[list[str], list[Row]]

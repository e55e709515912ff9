"""``content query|insert|update|delete``: a content provider, printed like AOSP's
``content`` tool.

``Row: N col=value, col=value`` per row (NULL for nulls), ``No result found.`` when the
cursor is empty; insert, update and delete print nothing. Providers are apps with an
``authorities`` attribute and a ``query`` method (see ``farm.sim.world.apps.provider``),
found through ``world.app(package)``, and the settings provider
(``content://settings/…``, farm.sim.world.settings_provider). ``--bind COLUMN:TYPE:VALUE``
(TYPE: s string, i/l integer, f/d real, b boolean, n null) gives insert and update
their values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast
from urllib.parse import unquote, urlsplit

from farm.sim.shell.commands.registry import command
from farm.sim.shell.commands.sqlwhere import Row, SqlError, compile_where, sort_rows
from farm.sim.shell.context import Proc
from farm.sim.world.apps.provider import Value
from farm.sim.world.settings_provider import AUTHORITY as SETTINGS
from farm.sim.world.settings_provider import SettingsProvider

Cursor = tuple[list[str], list[Row]]

USAGE = """usage: adb shell content [subcommand] [options]

usage: adb shell content query --uri <URI> [--user <USER_ID>] [--projection <PROJECTION>] \
[--where <WHERE>] [--sort <SORT_ORDER>]
  <PROJECTION> is a list of colon separated column names and is formatted:
  <COLUMN_NAME>[:<COLUMN_NAME>...]
  <SORT_ORDER> is the order in which rows in the result should be sorted.
  Example:
  # Select "name" and "value" columns from secure settings where "name" is equal to "new_setting" \
and sort the result by name in ascending order.
  adb shell content query --uri content://settings/secure --projection name:value \
--where "name='new_setting'" --sort "name ASC"
"""


class _Provider(Protocol):
    authorities: tuple[str, ...]

    def query(self, authority: str, path: list[str]) -> Cursor | None: ...


class _Deletable(Protocol):
    def delete_where(self, authority: str, path: list[str],
                     match: Callable[[Row], bool]) -> int | None: ...


def find_provider(p: Proc, authority: str) -> _Provider | None:
    """The installed app serving ``authority`` (its ``query`` and maybe ``delete_where``),
    or the settings provider."""
    world = p.phone.world
    if authority == SETTINGS and hasattr(world, "store"):
        return SettingsProvider(world.store)
    app_of = getattr(world, "app", None)
    if app_of is None:
        return None
    for info in world.packages():
        app = app_of(info.name)
        if authority in getattr(app, "authorities", ()) and hasattr(app, "query"):
            return cast(_Provider, app)
    return None


def _fmt(v: object) -> str:
    return "NULL" if v is None else str(v)


def _fail(p: Proc, authority: str, exc: str) -> int:
    p.error(f"Error while accessing provider:{authority}\n{exc}\n"
            "\tat com.android.commands.content.Content$Command.execute(Content.java:522)\n"
            "\tat com.android.commands.content.Content.main(Content.java:735)\n")
    return 1


@command("content")
async def content(p: Proc) -> int:
    args = p.args
    if not args or args[0] in ("help", "-h", "--help"):
        p.write(USAGE)
        return 0
    verb = args[0]
    opts: dict[str, str] = {}
    binds: list[str] = []
    it = iter(args[1:])
    for a in it:
        if a == "--bind":
            binds.append(next(it, ""))
        elif a in ("--uri", "--user", "--projection", "--where", "--sort", "--extra",
                   "--method", "--arg"):
            opts[a] = next(it, "")
        else:
            p.error(f"Error: Unsupported argument: {a}\n{USAGE}")
            return 1
    if verb not in ("query", "delete", "insert", "update"):
        p.error(f"Error: content {verb} is not supported by this device\n")
        return 1
    uri = opts.get("--uri", "")
    if not uri:
        p.error(f"Error: Content provider URI not specified\n{USAGE}")
        return 1
    parts = urlsplit(uri)
    authority = parts.netloc
    if parts.scheme != "content" or not authority:
        return _fail(p, authority or uri,
                     f"java.lang.IllegalStateException: Could not find provider: {uri}")
    provider = find_provider(p, authority)
    if provider is None:
        return _fail(p, authority, "java.lang.IllegalStateException: Could not find provider: "
                     f"{authority}")
    path = [unquote(s) for s in parts.path.split("/") if s]
    if verb == "delete":
        return _delete(p, provider, authority, path, uri, opts.get("--where", ""))
    if verb in ("insert", "update"):
        try:
            values = dict(_binding(b) for b in binds)
        except ValueError as e:
            p.error(f"Error: {e}\n")
            return 1
        if not values:
            p.error(f"Error: Bindings not specified\n{USAGE}")
            return 1
        return _write(p, provider, verb, authority, path, uri, values, opts.get("--where", ""))
    cursor = provider.query(authority, path)
    if cursor is None:
        return _fail(p, authority, f"java.lang.IllegalArgumentException: Unknown URL {uri}")
    columns, rows = cursor
    try:
        keep = compile_where(opts.get("--where", ""), columns)
        rows = [r for r in rows if keep(r)]
        if opts.get("--sort"):
            rows = sort_rows(rows, opts["--sort"], columns)
        shown = columns
        if opts.get("--projection"):
            shown = [c for c in opts["--projection"].split(":") if c]
            bad = [c for c in shown if c not in columns]
            if bad:
                raise SqlError(f"no such column: {bad[0]}")
    except SqlError as e:
        return _fail(p, authority, f"android.database.sqlite.SQLiteException: {e} (code 1 "
                     "SQLITE_ERROR)")
    if not rows:
        p.write("No result found.\n")
        return 0
    out = []
    for i, r in enumerate(rows):
        out.append(f"Row: {i} " + ", ".join(f"{c}={_fmt(r.get(c))}" for c in shown) + "\n")
    p.write("".join(out))
    return 0


def _delete(p: Proc, provider: _Provider, authority: str, path: list[str], uri: str,
            where: str) -> int:
    """Prints nothing on success, as the real tool does."""
    cursor = provider.query(authority, path)
    deleter = getattr(provider, "delete_where", None)
    if cursor is None or deleter is None:
        return _fail(p, authority, f"java.lang.IllegalArgumentException: Unknown URL {uri}")
    try:
        match = compile_where(where, cursor[0])
    except SqlError as e:
        return _fail(p, authority, f"android.database.sqlite.SQLiteException: {e} (code 1 "
                     "SQLITE_ERROR)")
    if cast(_Deletable, provider).delete_where(authority, path, match) is None:
        return _fail(p, authority, f"java.lang.UnsupportedOperationException: Cannot delete "
                     f"that URL: {uri}")
    return 0


def _binding(b: str) -> tuple[str, Value]:
    """``COLUMN:TYPE:VALUE``, as the real tool parses ``--bind``."""
    column, _, rest = b.partition(":")
    kind, _, raw = rest.partition(":")
    if not column or not kind:
        raise ValueError(f"Invalid binding: {b}")
    try:
        if kind == "s":
            return column, raw
        if kind in ("i", "l"):
            return column, int(raw)
        if kind in ("f", "d"):
            return column, str(float(raw))
        if kind == "b":
            return column, int(raw.lower() == "true")
        if kind == "n":
            return column, None
    except ValueError:
        raise ValueError(f"Invalid binding value for {column}: {raw!r}") from None
    raise ValueError(f"Invalid binding type: {kind}")


def _write(p: Proc, provider: _Provider, verb: str, authority: str, path: list[str],
           uri: str, values: dict[str, Value], where: str) -> int:
    fn = getattr(provider, verb, None)
    if fn is None:
        return _fail(p, authority, f"java.lang.UnsupportedOperationException: {verb} is not "
                     f"supported for {uri}")
    try:
        if verb == "insert":
            fn(authority, path, values)
            return 0
        cursor = provider.query(authority, path)
        match = compile_where(where, cursor[0] if cursor else [])
        if fn(authority, path, values, match) is None:
            return _fail(p, authority, f"java.lang.IllegalArgumentException: Unknown URL {uri}")
    except LookupError as e:
        return _fail(p, authority, f"java.lang.IllegalArgumentException: {e}")
    except (SqlError, ValueError) as e:
        return _fail(p, authority, f"android.database.sqlite.SQLiteException: {e} (code 1 "
                     "SQLITE_ERROR)")
    return 0

"""``sqlite3 DB [SQL]``: the sim apps' databases, queried by SQLite itself.

Evaluators (android_world's among them) read task success straight from an app's
database as root. The sim keeps that data in its providers, so each known database path
opens as a fresh in-memory SQLite database holding the provider's current rows under
Android's table and column names, and the SQL runs there: any query SQLite accepts
works. The snapshot is read-only: writes are refused with SQLite's own error, never
silently lost. Output is the CLI's list mode (``a|b``, NULL empty), ``-header``,
``-csv`` and ``-separator`` change it; ``.tables`` and ``.schema`` answer as the CLI does."""

from __future__ import annotations

import csv
import io
import sqlite3
from collections.abc import Sequence

from farm.sim.shell.commands.content import find_provider
from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

VERSION = "3.32.2"  # the SQLite of Android 11-12
_CONTACTS = "/data/data/com.android.providers.contacts/databases/"
#: database path → (provider authority, table → URI path)
DATABASES: dict[str, tuple[str, dict[str, list[str]]]] = {
    _CONTACTS + "contacts2.db": ("com.android.contacts", {
        "raw_contacts": ["raw_contacts"], "contacts": ["contacts"], "data": ["data"]}),
    _CONTACTS + "calllog.db": ("call_log", {"calls": ["calls"]}),
    "/data/data/com.android.providers.telephony/databases/mmssms.db": ("sms", {"sms": []}),
}


def _snapshot(p: Proc, path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    known = DATABASES.get(path)
    provider = find_provider(p, known[0]) if known else None
    if known and provider is not None:
        for table, uri in known[1].items():
            cursor = provider.query(known[0], uri)
            if cursor is None:
                continue
            cols, rows = cursor
            quoted = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
            conn.execute(f"CREATE TABLE {table} ({quoted})")
            conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})",
                             [[r.get(c) for c in cols] for r in rows])
    conn.commit()
    conn.execute("PRAGMA query_only = ON")
    return conn


def _statements(sql: str) -> list[str]:
    """Complete statements in order (a ';' inside a string literal does not split)."""
    out, buf = [], ""
    for ch in sql:
        buf += ch
        if ch == ";" and sqlite3.complete_statement(buf):
            out.append(buf)
            buf = ""
    if buf.strip():
        out.append(buf)
    return out


class _Printer:
    def __init__(self, mode: str, separator: str, header: bool) -> None:
        self.mode, self.separator, self.header = mode, separator, header

    def rows(self, names: Sequence[str], rows: list[tuple[object, ...]]) -> str:
        def cell(v: object) -> str:
            return "" if v is None else str(v)

        if self.mode == "csv":
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            if self.header:
                w.writerow(names)
            w.writerows([[cell(v) for v in r] for r in rows])
            return buf.getvalue()
        lines = [self.separator.join(names)] if self.header and rows else []
        lines += [self.separator.join(cell(v) for v in r) for r in rows]
        return "".join(line + "\n" for line in lines)


def _dot(conn: sqlite3.Connection, line: str) -> tuple[str, str]:
    """(output, error) of a dot-command."""
    words = line.split()
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    if words[0] == ".tables":
        return ("  ".join(names) + "\n" if names else ""), ""
    if words[0] == ".schema":
        want = words[1:] or names
        sql = [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type='table' ORDER BY name") if r[0]]
        return "".join(s + ";\n" for s in sql if any(f" {w} " in s + " " for w in want)), ""
    return "", f'Error: unknown command or invalid arguments:  "{words[0][1:]}". ' \
               'Enter ".help" for help\n'


def _run(p: Proc, conn: sqlite3.Connection, sql: str, printer: _Printer) -> int:
    """Dot-commands on lines of their own, SQL everywhere else, in order; the first
    error ends the run with status 1, as the CLI does with SQL given on its command line."""
    pending = ""

    def flush() -> bool:
        nonlocal pending
        statements, pending = _statements(pending), ""
        for stmt in statements:
            try:
                cur = conn.execute(stmt)
            except sqlite3.Error as e:
                p.error(f"Error: {e}\n")
                return False
            names = [d[0] for d in cur.description or ()]
            if names:
                p.write(printer.rows(names, cur.fetchall()))
        return True

    for line in sql.splitlines(keepends=True):
        if not pending.strip() and line.lstrip().startswith("."):
            out, err = _dot(conn, line.strip())
            p.write(out)
            if err:
                p.error(err)
                return 1
            continue
        pending += line
    return 0 if flush() else 1


USAGE = """Usage: sqlite3 [OPTIONS] FILENAME [SQL]
FILENAME is the name of an SQLite database. A new database is created
if the file does not previously exist.
OPTIONS include:
   -csv                 set output mode to 'csv'
   -header              turn headers on
   -noheader            turn headers off
   -separator SEP       set output column separator. Default: '|'
   -version             show SQLite version
"""


@command("sqlite3")
async def sqlite3_(p: Proc) -> int:
    mode, separator, header = "list", "|", False
    rest: list[str] = []
    args = list(p.args)
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and not rest:
            if a in ("-csv", "--csv"):
                mode, separator = "csv", ","
            elif a in ("-header", "--header"):
                header = True
            elif a in ("-noheader", "--noheader"):
                header = False
            elif a in ("-separator", "--separator") and i + 1 < len(args):
                i += 1
                separator = args[i]
            elif a in ("-version", "--version"):
                p.write(VERSION + "\n")
                return 0
            elif a in ("-help", "--help"):
                p.error(USAGE)
                return 0
            else:
                p.error(f"sqlite3: Error: unknown option: {a}\nUse -help for a list of "
                        "options.\n")
                return 1
        else:
            rest.append(a)
        i += 1
    if not rest:
        p.error("sqlite3: no database given (interactive use needs a terminal)\n")
        return 1
    path = p.path(rest[0])
    sql = " ".join(rest[1:]) if len(rest) > 1 else p.stdin.decode("utf-8", "replace")
    conn = _snapshot(p, path)
    try:
        return _run(p, conn, sql, _Printer(mode, separator, header))
    finally:
        conn.close()

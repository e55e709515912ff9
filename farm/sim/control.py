"""The sim service's control channel: one JSON line in, one JSON line out, on loopback.

Every connection gets a reply, also for input that is not a request: oversize lines
(over :data:`MAX_REQUEST_BYTES`), JSON nested deeper than a request ever is, bad JSON or
UTF-8, a wrong token, a silent client, or an op that fails. The token is compared in
constant time, and the state file holding it is private (0600) from the moment it is
created, never briefly readable by other users."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_REQUEST_BYTES", "answer", "handle_connection", "write_private"]

MAX_REQUEST_BYTES = 64 * 1024  # requests are ~100 bytes; this is the StreamReader limit
MAX_DEPTH = 4  # a request is a flat object (fault values at most one level more)
READ_TIMEOUT_S = 10.0
_DISCARD_CAP = 16 * 1024 * 1024  # read past an oversize line this far, so the reply lands

Dispatch = Callable[[dict[str, Any]], dict[str, Any]]


def _depth_over(obj: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        cur, d = stack.pop()
        if isinstance(cur, dict | list):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in (cur.values() if isinstance(cur, dict) else cur))
    return False


def _token_ok(given: Any, token: str) -> bool:
    if not isinstance(given, str):
        return False
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


def answer(line: bytes, token: str, dispatch: Dispatch) -> dict[str, Any]:
    """The reply to one request line (never raises)."""
    try:
        req = json.loads(line or b"{}")
    except RecursionError:
        return {"ok": False, "error": "bad request: nested too deeply"}
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        return {"ok": False, "error": f"bad request: {exc}"}
    if not isinstance(req, dict):
        return {"ok": False, "error": "bad request: not a JSON object"}
    if _depth_over(req, MAX_DEPTH):
        return {"ok": False, "error": "bad request: nested too deeply"}
    if not _token_ok(req.get("token"), token):
        return {"ok": False, "error": "bad token"}
    try:
        return dispatch(req)
    except Exception as exc:  # a request the op cannot take still gets its answer
        return {"ok": False, "error": f"{req.get('op')!r} failed: {type(exc).__name__}: {exc}"}


async def _discard_line(reader: asyncio.StreamReader) -> None:
    """Read (and drop) the rest of an oversize line, so closing after the reply does not
    reset the connection before the client has read it."""
    seen = 0
    while seen < _DISCARD_CAP:
        chunk = await reader.read(65536)
        if not chunk or b"\n" in chunk:
            return
        seen += len(chunk)


async def handle_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            token: str, dispatch: Dispatch) -> None:
    """Serve one connection (use with ``asyncio.start_server(..., limit=MAX_REQUEST_BYTES)``)."""
    try:
        try:
            line = await asyncio.wait_for(reader.readuntil(b"\n"), READ_TIMEOUT_S)
            reply = answer(line, token, dispatch)
        except asyncio.IncompleteReadError as exc:  # EOF before a newline: what came
            reply = answer(exc.partial, token, dispatch)
        except asyncio.LimitOverrunError:
            with contextlib.suppress(TimeoutError, ConnectionError):
                await asyncio.wait_for(_discard_line(reader), READ_TIMEOUT_S)
            reply = {"ok": False,
                     "error": f"bad request: longer than {MAX_REQUEST_BYTES} bytes"}
        except TimeoutError:
            reply = {"ok": False, "error": f"bad request: none within {READ_TIMEOUT_S:g} s"}
        except ConnectionError:
            return
        writer.write(json.dumps(reply).encode() + b"\n")
        with contextlib.suppress(ConnectionError):
            await writer.drain()
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600 from creation (``os.open`` with the
    mode, a fresh temp file: no window in which another user could read it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

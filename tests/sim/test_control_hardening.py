"""The sim service's control channel answers every connection (oversize, nested, bad
JSON, wrong or non-string token, a failing op) and its token file is 0600 from creation.
Against the real service (``farm.sim.service.serve``) on a real loopback socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from farm.broker import free_port
from farm.sim import control, service


@pytest.fixture
async def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> AsyncIterator[dict[str, Any]]:
    monkeypatch.setenv("DISTRL_STATE_DIR", str(tmp_path / "state"))
    created: list[tuple[str, int, int]] = []  # (path, mode at creation, size at creation)
    real_open = os.open

    def spy_open(path: Any, flags: int, mode: int = 0o777, *a: Any, **k: Any) -> int:
        fd = real_open(path, flags, mode, *a, **k)
        if flags & os.O_CREAT:
            st = os.fstat(fd)
            created.append((str(path), stat.S_IMODE(st.st_mode), st.st_size))
        return fd

    monkeypatch.setattr(os, "open", spy_open)
    old_umask = os.umask(0)  # a permissive umask must not widen the token file
    task = asyncio.create_task(service.serve(service.ServeOptions(
        count=1, base_port=free_port(), name="hard")))
    path = service.state_file("hard")
    try:
        async with asyncio.timeout(60):
            while not path.exists():  # the service writes it once it serves
                assert not task.done(), task
                await asyncio.sleep(0.02)
        state = json.loads(path.read_text())
        yield {"state": state, "path": path, "created": created}
    finally:
        os.umask(old_umask)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _ask(port: int, payload: bytes, *, shut: bool = False) -> dict[str, Any]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(payload)
        if shut:
            s.shutdown(socket.SHUT_WR)
        data = s.makefile("rb").readline()
    assert data, f"no reply to {payload[:60]!r}"
    reply: dict[str, Any] = json.loads(data)
    return reply


async def test_every_request_gets_a_reply(running: dict[str, Any]) -> None:
    port, token = running["state"]["control_port"], running["state"]["token"]

    def ask(payload: bytes, shut: bool = False) -> dict[str, Any]:
        return _ask(port, payload, shut=shut)

    def req(**kw: Any) -> bytes:
        return json.dumps(kw).encode() + b"\n"

    ok = await asyncio.to_thread(ask, req(token=token, op="status"))
    assert ok["ok"] and len(ok["phones"]) == 1
    cases: list[tuple[bytes, bool, str]] = [
        (b"x" * (control.MAX_REQUEST_BYTES * 3) + b"\n", False, "longer than"),
        (b"x" * (control.MAX_REQUEST_BYTES * 2), True, "longer than"),  # no newline, EOF
        (b"[" * 30_000 + b"]" * 30_000 + b"\n", False, "nested too deeply"),
        (json.dumps({"token": token, "op": "status",
                     "x": [[[[[[1]]]]]]}).encode() + b"\n", False, "nested too deeply"),
        (b"{not json\n", False, "bad request"),
        (b"\xff\xfe\n", False, "bad request"),
        (b"[1, 2]\n", False, "not a JSON object"),
        (req(token="0" * 32, op="status"), False, "bad token"),
        (req(token=12345, op="status"), False, "bad token"),
        (req(token=["x"], op="down"), False, "bad token"),
        (req(token=token, op="fault", phone=ok["phones"][0]["serial"], kind="hang",
             seconds="soon"), False, "failed"),
        (req(token=token, op="nope"), False, "unknown op"),
    ]
    for payload, shut, why in cases:
        reply = await asyncio.to_thread(ask, payload, shut)
        assert reply["ok"] is False and why in reply["error"], (payload[:40], reply)
    # still serving after all that
    assert (await asyncio.to_thread(ask, req(token=token, op="status")))["ok"]


async def test_silent_client_gets_a_reply(running: dict[str, Any],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(control, "READ_TIMEOUT_S", 0.5)
    port = running["state"]["control_port"]
    reply = await asyncio.to_thread(_ask, port, b"")
    assert reply["ok"] is False and "none within" in reply["error"]


async def test_token_file_is_private_from_creation(running: dict[str, Any]) -> None:
    path: Path = running["path"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    mine = [c for c in running["created"] if Path(c[0]).parent == path.parent]
    assert mine, "the state file was not created through os.open with a mode"
    for name, mode, size in mine:
        assert mode == 0o600 and size == 0, (name, oct(mode))
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]

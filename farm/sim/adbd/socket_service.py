"""Socket services: ``tcp:PORT``, ``localabstract:NAME`` (and friends) and ``reverse:``.

``tcp:``/``local*:`` connect to a socket on the phone. adbd answers an OPEN it
cannot connect with a bare CLSE (no OKAY), which the adb server reports to its
client as ``FAIL closed``; that is what uiautomator2, Appium or scrcpy clients see
on a phone whose on-device server is not running, and what they see here unless a
sim-side service listens on that name (``SimPhone.listen``): then the stream is
connected to it.

``reverse:`` is adbd's side of ``adb reverse``: it keeps the list of reverse
forwards of one host connection and answers as ``handle_forward_request`` does on
the device (``OKAY``; ``FAIL`` + hex length + message; the list as a hex-length
string of ``<serial> <local> <remote>`` lines). Connections made to a reverse
listener from inside the phone are not simulated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from farm.sim.adbd.stream import Stream
from farm.sim.spec import AdbdBackend

SocketHandler = Callable[[Stream], Awaitable[None]]
SOCKET_KINDS = ("tcp", "localabstract", "localreserved", "localfilesystem", "local", "dev",
                "vsock", "acceptfd")


class ReverseTable(Protocol):
    """What the reverse service needs from the connection it runs on."""

    @property
    def reverse(self) -> dict[str, str]: ...

    @property
    def device_serial(self) -> str: ...


def socket_spec(service: str) -> str | None:
    """The normalised socket name of a ``tcp:``/``local…:`` service, or None.

    ``tcp:HOST:PORT`` names a port on another host (adbd connects out); only
    ``localhost``/``127.0.0.1`` stay on the phone.
    """
    kind, colon, rest = service.partition(":")
    if not colon or kind not in SOCKET_KINDS or not rest:
        return None
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if host not in ("", "localhost", "127.0.0.1"):
            return f"tcp:{host}:{port}"
        if not port.isdecimal() or not 0 < int(port) < 65536:
            return None
        return f"tcp:{int(port)}"
    if kind == "local":
        kind = "localreserved"
    return f"{kind}:{rest}"


def listener_for(service: str, backend: AdbdBackend) -> SocketHandler | None:
    """The sim-side service listening on ``service``'s socket, if any."""
    name = socket_spec(service)
    listeners: Mapping[str, SocketHandler] | None = getattr(backend, "listeners", None)
    if name is None or not listeners:
        return None
    return listeners.get(name)


async def socket_service(handler: SocketHandler, stream: Stream,
                         backend: AdbdBackend) -> None:
    await handler(stream)


def _protocol_string(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):04x}".encode() + data


def _fail(message: str) -> bytes:
    return b"FAIL" + _protocol_string(message)


def _valid_local(spec: str) -> bool:
    kind, colon, rest = spec.partition(":")
    if not colon or not rest:
        return False
    if kind == "tcp":
        return rest.isdecimal() and 0 <= int(rest) < 65536
    return kind in ("localabstract", "localreserved", "localfilesystem", "local", "jdwp", "vsock")


def reverse_reply(request: str, table: ReverseTable) -> bytes:
    """Apply one ``reverse:`` request to ``table``; the bytes adbd writes back."""
    rev = table.reverse
    if request == "list-forward":
        return _protocol_string("".join(f"{table.device_serial} {local} {remote}\n"
                                        for local, remote in rev.items()))
    if request == "killforward-all":
        rev.clear()
        return b"OKAY"
    if request.startswith("killforward:"):
        local = request[len("killforward:"):]
        if not local or ";" in local:
            return _fail(f"bad killforward: {local}")
        if local not in rev:
            return _fail(f"listener '{local}' not found")
        del rev[local]
        return b"OKAY"
    if request.startswith("forward:"):
        rest = request[len("forward:"):]
        no_rebind = rest.startswith("norebind:")
        if no_rebind:
            rest = rest[len("norebind:"):]
        pieces = rest.split(";")
        if len(pieces) != 2 or not pieces[0] or not pieces[1] or pieces[1][0] == "*":
            return _fail(f"bad forward: {rest}")
        local, remote = pieces
        if not _valid_local(local):
            return _fail(f"cannot bind listener: unknown socket specification '{local}'")
        if no_rebind and local in rev:
            return _fail("cannot rebind existing socket")
        resolved = b""
        if local == "tcp:0":  # the kernel picks a port; it is reported back
            port = 40000 + len(rev)
            while f"tcp:{port}" in rev:
                port += 1
            local = f"tcp:{port}"
            resolved = _protocol_string(str(port))
        rev[local] = remote
        return b"OKAY" + resolved
    return _fail(f"unknown reverse request: {request}")


async def reverse_service(request: str, stream: Stream, backend: AdbdBackend) -> None:
    stream.discard_input = True
    await stream.write((reverse_reply(request, stream.link),))

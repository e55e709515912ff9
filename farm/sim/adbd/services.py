"""Which handler serves an OPENed service name; the small one-shot services live here.

Handlers run as their own task with the stream already acknowledged (OKAY sent);
the connection sends CLSE when the handler returns.
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from functools import partial

from farm.sim.adbd.shell_service import exec_service, shell_service
from farm.sim.adbd.socket_service import (
    SOCKET_KINDS,
    listener_for,
    reverse_service,
    socket_service,
)
from farm.sim.adbd.stream import Stream
from farm.sim.adbd.sync_service import sync_service
from farm.sim.spec import AdbdBackend

Handler = Callable[[Stream, AdbdBackend], Awaitable[None]]

# framebuffer_service.cpp, DDMS_RAWIMAGE_VERSION 2, RGBA_8888: version, bpp, colorSpace,
# size, width, height, then offset/length for red, blue, green, alpha.
FRAMEBUFFER_HEADER = struct.Struct("<14I")


async def reply_text(text: str, stream: Stream, backend: AdbdBackend) -> None:
    stream.discard_input = True
    await stream.write((text.encode(),))


async def reply_nothing(stream: Stream, backend: AdbdBackend) -> None:
    stream.discard_input = True


async def framebuffer_service(stream: Stream, backend: AdbdBackend) -> None:
    stream.discard_input = True
    width, height, pixels = backend.framebuffer()
    size = memoryview(pixels).nbytes
    header = FRAMEBUFFER_HEADER.pack(2, 32, 1, size, width, height, 0, 8, 16, 8, 8, 8, 24, 8)
    await stream.write((header, pixels))


def resolve_service(service: str, backend: AdbdBackend | None = None) -> Handler | None:
    """The handler for an OPEN payload (trailing NULs already stripped), or None (the
    connection then refuses the OPEN with a bare CLSE, as adbd does).

    Socket services (``tcp:``, ``localabstract:`` …) resolve only when a sim-side
    service listens there (``backend.listeners``).
    """
    name, colon, rest = service.partition(":")
    if not colon:
        return partial(reply_text, "done") if service == "reconnect" else None
    if name == "shell" or name.startswith("shell,"):
        return partial(shell_service, name.split(",")[1:], rest)
    if name == "exec":
        return partial(exec_service, rest)
    if name == "sync":
        return sync_service
    if name == "framebuffer":
        return framebuffer_service
    if name == "root":
        return partial(reply_text, "adbd is already running as root\n")
    if name == "unroot":
        return partial(reply_text, "adbd not running as root\n")
    if name == "tcpip":
        return partial(reply_text, f"restarting in TCP mode port: {rest.strip()}\n")
    if name == "usb":
        return partial(reply_text, "restarting in USB mode\n")
    if name == "reboot":
        return reply_nothing
    if name == "reconnect":
        return partial(reply_text, "done")
    if name == "reverse":
        return partial(reverse_service, rest)
    if name in SOCKET_KINDS:
        listener = listener_for(service, backend) if backend is not None else None
        return partial(socket_service, listener) if listener is not None else None
    return None

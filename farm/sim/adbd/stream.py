"""One ADB stream (an OPENed service) on a connection: flow control and buffering.

Device→host: at most one unacknowledged WRTE per stream; every WRTE is at most
the negotiated maxdata, cut from the caller's buffers as memoryview slices.
Host→device: each WRTE is acknowledged with OKAY, but only once the service has
consumed enough of its input, so a stream never buffers much more than
``INPUT_HIGH_WATER`` plus one packet (or what a service explicitly asked for).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from farm.sim.adbd.packets import A_CLSE, A_OKAY, A_WRTE, Buffer

INPUT_HIGH_WATER = 256 * 1024


class Link(Protocol):
    """What a stream needs from its connection."""

    @property
    def maxdata(self) -> int: ...

    @property
    def reverse(self) -> dict[str, str]: ...  # this host's ``adb reverse`` forwards

    @property
    def device_serial(self) -> str: ...  # the name adbd gives this host's transport

    async def send(self, command: int, arg0: int, arg1: int,
                   parts: Sequence[Buffer] = ()) -> bool: ...

    def forget(self, stream: Stream) -> None: ...


def iter_payloads(parts: Iterable[Buffer], limit: int) -> Iterator[list[memoryview]]:
    """Cut ``parts`` into payloads of at most ``limit`` bytes without copying."""
    current: list[memoryview] = []
    size = 0
    for part in parts:
        view = part if isinstance(part, memoryview) else memoryview(part)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        n = view.nbytes
        offset = 0
        while offset < n:
            take = min(limit - size, n - offset)
            current.append(view[offset : offset + take] if take != n else view)
            size += take
            offset += take
            if size == limit:
                yield current
                current = []
                size = 0
    if current:
        yield current


class Stream:
    """A service's end of one stream; created by the connection on OPEN."""

    def __init__(self, link: Link, local_id: int, remote_id: int, service: str) -> None:
        self.link = link
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self.closed = False  # no more output: we closed, the host closed, or the link died
        self.remote_closed = False  # the host closed (or the link died): no more input
        self.discard_input = False  # services that ignore stdin: ack and drop host data
        self._ready = asyncio.Event()  # the host acknowledged our last WRTE
        self._ready.set()  # OPEN→OKAY counts as the first "ready"
        self._data = asyncio.Event()
        self._inbuf = bytearray()
        self._ack_pending = False

    def __repr__(self) -> str:
        return f"<Stream {self.local_id}↔{self.remote_id} {self.service[:40]!r}>"

    # -- driven by the connection ------------------------------------------------------
    def on_okay(self) -> None:
        self._ready.set()

    async def on_write(self, data: bytes) -> None:
        if self.remote_closed:
            return
        if self.discard_input or self.closed:
            await self._ack()
            return
        self._inbuf += data
        self._data.set()
        if len(self._inbuf) <= INPUT_HIGH_WATER:
            await self._ack()
        else:
            self._ack_pending = True

    def on_remote_close(self) -> None:
        """The host closed the stream, or the connection went away."""
        self.remote_closed = True
        self.closed = True
        self._ready.set()
        self._data.set()

    async def _ack(self) -> None:
        self._ack_pending = False
        await self.link.send(A_OKAY, self.local_id, self.remote_id)

    # -- for services --------------------------------------------------------------------
    async def stop_reading(self) -> None:
        """From now on the host's input is acknowledged and dropped (and what waits for
        an acknowledgement gets it)."""
        self.discard_input = True
        self._inbuf.clear()
        if self._ack_pending and not self.closed:
            await self._ack()

    @property
    def buffered(self) -> int:
        return len(self._inbuf)

    async def _wait_data(self) -> bool:
        """Wait for more input; False once no more can come."""
        if self.remote_closed:
            return False
        if self._ack_pending:  # we need more than the high-water mark allows: let it in
            await self._ack()
        self._data.clear()
        await self._data.wait()
        return True

    async def _after_consume(self) -> None:
        if self._ack_pending and len(self._inbuf) <= INPUT_HIGH_WATER:
            await self._ack()

    async def read_exactly(self, n: int) -> bytes | None:
        """Exactly ``n`` bytes of host data, or None if the stream closed first."""
        while len(self._inbuf) < n:
            if not await self._wait_data():
                return None
        data = bytes(self._inbuf[:n])
        del self._inbuf[:n]
        await self._after_consume()
        return data

    async def read_some(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (at least one); b"" once the stream closed."""
        while not self._inbuf:
            if not await self._wait_data():
                return b""
        data = bytes(self._inbuf[:limit])
        del self._inbuf[: len(data)]
        await self._after_consume()
        return data

    async def write(self, parts: Iterable[Buffer]) -> bool:
        """Send all ``parts`` as WRTEs, waiting for the host's OKAY after each.

        Returns False (and stops) once the stream or its connection is closed.
        """
        for payload in iter_payloads(parts, self.link.maxdata):
            if not await self._wait_ready():
                return False
            self._ready.clear()
            if not await self.link.send(A_WRTE, self.local_id, self.remote_id, payload):
                self.on_remote_close()
                return False
        return True

    async def _wait_ready(self) -> bool:
        while not self._ready.is_set():
            await self._ready.wait()
        return not self.closed

    async def close(self) -> None:
        """Send CLSE once (after our last WRTE was acknowledged) and forget the stream."""
        if not self.closed:
            await self._wait_ready()
            if not self.closed:
                self.closed = True
                self._ready.set()
                self._data.set()
                await self.link.send(A_CLSE, self.local_id, self.remote_id)
        self.link.forget(self)

    def abandon(self) -> None:
        """Stop without telling the host (connection reset or task cancelled)."""
        self.on_remote_close()
        self.link.forget(self)

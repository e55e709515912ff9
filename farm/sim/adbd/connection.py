"""One TCP connection from an adb host: handshake, packet dispatch, stream table."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from farm.sim.adbd.banner import device_banner
from farm.sim.adbd.packets import (
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_VERSION,
    A_VERSION_SKIP_CHECKSUM,
    A_WRTE,
    MAX_PAYLOAD,
    MAX_PAYLOAD_V1,
    Buffer,
    Packet,
    PacketParser,
    ProtocolError,
    checksum,
    pack_header,
)
from farm.sim.adbd.services import Handler, resolve_service
from farm.sim.adbd.stream import Stream
from farm.sim.faults import Faults
from farm.sim.spec import AdbdBackend

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
MAX_STREAMS = 1024  # per connection; more OPENs are refused with CLSE
HANG_POLL_S = 0.05  # how often a hung phone looks whether the hang ended (or was cleared)
_JOIN_LIMIT = 64 * 1024  # parts up to this size are joined into one write; larger go as-is

Spawn = Callable[[Coroutine[Any, Any, None]], "asyncio.Task[None]"]


async def wait_while_hung(faults: Faults, alive: Callable[[], bool]) -> None:
    # Faults offers no event (a hang may be cleared or extended at any time): poll.
    while faults.hung() and alive():  # noqa: ASYNC110
        await asyncio.sleep(min(max(faults.hang_remaining(), 0.001), HANG_POLL_S))


class Connection:
    """Serves one host connection until it closes, is aborted, or breaks the protocol."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 backend: AdbdBackend, spawn: Spawn) -> None:
        self._reader = reader
        self._writer = writer
        self.backend = backend
        self.faults = backend.faults
        self._spawn = spawn
        self._parser = PacketParser(MAX_PAYLOAD)
        self._streams: dict[int, Stream] = {}
        self._next_id = 1
        self.online = False  # a CNXN has been answered
        self.version = A_VERSION
        self._maxdata = MAX_PAYLOAD
        self.closed = False
        self.host_banner = b""
        self._reverse: dict[str, str] = {}  # adb reverse: local → remote, in order added
        Connection._count += 1
        # adbd names a TCP transport after its socket's fd ("host-19")
        self._device_serial = f"host-{16 + Connection._count % 1000}"

    _count = 0

    @property
    def reverse(self) -> dict[str, str]:
        return self._reverse

    @property
    def device_serial(self) -> str:
        return self._device_serial

    @property
    def maxdata(self) -> int:
        return self._maxdata

    @property
    def stream_count(self) -> int:
        return len(self._streams)

    def _alive(self) -> bool:
        return not self.closed

    # -- output ------------------------------------------------------------------------
    async def send(self, command: int, arg0: int, arg1: int,
                   parts: Sequence[Buffer] = ()) -> bool:
        """Write one packet; False if the connection is gone. Held while the phone hangs."""
        if self.faults.hung():
            await wait_while_hung(self.faults, self._alive)
        writer = self._writer
        if self.closed or writer.transport.is_closing():
            return False
        length = 0
        for part in parts:
            length += len(part) if not isinstance(part, memoryview) else part.nbytes
        check = checksum(parts) if length and self.version < A_VERSION_SKIP_CHECKSUM else 0
        header = pack_header(command, arg0, arg1, length, check)
        if length <= _JOIN_LIMIT:
            writer.write(b"".join((header, *parts)) if parts else header)
        else:
            small: list[Buffer] = [header]
            for part in parts:
                size = len(part) if not isinstance(part, memoryview) else part.nbytes
                if size <= _JOIN_LIMIT:
                    small.append(part)
                    continue
                if small:
                    writer.write(b"".join(small) if len(small) > 1 else small[0])
                    small = []
                writer.write(part)
            if small:
                writer.write(b"".join(small))
        try:
            await writer.drain()
        except (ConnectionError, OSError):
            self.abort()
            return False
        return True

    def forget(self, stream: Stream) -> None:
        if self._streams.get(stream.local_id) is stream:
            del self._streams[stream.local_id]

    def abort(self) -> None:
        """Drop the TCP connection now and close every stream (no CLSE is sent)."""
        if not self.closed:
            self.closed = True
            self._writer.transport.abort()
        self._reset_streams()

    def _reset_streams(self) -> None:
        streams = list(self._streams.values())
        self._streams.clear()
        for stream in streams:
            stream.on_remote_close()

    # -- input -------------------------------------------------------------------------
    async def run(self) -> None:
        reader = self._reader
        parser = self._parser
        try:
            while not self.closed:
                data = await reader.read(READ_SIZE)
                if not data or self.faults.disconnected():
                    break
                for packet in parser.feed(data):
                    if self.faults.hung():
                        await wait_while_hung(self.faults, self._alive)
                    if self.closed:
                        break
                    await self._dispatch(packet)
        except ProtocolError as exc:
            log.info("adbd: dropping connection: %s", exc)
        except (ConnectionError, OSError):
            pass
        finally:
            self.abort()

    async def _dispatch(self, packet: Packet) -> None:
        command = packet.command
        if command == A_CNXN:
            await self._on_connect(packet)
            return
        if not self.online:
            return  # protocol.txt: anything before CNXN is ignored (AUTH, STLS, …)
        if command == A_OPEN:
            await self._on_open(packet)
        elif command in (A_OKAY, A_WRTE, A_CLSE):
            stream = self._streams.get(packet.arg1)
            if stream is None or (packet.arg0 != 0 and packet.arg0 != stream.remote_id):
                return  # unknown or mismatched ids are ignored, like adbd
            if command == A_OKAY:
                stream.on_okay()
            elif command == A_WRTE:
                await stream.on_write(packet.payload)
            else:
                self.forget(stream)
                stream.on_remote_close()

    async def _on_connect(self, packet: Packet) -> None:
        self._reset_streams()  # handle_new_connection → handle_offline
        self._reverse.clear()  # a new transport starts without reverse forwards
        self.host_banner = packet.payload
        self.version = max(min(packet.arg0, A_VERSION), 0)
        self._maxdata = max(MAX_PAYLOAD_V1, min(packet.arg1, MAX_PAYLOAD))
        self._parser.max_payload = self._maxdata
        banner = device_banner(self.backend.spec)
        header = pack_header(A_CNXN, A_VERSION, self._maxdata, len(banner), checksum((banner,)))
        # The reply goes out in full even though the negotiated version may skip checksums.
        if self.faults.hung():
            await wait_while_hung(self.faults, self._alive)
        if self.closed:
            return
        self._writer.write(header + banner)
        try:
            await self._writer.drain()
        except (ConnectionError, OSError):
            self.abort()
            return
        self.online = True

    async def _on_open(self, packet: Packet) -> None:
        remote_id = packet.arg0
        if remote_id == 0 or packet.arg1 != 0:
            return
        service = packet.payload.rstrip(b"\0").decode("utf-8", "replace")
        handler = resolve_service(service, self.backend)
        if handler is None or len(self._streams) >= MAX_STREAMS:
            await self.send(A_CLSE, 0, remote_id)
            return
        local_id = self._allocate_id()
        stream = Stream(self, local_id, remote_id, service)
        self._streams[local_id] = stream
        if not await self.send(A_OKAY, local_id, remote_id):
            return
        self._spawn(self._serve(handler, stream))

    def _allocate_id(self) -> int:
        while True:
            local_id = self._next_id
            self._next_id = self._next_id + 1 if self._next_id < 0xFFFFFFFF else 1
            if local_id not in self._streams:
                return local_id

    async def _serve(self, handler: Handler, stream: Stream) -> None:
        try:
            await handler(stream, self.backend)
        except asyncio.CancelledError:
            stream.abandon()
            raise
        except Exception:
            log.exception("adbd: service %r failed", stream.service[:200])
        try:
            await stream.close()
        except (ConnectionError, OSError):
            stream.abandon()

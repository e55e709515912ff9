"""A minimal host side of the ADB transport, straight to a phone's adbd (no adb server).

Load generator for the sim benchmarks: one TCP connection per phone, streams
multiplexed on it the way the adb server does, every WRTE acknowledged. It lets a
benchmark measure the phones rather than the adb server's single I/O thread.
"""

from __future__ import annotations

import asyncio
import struct

from farm.sim.adbd.packets import (
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_VERSION,
    A_WRTE,
    PacketParser,
    pack_packet,
)

HOST_BANNER = b"host::features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir"


class AdbdHost:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.parser = PacketParser(1 << 21)
        self.streams: dict[int, tuple[list[bytes], asyncio.Future[bytes]]] = {}
        self.next_id = 1
        self.connected: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._read_loop())

    @classmethod
    async def connect(cls, port: int, host: str = "127.0.0.1") -> AdbdHost:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
        self = cls(reader, writer)
        writer.write(pack_packet(A_CNXN, A_VERSION, 1 << 20, HOST_BANNER))
        await asyncio.wait_for(self.connected, 10)
        return self

    async def _read_loop(self) -> None:
        while data := await self.reader.read(1 << 20):
            for p in self.parser.feed(data):
                if p.command == A_CNXN and not self.connected.done():
                    self.connected.set_result(None)
                entry = self.streams.get(p.arg1)
                if entry is None:
                    continue
                chunks, done = entry
                if p.command == A_WRTE:
                    chunks.append(p.payload)
                    self.writer.write(pack_packet(A_OKAY, p.arg1, p.arg0, with_checksum=False))
                elif p.command == A_CLSE:
                    del self.streams[p.arg1]
                    if not done.done():
                        done.set_result(b"".join(chunks))
        for _, done in self.streams.values():
            if not done.done():
                done.set_exception(ConnectionError("phone closed the connection"))

    async def run(self, service: str) -> bytes:
        """Open ``service`` (``exec:…``, ``shell,v2,raw:…``) and return all it wrote."""
        local = self.next_id
        self.next_id += 1
        done: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.streams[local] = ([], done)
        self.writer.write(pack_packet(A_OPEN, local, 0, service.encode() + b"\0",
                                      with_checksum=False))
        return await done

    async def shell_v2_exit(self, command: str) -> int:
        data = await self.run(f"shell,v2,raw:{command}")
        pos, code = 0, 255
        while pos + 5 <= len(data):
            kind, length = struct.unpack_from("<BI", data, pos)
            if kind == 3:
                code = data[pos + 5]
            pos += 5 + length
        return code

    def close(self) -> None:
        self.writer.close()
        self._task.cancel()

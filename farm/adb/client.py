"""A lean asyncio client of the adb server's smart-socket protocol.

adbutils pays ≥ 20 ms per ``shell()`` (its connection close sleeps 10 ms) and grows
a bytes object 4 KB at a time (docs/design.md §4), which is fine for setup work and far
too slow for the per-step hot path. This client opens one socket per command
(``host:transport:SERIAL`` then ``shell:``/``shell,v2,raw:``/``exec:``) and reads
into a buffer that grows geometrically; raw frames, whose header gives their size, go
into one buffer of exactly that size (:mod:`farm.adb.frames`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from dataclasses import dataclass

from farm.adb.errors import AdbServerError
from farm.adb.frames import RawFrame, read_raw_frame

__all__ = ["AdbServerClient", "AdbServerError", "ShellV2Result"]

_V2_HEADER = struct.Struct("<BI")
_SYNC_CHUNK = 64 * 1024  # SYNC_DATA_MAX


@dataclass(frozen=True, slots=True)
class ShellV2Result:
    stdout: bytes
    stderr: bytes
    exit_code: int


class AdbServerClient:
    def __init__(self, host: str = "127.0.0.1", port: int = 5037, timeout: float = 10.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout

    async def _connect(self) -> socket.socket:
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.wait_for(loop.sock_connect(sock, (self.host, self.port)), self.timeout)
        except (OSError, TimeoutError) as exc:
            sock.close()
            raise AdbServerError(f"cannot reach the adb server at {self.host}:{self.port}: "
                                 f"{exc}") from None
        return sock

    async def _recv_exact(self, sock: socket.socket, n: int) -> bytes:
        loop = asyncio.get_running_loop()
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = await loop.sock_recv_into(sock, view[got:])
            if k == 0:
                raise AdbServerError("adb server closed the connection")
            got += k
        return bytes(buf)

    async def _request(self, sock: socket.socket, payload: str) -> None:
        data = payload.encode()
        await asyncio.get_running_loop().sock_sendall(sock, b"%04x" % len(data) + data)
        status = await self._recv_exact(sock, 4)
        if status == b"OKAY":
            return
        if status == b"FAIL":
            length = int(await self._recv_exact(sock, 4), 16)
            msg = (await self._recv_exact(sock, length)).decode(errors="replace")
            raise AdbServerError(msg)
        raise AdbServerError(f"unexpected adb server reply {status!r}")

    async def _read_all(self, sock: socket.socket) -> bytes:
        loop = asyncio.get_running_loop()
        buf = bytearray(64 * 1024)
        got = 0
        while True:
            if got == len(buf):
                buf.extend(bytes(len(buf)))  # double: O(log n) reallocations for a 10 MB frame
            k = await loop.sock_recv_into(sock, memoryview(buf)[got:])
            if k == 0:
                del buf[got:]
                return bytes(buf)
            got += k

    async def _service(self, serial: str, service: str) -> socket.socket:
        sock = await self._connect()
        try:
            await self._request(sock, f"host:transport:{serial}")
            await self._request(sock, service)
        except BaseException:
            sock.close()
            raise
        return sock

    async def devices(self) -> list[tuple[str, str]]:
        sock = await self._connect()
        try:
            await self._request(sock, "host:devices")
            length = int(await self._recv_exact(sock, 4), 16)
            text = (await self._recv_exact(sock, length)).decode()
        finally:
            sock.close()
        return [tuple(line.split("\t", 1)) for line in text.splitlines() if "\t" in line]  # type: ignore[misc]

    async def exec_out(self, serial: str, command: str) -> bytes:
        """Binary-safe stdout+stderr of ``exec:COMMAND``."""
        sock = await self._service(serial, f"exec:{command}")
        try:
            return await asyncio.wait_for(self._read_all(sock), self.timeout)
        finally:
            sock.close()

    async def raw_frame(self, serial: str, command: str = "screencap") -> RawFrame:
        """One raw frame from ``exec:COMMAND`` (``screencap``, ``screencap -d ID`` …),
        read into a buffer of its exact size; :class:`~farm.adb.errors.FrameError` if
        the output is not exactly one frame."""
        sock = await self._service(serial, f"exec:{command}")
        try:
            return await asyncio.wait_for(read_raw_frame(sock), self.timeout)
        finally:
            sock.close()

    async def shell(self, serial: str, command: str) -> bytes:
        """``shell:COMMAND`` (v1): merged output, no exit code."""
        sock = await self._service(serial, f"shell:{command}")
        try:
            return await asyncio.wait_for(self._read_all(sock), self.timeout)
        finally:
            sock.close()

    async def push(self, serial: str, data: bytes, remote_path: str, mode: int = 0o644) -> None:
        """Write a file with the sync protocol (SEND/DATA/DONE); parents are created."""
        loop = asyncio.get_running_loop()
        sock = await self._service(serial, "sync:")
        try:
            path = f"{remote_path},{0o100000 | mode}".encode()
            out = bytearray(b"SEND" + struct.pack("<I", len(path)) + path)
            view = memoryview(data)
            for pos in range(0, len(data), _SYNC_CHUNK):
                chunk = view[pos : pos + _SYNC_CHUNK]
                out += b"DATA" + struct.pack("<I", len(chunk))
                out += chunk
            out += b"DONE" + struct.pack("<I", int(time.time()))
            await loop.sock_sendall(sock, out)
            reply = await asyncio.wait_for(self._recv_exact(sock, 8), self.timeout)
            if reply[:4] != b"OKAY":
                length = struct.unpack("<I", reply[4:])[0]
                msg = (await self._recv_exact(sock, length)).decode(errors="replace")
                raise AdbServerError(f"push {remote_path}: {msg}")
            await loop.sock_sendall(sock, b"QUIT\0\0\0\0")
        finally:
            sock.close()

    async def pull(self, serial: str, remote_path: str) -> bytes:
        """Read a file with the sync protocol (RECV → DATA… DONE)."""
        loop = asyncio.get_running_loop()
        sock = await self._service(serial, "sync:")
        try:
            path = remote_path.encode()
            await loop.sock_sendall(sock, b"RECV" + struct.pack("<I", len(path)) + path)
            out = bytearray()
            while True:
                head = await asyncio.wait_for(self._recv_exact(sock, 8), self.timeout)
                kind, length = head[:4], struct.unpack("<I", head[4:])[0]
                if kind == b"DONE":
                    break
                body = await asyncio.wait_for(self._recv_exact(sock, length), self.timeout)
                if kind == b"FAIL":
                    raise AdbServerError(f"pull {remote_path}: {body.decode(errors='replace')}")
                if kind != b"DATA":
                    raise AdbServerError(f"pull {remote_path}: unexpected sync reply {kind!r}")
                out += body
            await loop.sock_sendall(sock, b"QUIT\0\0\0\0")
            return bytes(out)
        finally:
            sock.close()

    async def shell_v2(self, serial: str, command: str) -> ShellV2Result:
        """``shell,v2,raw:COMMAND``: separate stdout/stderr and the exit code."""
        sock = await self._service(serial, f"shell,v2,raw:{command}")
        try:
            data = await asyncio.wait_for(self._read_all(sock), self.timeout)
        finally:
            sock.close()
        out, err, code, pos = bytearray(), bytearray(), 255, 0
        while pos + 5 <= len(data):
            kind, length = _V2_HEADER.unpack_from(data, pos)
            body = data[pos + 5 : pos + 5 + length]
            pos += 5 + length
            if kind == 1:
                out += body
            elif kind == 2:
                err += body
            elif kind == 3 and body:
                code = body[0]
        return ShellV2Result(bytes(out), bytes(err), code)

    async def host_command(self, request: str) -> str:
        """A ``host:`` request whose reply is OKAY + a length-prefixed message."""
        sock = await self._connect()
        try:
            await asyncio.wait_for(self._request(sock, request), self.timeout)
            length = int(await asyncio.wait_for(self._recv_exact(sock, 4), self.timeout), 16)
            return (await asyncio.wait_for(self._recv_exact(sock, length), self.timeout)).decode(
                errors="replace")
        except TimeoutError:
            raise AdbServerError(f"`{request}` took longer than {self.timeout:g} s") from None
        finally:
            sock.close()

    async def connect(self, target: str) -> str:
        """``adb connect TARGET`` (``host:port``); raises unless the server reports success.

        The adb server answers OKAY even when it fails ("failed to connect to …"), so
        the message decides.
        """
        msg = await self.host_command(f"host:connect:{target}")
        if "connected to" not in msg:  # "connected to" / "already connected to"
            raise AdbServerError(f"adb connect {target}: {msg.strip()}")
        return msg

    async def disconnect(self, target: str) -> str:
        """``adb disconnect TARGET``; a target that was not connected is not an error."""
        try:
            return await self.host_command(f"host:disconnect:{target}")
        except AdbServerError as exc:
            if "no such device" in str(exc):
                return str(exc)
            raise

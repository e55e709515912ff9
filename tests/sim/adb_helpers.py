"""Helpers for tests that talk ADB: private adb servers, a raw packet client,
a test double of a phone, and an AdbdServer on a background thread.

    with private_adb_server(adb_path) as adb:        # never the user's :5037 server
        adb.run("connect", serial)
        client = adb.client()                        # adbutils.AdbClient on adb.port
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shlex
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from farm.sim.adbd import AdbdServer
from farm.sim.adbd.packets import (
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_VERSION,
    A_WRTE,
    Packet,
    PacketParser,
    pack_packet,
)
from farm.sim.adbhost import PrivateAdbServer, bundled_adb, system_adb
from farm.sim.faults import Faults
from farm.sim.profiles import get_profile
from farm.sim.spec import PhoneSpec, ShellResult
from farm.sim.vfs import VirtualFS

T = TypeVar("T")

# -- adb binaries and private servers ------------------------------------------------------

def adb_binary_params() -> list[Any]:
    """pytest params for both adb binaries; Debian's is skipped (or failed) when absent."""
    params: list[Any] = []
    system = system_adb()
    if system:
        params.append(pytest.param(system, id="adb29-debian", marks=pytest.mark.system_adb))
    elif os.environ.get("DISTRL_REQUIRE_SYSTEM_ADB") == "1":  # the fixture fails on None
        params.append(pytest.param(None, id="adb29-debian", marks=pytest.mark.system_adb))
    else:
        params.append(pytest.param(None, id="adb29-debian", marks=[pytest.mark.system_adb,
                                                                   pytest.mark.skip(
            reason="Debian's adb not installed (apt-get install adb); "
                   "set DISTRL_REQUIRE_SYSTEM_ADB=1 to make this a failure")]))
    bundled = bundled_adb()
    if bundled:
        params.append(pytest.param(bundled, id="adb36-adbutils"))
    else:
        params.append(pytest.param(None, id="adb36-adbutils", marks=pytest.mark.skip(
            reason="adbutils wheel ships no adb binary on this platform")))
    return params


class PrivateAdb(PrivateAdbServer):
    """A private adb server whose ``run`` returns bytes: these tests compare raw output."""

    def run(self, *args: str, timeout: float = 30.0, check: bool = False, text: bool = False,
            input: Any = None) -> subprocess.CompletedProcess[Any]:
        return super().run(*args, timeout=timeout, check=check, text=text, input=input)


@contextlib.contextmanager
def private_adb_server(adb_path: str | None) -> Iterator[PrivateAdb]:
    """A :class:`PrivateAdb` on a free port; the user's :5037 server is never touched."""
    if adb_path is None:
        pytest.fail("adb binary required (DISTRL_REQUIRE_SYSTEM_ADB=1) but not found")
    with PrivateAdb(adb_path) as adb:
        yield adb


# -- a test double for the phone -----------------------------------------------------------

def _blob(size: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(size)


@dataclass
class FakeBackend:
    """Implements farm.sim.spec.AdbdBackend with a tiny command language.

    ``a; b`` runs both; ``echo … $?``; ``true``/``false``/``exit N``; ``err TEXT``
    (stderr, exit 2); ``blob N`` (N bytes of ``self.blob``, zero-copy); ``blobs N M …``
    (consecutive slices of it as separate chunks); ``cat PATH``;
    ``sleep S``; ``pm install …`` → Success; anything else → not found, 127.
    """

    spec: PhoneSpec = field(default_factory=lambda: PhoneSpec(
        name="fake", model="Fake Model X", product="fakeprod", device="fakedev"))
    vfs: VirtualFS = field(default_factory=VirtualFS)
    faults: Faults = field(default_factory=Faults)
    profile: Any = field(default_factory=lambda: get_profile("instant"))
    blob: bytes = field(default_factory=lambda: _blob(12 * 1024 * 1024))
    frame: tuple[int, int, bytes] = (4, 3, bytes(range(48)))
    installs: list[tuple[bytes, list[str]]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    async def run_shell(self, command: str, stdin: bytes = b"",
                        result: ShellResult | None = None,
                        live_stdin: Any = None) -> ShellResult:
        self.commands.append(command)
        result = ShellResult() if result is None else result
        rc = 0
        for part in command.split(";"):
            part = part.replace("</dev/null", "")
            try:
                words = shlex.split(part) if "'" in part or '"' in part else part.split()
            except ValueError:
                words = part.split()
            if not words:
                continue
            name, args = words[0], words[1:]
            rc = 0
            if name == "echo":
                result.out(" ".join(a.replace("$?", str(result.exit_code)) for a in args) + "\n")
            elif name == "true":
                pass
            elif name == "false":
                rc = 1
            elif name == "exit":
                rc = int(args[0]) if args else 0
            elif name == "err":
                result.err(" ".join(args) + "\n")
                rc = 2
            elif name == "blob":
                result.out(memoryview(self.blob)[: int(args[0])])
            elif name == "blobs":  # several chunks: blobs 600000 700000 → blob[0:6e5], [6e5:13e5]
                pos = 0
                for n in map(int, args):
                    result.out(memoryview(self.blob)[pos : pos + n])
                    pos += n
            elif name == "cat":
                try:
                    result.out(self.vfs.read(args[0]))
                except OSError as exc:
                    result.err(f"cat: {args[0]}: {exc.strerror}\n")
                    rc = 1
            elif name == "sleep":
                await asyncio.sleep(float(args[0]))
            elif name == "pm" and args[:1] == ["install"]:
                result.out("Success\n")
            else:
                result.err(f"/system/bin/sh: {name}: not found\n")
                rc = 127
            result.exit_code = rc
        return result

    async def install_stream(self, data: bytes, args: list[str]) -> str:
        self.installs.append((data, args))
        return "Success\n"

    def framebuffer(self) -> tuple[int, int, bytes]:
        return self.frame


# -- an AdbdServer on a thread (for blocking clients: subprocess adb, adbutils) -------------

class ThreadedAdbd:
    """Runs ``AdbdServer(backend)`` on an event loop of its own thread."""

    def __init__(self, backend: Any, port: int = 0) -> None:
        self.backend = backend
        self.loop = asyncio.new_event_loop()
        self.server = AdbdServer(backend, port=port)
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="adbd-test")
        self._thread.start()
        self.call(self.server.start)
        self.port = self.server.port
        self.serial = f"127.0.0.1:{self.port}"
        self._stopped = False

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
        async def runner() -> T:
            return await fn()

        fut: Future[T] = asyncio.run_coroutine_threadsafe(runner(), self.loop)
        return fut.result(timeout)

    def cpu_time(self) -> float:
        """CPU seconds the adbd thread has used so far (time.thread_time on it)."""

        async def now() -> float:
            return time.thread_time()

        return self.call(now)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.call(self.server.stop)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@contextlib.contextmanager
def adbd_in_thread(backend: Any | None = None) -> Iterator[ThreadedAdbd]:
    phone = ThreadedAdbd(backend if backend is not None else FakeBackend())
    try:
        yield phone
    finally:
        phone.stop()


# -- a raw packet client (plays the adb host) ----------------------------------------------

HOST_BANNER = (b"host::features=shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,abb_exec,"
               b"remount_shell,fixed_push_symlink_timestamp")


class RawStream:
    def __init__(self, client: RawAdbClient, local_id: int) -> None:
        self.client = client
        self.local_id = local_id
        self.remote_id = 0
        self.queue: asyncio.Queue[Packet] = asyncio.Queue()
        self.pending: list[Packet] = []  # output that arrived while we waited for an OKAY

    async def next(self, secs: float = 5.0) -> Packet:
        if self.pending:
            return self.pending.pop(0)
        return await asyncio.wait_for(self.queue.get(), secs)

    async def ack(self) -> None:
        await self.client.send(A_OKAY, self.local_id, self.remote_id)

    async def write(self, data: bytes, secs: float = 5.0) -> None:
        """One WRTE (≤ maxdata), then wait for the device's OKAY."""
        await self.client.send(A_WRTE, self.local_id, self.remote_id, data)
        while True:
            packet = await asyncio.wait_for(self.queue.get(), secs)
            if packet.command == A_OKAY:
                return
            self.pending.append(packet)

    async def write_all(self, data: bytes, secs: float = 5.0) -> None:
        step = self.client.maxdata
        for i in range(0, len(data), step):
            await self.write(data[i : i + step], secs)

    async def read_until_close(self, secs: float = 10.0, ack: bool = True) -> bytes:
        """Collect WRTE payloads (acking each) until the device's CLSE."""
        out = bytearray()
        while True:
            packet = await self.next(secs)
            if packet.command == A_CLSE:
                return bytes(out)
            if packet.command == A_WRTE:
                assert len(packet.payload) <= self.client.maxdata
                out += packet.payload
                if ack:
                    await self.ack()

    async def read_exactly(self, n: int, secs: float = 10.0) -> bytes:
        """Read WRTEs (acking each) until at least n bytes arrived; returns them all."""
        out = bytearray()
        while len(out) < n:
            packet = await self.next(secs)
            assert packet.command == A_WRTE, (packet.name, bytes(out))
            out += packet.payload
            await self.ack()
        return bytes(out)

    async def close(self) -> None:
        await self.client.send(A_CLSE, self.local_id, self.remote_id)


class RawAdbClient:
    """Speaks packets to an AdbdServer the way the adb host does (for unit tests)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.parser = PacketParser(1 << 24)
        self.streams: dict[int, RawStream] = {}
        self.other: asyncio.Queue[Packet] = asyncio.Queue()
        self.next_id = 100
        self.maxdata = 1 << 20
        self.eof = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def open_connection(cls, port: int, host: str = "127.0.0.1") -> RawAdbClient:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    @classmethod
    async def connected(cls, port: int, maxdata: int = 1 << 20) -> RawAdbClient:
        client = await cls.open_connection(port)
        await client.handshake(maxdata)
        return client

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self.reader.read(1 << 20)
                if not data:
                    break
                for packet in self.parser.feed(data):
                    stream = self.streams.get(packet.arg1)
                    if stream is not None and packet.command in (A_OKAY, A_WRTE, A_CLSE):
                        stream.queue.put_nowait(packet)
                    else:
                        self.other.put_nowait(packet)
        except (ConnectionError, OSError):
            pass
        finally:
            self.eof.set()

    async def send(self, command: int, arg0: int = 0, arg1: int = 0, data: bytes = b"") -> None:
        self.writer.write(pack_packet(command, arg0, arg1, data, with_checksum=False))
        await self.writer.drain()

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def next_other(self, secs: float = 5.0) -> Packet:
        return await asyncio.wait_for(self.other.get(), secs)

    async def handshake(self, maxdata: int = 1 << 20, version: int = A_VERSION) -> Packet:
        await self.send(A_CNXN, version, maxdata, HOST_BANNER)
        packet = await self.next_other()
        assert packet.command == A_CNXN, packet
        self.maxdata = packet.arg1
        return packet

    def new_stream(self) -> RawStream:
        stream = RawStream(self, self.next_id)
        self.next_id += 1
        self.streams[stream.local_id] = stream
        return stream

    async def open(self, service: str | bytes, secs: float = 5.0) -> RawStream | None:
        """OPEN a service; the stream, or None if the device refused it (CLSE)."""
        stream = self.new_stream()
        raw = service.encode() if isinstance(service, str) else service
        await self.send(A_OPEN, stream.local_id, 0, raw + b"\0")
        packet = await stream.next(secs)
        if packet.command == A_CLSE:
            assert packet.arg0 == 0
            return None
        assert packet.command == A_OKAY, packet
        stream.remote_id = packet.arg0
        return stream

    async def run(self, service: str, secs: float = 10.0) -> bytes:
        stream = await self.open(service)
        assert stream is not None, f"{service!r} refused"
        return await stream.read_until_close(secs)

    async def wait_closed(self, secs: float = 5.0) -> None:
        await asyncio.wait_for(self.eof.wait(), secs)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

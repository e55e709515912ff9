"""The TCP listener of one simulated phone: accepts adb hosts, applies connection faults."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Coroutine
from typing import Any

from farm.sim.adbd.connection import Connection
from farm.sim.spec import AdbdBackend

log = logging.getLogger(__name__)


class AdbdServer:
    """Plays adbd for ``backend`` on ``host:port`` (port 0 picks a free one).

    Starting again after ``stop()`` binds the same port as before (a "rebooted" phone
    keeps its serial).
    ``await start()`` binds and returns; ``await stop()`` closes the listener, every
    connection and every service task. A DISCONNECT fault drops all connections at
    once and refuses new ones while it lasts; a HANG fault holds every packet.
    """

    def __init__(self, backend: AdbdBackend, host: str = "127.0.0.1", port: int = 0) -> None:
        self.backend = backend
        self.host = host
        self._requested_port = port
        self._server: asyncio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._connections: set[Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()  # services (cancelled on stop)
        self._conn_tasks: set[asyncio.Task[None]] = set()  # connections (end on abort)
        self._stopping = False

    @property
    def port(self) -> int:
        if self._server is None or not self._server.sockets:
            raise RuntimeError("AdbdServer is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    def listen_on(self, port: int) -> None:
        """The port the next :meth:`start` binds (an emulator's adb port, picked late)."""
        if self._server is not None:
            raise RuntimeError("AdbdServer is already started")
        self._requested_port = port

    @property
    def serial(self) -> str:
        """What ``adb connect`` calls this phone: ``host:port``."""
        return f"{self.host}:{self.port}"

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    @property
    def started(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        if self._server is not None:
            return
        self._stopping = False
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._server = await asyncio.start_server(
            self._accept, self.host, self._requested_port, limit=1 << 20
        )
        # A restarted phone keeps its port, so the adb host's redial finds it again.
        self._requested_port = self.port
        self.backend.faults.on_disconnect.append(self._on_disconnect_fault)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._stopping = True
        with contextlib.suppress(ValueError):
            self.backend.faults.on_disconnect.remove(self._on_disconnect_fault)
        server, self._server = self._server, None
        server.close()
        self.drop_connections()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        # Connection tasks belong to asyncio.start_server, which logs an error if they end
        # cancelled: aborting the transport makes them return on their own.
        conn_tasks = list(self._conn_tasks)
        if conn_tasks:
            _, pending = await asyncio.wait(conn_tasks, timeout=5.0)
            for task in pending:
                task.cancel()
        await server.wait_closed()

    async def __aenter__(self) -> AdbdServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def drop_connections(self) -> None:
        """Abort every TCP connection now (the adb host sees the phone go offline)."""
        for conn in list(self._connections):
            conn.abort()

    # -- internals -----------------------------------------------------------------------
    def _on_disconnect_fault(self, seconds: float) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread:
            self.drop_connections()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self.drop_connections)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopping or self.backend.faults.disconnected():
            writer.transport.abort()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        conn = Connection(reader, writer, self.backend, self._spawn)
        self._connections.add(conn)
        try:
            await conn.run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("adbd: connection failed")
        finally:
            self._connections.discard(conn)
            conn.abort()
            if task is not None:
                self._conn_tasks.discard(task)

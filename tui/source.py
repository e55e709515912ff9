"""Where the TUI's data comes from: a :class:`DataSource` yields raw MQTT traffic
``(topic, payload)`` plus connection changes, and sends commands back.

The app parses every payload itself with :func:`distrl_sdk.wire.parse_message`, so the
fake source used by tests and benchmarks drives exactly the path live traffic takes
(it only replaces the socket)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ConnectionChanged", "DataSource", "Event", "FakeSource", "Incoming", "SourceClosed"]


@dataclass(frozen=True)
class Incoming:
    """One MQTT message as it came off the wire (not parsed yet)."""

    topic: str
    payload: bytes


@dataclass(frozen=True)
class ConnectionChanged:
    """The link to the broker came up or went down (``detail``: why, for the log)."""

    connected: bool
    detail: str = ""


Event = Incoming | ConnectionChanged
Responder = Callable[[str, bytes], list[tuple[str, bytes]]]


class SourceClosed(RuntimeError):
    """A command was sent after the source was closed or while it has no link."""


class DataSource(Protocol):
    """What the app needs from its data source."""

    description: str
    """Shown in the status bar (e.g. ``mqtt://host:1883 farm +``)."""
    @property
    def broker_url(self) -> str | None:
        """The broker, without its password, for command lines the TUI shows (None:
        none)."""
        ...

    def events(self) -> AsyncIterator[Event]:
        """Every event until :meth:`close`; reconnects by itself (never ends on errors)."""
        ...

    async def send(self, topic: str, payload: bytes) -> None:
        """Publish one command; raises :class:`SourceClosed` if it cannot."""
        ...

    async def close(self) -> None:
        """Stop :meth:`events` and release the connection."""
        ...


class FakeSource:
    """An in-memory source for tests and benchmarks: ``push`` feeds it, ``sent`` records
    what the app published. ``responder`` (optional) sees each sent command and returns
    replies to feed back (e.g. a :class:`~distrl_sdk.wire.CommandResult`)."""

    description = "fake source"
    broker_url: str | None = None  # a broker for command lines shown (none here)

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self.sent: list[tuple[str, bytes]] = []
        self.closed = False
        self.connected = True
        self.responder: Responder | None = None

    def push(self, topic: str, payload: bytes) -> None:
        self._queue.put_nowait(Incoming(topic, payload))

    def push_event(self, event: Event) -> None:
        if isinstance(event, ConnectionChanged):
            self.connected = event.connected
        self._queue.put_nowait(event)

    @property
    def pending(self) -> int:
        """Events queued and not consumed by the app yet."""
        return self._queue.qsize()

    async def events(self) -> AsyncIterator[Event]:
        yield ConnectionChanged(True, "fake source")
        while True:
            ev = await self._queue.get()
            if ev is None:
                return
            yield ev

    async def send(self, topic: str, payload: bytes) -> None:
        if self.closed or not self.connected:
            raise SourceClosed("not connected")
        self.sent.append((topic, payload))
        if self.responder is not None:
            for t, p in self.responder(topic, payload):
                self.push(t, p)

    async def close(self) -> None:
        self.closed = True
        self._queue.put_nowait(None)

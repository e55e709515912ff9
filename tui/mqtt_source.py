"""The live data source: an aiomqtt client of the wire contract (``distrl_sdk.wire``).

It subscribes to the topics the TUI shows, reconnects with backoff whenever the broker
goes away (re-subscribing brings the retained device statuses back), and publishes
commands. It never parses payloads: the app does, with ``parse_message``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

import aiomqtt
from aiomqtt.exceptions import MqttConnectError

from distrl_sdk.wire import topics
from distrl_sdk.wire.broker_url import parse_broker_url
from farm.aio import cancel_and_wait
from farm.broker_acl import connect_failure
from tui.source import ConnectionChanged, Event, Incoming, SourceClosed

__all__ = ["MqttSource", "subscriptions"]

log = logging.getLogger(__name__)


def subscriptions(farm: str) -> list[tuple[str, int]]:
    """(filter, QoS) for one farm id or ``+`` (every farm). Trajectory topics are left
    out on purpose: they carry megabytes the TUI does not show."""
    if farm != "+":
        topics.check_id(farm, "farm id")
    base = f"{topics.PREFIX}/{farm}"
    return [(f"{base}/status/+", 1), (f"{base}/frame/+", 0), (f"{base}/metrics", 0),
            (f"{base}/cmd_result", 1), (topics.learner_metrics(), 0),
            (topics.policy_pointer(), 1)]


class MqttSource:
    """``async for ev in source.events()`` until :meth:`close`."""

    def __init__(self, url: str, farm: str = "+", *, queue_size: int = 10_000,
                 backoff_s: tuple[float, float] = (0.2, 5.0)) -> None:
        self.address = parse_broker_url(url)
        self.filters = subscriptions(farm)
        self.description = f"{self.address} farm {farm}"
        self.broker_url = str(self.address)  # for command lines shown: never the password
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue(queue_size)
        self._client: aiomqtt.Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._backoff = backoff_s
        self.dropped = 0  # messages dropped because the app fell behind
        self.connects = 0

    def _put(self, ev: Event) -> None:
        try:
            self._queue.put_nowait(ev)
        except asyncio.QueueFull:
            self.dropped += 1

    async def events(self) -> AsyncIterator[Event]:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="tui-mqtt")
        while True:
            ev = await self._queue.get()
            if ev is None:
                return
            yield ev

    async def _run(self) -> None:
        delay = self._backoff[0]
        while not self._closed:
            client = aiomqtt.Client(**self.address.client_kwargs(),
                                    identifier=f"distrl-tui-{uuid.uuid4().hex[:12]}",
                                    clean_session=True, keepalive=15, timeout=10)
            try:
                async with client:
                    self._client = client
                    self.connects += 1
                    for flt, qos in self.filters:
                        await client.subscribe(flt, qos=qos)
                    delay = self._backoff[0]
                    self._put(ConnectionChanged(True, f"connected to {self.address}"))
                    async for m in client.messages:
                        payload = m.payload
                        data = payload if isinstance(payload, bytes) else (
                            payload.encode() if isinstance(payload, str) else
                            str(payload).encode() if payload is not None else b"")
                        self._put(Incoming(str(m.topic), data))
            except MqttConnectError as e:  # a refused login says so, and what to fix
                self._put(ConnectionChanged(False, connect_failure(self.address, e)))
            except aiomqtt.MqttError as e:
                self._put(ConnectionChanged(False, f"broker {self.address}: {e}"))
            except OSError as e:  # e.g. TLS setup; reported and retried like the rest
                self._put(ConnectionChanged(False, f"broker {self.address}: {e}"))
            finally:
                self._client = None
            if self._closed:
                break
            await asyncio.sleep(delay)
            delay = min(self._backoff[1], delay * 2)

    async def send(self, topic: str, payload: bytes) -> None:
        client = self._client
        if client is None or self._closed:
            raise SourceClosed(f"not connected to {self.address}")
        try:
            await client.publish(topic, payload, qos=1)
        except aiomqtt.MqttError as e:
            raise SourceClosed(f"publish to {self.address} failed: {e}") from e

    async def close(self) -> None:
        self._closed = True
        if self._task is not None:
            with contextlib.suppress(Exception):
                await cancel_and_wait(self._task)
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

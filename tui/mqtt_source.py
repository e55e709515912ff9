"""The live data source: an aiomqtt client of the wire contract (``distrl_sdk.wire``).

It subscribes to the topics the TUI shows, reconnects with backoff whenever the broker
goes away (re-subscribing brings the retained device statuses back), and publishes
commands. It never parses payloads: the app does, with ``parse_message``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import aiomqtt

from distrl_sdk.wire import topics
from tui.source import ConnectionChanged, Event, Incoming, SourceClosed

__all__ = ["BrokerURL", "MqttSource", "parse_broker_url", "subscriptions"]

log = logging.getLogger(__name__)
_SCHEMES = {"mqtt": (1883, False), "tcp": (1883, False), "mqtts": (8883, True),
            "ssl": (8883, True), "tls": (8883, True)}


@dataclass(frozen=True)
class BrokerURL:
    hostname: str
    port: int
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None
    insecure: bool = False

    def client_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"hostname": self.hostname, "port": self.port}
        if self.username is not None:
            kw["username"] = self.username
            kw["password"] = self.password
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            if self.insecure:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            kw["tls_context"] = ctx
        return kw

    def __str__(self) -> str:  # never shows the password
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.hostname}:{self.port}"


def parse_broker_url(url: str) -> BrokerURL:
    """``mqtt://[user[:pass]@]host[:port]`` or ``mqtts://…`` (``?ca=PATH``,
    ``?insecure=1``); a bare ``host[:port]`` means ``mqtt://``. Same syntax as the farm's
    ``--broker`` (the TUI keeps its own copy: it imports nothing from ``farm``)."""
    if "://" not in url:
        url = "mqtt://" + url
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(f"unsupported broker URL scheme {parts.scheme!r} (mqtt:// or mqtts://)")
    default_port, tls = _SCHEMES[scheme]
    if not parts.hostname:
        raise ValueError(f"no host in broker URL {url!r}")
    try:
        port = parts.port or default_port
    except ValueError as e:
        raise ValueError(f"bad port in broker URL: {e}") from None
    q = parse_qs(parts.query)
    return BrokerURL(
        hostname=parts.hostname, port=port,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        tls=tls, ca_file=q["ca"][0] if "ca" in q else None,
        insecure=q.get("insecure", ["0"])[0].lower() in ("1", "true", "yes"))


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
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        with contextlib.suppress(asyncio.QueueFull):
            self._queue.put_nowait(None)

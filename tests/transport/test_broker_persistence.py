"""The embedded mosquitto keeps a persistent session's queued QoS 1 messages across a
restart, also when started as root (it drops to user ``mosquitto``, which must be able to
write the persistence dir)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import aiomqtt
import pytest

from farm.broker import EmbeddedBroker, find_mosquitto

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")


async def _queue_restart_drain(b: EmbeddedBroker, n: int = 5) -> list[bytes]:
    async with aiomqtt.Client(b.host, port=b.port, identifier="learner-persist",
                              clean_session=False) as c:
        await c.subscribe("persist/#", qos=1)
    async with aiomqtt.Client(b.host, port=b.port) as p:
        for i in range(n):
            await p.publish("persist/x", f"m{i}".encode(), qos=1)
    await b.restart()  # clean stop: mosquitto saves its persistence file
    got: list[bytes] = []
    async with aiomqtt.Client(b.host, port=b.port, identifier="learner-persist",
                              clean_session=False) as c:
        # the queued messages arrive right after CONNACK; the timeout only bounds a failure
        async with asyncio.timeout(20):
            async for m in c.messages:
                assert isinstance(m.payload, bytes)
                got.append(m.payload)
                if len(got) == n:
                    break
    return got


async def test_queued_messages_survive_restart_in_temp_dir() -> None:
    async with EmbeddedBroker(backend="mosquitto") as b:
        assert await _queue_restart_drain(b) == [f"m{i}".encode() for i in range(5)]
        assert "Permission denied" not in (b.data_dir / "mosquitto.log").read_text()


async def test_queued_messages_survive_restart_in_callers_dir(tmp_path: Path) -> None:
    data = tmp_path / "broker"
    data.mkdir(mode=0o700)
    owner = data.stat().st_uid
    async with EmbeddedBroker(backend="mosquitto", data_dir=data) as b:
        assert await _queue_restart_drain(b) == [f"m{i}".encode() for i in range(5)]
    assert data.stat().st_uid == owner  # a caller's dir keeps its owner
    assert (data / "mosquitto.db").is_file()


def test_user_line_when_root() -> None:
    conf = EmbeddedBroker(backend="mosquitto", port=12345).config_text()
    if os.geteuid() == 0:
        assert "\nuser mosquitto\n" in conf or "\nuser root\n" in conf
    else:
        assert "\nuser " not in conf

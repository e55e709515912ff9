"""The TUI against a real mosquitto: retained statuses, frames and garbage arrive over
MQTT, the broker restarts, the TUI reconnects and keeps showing devices, and a key
press reaches the farm's command topic."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiomqtt
import pytest

from distrl_sdk.wire import Command, Message, parse_message, topics
from farm.broker import EmbeddedBroker, find_mosquitto
from tests.tui.conftest import FARM, fixed_clock
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.fleet import FleetScreen
from tui.mqtt_source import MqttSource

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")


async def until(cond: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def publish(url_port: int, *msgs: tuple[str, bytes], retain: bool = False) -> None:
    async with aiomqtt.Client("127.0.0.1", url_port, identifier="test-farm") as c:
        for topic, payload in msgs:
            await c.publish(topic, payload, qos=1, retain=retain)


async def test_survives_garbage_and_a_broker_restart() -> None:
    async with EmbeddedBroker(backend="mosquitto") as broker:
        await publish(broker.port, *(ff.status(FARM, f"sim-{i}", "busy", step=i)
                                     for i in range(3)), retain=True)
        source = MqttSource(broker.url, "+", backoff_s=(0.05, 0.3))
        app = DistrlTui(source, clock=fixed_clock, tick_s=0.05)
        async with app.run_test(size=(130, 40)) as pilot:
            m = app.model
            await until(lambda: len(m.devices) == 3, what="retained statuses")
            # frames, and garbage on every kind of topic the TUI reads
            await publish(broker.port, ff.frame(FARM, "sim-1", step=4, seed=1),
                          (topics.status(FARM, "sim-0"), b"\xff\xfe not json"),
                          (topics.frame(FARM, "sim-2"), b"DRF1 broken"),
                          ff.frame(FARM, "sim-2", image=b"JFIF? no"),
                          (topics.learner_metrics(), b'{"schema": "metrics"}'),
                          (topics.cmd_result(FARM), b"[1, 2, 3]"),
                          ff.metrics(1, {"success_rate": 0.5}))
            await until(lambda: sum(m.garbage.values()) >= 5, what="garbage counted")
            await until(lambda: m.devices[(FARM, "sim-1")].thumb is not None, what="thumb")
            assert m.series["success_rate"][-1] == 0.5
            assert m.garbage["bad_image"] == 1

            await broker.restart()
            await until(lambda: source.connects >= 2 and m.connected, what="reconnect")
            assert any("connected" in ln.text for ln in m.logs)
            assert any(ln.level == "warning" and "broker" in ln.text for ln in m.logs)
            # new traffic after the restart is shown; the devices seen before remain
            await publish(broker.port, ff.status(FARM, "sim-9", "ready"),
                          ff.status(FARM, "sim-0", "paused"))
            await until(lambda: (FARM, "sim-9") in m.devices
                        and m.devices[(FARM, "sim-0")].state == "paused", what="new status")
            await pilot.pause(0.2)
            screen = app.screen
            assert isinstance(screen, FleetScreen)
            assert [k[1] for k in screen._order] == ["sim-0", "sim-1", "sim-2", "sim-9"]

            # a command goes out over the same connection
            got: list[Command] = []

            async def listen() -> None:
                async with aiomqtt.Client("127.0.0.1", broker.port,
                                          identifier="test-listener") as c:
                    await c.subscribe(f"{topics.PREFIX}/{FARM}/cmd/+", qos=1)
                    ready.set()
                    async for msg in c.messages:
                        parsed = parse_message(str(msg.topic), msg.payload)
                        if isinstance(parsed, Message) and isinstance(parsed.body, Command):
                            got.append(parsed.body)
                            return

            ready = asyncio.Event()
            task = asyncio.create_task(listen())
            await asyncio.wait_for(ready.wait(), 10)
            await pilot.press("right", "r")  # the wall: the next tile
            await asyncio.wait_for(task, 10)
            assert [(c.op, c.device_id) for c in got] == [("reconnect", "sim-1")]


async def test_a_refused_login_says_why_and_an_operator_account_connects() -> None:
    from farm.broker_acl import BrokerAccounts
    from tui.source import ConnectionChanged

    accounts = BrokerAccounts.generate([FARM])
    async with EmbeddedBroker(backend="mosquitto", accounts=accounts) as broker:
        for url, connected in ((broker.url, False),
                               (accounts.url_for(broker.url, "operator"), True)):
            source = MqttSource(url, "+", backoff_s=(0.05, 0.3))
            events = source.events()
            try:
                async with asyncio.timeout(20):
                    async for ev in events:
                        if isinstance(ev, ConnectionChanged):
                            break
            finally:
                await source.close()
            assert ev.connected is connected
            if not connected:
                assert "refused the login" in ev.detail and "--password-file" in ev.detail

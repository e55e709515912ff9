"""Refused messages are counted one by one but logged rate-limited: the first of each
reason at WARNING, then summaries (how many more, by reason, with totals). A flood of
garbage from anyone on the broker costs a handful of log lines, not one each. Real
mosquitto; the farm's real command listener, publisher and policy subscriber."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import aiomqtt
import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import CommandResult, DeviceStatus, encode_envelope, topics
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.commands import CommandListener
from farm.controller import FarmConfig, FarmController
from farm.learner.weights import LearnedPolicyProvider
from farm.transport import Publisher
from farm.transport.reject_log import RejectLog

FARM = "rl"
FLOOD = 300


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_first_per_reason_then_summaries(caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.rejectlog")
    clock = Clock()
    rl = RejectLog(log, "thing", every_s=10, clock=clock, quiet=("duplicate",))
    caplog.set_level(logging.WARNING, logger="test.rejectlog")
    for i in range(1000):
        clock.t = i * 0.05  # 50 s of a steady flood, two reasons
        rl.reject("bad_json" if i % 2 else "too_large", f"#{i}")
        rl.reject("duplicate")
    rl.flush()
    assert rl.counts == {"bad_json": 500, "too_large": 500, "duplicate": 1000}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == rl.lines <= 2 + 50 / 10 + 1, lines
    assert sum("thing refused (" in m for m in lines) == 2  # the first of each, with detail
    assert "#0" in lines[0] and "#1" in lines[1]
    summaries = [m for m in lines if "more refused" in m]
    assert summaries and "totals: bad_json 500, duplicate 1000, too_large 500" in summaries[-1]
    # every refusal after the first of its reason is in exactly one summary
    more = sum(int(m.split(": ", 1)[1].split(" more")[0]) for m in summaries)
    assert more == 998
    assert not any("duplicate" in m for m in lines[:2])


async def _until(cond: Callable[[], bool], what: str, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - polls counters owned by other tasks
            await asyncio.sleep(0.02)


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_a_flood_of_garbage_costs_a_few_lines(tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)

    async def execute(cmd: object) -> CommandResult:
        raise AssertionError("nothing hostile may be executed")

    async with EmbeddedBroker(backend="mosquitto") as broker:
        cmds = CommandListener(broker.url, FARM, execute, known_device=lambda s: False)
        pub = Publisher(broker.url, FARM, tmp_path / "spool")
        provider = LearnedPolicyProvider(broker.url)
        await cmds.start()
        await pub.start()
        await provider.start()
        try:
            await _until(lambda: cmds.connected.is_set() and pub.connected.is_set()
                         and provider.subscriber.connected.is_set(), "connected")
            host, port = broker.url.removeprefix("mqtt://").split(":")
            async with aiomqtt.Client(host, int(port), identifier="fuzzer") as c:
                wrong = encode_envelope(DeviceStatus(device_id="x", state="ready"),
                                        farm_id=FARM)
                for i in range(FLOOD):
                    await c.publish(topics.cmd(FARM, "x"), b"{not json" if i % 2 else wrong,
                                    qos=1)
                    await c.publish(topics.ack(FARM), b"\x00\xffgarbage", qos=1)
                    await c.publish(topics.policy_pointer(), b"[1, 2, 3]", qos=1)
                await _until(lambda: sum(cmds.rejects.values()) == FLOOD
                             and sum(pub.rejects.values()) == FLOOD
                             and sum(provider.refused.values()) == FLOOD, "all counted")
                await c.publish(topics.policy_pointer(), b"", qos=1, retain=True)
            assert cmds.rejects == {"bad_json": FLOOD // 2, "wrong_schema": FLOOD // 2}
            assert pub.rejects == {"bad_json": FLOOD}
            assert provider.refused == {"bad_pointer": FLOOD}
            # the farm's summary carries every counter, refused policy updates too
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id=FARM, spool_dir=tmp_path / "spool2",
                tasks=[TaskRegistry.discover().get("settings.wifi_off")]), policies=provider)
            ctl.commands = cmds
            ctl.publisher = pub
            s = ctl.summary()
            assert s["policy_refused"] == {"bad_pointer": FLOOD}
            assert s["command_rejects"]["bad_json"] == FLOOD // 2
            assert s["command_rejects"]["ack:bad_json"] == FLOOD
        finally:
            await provider.stop()
            await pub.stop()
            await cmds.stop()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING
                and r.name.startswith("farm.")]
    # 4 first-of-a-reason lines, and at most one summary each at stop (flood < 60 s)
    assert len(warnings) <= 8, [r.getMessage() for r in warnings]
    text = "\n".join(r.getMessage() for r in warnings)
    assert f"totals: bad_json {FLOOD // 2}, wrong_schema {FLOOD // 2}" in text
    assert f"totals: bad_pointer {FLOOD}" in text

"""Operator commands over MQTT against a real mosquitto and real sim phones.

Each op is checked by what an operator would see: the ``CommandResult`` on
``cmd_result``, the retained status on ``status/<device>`` and the registry's state.
Hostile messages are counted and collection keeps going.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiomqtt
import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import (
    Command,
    CommandResult,
    DeviceStatus,
    Message,
    encode_envelope,
    parse_message,
    topics,
)
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

FARM = "cf"
FAST = LifecycleConfig(heartbeat_s=0.3, reaper_s=3, probe_timeout_s=2, boot_timeout_s=10,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.5,
                       reconnect_timeout_s=3.0)
pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")


@dataclass
class Watcher:
    """An MQTT client that records statuses and command results of the farm."""

    client: aiomqtt.Client
    statuses: dict[str, list[DeviceStatus]] = field(default_factory=dict)
    results: dict[str, CommandResult] = field(default_factory=dict)
    raw_results: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # as sent

    async def pump(self) -> None:
        async for m in self.client.messages:
            p = parse_message(str(m.topic), m.payload)
            if isinstance(p, Message) and isinstance(p.body, DeviceStatus):
                self.statuses.setdefault(p.body.device_id, []).append(p.body)
            elif isinstance(p, Message) and isinstance(p.body, CommandResult):
                self.results[p.body.command_id] = p.body
                self.raw_results[p.body.command_id] = (str(m.topic), bytes(m.payload))

    async def send(self, device: str, op: str, **kw: object) -> str:
        cmd = Command(device_id=device, op=op, **kw)  # type: ignore[arg-type]
        await self.client.publish(topics.cmd(FARM, device), encode_envelope(cmd, farm_id=FARM),
                                  qos=1)
        return cmd.id

    async def result(self, cmd_id: str, timeout: float = 20) -> CommandResult:
        await until(lambda: cmd_id in self.results, timeout, f"no result for {cmd_id}")
        return self.results[cmd_id]

    def last(self, device: str) -> DeviceStatus | None:
        s = self.statuses.get(device)
        return s[-1] if s else None


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out: {what}")
        await asyncio.sleep(0.05)


@dataclass
class Rig:
    ctl: FarmController
    watch: Watcher
    serials: list[str]


@contextlib.asynccontextmanager
async def rig(tmp: Path, n: int = 3, **cfg: object) -> AsyncIterator[Rig]:
    reg = TaskRegistry.discover()
    tasks = [reg.get("settings.wifi_off"), reg.get("chrome.search")]
    with BackgroundFarm(n, seed=3, profile="emulator") as sims, PrivateAdbServer() as adb:
        async with EmbeddedBroker(backend="mosquitto") as broker:
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id=FARM, adb_port=adb.port, devices=sims.serials,
                tasks=tasks, spool_dir=tmp / "spool", lifecycle=FAST, flush_timeout_s=2,
                episode_timeout_s=60, sim_devices=frozenset(sims.serials),
                **cfg))  # type: ignore[arg-type]
            run = asyncio.create_task(ctl.run())
            async with aiomqtt.Client("127.0.0.1", int(broker.url.rsplit(":", 1)[1]),
                                      identifier="test-operator") as client:
                await client.subscribe(f"{topics.PREFIX}/{FARM}/status/+", qos=1)
                await client.subscribe(topics.cmd_result(FARM), qos=1)
                w = Watcher(client)
                pump = asyncio.create_task(w.pump())
                try:
                    await until(lambda: ctl.collector is not None and ctl.commands is not None
                                and ctl.commands.connected.is_set(), 30, "farm started")
                    yield Rig(ctl, w, sims.serials)
                finally:
                    pump.cancel()
                    ctl.stop()
                    await asyncio.wait_for(run, 60)


def state(r: Rig, serial: str) -> DeviceState:
    assert r.ctl.registry is not None
    return r.ctl.registry.devices[serial].state


def history(r: Rig, serial: str) -> list[tuple[str, str, str]]:
    assert r.ctl.registry is not None
    return [(str(c.previous), str(c.state), c.event)
            for c in r.ctl.registry.devices[serial].history]


@pytest.mark.slow
async def test_each_op_is_carried_out_and_observable(tmp_path: Path) -> None:
    async with rig(tmp_path) as r:
        a, b, c = r.serials
        w = r.watch
        # pause while busy: the episode finishes, then the device stays paused
        await until(lambda: state(r, a) is DeviceState.BUSY, 20, f"{a} busy")
        res = await w.result(await w.send(a, "pause"))
        assert res.ok and "after the current episode" in (res.detail or ""), res
        await until(lambda: (s := w.last(a)) is not None and s.state == "paused", 40,
                    f"{a} paused on the wire")
        assert state(r, a) is DeviceState.PAUSED
        done = r.ctl.stats.by_device[a]
        assert ("busy", "paused", "released") in history(r, a)  # it finished, then paused
        await asyncio.sleep(2.5)
        assert r.ctl.stats.by_device[a] == done, "a paused device took a new episode"
        assert state(r, a) is DeviceState.PAUSED
        # resume: it leases again
        res = await w.result(await w.send(a, "resume"))
        assert res.ok
        await until(lambda: r.ctl.stats.by_device[a] > done or state(r, a) is DeviceState.BUSY,
                    20, f"{a} working again")

        # quarantine while busy: the episode is aborted at once
        await until(lambda: state(r, b) is DeviceState.BUSY, 20, f"{b} busy")
        t0 = time.monotonic()
        res = await w.result(await w.send(b, "quarantine"))
        assert res.ok
        await until(lambda: r.ctl.stats.abort_reasons.get("lease lost", 0) >= 1, 15,
                    "the in-flight episode aborted")
        assert time.monotonic() - t0 < 15
        assert ("busy", "quarantined", "quarantined") in history(r, b)  # cut short
        await until(lambda: (s := w.last(b)) is not None and s.state == "quarantined", 10,
                    f"{b} quarantined on the wire")
        # release: back through preparing to ready/busy
        res = await w.result(await w.send(b, "release"))
        assert res.ok, res
        await until(lambda: state(r, b) in (DeviceState.READY, DeviceState.BUSY), 20,
                    f"{b} back")
        res = await w.result(await w.send(b, "release"))
        assert not res.ok and "not quarantined" in (res.detail or "")

        # reconnect: adb disconnect/connect for a TCP target, then a probe
        res = await w.result(await w.send(c, "reconnect"), timeout=30)
        assert res.ok, res
        assert res.result["boot_completed"] is True and res.result["battery"] is not None

        # run_task: that task, with those params, is the device's next episode
        bad = await w.result(await w.send(c, "run_task", args={"task": "no.such_task"}))
        assert not bad.ok and "unknown task" in (bad.detail or "")
        res = await w.result(await w.send(c, "run_task", args={
            "task": "chrome.search", "params": {"query": "zebra crossing"}}))
        assert res.ok, res
        await until(lambda: any("zebra crossing" in (s.instruction or "")
                                for s in w.statuses.get(c, [])), 40,
                    "the queued task running on its device")
        live = next(s for s in w.statuses[c] if "zebra crossing" in (s.instruction or ""))
        assert live.state == "busy" and live.task == "chrome.search" and live.kind == "sim"
        assert r.ctl.sampler.directed == 1


@pytest.mark.slow
async def test_hostile_messages_are_counted_and_collection_goes_on(tmp_path: Path) -> None:
    async with rig(tmp_path, n=2) as r:
        w = r.watch
        a = r.serials[0]
        await until(lambda: r.ctl.stats.episodes >= 1, 40, "first episode")
        before = r.ctl.stats.episodes
        cmd_topic = topics.cmd(FARM, a)
        pub = w.client.publish
        await pub(cmd_topic, b"{not json", qos=1)
        await pub(cmd_topic, encode_envelope(DeviceStatus(device_id=a, state="ready"),
                                             farm_id=FARM), qos=1)  # wrong schema
        await pub(cmd_topic, b"{" + b" " * 400_000 + b"}", qos=1)  # huge
        env = json.loads(encode_envelope(Command(device_id=a, op="pause"), farm_id=FARM))
        env["body"]["op"] = "self_destruct"
        unknown_op_id = env["body"]["id"]
        await pub(cmd_topic, json.dumps(env).encode(), qos=1)
        ghost = await w.send("ghost-phone", "pause")
        expired = await w.send(a, "pause", expires_at=time.time() - 5)
        await pub(topics.cmd(FARM, r.serials[1]), encode_envelope(
            Command(device_id=a, op="pause"), farm_id=FARM), qos=1)  # topic ≠ body
        # the Publisher's ack topic gets garbage too
        await pub(topics.ack(FARM), b"\x00\xffgarbage", qos=1)
        await pub(topics.ack(FARM), b'{"schema": "trajectory_ack", "version": 1, "body": {}}',
                  qos=1)
        await until(lambda: sum(r.ctl.rejects.values()) >= 9, 15,
                    f"all rejected: {dict(r.ctl.rejects)}")
        rej = r.ctl.rejects
        assert rej["ack:bad_json"] == 1 and rej["ack:bad_body"] == 1, rej
        assert rej["bad_json"] == 1 and rej["wrong_schema"] == 1 and rej["too_large"] == 1
        assert rej["unknown_op"] == 1 and rej["unknown_device"] == 1
        assert rej["expired"] == 1 and rej["device_mismatch"] == 1
        for cid, word in ((unknown_op_id, "unknown op"), (ghost, "unknown device"),
                          (expired, "expired")):
            res = await w.result(cid)
            assert not res.ok and word in (res.detail or ""), res
        assert state(r, a) is not DeviceState.PAUSED  # nothing hostile got executed
        # still collecting, still answering
        await until(lambda: r.ctl.stats.episodes >= before + 2, 40, "collection goes on")
        ok = await w.result(await w.send(a, "resume"))
        assert ok.ok
        # a redelivered command (same id) is answered again but not run twice
        cmd = Command(device_id=a, op="resume")
        data = encode_envelope(cmd, farm_id=FARM)
        await pub(cmd_topic, data, qos=1)
        await w.result(cmd.id)
        await pub(cmd_topic, data, qos=1)
        await until(lambda: r.ctl.rejects["duplicate"] == 1, 10, "duplicate counted")
        assert r.ctl.commands is not None
        assert r.ctl.commands.results["resume:ok"] == 2


async def test_a_farm_that_trusts_an_operator_key_runs_only_what_it_signed(
        tmp_path: Path) -> None:
    """[trust]: an anonymous client quarantined 8/8 devices. With operator keys, an
    unsigned command, one signed by another key, and the operator's signed `pause`
    rewritten into `quarantine` are each refused, answered and counted; the operator's
    own signed command runs, and replayed it is not run again."""
    from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict, check_envelope

    operator, intruder = SigningKey.generate("operator"), SigningKey.generate("intruder")
    farm_key = SigningKey.generate("farm")
    async with rig(tmp_path, n=1, trusted_operators=TrustedKeys.of([operator]),
                   signing_key=farm_key) as r:
        w, a = r.watch, r.serials[0]
        topic = topics.cmd(FARM, a)

        def signed(cmd: Command, key: SigningKey | None) -> bytes:
            return encode_envelope(cmd, farm_id=FARM, signer=key)

        unsigned, foreign = Command(device_id=a, op="quarantine"), \
            Command(device_id=a, op="quarantine")
        rewritten = json.loads(signed(Command(device_id=a, op="pause"), operator))
        rewritten["body"]["op"] = "quarantine"
        await w.client.publish(topic, signed(unsigned, None), qos=1)
        await w.client.publish(topic, signed(foreign, intruder), qos=1)
        await w.client.publish(topic, json.dumps(rewritten).encode(), qos=1)
        for cid, why in ((unsigned.id, "unsigned"), (foreign.id, "unknown_key"),
                         (rewritten["body"]["id"], "bad_signature")):
            res = await w.result(cid)
            assert not res.ok and why in (res.detail or ""), res
        rej = r.ctl.rejects
        assert (rej["unsigned"], rej["unknown_key"], rej["bad_signature"]) == (1, 1, 1), rej
        assert state(r, a) is not DeviceState.QUARANTINED
        real = Command(device_id=a, op="quarantine", expires_at=time.time() + 60)
        await w.client.publish(topic, signed(real, operator), qos=1)
        assert (await w.result(real.id)).ok
        await until(lambda: state(r, a) is DeviceState.QUARANTINED, 10, "quarantined")
        w.results.clear()
        await w.client.publish(topic, signed(real, operator), qos=1)  # a replay
        await until(lambda: r.ctl.rejects["duplicate"] == 1, 10, "replay counted")
        assert r.ctl.commands is not None and r.ctl.commands.results["quarantine:ok"] == 1
        answer = w.raw_results[real.id]
    # the farm signed its answer; an operator's TUI believes it, and not a forgery of it
    # (an intruder's "ok" would say a device was quarantined when it was not)
    from tui.model import FleetModel

    assert check_envelope(answer[1], TrustedKeys.of([farm_key]))[0] is Verdict.OK
    tui = FleetModel(trusted_farms=TrustedKeys.of([farm_key]))
    forged = CommandResult(command_id="c-forged", device_id=a, ok=True, detail="quarantined")
    for key in (None, intruder):
        tui.ingest(topics.cmd_result(FARM), encode_envelope(forged, farm_id=FARM, signer=key))
    tui.ingest(*answer)
    assert list(tui.results) == [real.id]
    assert (tui.garbage["result_unsigned"], tui.garbage["result_unknown_key"]) == (1, 1)

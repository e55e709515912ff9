"""[trust], all attacks at once on a live system: a learner and a farm of sim phones on a
mosquitto that lets anyone publish (the worst case: no accounts, no ACL), and a hostile
client that, while they run, forges acks for every trajectory the farm made, commands
quarantining every phone, trajectories as the farm (new ids and the real ones), and
policy pointers re-announcing the learner's own blob as version 10⁹ — unsigned and
signed by a key nobody trusts. With the parts' keys, nothing the intruder sends has any
effect: nothing is deleted, no phone is commanded, no forged step enters replay, and the
farm keeps following the learner's real versions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import (
    Command,
    TrajectoryAck,
    encode_envelope,
    encode_trajectory,
    split_chunks,
    topics,
)
from distrl_sdk.wire.signing import SigningKey, TrustedKeys
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.learner.service import LearnerConfig, LearnerService
from farm.learner.weights import LearnedPolicyProvider
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from farm.transport import parse_broker_url
from tests.transport.conftest import make_traj

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")]

FARM = "f1"
FAST = LifecycleConfig(heartbeat_s=0.2, reaper_s=1.5, probe_timeout_s=0.5, boot_timeout_s=5,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                       reconnect_timeout_s=1.0)


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(backend="mosquitto") as b:  # anonymous: anyone may publish
        yield b


async def intruder(url: str, ctl: FarmController, serials: list[str],
                   provider: LearnedPolicyProvider, key: SigningKey,
                   stop: asyncio.Event) -> int:
    """Every 0.3 s, every attack, unsigned and signed by ``key``; returns rounds made."""
    rounds = 0
    async with aiomqtt.Client(**parse_broker_url(url).client_kwargs(),
                              identifier="intruder") as c:
        while not stop.is_set():
            for signer in (None, key):
                ids = list(ctl.sink.ids)
                if ids:
                    await c.publish(topics.ack(FARM), encode_envelope(
                        TrajectoryAck(ids=ids, learner_id="learner"), farm_id=FARM,
                        signer=signer), qos=1)
                for s in serials:
                    await c.publish(topics.cmd(FARM, s), encode_envelope(
                        Command(device_id=s, op="quarantine"), farm_id=FARM, signer=signer),
                        qos=1)
                for tid in [*ids[-1:], f"evil{rounds:04d}{signer is not None:d}"]:
                    msg = make_traj(farm=FARM).model_copy(update={"id": tid})
                    payload = encode_trajectory(msg, signer=signer)
                    for chunk in split_chunks(tid, payload):
                        await c.publish(topics.traj(FARM, tid), chunk, qos=1)
                real = provider.subscriber.last_pointer  # the learner's, as farms got it
                if real is not None:  # its blob, re-announced as version 10⁹
                    forged = real.model_copy(update={"version": 10**9})
                    await c.publish(topics.policy_pointer(),
                                    encode_envelope(forged, signer=signer), qos=1, retain=True)
            rounds += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.3)
    return rounds


async def test_an_intruder_on_an_open_broker_changes_nothing(broker: EmbeddedBroker,
                                                             tmp_path: Path) -> None:
    keys = {r: SigningKey.generate(r) for r in ("learner", "farm", "operator", "intruder")}
    for role in ("learner", "farm"):
        keys[role].save(tmp_path / "keys" / f"{role}.key")
    learner_trust = TrustedKeys.of([keys["learner"]])
    svc = LearnerService(LearnerConfig.model_validate(dict(
        broker_url=broker.url, run_dir=tmp_path / "run", farm_id=FARM,
        signing_key=tmp_path / "keys" / "learner.key",
        farm_keys=[tmp_path / "keys" / "farm.pub"],
        algorithm="aride", policy_kind="uitree",
        policy_config={"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0},
        algo_config={"min_episodes": 2, "batch_episodes": 2, "critic_hidden": 16,
                     "max_policy_lag": None, "max_stale_share": None},
        publish_every=2, checkpoint_every_s=3600, metrics_every_s=0.5,
        client_id="learner-locked", torch_threads=1)))
    learned: list[str] = []
    original = svc._on_trajectory

    def spy(decoded: Any) -> Any:  # what reaches the trainer
        learned.append(decoded.msg.id)
        return original(decoded)

    svc._on_trajectory = spy  # type: ignore[method-assign]
    task = asyncio.create_task(svc.run())
    await asyncio.wait_for(svc.ready.wait(), 60)
    reg = TaskRegistry.discover()
    tasks = [reg.get(n) for n in ("settings.wifi_off", "settings.open_display")]
    stop = asyncio.Event()
    with BackgroundFarm(2, seed=3) as sims, PrivateAdbServer() as adb:
        serials = sims.serials
        async with LearnedPolicyProvider(broker.url, client_id="f1-weights",
                                         trusted=learner_trust) as provider:
            await provider.wait_ready(30)
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id=FARM, adb_port=adb.port, devices=serials,
                tasks=tasks, policy="learned", duration_s=15.0, spool_dir=tmp_path / "spool",
                lifecycle=FAST, flush_timeout_s=20.0, episode_timeout_s=20.0,
                trusted_learners=learner_trust,
                trusted_operators=TrustedKeys.of([keys["operator"]]),
                signing_key=keys["farm"]), policies=provider)
            run = asyncio.create_task(ctl.run())
            attack = asyncio.create_task(
                intruder(broker.url, ctl, serials, provider, keys["intruder"], stop))
            stats = await asyncio.wait_for(run, 120)
            stop.set()
            rounds = await asyncio.wait_for(attack, 30)
            played = provider.version
            refused = dict(provider.subscriber.refused)
    svc.stop()
    summary = await asyncio.wait_for(task, 60)

    assert rounds >= 10 and stats.episodes >= 4
    # nothing deleted: every trajectory the farm made reached the learner, once
    assert ctl.flushed is True and sorted(learned) == sorted(ctl.sink.ids)
    assert len(set(learned)) == len(learned)
    # no forged step in replay: only the farm's own ids, none of the intruder's
    assert not [t for t in learned if t.startswith("evil")]
    assert svc.subscriber is not None
    sub_rejects = svc.subscriber.rejects
    assert sub_rejects["unsigned"] >= 1 and sub_rejects["unknown_key"] >= 1, sub_rejects
    # the farm refused the forged acks and commands, counted
    assert ctl.publisher.rejects["unsigned"] >= 1 and ctl.publisher.rejects["unknown_key"] >= 1
    assert ctl.rejects["unsigned"] >= 1 and ctl.rejects["unknown_key"] >= 1, ctl.rejects
    # no phone was ever commanded
    assert ctl.registry is not None
    for s in serials:
        states = {c.state for c in ctl.registry.devices[s].history}
        assert DeviceState.QUARANTINED not in states and DeviceState.PAUSED not in states
    # the farm followed the learner's real versions, never the forged 10⁹
    assert played is not None and 1 <= played <= summary["version"] < 10**9
    assert refused.get("unsigned", 0) >= 1 and refused.get("unknown_key", 0) >= 1, refused

"""The forged-ack and forged-data attacks of [trust] against a real broker: anyone who can
publish on a farm's ack topic could make it delete spooled trajectories the learner never
saw, and anyone who can publish trajectories could fill replay. A farm that trusts the
learner's key deletes only on acks that key signed; a learner that trusts farm keys
learns only trajectories they signed, and never acks the others."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from distrl_sdk.wire import (
    DecodedTrajectory,
    TrajectoryAck,
    encode_envelope,
    encode_trajectory,
    topics,
)
from distrl_sdk.wire.signing import SigningKey, TrustedKeys
from farm.broker import EmbeddedBroker
from farm.transport import Publisher, TrajectorySubscriber, parse_broker_url
from tests.transport.conftest import fast_backoff, make_traj

LEARNER, INTRUDER = SigningKey.generate("learner"), SigningKey.generate("intruder")
FARM_KEY = SigningKey.generate("farm")


async def _until(pred: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not pred():  # noqa: ASYNC110 - polling counters in a test
            await asyncio.sleep(0.02)


def _ack(ids: list[str], signer: SigningKey | None) -> bytes:
    return encode_envelope(TrajectoryAck(ids=ids, learner_id="learner"), farm_id="farm1",
                           signer=signer)


async def test_only_acks_the_trusted_learner_signed_delete_the_spool(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    pub = Publisher(broker.url, "farm1", tmp_path / "spool", backoff=fast_backoff(),
                    resend_after_s=2.0, trusted_acks=TrustedKeys.of([LEARNER]))
    msgs = [make_traj() for _ in range(6)]
    ids = [m.id for m in msgs]
    async with pub:
        await asyncio.wait_for(pub.connected.wait(), 20)
        for m in msgs:  # no learner yet: they wait in the spool
            await pub.publish(m)
        await _until(lambda: len(pub.spool) == 6)
        # the learner's genuine ack for one id, rewritten to name all of them
        tampered = json.loads(_ack(ids[:1], LEARNER))
        tampered["body"]["ids"] = ids
        async with aiomqtt.Client(**parse_broker_url(broker.url).client_kwargs()) as c:
            for payload in (_ack(ids, None), _ack(ids, INTRUDER),
                            json.dumps(tampered).encode()):
                await c.publish(topics.ack("farm1"), payload, qos=1)
        await _until(lambda: sum(pub.rejects[r] for r in
                                 ("unsigned", "unknown_key", "bad_signature")) == 3)
        assert (pub.rejects["unsigned"], pub.rejects["unknown_key"],
                pub.rejects["bad_signature"]) == (1, 1, 1)
        assert len(pub.spool) == 6 and pub.stats.acked == 0
        # the real learner signs its acks: those let go of every trajectory
        got: list[DecodedTrajectory] = []
        sub = TrajectorySubscriber(broker.url, handler=got.append, backoff=fast_backoff(),
                                   client_id="learner-signed", signer=LEARNER)
        async with sub:
            assert await pub.wait_acked(30)
        assert len(pub.spool) == 0 and sorted(d.msg.id for d in got) == sorted(ids)


async def test_only_trajectories_a_trusted_farm_signed_are_learned(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    got: list[DecodedTrajectory] = []
    sub = TrajectorySubscriber(broker.url, handler=got.append, backoff=fast_backoff(),
                               client_id="learner-farms", signer=LEARNER,
                               trusted_farms=TrustedKeys.of([FARM_KEY]))
    frame = b"\x89PNG" + bytes(range(256)) * 8
    real = make_traj()
    signed = encode_trajectory(real, extra={"note": ("application/octet-stream", frame)},
                               signer=FARM_KEY)
    # the farm's signed header with the reward changed; then its attachment swapped
    hlen = int.from_bytes(signed[4:8], "big")
    header = json.loads(signed[8:8 + hlen])
    header["body"]["reward"] = 5.0
    new_header = json.dumps(header).encode()
    reward_forged = signed[:4] + len(new_header).to_bytes(4, "big") + new_header + \
        signed[8 + hlen:]
    frame_forged = signed[:-1] + bytes([signed[-1] ^ 0xFF])
    async with sub:
        await asyncio.wait_for(sub.connected.wait(), 20)
        evil = Publisher(broker.url, "farm1", tmp_path / "evil", backoff=fast_backoff(),
                         resend_after_s=600)
        async with evil:
            unsigned = make_traj()
            await evil.publish(unsigned)
            other = make_traj()
            await evil.publish_payload(other.id, encode_trajectory(other, signer=INTRUDER))
            # a forged payload under the real trajectory's id: refused and never acked
            await evil.publish_payload(real.id, reward_forged)
            await _until(lambda: sum(sub.rejects[r] for r in
                                     ("unsigned", "unknown_key", "bad_signature")) >= 3)
            assert (sub.rejects["unsigned"], sub.rejects["unknown_key"],
                    sub.rejects["bad_signature"]) == (1, 1, 1), dict(sub.rejects)
            assert got == [] and sub.acks_sent == 0 and len(evil.spool) == 3
        evil2 = Publisher(broker.url, "farm1", tmp_path / "evil2", backoff=fast_backoff(),
                          resend_after_s=600)
        async with evil2:
            await evil2.publish_payload(real.id, frame_forged)  # the header is intact
            await _until(lambda: sub.rejects["sha_mismatch"] == 1)
            assert got == [] and sub.acks_sent == 0
        # the real farm signs: its trajectory is learned and acked
        farm = Publisher(broker.url, "farm1", tmp_path / "farm", backoff=fast_backoff(),
                         signer=FARM_KEY)
        async with farm:
            await farm.publish(make_traj())
            assert await farm.wait_acked(30)
        assert len(got) == 1 and got[0].envelope.signer == FARM_KEY.key_id


async def test_a_farm_key_bound_to_its_farm_cannot_feed_another(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    """Two farms, each key trusted for its own farm id only (`--farm-key-for`): farm f1's
    key publishing as f2 is refused as wrong_farm and never acked; as f1 it is learned."""
    f1, f2 = SigningKey.generate("farm-f1"), SigningKey.generate("farm-f2")
    for k in (f1, f2):
        k.save(tmp_path / f"{k.name}.key")
    trust = TrustedKeys.load([], {"f1": [tmp_path / "farm-f1.pub"],
                                  "f2": [tmp_path / "farm-f2.pub"]})
    got: list[DecodedTrajectory] = []
    async with TrajectorySubscriber(broker.url, handler=got.append, backoff=fast_backoff(),
                                    client_id="learner-bound", signer=LEARNER,
                                    trusted_farms=trust) as sub:
        await asyncio.wait_for(sub.connected.wait(), 20)
        posing = Publisher(broker.url, "f2", tmp_path / "posing", backoff=fast_backoff(),
                           resend_after_s=600, signer=f1)
        async with posing:
            await posing.publish(make_traj())
            await _until(lambda: sub.rejects["wrong_farm"] == 1)
            assert got == [] and sub.acks_sent == 0 and len(posing.spool) == 1
        own = Publisher(broker.url, "f1", tmp_path / "own", backoff=fast_backoff(), signer=f1)
        async with own:
            await own.publish(make_traj())
            assert await own.wait_acked(30)
    assert [d.msg.farm_id for d in got] == ["f1"]

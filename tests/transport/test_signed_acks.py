"""The forged-ack attack of [trust] against a real broker: anyone who can publish on a
farm's ack topic could make it delete spooled trajectories the learner never saw. A farm
that trusts the learner's key deletes only on acks that key signed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import aiomqtt

from distrl_sdk.wire import DecodedTrajectory, TrajectoryAck, encode_envelope, topics
from distrl_sdk.wire.signing import SigningKey, TrustedKeys
from farm.broker import EmbeddedBroker
from farm.transport import Publisher, TrajectorySubscriber, parse_broker_url
from tests.transport.conftest import fast_backoff, make_traj

LEARNER, INTRUDER = SigningKey.generate("learner"), SigningKey.generate("intruder")


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

"""Acks wait for the learner's durability: a handler's awaitable gates the ack (real
mosquitto), and the learner journal's group commit covers a burst with few fsyncs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from distrl_sdk.wire import DecodedTrajectory
from farm.broker import EmbeddedBroker
from farm.learner.service import Journal
from farm.transport import Publisher, TrajectorySubscriber
from tests.transport.conftest import fast_backoff, make_traj


async def test_no_ack_before_the_handlers_awaitable_completes(broker: EmbeddedBroker,
                                                              tmp_path: Path) -> None:
    gate = asyncio.Event()
    got: list[str] = []

    async def durable() -> None:
        await gate.wait()

    def handler(d: DecodedTrajectory) -> object:
        got.append(d.msg.id)
        return durable()

    async with TrajectorySubscriber(broker.url, handler=handler, backoff=fast_backoff(),
                                    client_id="durable-test") as sub, \
            Publisher(broker.url, "farm1", tmp_path / "spool", backoff=fast_backoff(),
                      resend_after_s=0.5) as pub:
        await sub.connected.wait()
        ids = [await pub.publish(make_traj()) for _ in range(5)]
        async with asyncio.timeout(20):
            while len(got) < 5:  # noqa: ASYNC110 - polling a counter in a test
                await asyncio.sleep(0.02)
        # delivered, resent (0.5 s) and deduped while not durable: nothing acked yet
        assert not await pub.wait_acked(1.5)
        assert len(pub.spool) == 5 and sub.acks_sent == 0
        gate.set()
        assert await pub.wait_acked(20)
    assert sorted(got) == sorted(ids)  # each delivered once, however often it was resent


async def test_journal_group_commit_covers_a_burst_with_few_fsyncs(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal", fsync=True)
    lines = [journal.append(f"t{i}", None, "why") for i in range(200)]
    await asyncio.gather(*(journal.durable(n) for n in lines))
    assert journal.fsyncs <= 2  # one for the burst (two if one was under way already)
    later = journal.append("t200", None, "why")
    journal.rotate()  # a checkpoint: the segment is closed durable, waiters released
    await asyncio.wait_for(journal.durable(later), 5)
    assert [tid for tid, _, _ in journal.read_from(0)] == [f"t{i}" for i in range(201)]
    journal.close()

"""The spool's ledger: every id whose put became durable, kept after acks delete the
entries and across restarts (what bench/chaos.py reconciles against the learner)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from farm.broker import EmbeddedBroker
from farm.transport import Publisher, Spool, TrajectorySubscriber
from tests.transport.conftest import fast_backoff, make_traj


async def test_ledger_keeps_acked_ids_across_restarts(tmp_path: Path) -> None:
    ledger = tmp_path / "audit" / "ids.ledger"  # its folder is made on first use
    spool = Spool(tmp_path / "spool", ledger=ledger)
    await asyncio.gather(*(spool.put(f"t{i}", b"x" * 100) for i in range(5)))
    assert not await spool.put("t0", b"again")  # already spooled: not ledgered twice
    await spool.remove(["t0", "t1", "t2", "t3", "t4"])
    spool.close()
    assert len(Spool(tmp_path / "spool")) == 0  # the segments are gone …
    again = Spool(tmp_path / "spool", ledger=ledger)
    await again.put("t5", b"y")
    again.close()
    lines = ledger.read_text().splitlines()
    assert sorted(lines) == [f"t{i}" for i in range(6)]  # … the ledger keeps every id
    assert lines[-1] == "t5"


async def test_farm_publisher_ledgers_what_the_learner_acked(broker: EmbeddedBroker,
                                                              tmp_path: Path) -> None:
    ledger = tmp_path / "farm.ledger"
    got: list[str] = []
    async with TrajectorySubscriber(broker.url, handler=lambda d: got.append(d.msg.id),
                                    backoff=fast_backoff(), client_id="ledger-test") as sub, \
            Publisher(broker.url, "farm1", tmp_path / "spool", backoff=fast_backoff(),
                      ledger=ledger) as pub:
        await sub.connected.wait()
        ids = [await pub.publish(make_traj()) for _ in range(4)]
        assert await pub.wait_acked(20)
    assert sorted(got) == sorted(ids) == sorted(ledger.read_text().splitlines())


async def test_a_ledger_that_cannot_be_written_fails_no_put(tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    (tmp_path / "ledger-dir").write_text("a file where the ledger's folder should be")
    spool = Spool(tmp_path / "spool", ledger=tmp_path / "ledger-dir" / "ids.ledger")
    assert await spool.put("t0", b"x")  # stored: the audit trail is not the data
    spool.close()
    assert "t0" in Spool(tmp_path / "spool")
    assert "ledger" in caplog.text and "1 ids missing" in caplog.text

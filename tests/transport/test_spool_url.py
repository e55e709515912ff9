from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest

from farm.transport import Spool, SpoolFull, parse_broker_url


async def test_spool_persists_and_orders(tmp_path: Path) -> None:
    s = Spool(tmp_path)
    for i in range(5):
        assert await s.put(f"t{i}", b"x" * (i + 1))
    assert not await s.put("t0", b"again")  # same id: kept once
    assert len(s) == 5 and s.size_bytes == 15
    (tmp_path / "junk.tmp").write_bytes(b"half-written")
    s2 = Spool(tmp_path)  # a farm restart
    assert s2.ids() == [f"t{i}" for i in range(5)]
    assert s2.read("t3") == b"xxxx"
    assert not (tmp_path / "junk.tmp").exists()
    assert await s2.remove(["t1", "t3", "nope"]) == 2
    assert Spool(tmp_path).ids() == ["t0", "t2", "t4"]
    assert await s2.put("t5", b"y")
    assert Spool(tmp_path).ids()[-1] == "t5"


async def test_spool_full_policies(tmp_path: Path) -> None:
    rej = Spool(tmp_path / "r", max_entries=2, on_full="reject")
    await rej.put("a", b"1")
    await rej.put("b", b"2")
    with pytest.raises(SpoolFull):
        await rej.put("c", b"3")
    with pytest.raises(SpoolFull):
        await Spool(tmp_path / "big", max_bytes=10).put("a", b"x" * 11)

    drop = Spool(tmp_path / "d", max_bytes=10, on_full="drop_oldest")
    await drop.put("a", b"x" * 4)
    await drop.put("b", b"x" * 4)
    await drop.put("c", b"x" * 4)
    assert drop.ids() == ["b", "c"] and drop.dropped == 1

    blk = Spool(tmp_path / "b", max_entries=1, on_full="block", block_timeout_s=5)
    await blk.put("a", b"1")
    waiter = asyncio.create_task(blk.put("b", b"2"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await blk.remove(["a"])  # the learner acks: room again
    assert await waiter
    blk.block_timeout_s = 0.05
    with pytest.raises(SpoolFull):
        await blk.put("c", b"3")


def test_broker_urls() -> None:
    a = parse_broker_url("mqtt://user:p%40ss@broker.lan:1884")
    assert (a.hostname, a.port, a.username, a.password, a.tls) == (
        "broker.lan", 1884, "user", "p@ss", False)
    kw = a.client_kwargs()
    assert kw["hostname"] == "broker.lan" and kw["password"] == "p@ss"
    assert "p@ss" not in str(a)
    t = parse_broker_url("mqtts://h")
    assert t.port == 8883 and t.tls and "tls_context" in t.client_kwargs()
    assert parse_broker_url("localhost").port == 1883
    ins = parse_broker_url("mqtts://h:9000?insecure=1")
    assert ins.insecure and ins.client_kwargs()["tls_context"].check_hostname is False
    for bad in ["http://h", "mqtt://", "mqtt://h:notaport"]:
        with pytest.raises(ValueError):
            parse_broker_url(bad)


def _glob(d: Path, pattern: str = "*") -> list[Path]:
    return sorted(d.glob(pattern))


def _append(p: Path, data: bytes) -> None:
    with open(p, "ab") as f:
        f.write(data)


async def test_spool_log_survives_torn_tail_and_keeps_acks(tmp_path: Path) -> None:
    s = Spool(tmp_path)
    for i in range(4):
        assert await s.put(f"t{i}", bytes([i]) * 1000)
    assert await s.remove(["t1"]) == 1  # an ack record in the log
    (seg,) = _glob(tmp_path, "*.log")
    size = seg.stat().st_size
    s.close()
    # a crash while appending: a record header and half a payload, never fsynced
    _append(seg, seg.read_bytes()[:200])
    s2 = Spool(tmp_path)
    assert s2.ids() == ["t0", "t2", "t3"]
    assert seg.stat().st_size == size  # the torn tail was cut off
    assert s2.read("t2") == bytes([2]) * 1000
    e = s2.entry("t3")
    assert e is not None and e.sha256 == hashlib.sha256(bytes([3]) * 1000).hexdigest()
    # a flipped payload byte of t2 (as if never synced): t2 and all after it are cut off,
    # including t1's ack record (a lost ack: t1 is replayed, the learner dedupes it)
    e2 = s2.entry("t2")
    assert e2 is not None
    s2.close()
    data = bytearray(seg.read_bytes())
    data[e2.offset + 10] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert Spool(tmp_path).ids() == ["t0", "t1"]


async def test_spool_group_commit_and_segment_cleanup(tmp_path: Path) -> None:
    s = Spool(tmp_path, segment_bytes=50_000)
    syncs = 0
    real = os.fdatasync

    def counting(fd: int) -> None:
        nonlocal syncs
        syncs += 1
        real(fd)

    os.fdatasync = counting
    try:
        for wave in range(2):
            ok = await asyncio.gather(*(s.put(f"g{wave}-{i}", os.urandom(10_000))
                                        for i in range(20)))
            assert all(ok)
    finally:
        os.fdatasync = real
    assert len(s) == 40
    assert syncs < 40  # puts waiting on one write share the next fsync
    assert len(_glob(tmp_path, "*.log")) == 2  # a new segment once past segment_bytes
    await s.remove(s.ids()[:-1])
    assert len(_glob(tmp_path, "*.log")) == 1  # drained segments are deleted
    await s.remove(s.ids())
    assert _glob(tmp_path) == []
    assert await s.put("again", b"x") and Spool(tmp_path).ids() == ["again"]


async def test_spool_reads_old_one_file_per_entry_layout(tmp_path: Path) -> None:
    (tmp_path / f"{7:016d}-old1.trj").write_bytes(b"legacy payload")
    s = Spool(tmp_path)
    assert s.ids() == ["old1"] and s.read("old1") == b"legacy payload"
    assert await s.put("new1", b"n")
    assert s.ids() == ["old1", "new1"]
    await s.remove(["old1"])
    assert not _glob(tmp_path, "*.trj")
    assert Spool(tmp_path).ids() == ["new1"]

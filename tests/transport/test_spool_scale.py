"""The spool at scale: batches of puts and acks beyond the kernel's IOV_MAX.

One group-committed batch is one ``writev`` list; Linux refuses more than IOV_MAX
(1,024) buffers with EINVAL, which used to fail every put of a batch of ≥ 342 entries
and every ack of a batch of > 512. Everything here is read back through a fresh
:class:`Spool` (a farm restart), whose loader checks each record's crc and each
payload's sha256 and truncates at the first bad one.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import logging
import os
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from farm.transport import Spool
from farm.transport import spool as spool_mod

IOV_MAX = os.sysconf("SC_IOV_MAX")
_real_writev = os.writev
_real_fdatasync = os.fdatasync


def _payloads(n: int, seed: int = 0) -> dict[str, bytes]:
    rnd = random.Random(seed)
    return {f"t{i:05d}": rnd.randbytes(rnd.randrange(0, 3000)) for i in range(n)}


def _segment_records(directory: Path) -> int:
    """Records in the segment files, walked by their headers (sizes must line up)."""
    count = 0
    hdr = spool_mod._HDR
    for seg in sorted(directory.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos < len(data):
            _m, kind, _r, idlen, _crc, _seq, size, _sha = hdr.unpack_from(data, pos)
            pos += hdr.size + idlen + (size if kind == spool_mod._PUT else 0)
            count += 1
        assert pos == len(data), f"{seg.name}: records do not end at the file's end"
    return count


def _count_fdatasync(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(fd: int) -> None:
        calls.append(fd)
        _real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    return calls


def _limited_writev(monkeypatch: pytest.MonkeyPatch, *, max_bytes: int,
                    fail_after: int | None = None) -> list[int]:
    """``os.writev`` that, like a kernel under pressure, writes at most ``max_bytes`` a
    call (a short write) and, after ``fail_after`` calls, writes part and raises
    ENOSPC. Also refuses more than IOV_MAX buffers, as the kernel does."""
    sizes: list[int] = []

    def writev(fd: int, bufs: Sequence[bytes | memoryview]) -> int:
        if len(bufs) > IOV_MAX:
            raise OSError(errno.EINVAL, "Invalid argument")
        if fail_after is not None and len(sizes) >= fail_after:
            os.write(fd, bytes(bufs[0])[: max(1, len(bufs[0]) // 2)])
            raise OSError(errno.ENOSPC, "No space left on device")
        out: list[bytes | memoryview] = []
        room = max_bytes
        for b in bufs:
            if room <= 0:
                break
            out.append(memoryview(b)[:room])
            room -= len(out[-1])
        n = _real_writev(fd, out)
        sizes.append(n)
        return n

    monkeypatch.setattr(os, "writev", writev)
    return sizes


async def test_iov_max_is_the_kernels() -> None:
    assert spool_mod._IOV_MAX == IOV_MAX > 0


async def test_a_thousand_concurrent_puts_are_one_durable_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    data = _payloads(1_200)  # 2 buffers a put: > 2 × IOV_MAX buffers in one batch
    syncs = _count_fdatasync(monkeypatch)
    spool = Spool(tmp_path)
    with caplog.at_level(logging.WARNING, logger="farm.transport.spool"):
        ok = await asyncio.gather(*(spool.put(t, p) for t, p in data.items()))
    assert ok == [True] * len(data)
    assert len(syncs) == 1, "the group commit must stay one fdatasync per batch"
    assert len(spool) == len(data) and spool.size_bytes == sum(map(len, data.values()))
    assert _segment_records(tmp_path) == len(data)

    again = Spool(tmp_path)  # a restart: every record re-checked (crc, sha256)
    assert not caplog.records  # nothing torn, nothing truncated
    assert again.ids() == list(data)  # put order
    for tid, payload in data.items():
        e = again.entry(tid)
        assert e is not None and e.sha256 == hashlib.sha256(payload).hexdigest()
        assert again.read(tid) == payload


async def test_ack_batches_beyond_iov_max(tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    data = _payloads(2_000, seed=1)
    spool = Spool(tmp_path)
    assert all(await asyncio.gather(*(spool.put(t, p) for t, p in data.items())))
    ids = list(data)
    with caplog.at_level(logging.ERROR, logger="farm.transport.spool"):
        # one call acking 1,100 (> IOV_MAX ack records), then 600 concurrent single acks
        # that the IO task gathers into one round
        assert await spool.remove(ids[:1_100]) == 1_100
        assert sum(await asyncio.gather(*(spool.remove([t]) for t in ids[1_100:1_700]))) == 600
    assert not caplog.records, "an ack write failed"
    left = ids[1_700:]
    assert spool.ids() == left
    assert _segment_records(tmp_path) == 2_000 + 1_700  # puts + ack records, all whole

    again = Spool(tmp_path)  # the acks are on disk: acked entries do not come back
    assert again.ids() == left
    assert all(again.read(t) == data[t] for t in left)


async def test_short_writes_resume_mid_buffer(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    bufs: list[bytes] = [os.urandom(n) for n in (0, 1, 7, 0, 4096, 13, 100_000, 3, 0, 65)]
    bufs *= 150  # 1,500 buffers
    path = tmp_path / "f"
    writes = _limited_writev(monkeypatch, max_bytes=997)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        spool_mod._writev_all(fd, bufs, iov_max=7)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(bufs)
    assert len(writes) > 1 and max(writes) <= 997


async def test_puts_survive_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _payloads(1_100, seed=2)
    _limited_writev(monkeypatch, max_bytes=50_000)
    spool = Spool(tmp_path)
    assert all(await asyncio.gather(*(spool.put(t, p) for t, p in data.items())))
    monkeypatch.undo()
    again = Spool(tmp_path)
    assert again.ids() == list(data)
    assert all(again.read(t) == p for t, p in data.items())


async def test_a_failed_ack_write_does_not_swallow_later_puts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails half-way leaves a partial record, and loading stops at the
    first bad record: nothing put afterwards may land behind it."""
    spool = Spool(tmp_path)
    for t in ("a", "b", "c"):
        assert await spool.put(t, t.encode() * 100)
    _limited_writev(monkeypatch, max_bytes=1 << 30, fail_after=0)
    assert await spool.remove(["a"]) == 1  # its ack record is torn on disk
    monkeypatch.undo()
    assert await spool.put("d", b"d" * 100)
    assert await spool.put("e", b"e" * 100)
    again = Spool(tmp_path)
    # "a" may come back (a lost ack: the learner dedupes); "d" and "e" must not be lost
    assert {"b", "c", "d", "e"} <= set(again.ids()) <= {"a", "b", "c", "d", "e"}
    assert again.read("e") == b"e" * 100


async def test_a_failed_put_batch_fails_its_puts_and_the_next_batch_succeeds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _payloads(1_500, seed=3)
    ids = list(data)
    _limited_writev(monkeypatch, max_bytes=1 << 30, fail_after=1)  # the 2nd writev fails
    spool = Spool(tmp_path)
    res = await asyncio.gather(*(spool.put(t, data[t]) for t in ids[:1_000]),
                               return_exceptions=True)
    assert all(isinstance(r, OSError) and r.errno == errno.ENOSPC for r in res)
    assert len(spool) == 0 and spool.size_bytes == 0
    monkeypatch.undo()
    assert all(await asyncio.gather(*(spool.put(t, data[t]) for t in ids[1_000:])))
    again = Spool(tmp_path)
    assert again.ids() == ids[1_000:]
    assert all(again.read(t) == data[t] for t in ids[1_000:])


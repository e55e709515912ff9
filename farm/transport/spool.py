"""A bounded on-disk spool of encoded trajectories, kept until the learner acks them.

Layout: append-only segment files ``<segno>.log``. A record is a fixed header (magic,
kind, sequence number, payload size, the payload's sha256, a crc32 over the header and
id), the trajectory id and, for a ``PUT``, the payload. Acks append an ``ACK`` record to
the segment that holds the entry; a segment whose entries are all acked is deleted.

Why a log and not one file per entry: creating, renaming and unlinking an inode per
trajectory plus two fsyncs each (file and directory) cost more CPU than the whole MQTT
round trip (bench/transport_throughput.py). Here puts are **group-committed**: every put
waiting while a write is under way goes into the next batch, which is written with
``writev`` (one call per IOV_MAX buffers, the kernel's limit) and made durable with one
``fdatasync`` (plus one directory fsync when the batch starts a new segment).
:meth:`Spool.put` still returns only once *its* entry is on disk, so nothing counts as
handed over before it is durable.

Crash safety: a record is valid only if its header crc matches and, for a ``PUT``, the
payload's sha256 matches. On load, each segment is read up to its first invalid record
and truncated there: anything after it was never covered by an fsync (appends are
sequential), so no entry whose put returned is lost. A lost ``ACK`` record only makes an
acked entry come back, which the learner dedupes (the same as an unlink lost in a crash
of the one-file-per-entry layout). Entries survive a farm restart and are replayed in
put order. One-file-per-entry spools (``<seq>-<id>.trj``) of older versions are still
read and drained.

When full (``max_bytes`` or ``max_entries``), ``on_full`` decides:

* ``"block"`` (default): :meth:`Spool.put` waits for acks to free space, up to
  ``block_timeout_s``, then raises :class:`SpoolFull` — backpressure on the episode
  workers, nothing is dropped silently;
* ``"reject"``: raise :class:`SpoolFull` at once;
* ``"drop_oldest"``: evict the oldest unacked entries (counted in :attr:`Spool.dropped`).

An entry larger than ``max_bytes`` always raises :class:`SpoolFull`. Payloads put by this
process are also kept in a bounded in-memory cache (``cache_bytes``), so sending does not
re-read them from disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import struct
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from distrl_sdk.wire import topics

__all__ = ["OnFull", "Spool", "SpoolEntry", "SpoolFull"]

log = logging.getLogger(__name__)

OnFull = Literal["block", "reject", "drop_oldest"]

_MAGIC = b"DRS1"
_PUT, _ACK = 1, 2
# magic, kind, reserved, id length, crc32, seq, payload size, sha256 (raw)
_HDR = struct.Struct(">4sBBHIQQ32s")
_MAX_ID = 256


def _iov_max() -> int:
    """The kernel's limit on buffers per ``writev`` (1024 on Linux); more is EINVAL."""
    try:
        n = os.sysconf("SC_IOV_MAX")
    except (ValueError, OSError):
        n = -1
    return n if n > 0 else 16  # _XOPEN_IOV_MAX: the least POSIX allows


_IOV_MAX = _iov_max()


class SpoolFull(RuntimeError):
    """The spool has no room for an entry under its policy."""


@dataclass(frozen=True)
class SpoolEntry:
    id: str
    path: Path  # the segment file (or, for an old-format entry, its own file)
    size: int
    seq: int
    sha256: str | None = None  # hex digest of the payload
    offset: int = 0  # of the payload in ``path``


@dataclass
class _Segment:
    no: int
    path: Path
    live: int = 0  # entries not yet acked (including ones being written)
    size: int = 0  # bytes written or being written
    legacy: bool = False  # an old one-file-per-entry ``.trj``: no records, unlink when acked


@dataclass
class _Put:
    tid: str
    seq: int
    payload: bytes
    sha256: str | None
    fut: asyncio.Future[tuple[int, str]]  # → (payload offset, hex digest)
    seg: _Segment | None = None  # chosen when its IO round starts


@dataclass
class _Work:
    """What the next IO round does: delete dead segments, append ack records, append
    (and fdatasync) put records to one segment."""

    dead: list[_Segment] = field(default_factory=list)
    acks: dict[int, list[str]] = field(default_factory=dict)  # segno → ids
    ack_segs: dict[int, _Segment] = field(default_factory=dict)
    puts: list[_Put] = field(default_factory=list)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.dead or self.acks or self.puts or self.waiters)


def _record(kind: int, tid: bytes, seq: int, size: int, sha: bytes) -> bytes:
    head = _HDR.pack(_MAGIC, kind, 0, len(tid), 0, seq, size, sha)
    crc = zlib.crc32(tid, zlib.crc32(head))
    return _HDR.pack(_MAGIC, kind, 0, len(tid), crc, seq, size, sha)


class Spool:
    def __init__(self, directory: str | os.PathLike[str], *, max_bytes: int = 2 * 1024**3,
                 max_entries: int = 10_000, on_full: OnFull = "block",
                 block_timeout_s: float = 60.0, fsync: bool = True,
                 cache_bytes: int = 256 * 1024 * 1024,
                 segment_bytes: int = 64 * 1024 * 1024,
                 ledger: str | os.PathLike[str] | None = None) -> None:
        self.dir = Path(directory)
        # an append-only audit trail: every id whose put became durable, one per line,
        # kept after its ack deletes the entry (what the farm handed over, for
        # reconciling against the learner's replay: bench/chaos.py)
        self.ledger = Path(ledger) if ledger is not None else None
        self._ledger_fd: int | None = None
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.on_full: OnFull = on_full
        self.block_timeout_s = block_timeout_s
        self.fsync = fsync
        self.segment_bytes = segment_bytes  # a new segment starts once the current is this big
        self.dropped = 0
        self.cache_bytes = cache_bytes  # recent payloads kept in memory for sending
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = 0
        self._entries: OrderedDict[str, SpoolEntry] = OrderedDict()
        self._seg_of: dict[str, _Segment] = {}
        self._segments: dict[int, _Segment] = {}
        self._cur: _Segment | None = None  # where puts go; None: start a new segment
        self._bytes = 0
        self._seq = 0
        self._segno = 0
        self._changed: asyncio.Condition | None = None
        self._writing: dict[str, int] = {}
        self._work = _Work()
        self._flusher: asyncio.Task[None] | None = None
        self._fd: int | None = None  # the segment puts append to; IO thread only
        self._fd_no: int | None = None
        self._load()

    # -- load
    def _load(self) -> None:
        found: list[tuple[int, SpoolEntry, _Segment]] = []
        for p in sorted(self.dir.iterdir()):
            if p.suffix == ".tmp":
                p.unlink(missing_ok=True)
            elif p.suffix == ".log" and p.stem.isdecimal():
                seg = _Segment(int(p.stem), p)
                self._segments[seg.no] = seg
                self._segno = max(self._segno, seg.no)
                found += [(e.seq, e, seg) for e in self._scan(seg)]
            elif p.suffix == ".trj":  # the one-file-per-entry layout of older versions
                seq_s, _, tid = p.stem.partition("-")
                if seq_s.isdecimal() and tid:
                    seg = _Segment(-1 - len(found), p, size=p.stat().st_size, legacy=True)
                    found.append((int(seq_s), SpoolEntry(tid, p, seg.size, int(seq_s)), seg))
        for seq, e, seg in sorted(found, key=lambda f: f[0]):
            if e.id in self._entries:  # the same id twice: keep the first
                if seg.legacy:
                    e.path.unlink(missing_ok=True)
                continue
            self._entries[e.id] = e
            self._seg_of[e.id] = seg
            seg.live += 1
            self._bytes += e.size
            self._seq = max(self._seq, seq)
        for seg in list(self._segments.values()):
            if seg.live == 0:  # everything in it was acked
                seg.path.unlink(missing_ok=True)
                del self._segments[seg.no]

    def _scan(self, seg: _Segment) -> list[SpoolEntry]:
        """Valid live entries of one segment; truncates it at its first invalid record."""
        puts: OrderedDict[str, SpoolEntry] = OrderedDict()
        with open(seg.path, "r+b") as f:
            end = os.fstat(f.fileno()).st_size
            pos = 0
            while pos + _HDR.size <= end:
                f.seek(pos)
                head = f.read(_HDR.size)
                magic, kind, _r, idlen, crc, seq, size, sha = _HDR.unpack(head)
                if magic != _MAGIC or kind not in (_PUT, _ACK) or idlen > _MAX_ID:
                    break
                body = pos + _HDR.size + idlen + (size if kind == _PUT else 0)
                if body > end or (kind == _ACK and size):
                    break
                tid_b = f.read(idlen)
                zero = _HDR.pack(magic, kind, _r, idlen, 0, seq, size, sha)
                if zlib.crc32(tid_b, zlib.crc32(zero)) != crc:
                    break
                try:
                    tid = topics.check_id(tid_b.decode(), "trajectory id")
                except (UnicodeDecodeError, topics.TopicError):
                    break
                if kind == _PUT:
                    if hashlib.sha256(f.read(size)).digest() != sha:
                        break  # torn: written but never fsynced
                    puts.setdefault(tid, SpoolEntry(tid, seg.path, size, seq, sha.hex(),
                                                    pos + _HDR.size + idlen))
                else:
                    puts.pop(tid, None)
                pos = body
            if pos != end:
                log.warning("spool %s: dropping %d B of unsynced tail", seg.path, end - pos)
                f.truncate(pos)
        seg.size = pos
        return list(puts.values())

    # -- state
    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, traj_id: object) -> bool:
        return traj_id in self._entries

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def ids(self) -> list[str]:
        return list(self._entries)

    def entry(self, traj_id: str) -> SpoolEntry | None:
        return self._entries.get(traj_id)

    def read(self, traj_id: str) -> bytes | None:
        e = self._entries.get(traj_id)
        if e is None:
            return None
        cached = self._cache.get(traj_id)
        if cached is not None:
            return cached
        try:
            with open(e.path, "rb") as f:
                f.seek(e.offset)
                data = f.read(e.size)
        except FileNotFoundError:
            return None
        return data if len(data) == e.size else None

    def _cond(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def _notify(self) -> None:
        c = self._cond()
        async with c:
            c.notify_all()

    def _fits(self, size: int) -> bool:
        return (len(self._entries) + len(self._writing) + 1 <= self.max_entries
                and self._bytes + size <= self.max_bytes)

    # -- put/remove
    async def put(self, traj_id: str, payload: bytes, *, sha256: str | None = None) -> bool:
        """Store ``payload`` durably. ``False`` if ``traj_id`` is already spooled."""
        topics.check_id(traj_id, "trajectory id")
        if traj_id in self._entries or traj_id in self._writing:
            return False
        size = len(payload)
        if size > self.max_bytes:
            raise SpoolFull(f"entry of {size} B exceeds the spool's {self.max_bytes} B")
        if not self._fits(size):
            if self.on_full == "reject":
                raise SpoolFull(self._full_msg())
            if self.on_full == "drop_oldest":
                while self._entries and not self._fits(size):
                    oldest = next(iter(self._entries))
                    await self.remove([oldest])
                    self.dropped += 1
            else:
                c = self._cond()
                try:
                    async with asyncio.timeout(self.block_timeout_s), c:
                        await c.wait_for(lambda: self._fits(size))
                except TimeoutError:
                    raise SpoolFull(self._full_msg() + " (waited for acks)") from None
        if traj_id in self._entries or traj_id in self._writing:
            return False
        self._seq += 1
        seq = self._seq
        self._writing[traj_id] = size  # reserved: concurrent puts see the space as taken
        self._bytes += size
        put = _Put(traj_id, seq, payload, sha256, asyncio.get_running_loop().create_future())
        self._work.puts.append(put)
        self._kick()
        try:
            offset, digest = await asyncio.shield(put.fut)
        except BaseException:
            self._bytes -= size
            # cancelled while being written: once on disk, ack it away (not handed over)
            put.fut.add_done_callback(lambda f: self._forget_written(put, f))
            raise
        finally:
            del self._writing[traj_id]
        seg = put.seg
        assert seg is not None
        self._entries[traj_id] = SpoolEntry(traj_id, seg.path, size, seq, digest, offset)
        self._seg_of[traj_id] = seg
        self._cache_put(traj_id, payload)
        await self._notify()
        return True

    def _forget_written(self, put: _Put, fut: asyncio.Future[tuple[int, str]]) -> None:
        if put.seg is not None and not fut.cancelled() and fut.exception() is None:
            self._drop_from(put.seg, put.tid)
            self._kick()

    def _full_msg(self) -> str:
        return (f"spool full: {len(self._entries)}/{self.max_entries} entries, "
                f"{self._bytes}/{self.max_bytes} B")

    async def remove(self, ids: list[str]) -> int:
        """Forget acked entries (an ack record, or the whole segment once all of its
        entries are acked); returns how many were spooled."""
        n = 0
        for tid in ids:
            e = self._entries.pop(tid, None)
            if e is None:
                continue
            n += 1
            self._bytes -= e.size
            self._drop_cached(tid)
            self._drop_from(self._seg_of.pop(tid), tid)
        if n:
            await self._notify()
            done = asyncio.get_running_loop().create_future()
            self._work.waiters.append(done)
            self._kick()
            await asyncio.shield(done)
        return n

    def _drop_from(self, seg: _Segment, tid: str) -> None:
        seg.live -= 1
        if seg.live > 0:
            if not seg.legacy:
                self._work.acks.setdefault(seg.no, []).append(tid)
                self._work.ack_segs[seg.no] = seg
            return
        if seg is self._cur:
            self._cur = None  # the next put starts a fresh segment
        self._segments.pop(seg.no, None)
        self._work.acks.pop(seg.no, None)
        self._work.dead.append(seg)

    # -- the IO task: one round at a time, each in a worker thread
    def _kick(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while self._work:
            work, self._work = self._work, _Work()
            target = None
            if work.puts:
                target = self._cur
                if target is None or target.size >= self.segment_bytes:
                    self._segno += 1
                    target = _Segment(self._segno, self.dir / f"{self._segno:016d}.log")
                    self._segments[target.no] = target
                    self._cur = target
                target.live += len(work.puts)  # can't be deleted while these are written
                for p in work.puts:
                    p.seg = target
            try:
                results, end = await asyncio.to_thread(self._io, work, target)
            except BaseException as e:
                # a failed write (of puts or of acks to the open segment) may leave a
                # partial record, and loading stops at the first one: whatever comes
                # next goes to a new segment
                self._cur = None
                if target is not None:
                    target.live -= len(work.puts)
                    if target.live == 0:
                        self._segments.pop(target.no, None)
                        self._work.dead.append(target)
                for p in work.puts:
                    if not p.fut.done():
                        p.fut.set_exception(e if isinstance(e, Exception)
                                            else RuntimeError("spool write cancelled"))
                for w in work.waiters:
                    if not w.done():
                        w.set_result(None)
                if not isinstance(e, Exception):
                    raise
                log.error("spool %s: write failed: %s", self.dir, e)
                continue
            if target is not None:
                target.size = end
            for p, res in zip(work.puts, results, strict=True):
                if not p.fut.done():
                    p.fut.set_result(res)
            for w in work.waiters:
                if not w.done():
                    w.set_result(None)

    def _io(self, work: _Work, target: _Segment | None) -> tuple[list[tuple[int, str]], int]:
        """Runs in a worker thread; touches files only (the event loop owns the state).
        Returns each put's (payload offset, digest) and the target segment's new size."""
        for seg in work.dead:
            if seg.no == self._fd_no:
                self._close_fd()
            with contextlib.suppress(FileNotFoundError):
                seg.path.unlink()
        for no, ids in work.acks.items():
            # one buffer per record: a batch of acks is one long list for writev
            recs = [_record(_ACK, tid.encode(), 0, 0, bytes(32)) + tid.encode() for tid in ids]
            if no == self._fd_no and self._fd is not None:
                _writev_all(self._fd, recs)
                continue
            try:
                fd = os.open(work.ack_segs[no].path, os.O_WRONLY | os.O_APPEND)
            except FileNotFoundError:
                continue
            try:
                _writev_all(fd, recs)
            finally:
                os.close(fd)
        if target is None or not work.puts:
            return [], 0
        new = self._fd_no != target.no
        if new:
            self._close_fd()
            self._fd = os.open(target.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._fd_no = target.no
        assert self._fd is not None
        out: list[tuple[int, str]] = []
        bufs: list[bytes | memoryview] = []
        pos = os.lseek(self._fd, 0, os.SEEK_END)  # ack records may have been appended
        for p in work.puts:
            digest = p.sha256 or hashlib.sha256(p.payload).hexdigest()
            tid = p.tid.encode()
            # header+id joined (small), the payload as it is: never copied
            bufs += [_record(_PUT, tid, p.seq, len(p.payload), bytes.fromhex(digest)) + tid,
                     p.payload]
            pos += _HDR.size + len(tid)
            out.append((pos, digest))
            pos += len(p.payload)
        _writev_all(self._fd, bufs)
        if self.fsync:
            os.fdatasync(self._fd)
            if new:  # the new file's directory entry must be durable too
                dfd = os.open(self.dir, os.O_RDONLY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        if self.ledger is not None:
            self._append_ledger(work.puts)
        return out, pos

    def _append_ledger(self, puts: list[_Put]) -> None:
        """(IO thread) After the segment's fdatasync: a crash in between leaves an id
        delivered but unledgered (reported as such), never one ledgered but not stored.
        The entries are stored whatever happens here, so a ledger that cannot be written
        is logged, never a failed put."""
        assert self.ledger is not None
        try:
            if self._ledger_fd is None:
                self.ledger.parent.mkdir(parents=True, exist_ok=True)
                self._ledger_fd = os.open(self.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                          0o644)
            _writev_all(self._ledger_fd, [b"".join(p.tid.encode() + b"\n" for p in puts)])
            if self.fsync:
                os.fdatasync(self._ledger_fd)
        except OSError as exc:
            log.error("spool %s: ledger %s not written (%d ids missing from it): %s",
                      self.dir, self.ledger, len(puts), exc)
            self._close_ledger()

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._fd_no = None

    def _close_ledger(self) -> None:
        if self._ledger_fd is not None:
            os.close(self._ledger_fd)
        self._ledger_fd = None

    def close(self) -> None:
        """Release the open segment file (the spool reopens it if used again)."""
        if self._flusher is None or self._flusher.done():
            self._close_fd()
            self._close_ledger()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._close_fd()
            self._close_ledger()

    # -- cache
    def _drop_cached(self, tid: str) -> None:
        data = self._cache.pop(tid, None)
        if data is not None:
            self._cache_bytes -= len(data)

    def _cache_put(self, tid: str, data: bytes) -> None:
        if len(data) > self.cache_bytes:
            return
        self._cache[tid] = data
        self._cache_bytes += len(data)
        while self._cache_bytes > self.cache_bytes:
            _old, old = self._cache.popitem(last=False)
            self._cache_bytes -= len(old)

    async def wait_empty(self, timeout: float | None = None) -> bool:
        c = self._cond()
        try:
            async with asyncio.timeout(timeout), c:
                await c.wait_for(lambda: not self._entries)
        except TimeoutError:
            return False
        return True


def _writev_all(fd: int, bufs: Sequence[bytes | memoryview], iov_max: int = _IOV_MAX) -> None:
    """``writev`` all of ``bufs``, in calls of at most ``iov_max`` buffers (the kernel
    refuses more with EINVAL), resuming mid-buffer after a short write.

    Several calls are fine for the spool's atomicity: a record counts only once its
    crc (and payload sha256) check out and an fdatasync covered it, so a crash between
    calls leaves a torn tail that loading truncates.
    """
    pending: list[bytes | memoryview] = [b for b in bufs if len(b)]
    i = 0
    while i < len(pending):
        n = os.writev(fd, pending[i : i + iov_max])
        if n <= 0:  # no progress on a non-empty write: don't spin
            raise OSError(f"writev wrote {n} bytes")
        while n:  # skip what went out; a partly written buffer resumes at its tail
            size = len(pending[i])
            if n >= size:
                n -= size
                i += 1
            else:
                pending[i] = memoryview(pending[i])[n:]
                n = 0

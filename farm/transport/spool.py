"""A bounded on-disk spool of encoded trajectories, kept until the learner acks them.

One file per entry, ``<seq>-<id>.trj``, written to a temp name, fsynced, renamed and the
directory fsynced, so a crash leaves either the whole entry or nothing. Entries survive
a farm restart and are replayed in order.

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
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from distrl_sdk.wire import topics

__all__ = ["OnFull", "Spool", "SpoolEntry", "SpoolFull"]

OnFull = Literal["block", "reject", "drop_oldest"]


class SpoolFull(RuntimeError):
    """The spool has no room for an entry under its policy."""


@dataclass(frozen=True)
class SpoolEntry:
    id: str
    path: Path
    size: int
    seq: int
    sha256: str | None = None  # hex digest of the payload, when computed at put()


class Spool:
    def __init__(self, directory: str | os.PathLike[str], *, max_bytes: int = 2 * 1024**3,
                 max_entries: int = 10_000, on_full: OnFull = "block",
                 block_timeout_s: float = 60.0, fsync: bool = True,
                 cache_bytes: int = 256 * 1024 * 1024) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.on_full: OnFull = on_full
        self.block_timeout_s = block_timeout_s
        self.fsync = fsync
        self.dropped = 0
        self.cache_bytes = cache_bytes  # recent payloads kept in memory for sending
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cache_bytes = 0
        self._entries: OrderedDict[str, SpoolEntry] = OrderedDict()
        self._bytes = 0
        self._seq = 0
        self._changed: asyncio.Condition | None = None
        self._writing: dict[str, int] = {}
        self._load()

    # -- state
    def _load(self) -> None:
        found: list[SpoolEntry] = []
        for p in self.dir.iterdir():
            if p.suffix == ".tmp":
                p.unlink(missing_ok=True)
                continue
            if p.suffix != ".trj":
                continue
            seq_s, _, tid = p.stem.partition("-")
            if not seq_s.isdigit() or not tid:
                continue
            found.append(SpoolEntry(tid, p, p.stat().st_size, int(seq_s)))
        for e in sorted(found, key=lambda e: e.seq):
            if e.id in self._entries:  # a duplicate id: keep the first
                e.path.unlink(missing_ok=True)
                continue
            self._entries[e.id] = e
            self._bytes += e.size
            self._seq = max(self._seq, e.seq)

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
            return e.path.read_bytes()
        except FileNotFoundError:
            return None

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
        path = self.dir / f"{seq:016d}-{traj_id}.trj"
        self._writing[traj_id] = size  # reserved: concurrent puts see the space as taken
        self._bytes += size
        try:
            digest = await asyncio.to_thread(self._write, path, payload, sha256)
        except BaseException:
            self._bytes -= size
            raise
        finally:
            del self._writing[traj_id]
        self._entries[traj_id] = SpoolEntry(traj_id, path, size, seq, digest)
        self._cache_put(traj_id, payload)
        await self._notify()
        return True

    def _full_msg(self) -> str:
        return (f"spool full: {len(self._entries)}/{self.max_entries} entries, "
                f"{self._bytes}/{self.max_bytes} B")

    def _write(self, path: Path, payload: bytes, digest: str | None) -> str:
        # hashed in this thread, off the event loop
        digest = digest or hashlib.sha256(payload).hexdigest()
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(payload)
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if self.fsync:
            fd = os.open(self.dir, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        return digest

    async def remove(self, ids: list[str]) -> int:
        """Delete acked entries; returns how many were spooled."""
        gone: list[Path] = []
        for tid in ids:
            e = self._entries.pop(tid, None)
            if e is None:
                continue
            self._bytes -= e.size
            self._drop_cached(tid)
            gone.append(e.path)
        if gone:
            await self._notify()
            await asyncio.to_thread(self._unlink, gone)
        return len(gone)

    @staticmethod
    def _unlink(paths: list[Path]) -> None:
        for p in paths:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()

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

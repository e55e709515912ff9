"""``sync:`` — file transfer over the phone's VirtualFS (AOSP adb's SYNC.TXT).

Requests are ``id[4] | len:u32 | path`` on one stream until QUIT, an error (FAIL,
then close, like adbd) or the host closing the stream (adbutils never sends QUIT).
"""

from __future__ import annotations

import errno
import logging
import os
import stat as st
import struct

from farm.sim.adbd.packets import Buffer
from farm.sim.adbd.stream import Stream
from farm.sim.spec import AdbdBackend
from farm.sim.vfs import Stat, VirtualFS

log = logging.getLogger(__name__)

SYNC_DATA_MAX = 64 * 1024
MAX_PATH = 1024
MAX_NAME = 255

REQUEST = struct.Struct("<4sI")
STAT_V1 = struct.Struct("<4sIII")
STAT_V2 = struct.Struct("<4sIQQIIIIQqqq")
DENT_V1 = struct.Struct("<4sIIII")
DENT_V2 = struct.Struct("<4sIQQIIIIQqqqI")

DONE_V1 = b"DONE" + bytes(DENT_V1.size - 4)
DONE_V2 = b"DONE" + bytes(DENT_V2.size - 4)
OKAY_REPLY = b"OKAY" + bytes(4)
DATA_DONE = b"DONE" + bytes(4)


class SyncFail(Exception):
    """Reply FAIL with this message, then end the service."""


def fail_packet(message: str) -> bytes:
    data = message.encode("utf-8", "replace")
    return REQUEST.pack(b"FAIL", len(data)) + data


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def _nlink(info: Stat) -> int:
    return 2 if info.is_dir else 1


def stat_v1(vfs: VirtualFS, path: str) -> bytes:
    info = vfs.stat(path)
    if info is None:
        return STAT_V1.pack(b"STAT", 0, 0, 0)
    return STAT_V1.pack(b"STAT", info.mode, _u32(info.size), _u32(info.mtime))


def stat_v2(ident: bytes, vfs: VirtualFS, path: str) -> bytes:
    info = vfs.stat(path)
    if info is None:
        return STAT_V2.pack(ident, errno.ENOENT, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    return STAT_V2.pack(ident, 0, 0, info.ino, info.mode, _nlink(info), 0, 0, info.size,
                        info.mtime, info.mtime, info.mtime)


def list_entries(ident: bytes, vfs: VirtualFS, path: str) -> list[bytes]:
    """DENT/DNT2 records (no '.' and '..'); a missing or non-directory path lists empty."""
    try:
        entries = vfs.listdir(path)
    except OSError:
        return []
    out: list[bytes] = []
    for name, info in entries:
        raw = name.encode("utf-8", "surrogateescape")
        if not raw or len(raw) > MAX_NAME:
            continue
        if ident == b"LIST":
            head = DENT_V1.pack(b"DENT", info.mode, _u32(info.size), _u32(info.mtime), len(raw))
        else:
            head = DENT_V2.pack(b"DNT2", 0, 0, info.ino, info.mode, _nlink(info), 0, 0,
                                info.size, info.mtime, info.mtime, info.mtime, len(raw))
        out.append(head + raw)
    return out


async def _write_records(stream: Stream, records: list[bytes]) -> bool:
    """Send records so that none straddles a WRTE (clients read headers with recv())."""
    limit = stream.link.maxdata
    batch: list[bytes] = []
    size = 0
    for record in records:
        if batch and size + len(record) > limit:
            if not await stream.write(batch):
                return False
            batch, size = [], 0
        batch.append(record)
        size += len(record)
    return await stream.write(batch) if batch else True


async def _read_request(stream: Stream) -> tuple[bytes, int] | None:
    header = await stream.read_exactly(REQUEST.size)
    if header is None:
        return None
    ident, length = REQUEST.unpack(header)
    return ident, length


async def sync_service(stream: Stream, backend: AdbdBackend) -> None:
    try:
        await _sync_loop(stream, backend.vfs)
    except SyncFail as exc:
        if not stream.closed:
            await stream.write((fail_packet(str(exc)),))


async def _sync_loop(stream: Stream, vfs: VirtualFS) -> None:
    while True:
        request = await _read_request(stream)
        if request is None:
            return
        ident, length = request
        if ident == b"QUIT":
            return
        if length > MAX_PATH:
            raise SyncFail("path too long")
        raw = await stream.read_exactly(length)
        if raw is None:
            return
        path = _path(raw)
        if ident == b"STAT":
            reply: list[bytes] = [stat_v1(vfs, path)]
        elif ident in (b"STA2", b"LST2"):
            reply = [stat_v2(ident, vfs, path)]
        elif ident in (b"LIST", b"LIS2"):
            reply = list_entries(ident, vfs, path)
            reply.append(DONE_V1 if ident == b"LIST" else DONE_V2)
        elif ident == b"SEND":
            if not await _receive_file(stream, vfs, path):
                return
            reply = [OKAY_REPLY]
        elif ident == b"RECV":
            if not await _send_file(stream, vfs, path):
                return
            continue
        else:
            raise SyncFail(f"unknown command {ident!r}")
        if not await _write_records(stream, reply):
            return


def _split_send_path(spec: str) -> tuple[str, int]:
    path, comma, mode_text = spec.rpartition(",")
    if not comma:
        return spec, st.S_IFREG | 0o644
    try:
        mode = int(mode_text)
    except ValueError:
        mode = 0
    return path, mode


async def _receive_file(stream: Stream, vfs: VirtualFS, spec: str) -> bool:
    """SEND: read DATA… DONE, then store. False if the host went away."""
    path, mode = _split_send_path(spec)
    if not path:
        raise SyncFail("empty path")
    error: str | None = None
    if st.S_ISLNK(mode):
        error = "symlinks are not supported on this device"
    elif mode and not st.S_ISREG(mode):
        error = f"unsupported file mode {mode:o}"
    old = vfs.stat(path)
    free = vfs.capacity - vfs.used_bytes + (old.size if old is not None and old.is_file else 0)
    data = bytearray()
    while True:
        header = await _read_request(stream)
        if header is None:
            return False
        ident, length = header
        if ident == b"DONE":
            mtime = length
            break
        if ident != b"DATA":
            raise SyncFail("invalid data message")
        if length > SYNC_DATA_MAX:
            raise SyncFail("oversize data message")
        chunk = await stream.read_exactly(length)
        if chunk is None:
            return False
        if error is not None:
            continue  # keep reading until DONE, then report (file_sync_service.cpp)
        if len(data) + length > free:
            error = f"write failed: {os.strerror(errno.ENOSPC)}"
            data = bytearray()
            continue
        data += chunk
    if error is not None:
        raise SyncFail(error)
    try:
        vfs.write(path, data, mode=(mode & 0o7777) or 0o644, mtime=mtime, make_parents=True)
    except OSError as exc:
        raise SyncFail(f"couldn't create file: {exc.strerror}") from None
    return True


async def _send_file(stream: Stream, vfs: VirtualFS, path: str) -> bool:
    """RECV: DATA chunks of ≤ 64 KiB, then DONE. False if the host went away."""
    try:
        content = vfs.read(path)
    except OSError as exc:
        raise SyncFail(f"open failed: {exc.strerror}") from None
    view = memoryview(content)
    parts: list[Buffer] = []
    for offset in range(0, len(content), SYNC_DATA_MAX):
        piece = view[offset : offset + SYNC_DATA_MAX]
        parts.append(REQUEST.pack(b"DATA", piece.nbytes))
        parts.append(piece)
    parts.append(DATA_DONE)
    return await stream.write(parts)

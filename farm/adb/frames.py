"""Raw ``screencap`` frames, read straight into one buffer of the frame's exact size.

A raw frame is a little-endian header — width, height, pixel format (u32 each), plus
a dataspace word on recent Android versions (12 or 16 bytes) — then width × height × 4
bytes of pixels. The header gives the size before the pixels arrive, so the reader
allocates once and ``recv_into``-s the socket into it, then hands the pixels on as a
read-only ``memoryview`` of that buffer. That cut the host's CPU for a 1080×2400 frame
from 33–41 ms to 4–5 ms (bench/observe_host_cpu.py): the old path grew a buffer by
doubling, copied it into ``bytes``, copied again to slice the header off and scanned
all 10 MB for zeros.

Which header a stream had shows only at its end (16 + N or 12 + N bytes), so the
buffer holds 4 + N bytes: the dataspace word, then the pixels; a 12-byte header leaves
the last 4 unused. (A 16-byte-header stream exactly 4 bytes short reads as a 12-byte
one, as it did before; nothing in the stream tells them apart.)

"Never a silent black frame": a failed capture comes back as zero bytes (transparent
black; real frames are opaque). :func:`looks_blank` tells that from a strided sample of
a few thousand pixels spread over the whole frame, not by scanning every byte.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass

from farm.adb.errors import FrameError

__all__ = ["FORMATS", "MAX_SIDE", "RawFrame", "looks_blank", "read_raw_frame"]

_HEAD = struct.Struct("<III")  # width, height, format; a dataspace u32 may follow
FORMATS = {1: "RGBA_8888", 2: "RGBX_8888"}  # the 4-byte formats screencap produces
MAX_SIDE = 16384  # a larger "width" is not a frame (an error message read as numbers)
_TEXT_MAX = 4096  # of a non-frame reply, kept for the error message
_SAMPLES = 8192  # bytes looks_blank() inspects


@dataclass(frozen=True, slots=True)
class RawFrame:
    width: int
    height: int
    format: int  # a key of FORMATS
    pixels: memoryview  # read-only, width * height * 4 bytes, row-major
    header: int  # 12 or 16: bytes of header the device sent


async def _fill(loop: asyncio.AbstractEventLoop, sock: socket.socket, view: memoryview) -> int:
    """Receive into ``view`` until it is full or the stream ends; bytes received."""
    got, size = 0, len(view)
    while got < size:
        k = await loop.sock_recv_into(sock, view[got:])
        if k == 0:
            break
        got += k
    return got


async def _text(loop: asyncio.AbstractEventLoop, sock: socket.socket, start: bytes) -> str:
    buf = bytearray(_TEXT_MAX)
    buf[: len(start)] = start
    got = len(start) + await _fill(loop, sock, memoryview(buf)[len(start):])
    return bytes(buf[:got]).decode(errors="replace").strip()


async def read_raw_frame(sock: socket.socket) -> RawFrame:
    """Read one raw frame from a non-blocking socket carrying ``screencap``'s stdout,
    up to the end of the stream; :class:`FrameError` unless it is exactly one frame."""
    loop = asyncio.get_running_loop()
    head = bytearray(_HEAD.size)
    got = await _fill(loop, sock, memoryview(head))
    if got < _HEAD.size:
        what = f": {bytes(head[:got]).decode(errors='replace').strip()!r}" if got else ""
        raise FrameError(f"screencap returned {got} bytes, not a raw frame{what}")
    width, height, fmt = _HEAD.unpack(head)
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise FrameError(f"screencap did not return a raw frame: "
                         f"{await _text(loop, sock, bytes(head))!r}")
    if fmt not in FORMATS:
        raise FrameError(f"screencap sent a {width}x{height} frame in pixel format {fmt}; "
                         f"only {', '.join(f'{k} ({v})' for k, v in FORMATS.items())} "
                         "are read")
    size = width * height * 4
    # the dataspace word of a 16-byte header first, then the pixels; with a 12-byte
    # header the pixels start at 0 and the last 4 bytes stay unused
    buf = bytearray(4 + size)
    got = await _fill(loop, sock, memoryview(buf))
    if got == len(buf):
        if await loop.sock_recv_into(sock, bytearray(1)):
            raise FrameError(f"screencap sent more than one {width}x{height} frame")
        pixels, header = memoryview(buf)[4:], 16
    elif got == size:
        pixels, header = memoryview(buf)[:size], 12
    else:
        raise FrameError(f"screencap stream ended after {_HEAD.size + got} of "
                         f"{16 + size} bytes of a {width}x{height} frame: "
                         "the frame is incomplete")
    return RawFrame(width, height, fmt, pixels.toreadonly(), header)


def looks_blank(pixels: bytes | bytearray | memoryview) -> bool:
    """Whether a frame is all zero bytes, judged from ~8 K bytes spread over it.

    The stride is odd, so successive samples fall on all four channels and drift
    across columns as well as rows. A failed capture is zero everywhere, and a real
    one is opaque (alpha 255) everywhere, so a sample decides it.
    """
    n = len(pixels)
    if n == 0:
        return True
    step = max(1, n // _SAMPLES) | 1
    sample = memoryview(pixels)[::step].tobytes()
    return sample.count(0) == len(sample)

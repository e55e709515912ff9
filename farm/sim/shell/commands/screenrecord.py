"""``screenrecord``: the display as a real MP4 file (DigiRL and Mobile-Agent-E record
episodes this way), until ``--time-limit`` or until the caller hangs up (Ctrl-C on
``adb shell`` closes the stream, which cancels the command: the file is still
finished and written, as the real tool's SIGINT handler does).

Frames are sampled from the world at :data:`FPS` and repeated to keep the video's length
equal to the time recorded. The video is H.264 (yuv420p) in an MP4 container at the
requested ``--bit-rate``, as a phone writes it (farm.video)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from farm.sim.shell.commands.registry import command
from farm.sim.shell.context import Proc

if TYPE_CHECKING:
    from farm.video import H264Writer

T = TypeVar("T")

FPS = 5
MAX_TIME_LIMIT_S = 180
MIN_BIT_RATE, MAX_BIT_RATE = 100_000, 200_000_000
DEFAULT_BIT_RATE = 20_000_000

USAGE = """Usage: screenrecord [options] <filename>

Android screenrecord v1.3.  Records the device's display to a .mp4 file.

Options:
--size WIDTHxHEIGHT
    Set the video size, e.g. "1280x720".  Default is the device's main
    display resolution (if supported), 1280x720 if not.  For best results,
    use a size supported by the AVC encoder.
--bit-rate RATE
    Set the video bit rate, in bits per second.  Value may be specified as
    bits or megabits, e.g. '4000000' is equivalent to '4M'.  Default 20Mbps.
--bugreport
    Add additional information, such as a timestamp overlay, that is helpful
    in videos captured to illustrate bugs.
--time-limit TIME
    Set the maximum recording time, in seconds.  Default / maximum is 180.
--display-id ID
    specify the physical display ID to record. Default is the primary display.
    see "dumpsys SurfaceFlinger --display-id" for valid display IDs.
--verbose
    Display interesting information on stdout.
--help
    Show this message.

Recording continues until Ctrl-C is hit or the time limit is reached.

"""

_SIZE = re.compile(r"(\d{1,5})x(\d{1,5})")
_RATE = re.compile(r"(\d{1,10})([kKmM]?)")
_WITH_VALUE = {"--size", "--bit-rate", "--time-limit", "--display-id", "--output-format",
               "--codec-name", "--bframes", "--max-size"}


@dataclass
class Options:
    file: str = ""
    size: tuple[int, int] | None = None
    bit_rate: int = DEFAULT_BIT_RATE
    time_limit: int = MAX_TIME_LIMIT_S
    verbose: bool = False
    help: bool = False


def parse(args: list[str]) -> Options | str:
    """The options, or the message a phone prints for a bad command line."""
    o = Options()
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        name, eq, value = a.partition("=")
        if a.startswith("--") and name in _WITH_VALUE:
            if not eq:
                if i + 1 >= len(args):
                    return f"screenrecord: option '{name}' requires an argument\n"
                i += 1
                value = args[i]
            if name == "--size":
                m = _SIZE.fullmatch(value)
                if not m:
                    return f"Invalid size '{value}', must be width x height\n"
                w, h = int(m.group(1)), int(m.group(2))
                if w == 0 or h == 0:
                    return f"Invalid size {w}x{h}, width and height may not be zero\n"
                o.size = (w, h)
            elif name == "--bit-rate":
                m = _RATE.fullmatch(value)
                if not m:
                    return f"Invalid bit rate '{value}'\n"
                rate = int(m.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[m.group(2).lower()]
                if not MIN_BIT_RATE <= rate <= MAX_BIT_RATE:
                    return (f"Bit rate {rate}bps outside acceptable range "
                            f"[{MIN_BIT_RATE},{MAX_BIT_RATE}]\n")
                o.bit_rate = rate
            elif name == "--time-limit":
                try:
                    limit = int(value)
                except ValueError:
                    limit = 0
                if not 1 <= limit <= MAX_TIME_LIMIT_S:
                    return (f"Time limit {value}s outside acceptable range "
                            f"[1,{MAX_TIME_LIMIT_S}]\n")
                o.time_limit = limit
        elif a in ("--verbose", "-v"):
            o.verbose = True
        elif a in ("--help", "-h"):
            o.help = True
        elif a in ("--bugreport", "--rotate", "--persistent-surface", "--bframes"):
            pass
        elif a.startswith("-") and a != "-":
            return f"screenrecord: unrecognized option '{a}'\n"
        else:
            files.append(a)
        i += 1
    if not o.help:
        if len(files) != 1:
            return "Must specify output file (see --help).\n"
        o.file = files[0]
    return o


class _Encoder:
    """An H.264 MP4 written into a host temp file, read back when finished.

    Every call runs on the encoder's own worker thread, in the order made: the codec
    context is not thread-safe, and a recording cancelled while a frame is being
    encoded must not flush the encoder from the loop thread at the same time (that
    raced the worker and could hang the phone's event loop at teardown).
    """

    def __init__(self, size: tuple[int, int], bit_rate: int) -> None:
        self._size, self._bit_rate = size, bit_rate
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="screenrecord")
        self._video: H264Writer | None = None
        self.path = ""
        self.frames = 0  # frames handed to the worker (read on the loop thread)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    async def open(self) -> None:
        await self._call(self._open)

    def _open(self) -> None:
        from farm.video import H264Writer

        fd, self.path = tempfile.mkstemp(prefix="distrl-screenrecord-", suffix=".mp4")
        os.close(fd)
        # ultrafast: a phone encodes in hardware; here the host's cores also run the sims
        self._video = H264Writer(self.path, self._size, FPS, bit_rate=self._bit_rate,
                                 preset="ultrafast")

    async def add(self, rgba: bytes, width: int, height: int, repeat: int) -> None:
        self.frames += repeat
        await self._call(self._add, rgba, width, height, repeat)

    def _add(self, rgba: bytes, width: int, height: int, repeat: int) -> None:
        assert self._video is not None
        self._video.add(np.frombuffer(rgba, np.uint8).reshape(height, width, 4), repeat)

    async def finish(self) -> bytes:
        """The finished file; queued behind any frame still being encoded. If the
        caller is cancelled meanwhile the worker still finishes and removes the file."""
        future = self._worker.submit(self._finish)
        self._worker.shutdown(wait=False)
        return await asyncio.shield(asyncio.wrap_future(future))

    def _finish(self) -> bytes:
        if self._video is None:
            return b""
        try:
            self._video.close()
            with open(self.path, "rb") as f:
                return f.read()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def _even(n: int) -> int:
    return max(2, n - n % 2)  # the encoder takes even sizes, as AVC encoders prefer


@command("screenrecord")
async def screenrecord(p: Proc) -> int:
    opts = parse(p.args)
    if isinstance(opts, str):
        p.error(opts)
        return 2
    if opts.help:
        p.error(USAGE)
        return 0
    world = p.phone.world
    path = p.path(opts.file)
    parent = path.rsplit("/", 1)[0] or "/"
    if not p.phone.vfs.is_dir(parent):
        p.error(f"Unable to open '{opts.file}': No such file or directory\n")
        return 1
    w, h = opts.size or (world.width, world.height)
    size = (_even(w), _even(h))
    if opts.verbose:
        p.write(f"Main display is {world.width}x{world.height} @60.00fps "
                f"(orientation=ROTATION_{world.rotation * 90})\n"
                f"Configuring recorder for {size[0]}x{size[1]} video/avc at "
                f"{opts.bit_rate / 1e6:.2f}Mbps\n")
        p.write(f"Content area is {size[0]}x{size[1]} at offset x=0 y=0\n")
    enc = _Encoder(size, opts.bit_rate)
    loop = asyncio.get_running_loop()
    start = loop.time()
    write_error = ""
    interrupted = asyncio.Event()  # SIGINT (`kill -INT` of its job): finish, exit 0
    p.session.sigint = interrupted.set
    try:
        await enc.open()
        while not interrupted.is_set():
            elapsed = loop.time() - start
            due = min(int(elapsed * FPS) + 1, opts.time_limit * FPS)
            if due > enc.frames:
                await enc.add(world.frame_rgba(), world.width, world.height,
                              due - enc.frames)
            if elapsed >= opts.time_limit:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(interrupted.wait(),
                                       min(1 / FPS, opts.time_limit - elapsed))
    finally:
        p.session.sigint = None
        # also when the caller hangs up (cancelled): the file is finished as on SIGINT
        try:
            data = await enc.finish()
            if data:  # nothing when the encoder never opened
                p.phone.vfs.write(path, data)
        except OSError as e:
            write_error = e.strerror or str(e)
    if write_error:
        p.error(f"Unable to open '{opts.file}': {write_error}\n")
        return 1
    if opts.verbose:
        p.write(f"Stopping encoder and muxer\nEncoder stopping; recorded {enc.frames} "
                f"frames in {round(loop.time() - start)} seconds\n")
    return 0

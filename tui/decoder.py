"""Frame decoding off the UI loop: one thread turns the newest JPEG of each device into
half-block cells. A frame that arrives before its predecessor was decoded replaces it
(only the latest per device is ever decoded), so a slow terminal never builds a
backlog. The UI picks finished pictures up with :meth:`FrameDecoder.take` on its tick."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from PIL import Image

from distrl_sdk.wire import DeviceFrame
from tui.imaging import HalfBlock, decode, draw_marks, fit_cells, halfblock, marks_of

#: pixels of a terminal cell, roughly (terminals draw 7–12 × 14–24): what a native wall
#: tile is decoded at, so Kitty/Sixel get detail without shipping the whole frame per tile
CELL_PX = (10, 20)

__all__ = ["DecoderStats", "FrameDecoder", "FrameJob", "Rendered"]

DeviceKey = tuple[str, str]  # (farm id, device id)


@dataclass(frozen=True)
class FrameJob:
    key: DeviceKey
    frame: DeviceFrame
    data: bytes


@dataclass(frozen=True)
class Rendered:
    key: DeviceKey
    frame: DeviceFrame
    thumb: HalfBlock | None
    big: HalfBlock | None = None  # only for the device in focus
    error: str | None = None
    tile: HalfBlock | None = None  # the wall's bigger thumbnail, once a tile size is set
    picture: Image.Image | None = None  # the focus device's frame with its marks (native)
    tile_picture: Image.Image | None = None  # the wall tile's frame at pixel size (native)


@dataclass
class DecoderStats:
    submitted: int = 0
    decoded: int = 0
    coalesced: int = 0  # frames replaced by a newer one before decoding
    errors: int = 0
    deferred: int = 0  # frames of off-screen devices not rendered (set_visible)
    busy_s: float = field(default=0.0)  # thread CPU time spent decoding


class FrameDecoder:
    """``submit`` from the UI loop, ``take`` on the UI tick; rendering in between runs
    on a daemon thread that :meth:`stop` joins."""

    def __init__(self, thumb_rows: int = 5, thumb_cols: int = 8,
                 on_ready: Callable[[], None] | None = None) -> None:
        self.thumb_rows = thumb_rows
        self.thumb_cols = thumb_cols
        self.on_ready = on_ready  # called from the thread after a batch (must be thread-safe)
        self.stats = DecoderStats()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._pending: dict[DeviceKey, FrameJob] = {}
        self._last: dict[DeviceKey, FrameJob] = {}
        self._done: dict[DeviceKey, Rendered] = {}
        self._focus: tuple[DeviceKey, int, int] | None = None
        self._tile: tuple[int, int] | None = None
        # the devices on screen (None: all): others' frames wait, newest only, until
        # they are scrolled into view (a 200×50 wall shows 20 of 64 phones)
        self._visible: frozenset[DeviceKey] | None = None
        # terminal graphics: also hand over the focus device's picture and, with a tile
        # size, each wall tile's
        self.native = False
        self._thread: threading.Thread | None = None
        self._busy = False
        self._queued = 0  # frames ever queued for rendering (settle: did a tick add work?)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tui-frames", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def submit(self, job: FrameJob) -> None:
        with self._lock:
            if job.key in self._pending:
                self.stats.coalesced += 1
            self._pending[job.key] = job
            self._last[job.key] = job
            self.stats.submitted += 1
            self._queued += 1
        self._wake.set()

    def forget(self, key: DeviceKey) -> None:
        with self._lock:
            self._pending.pop(key, None)
            self._last.pop(key, None)
            self._done.pop(key, None)

    def set_focus(self, key: DeviceKey | None, cols: int = 0, rows: int = 0) -> None:
        """Also render ``key``'s frames at up to ``cols``×``rows`` cells with the actions
        drawn (the device screen); its newest frame is re-rendered right away."""
        with self._lock:
            self._focus = None if key is None else (key, max(1, cols), max(1, rows))
            if key is not None and key in self._last:
                self._queue_again(key, self._last[key])
        self._wake.set()

    def set_tile(self, cols: int, rows: int) -> None:
        """Also render every frame as a wall tile of up to ``cols``×``rows`` cells; a new
        size re-renders each device's newest frame (the wall was resized)."""
        tile = (max(1, cols), max(1, rows))
        with self._lock:
            if tile == self._tile:
                return
            self._tile = tile
            for key, job in self._last.items():
                self._queue_again(key, job)
        self._wake.set()

    def set_visible(self, keys: Iterable[DeviceKey] | None) -> None:
        """Render only these devices' frames (and the focus device's); ``None``: all.
        A device that comes into view gets its newest frame rendered at once."""
        new = None if keys is None else frozenset(keys)
        with self._lock:
            old = self._visible
            if new == old:
                return
            self._visible = new
            for key, job in self._last.items():
                if (new is None or key in new) and old is not None and key not in old:
                    self._queue_again(key, job)
        self._wake.set()

    def _queue_again(self, key: DeviceKey, job: FrameJob) -> None:
        """Render ``key``'s newest frame again (caller holds the lock)."""
        if key not in self._pending:
            self._pending[key] = job
            self._queued += 1

    @property
    def queued(self) -> int:
        """How many frames were ever queued for rendering: a count that moved means
        new work, even when it is already done."""
        with self._lock:
            return self._queued

    @property
    def tile(self) -> tuple[int, int] | None:
        return self._tile

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being rendered (tests wait for this)."""
        with self._lock:
            return not self._pending and not self._busy

    def take(self) -> dict[DeviceKey, Rendered]:
        """Pictures finished since the last call (newest per device)."""
        with self._lock:
            done, self._done = self._done, {}
        return done

    def render(self, job: FrameJob, focus: tuple[DeviceKey, int, int] | None,
               tile: tuple[int, int] | None = None) -> Rendered:
        """One frame → thumbnail, wall tile (with ``tile``) and the large picture when in
        focus. Public so the tests and the benchmark can time it without the thread."""
        f = job.frame
        try:
            tc, tr = fit_cells(f.width, f.height, self.thumb_cols, self.thumb_rows)
            want = (tc, 2 * tr)
            big = picture = tile_hb = tile_pic = None
            in_focus = focus is not None and focus[0] == job.key
            if focus is not None and in_focus:
                bc, br = fit_cells(f.width, f.height, focus[1], focus[2])
                want = (max(want[0], bc), max(want[1], 2 * br))
            if tile is not None:
                wc, wr = fit_cells(f.width, f.height, *tile)
                # a terminal with graphics draws the tile's pixels, ~CELL_PX per cell
                tw, th = (wc * CELL_PX[0], wr * CELL_PX[1]) if self.native else (wc, 2 * wr)
                want = (max(want[0], tw), max(want[1], th))
            # a terminal with graphics shows the frame at its own resolution
            img = decode(job.data, None if in_focus and self.native else want)
            thumb = halfblock(img, tc, tr)
            if tile is not None:
                tile_hb = halfblock(img, wc, wr)
                if self.native:
                    tile_pic = img.copy()
                    tile_pic.thumbnail((wc * CELL_PX[0], wr * CELL_PX[1]))
            if in_focus:
                marks = marks_of(f.actions, f.screen_width, f.screen_height)
                bimg = img.resize((bc, 2 * br))
                big = halfblock(draw_marks(bimg, marks), bc, br, resize=False)
                if self.native:
                    picture = draw_marks(img, marks)
            return Rendered(job.key, f, thumb, big, tile=tile_hb, picture=picture,
                            tile_picture=tile_pic)
        except Exception as e:  # a corrupt image is shown as an error, never raised
            return Rendered(job.key, f, None, None, f"{type(e).__name__}: {e}"[:200])

    def _loop(self) -> None:
        while not self._stop:
            self._wake.wait(0.5)
            self._wake.clear()
            with self._lock:
                jobs, self._pending = self._pending, {}
                focus, tile, visible = self._focus, self._tile, self._visible
                if visible is not None:  # off-screen ones wait in _last (newest only)
                    shown = {k: j for k, j in jobs.items()
                             if k in visible or (focus is not None and focus[0] == k)}
                    self.stats.deferred += len(jobs) - len(shown)
                    jobs = shown
                self._busy = bool(jobs)
            if not jobs:
                continue
            t0 = time.thread_time()
            out = [self.render(j, focus, tile) for j in jobs.values()]
            with self._lock:
                for r in out:
                    self._done[r.key] = r
                    if r.error:
                        self.stats.errors += 1
                    else:
                        self.stats.decoded += 1
                self.stats.busy_s += time.thread_time() - t0
                self._busy = False
            if self.on_ready is not None and not self._stop:
                self.on_ready()

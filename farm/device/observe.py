"""One observation of a device: raw frame + UI tree + foreground activity, captured together.

The three reads run **concurrently** (an ``asyncio.TaskGroup``, i.e. gather with
sibling cancellation) under one deadline, so an observation costs about the slowest of
them, not the sum.

Stale-frame policy (docs/design.md §4, "never a silent black frame"):

* :func:`observe` never invents pixels. A capture that fails, times out, comes back
  short, or is all zero bytes (a transparent-black buffer, which a working
  ``screencap`` never produces: real frames are opaque; judged from a strided sample,
  :func:`farm.adb.looks_blank`, not a scan of all 10 MB) raises a typed
  :class:`~distrl_sdk.errors.DeviceError` (``AdbTimeout`` on a deadline,
  ``DeviceOffline`` when the adb server lost the device).
* :class:`Observer` wraps it for an episode loop: on a failure it may return the
  **previous** observation again with ``stale=True`` and the error in ``stale_reason``,
  at most ``max_stale`` times in a row; after that (or with no previous frame) the
  error propagates. ``DeviceOffline`` always propagates: a gone device has no
  "current" screen worth pretending about.
"""

from __future__ import annotations

import asyncio
import io
import re
import time
from dataclasses import dataclass, replace
from typing import Protocol

from PIL import Image

from distrl_sdk.errors import AdbTimeout, DeviceError, DeviceOffline
from distrl_sdk.uitree import UIElement
from farm.adb.frames import looks_blank

__all__ = [
    "Frame",
    "Observable",
    "Observation",
    "Observer",
    "observe",
    "parse_focus",
]

_FOCUS = re.compile(r"mCurrentFocus=Window\{\S+ u\d+ (?P<title>[^\s}]+)(?: EXITING)?\}")
_FOCUSED_APP = re.compile(r"mFocusedApp=\S*Record\{\S+ u\d+ (?P<comp>[^\s}]+)")
FOCUS_COMMAND = "dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'"


class Observable(Protocol):
    """What :func:`observe` needs (``farm.device.AdbDevice`` has it)."""

    @property
    def serial(self) -> str: ...

    async def screenshot_rgba(self) -> tuple[int, int, bytes | memoryview]: ...

    async def ui_elements(self) -> list[UIElement]: ...

    async def shell(self, command: str, *, timeout: float = 30.0) -> object: ...


@dataclass(frozen=True, slots=True)
class Frame:
    """Raw RGBA pixels, row-major, 4 bytes a pixel. From a device, ``rgba`` is a
    read-only view of the buffer the frame was received into (never copied)."""

    width: int
    height: int
    rgba: bytes | memoryview

    def image(self) -> Image.Image:
        """A PIL image over the same memory (frombuffer maps it, no copy)."""
        # PIL's stubs leave memoryview out, but frombuffer takes any buffer
        return Image.frombuffer("RGBA", (self.width, self.height), self.rgba,  # type: ignore[arg-type]
                                "raw", "RGBA", 0, 1)

    def to_png(self, compress_level: int = 1) -> bytes:
        out = io.BytesIO()
        self.image().save(out, "PNG", compress_level=compress_level)
        return out.getvalue()

    def to_jpeg(self, quality: int = 80, max_side: int | None = None) -> bytes:
        """JPEG (alpha dropped), optionally downscaled so the longer side is ``max_side``."""
        img = self.image().convert("RGB")
        if max_side and max(img.size) > max_side:
            img.thumbnail((max_side, max_side), Image.Resampling.BILINEAR)
        out = io.BytesIO()
        img.save(out, "JPEG", quality=quality)
        return out.getvalue()


@dataclass(frozen=True, slots=True)
class Observation:
    serial: str
    frame: Frame
    elements: tuple[UIElement, ...]
    package: str | None  # foreground package; None when focus is null (transitions)
    activity: str | None  # as dumpsys prints it (``.Settings`` or fully qualified)
    window: str | None  # raw mCurrentFocus title (may be a system window name)
    started_at: float  # wall-clock time.time() when the capture began
    captured_at: float  # … and when the last of the three reads finished
    stale: bool = False
    stale_reason: str | None = None

    @property
    def duration_s(self) -> float:
        return self.captured_at - self.started_at


def parse_focus(text: str) -> tuple[str | None, str | None, str | None]:
    """(package, activity, window title) from ``dumpsys window`` output."""
    m = _FOCUS.search(text)
    if m:
        title = m.group("title")
        if "/" in title:
            pkg, act = title.split("/", 1)
            return pkg, act, title
        comp = _FOCUSED_APP.search(text)
        if comp and "/" in comp.group("comp"):  # a system window over an app
            pkg, act = comp.group("comp").split("/", 1)
            return pkg, act, title
        return None, None, title
    comp = _FOCUSED_APP.search(text)
    if comp and "/" in comp.group("comp"):
        pkg, act = comp.group("comp").split("/", 1)
        return pkg, act, None
    return None, None, None


def _check_frame(serial: str, width: int, height: int, rgba: bytes | memoryview) -> Frame:
    if width <= 0 or height <= 0 or len(rgba) != width * height * 4:
        raise DeviceError(f"screencap gave {len(rgba)} bytes for {width}x{height}",
                          serial=serial)
    if looks_blank(rgba):
        raise DeviceError("screencap returned an all-zero (transparent black) frame; "
                          "the capture failed (secure window, display off or a broken "
                          "SurfaceFlinger)", serial=serial)
    return Frame(width, height, rgba)


async def observe(device: Observable, *, timeout: float = 10.0) -> Observation:
    """Capture frame, UI tree and foreground activity concurrently; raise on any failure."""
    started = time.time()
    try:
        async with asyncio.timeout(timeout):
            async with asyncio.TaskGroup() as tg:
                shot = tg.create_task(device.screenshot_rgba())
                tree = tg.create_task(device.ui_elements())
                focus = tg.create_task(device.shell(FOCUS_COMMAND, timeout=timeout))
    except TimeoutError:
        raise AdbTimeout(f"observation took longer than {timeout:g} s",
                         serial=device.serial) from None
    except BaseExceptionGroup as group:
        # the first device error wins; anything else (a bug) propagates unchanged
        for exc in group.exceptions:
            if isinstance(exc, DeviceError):
                raise exc from None
        raise
    width, height, rgba = shot.result()
    frame = _check_frame(device.serial, width, height, rgba)
    pkg, act, window = parse_focus(str(getattr(focus.result(), "stdout", "")))
    return Observation(device.serial, frame, tuple(tree.result()), pkg, act, window,
                       started, time.time())


class Observer:
    """:func:`observe` with the stale-frame fallback described in the module docstring."""

    def __init__(self, device: Observable, *, timeout: float = 10.0, max_stale: int = 1) -> None:
        self.device = device
        self.timeout = timeout
        self.max_stale = max_stale
        self.last: Observation | None = None
        self.stale_in_a_row = 0

    async def observe(self) -> Observation:
        try:
            obs = await observe(self.device, timeout=self.timeout)
        except DeviceOffline:
            raise
        except DeviceError as exc:
            if self.last is None or self.stale_in_a_row >= self.max_stale:
                raise
            self.stale_in_a_row += 1
            return replace(self.last, stale=True, stale_reason=str(exc))
        self.last, self.stale_in_a_row = obs, 0
        return obs

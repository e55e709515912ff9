"""The seams between the parts of a simulated phone.

    adbd (farm/sim/adbd)  ──run_shell/install──►  shell (farm/sim/shell)
          │ sync                                     │ input/screencap/uiautomator/am/pm/settings
          ▼                                          ▼
       VirtualFS  ◄──────────── uiautomator dump ── World (farm/sim/world)

``PhoneSpec`` says what phone to build, ``AdbdBackend`` is what the protocol layer
needs from a phone, ``WorldAPI`` is what the shell needs from the Android model.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, Self

from farm.sim.faults import BatteryState, Faults
from farm.sim.intents import IntentQuery, ResolveInfo
from farm.sim.profiles import LatencyProfile
from farm.sim.vfs import VirtualFS


@dataclass(frozen=True, slots=True)
class ScreenSpec:
    width: int = 1080
    height: int = 2400
    density: int = 420

    @classmethod
    def preset(cls, name: str) -> ScreenSpec:
        try:
            return SCREEN_PRESETS[name]
        except KeyError:
            known = ", ".join(SCREEN_PRESETS)
            raise ValueError(f"unknown screen preset {name!r}; choose one of: {known}") from None


SCREEN_PRESETS: dict[str, ScreenSpec] = {
    "phone": ScreenSpec(1080, 2400, 420),  # Pixel 6 class, the default
    "small": ScreenSpec(360, 800, 160),  # for load tests: 1/9 of the pixels
}


@dataclass(frozen=True, slots=True)
class PhoneSpec:
    """Everything that makes one simulated phone what it is."""

    name: str = "sim"  # ro.product.device / hostname; unique per farm
    screen: ScreenSpec = ScreenSpec()
    model: str = "DistRL Sim Phone"
    product: str = "distrl_sim"
    device: str = "distrl_sim"
    manufacturer: str = "DistRL"
    sdk: int = 34
    release: str = "14"
    seed: int = 0
    serialno: str = "SIM0000000"


Chunk = bytes | memoryview
STDOUT, STDERR = 1, 2


class OutputLog:
    """Every write of one command line, in the order written: ``(fd, chunk)``.

    A phone's adbd relays a command's stdout and stderr as they are written, so the
    protocol layer reads this log (not the per-fd lists) and may start sending before
    the command ends: ``on_write`` is called after each write.
    """

    __slots__ = ("events", "on_write")

    def __init__(self) -> None:
        self.events: list[tuple[int, Chunk]] = []
        self.on_write: Callable[[], None] | None = None

    def add(self, fd: int, chunk: Chunk) -> None:
        self.events.append((fd, chunk))
        if self.on_write is not None:
            self.on_write()


class StdoutTap(list[Chunk]):
    """A command line's stdout: a list of chunks that also records each write in its log."""

    __slots__ = ("log",)

    def __init__(self, log: OutputLog, chunks: Iterable[Chunk] = ()) -> None:
        super().__init__()
        self.log = log
        self.extend(chunks)

    def append(self, chunk: Chunk) -> None:
        super().append(chunk)
        self.log.add(STDOUT, chunk)

    def extend(self, chunks: Iterable[Chunk]) -> None:
        for chunk in chunks:
            self.append(chunk)

    def __iadd__(self, chunks: Iterable[Chunk]) -> Self:  # type: ignore[override,misc]
        self.extend(chunks)
        return self


class StderrTap(list[bytes]):
    """A command line's stderr, recorded in the same log as its stdout."""

    __slots__ = ("log",)

    def __init__(self, log: OutputLog, chunks: Iterable[bytes] = ()) -> None:
        super().__init__()
        self.log = log
        self.extend(chunks)

    def append(self, chunk: bytes) -> None:
        super().append(chunk)
        self.log.add(STDERR, chunk)

    def extend(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self.append(chunk)

    def __iadd__(self, chunks: Iterable[bytes]) -> Self:  # type: ignore[override,misc]
        self.extend(chunks)
        return self


@dataclass(slots=True)
class ShellResult:
    """Output of one shell command line; stdout chunks avoid copying large frames.

    ``stdout``/``stderr`` hold each stream's chunks; ``log`` holds both in write order
    (what ``shell:`` v1 and ``exec:`` merge, and what v2 relays packet by packet).
    """

    stdout: list[bytes | memoryview] = field(default_factory=list)
    stderr: list[bytes] = field(default_factory=list)
    exit_code: int = 0
    log: OutputLog = field(default_factory=OutputLog, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.stdout, StdoutTap) or self.stdout.log is not self.log:
            self.stdout = StdoutTap(self.log, self.stdout)
        if not isinstance(self.stderr, StderrTap) or self.stderr.log is not self.log:
            self.stderr = StderrTap(self.log, self.stderr)

    def out(self, data: bytes | memoryview | str) -> None:
        self.stdout.append(data.encode() if isinstance(data, str) else data)

    def err(self, data: bytes | str) -> None:
        self.stderr.append(data.encode() if isinstance(data, str) else data)

    @property
    def stdout_bytes(self) -> bytes:
        return b"".join(bytes(c) for c in self.stdout)

    @property
    def stderr_bytes(self) -> bytes:
        return b"".join(self.stderr)

    @property
    def merged(self) -> list[Chunk]:
        """stdout and stderr chunks in the order they were written."""
        return [chunk for _fd, chunk in self.log.events]


class LogBuffer:
    """``logcat`` ring buffer: (epoch seconds, pid, tid, priority, tag, message)."""

    def __init__(self, capacity: int = 5000, clock: Callable[[], float] = time.time) -> None:
        self.lines: deque[tuple[float, int, int, str, str, str]] = deque(maxlen=capacity)
        self.clock = clock

    def log(self, priority: str, tag: str, message: str, pid: int = 1000, tid: int = 1000) -> None:
        self.lines.append((self.clock(), pid, tid, priority, tag, message))

    def clear(self) -> None:
        self.lines.clear()


@dataclass(frozen=True, slots=True)
class StartResult:
    """What ``am start`` did: ``ok``, ``brought_to_front``, ``delivered_to_top`` (an
    intent reached a running instance) or ``no_such_activity``."""

    outcome: str
    component: str  # as the user typed it, e.g. ``com.android.settings/.Settings``
    package: str = ""
    activity: str = ""  # fully qualified class name


@dataclass(frozen=True, slots=True)
class PackageInfo:
    name: str
    apk_path: str  # e.g. /system/priv-app/Settings/Settings.apk
    system: bool
    launcher_activity: str | None  # fully qualified, None for packages without one
    label: str = ""


@dataclass(frozen=True, slots=True)
class ActivityRecord:
    package: str
    activity: str  # fully qualified class name
    task_id: int
    token: int  # stands in for the identity hash printed in dumpsys


class SettingsAPI(Protocol):
    """``settings get|put`` namespaces: system, secure, global; values are strings."""

    def get(self, namespace: str, key: str) -> str | None: ...
    def put(self, namespace: str, key: str, value: str) -> None: ...
    def delete(self, namespace: str, key: str) -> bool: ...
    def list(self, namespace: str) -> list[tuple[str, str]]: ...


class LiveStdin(Protocol):
    """The host's stdin of a running shell stream, as it arrives."""

    async def readline(self) -> bytes:
        """The next line with its newline, what is left at EOF, or b"" after EOF."""
        ...


class WorldAPI(Protocol):
    """The Android model the shell drives; pixels and UI tree come from one view tree."""

    width: int
    height: int
    density: int
    settings: SettingsAPI
    logcat: LogBuffer
    battery: BatteryState
    screen_on: bool
    rotation: int

    # input (coordinates in physical pixels; text already decoded: '%s' → ' ')
    def tap(self, x: float, y: float) -> None: ...
    def swipe(self, x1: float, y1: float, x2: float, y2: float, duration_ms: int) -> None: ...
    def input_text(self, text: str) -> None: ...
    def clear_text(self) -> None: ...  # empties the focused field (an IME's clear)
    def select_all(self) -> None: ...  # Ctrl+A in the focused field
    def motion(self, action: str, x: float, y: float) -> None: ...  # input motionevent
    def key(self, keycode: int) -> None: ...

    # observation
    @property
    def version(self) -> int: ...  # bumps on every visible change
    def frame_rgba(self) -> bytes: ...  # width*height*4, cached per version
    def frame_png(self) -> bytes: ...  # cached per version
    def ui_xml(self) -> str: ...  # AOSP one-line uiautomator dump

    # activity / package manager
    def current_focus(self) -> tuple[str, str] | None: ...  # (package, activity class)
    def activity_stack(self) -> list[ActivityRecord]: ...  # top first
    def start_activity(self, component: str,
                       args: dict[str, str] | None = None) -> StartResult: ...
    def has_activity(self, package: str, activity: str) -> bool: ...  # fully qualified
    def input_method_state(self) -> tuple[bool, str, str]: ...  # shown, hint, package
    def call_state(self) -> tuple[int, str]: ...  # TelephonyManager state, incoming number
    def remove_task(self, task_id: int) -> bool: ...
    def resolve_intent(self, intent: IntentQuery) -> list[ResolveInfo]: ...
    def intent_args(self, info: ResolveInfo, intent: IntentQuery) -> dict[str, str]: ...
    def launch_package(self, package: str) -> bool: ...  # monkey -p PKG 1
    def force_stop(self, package: str) -> None: ...
    def clear_package(self, package: str) -> bool: ...
    def packages(self) -> list[PackageInfo]: ...
    def install_package(self, apk_path: str, package: str, label: str) -> None: ...
    def uninstall_package(self, package: str) -> bool: ...
    def show_anr(self) -> None: ...

    # notifications and the shade
    shade_open: bool
    def post_notification(self, package: str, title: str, text: str,
                          tag: str | None = None) -> object: ...
    def notification_dump(self, redact: bool = True) -> str: ...  # dumpsys notification
    def expand_shade(self) -> None: ...
    def collapse_shade(self) -> None: ...


class AdbdBackend(Protocol):
    """What the adbd protocol layer needs from a phone."""

    spec: PhoneSpec
    vfs: VirtualFS
    faults: Faults
    profile: LatencyProfile

    async def run_shell(self, command: str, stdin: bytes = b"",
                        result: ShellResult | None = None,
                        live_stdin: LiveStdin | None = None) -> ShellResult:
        """Run ``command``; with ``result``, fill that one (its log is watched while the
        command runs) and return it; ``live_stdin``: the stream's input, for ``read``."""
        ...

    async def install_stream(self, data: bytes, args: list[str]) -> str: ...
    def framebuffer(self) -> tuple[int, int, bytes]: ...

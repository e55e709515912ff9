"""One simulated phone: the Android world, its shell, its files and its adbd, wired together."""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from farm.sim.adbd import AdbdServer
from farm.sim.adbd.socket_service import SocketHandler, socket_spec
from farm.sim.faults import FaultKind, Faults
from farm.sim.profiles import LatencyProfile, get_profile
from farm.sim.shell import Shell
from farm.sim.spec import LiveStdin, LogBuffer, PhoneSpec, ShellResult
from farm.sim.vfs import VirtualFS
from farm.sim.world import World


@dataclass(frozen=True)
class PhoneState:
    """A saved phone (:meth:`SimPhone.save_state`): opaque, restorable any number of
    times."""

    parts: tuple[Any, ...]


class SimPhone:
    """A phone that the real ``adb`` reaches with ``adb connect HOST:PORT``.

    Everything random in it (latency jitter, app content) draws from generators
    seeded by ``spec.seed``, so two phones with the same spec behave alike.
    """

    def __init__(
        self,
        spec: PhoneSpec | None = None,
        *,
        profile: LatencyProfile | str = "instant",
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.spec = spec or PhoneSpec()
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        seeds = random.Random(self.spec.seed)
        self.vfs = VirtualFS()
        self.logcat = LogBuffer()
        self.faults = Faults(clock=clock)
        self.world = World(
            self.spec, self.vfs, self.faults, self.logcat, random.Random(seeds.getrandbits(64)),
            clock,
        )
        self.shell = Shell(
            self.spec, self.world, self.vfs, self.faults, self.profile,
            random.Random(seeds.getrandbits(64)), self.logcat,
        )
        self.server = AdbdServer(self, host=host, port=port)
        self.host = host
        # sim-side socket services (``tcp:7912``, ``localabstract:NAME``) by socket name
        self.listeners: dict[str, SocketHandler] = {}
        # set when started as an emulator (farm.sim.console): its console's port, and
        # the serial is emulator-<console port>
        self.console_port: int | None = None

    # -- AdbdBackend -------------------------------------------------------------
    async def run_shell(self, command: str, stdin: bytes = b"",
                        result: ShellResult | None = None,
                        live_stdin: LiveStdin | None = None) -> ShellResult:
        return await self.shell.run(command, stdin, result, live_stdin)

    async def install_stream(self, data: bytes, args: list[str]) -> str:
        return await self.shell.install_apk_bytes(data, args)

    def framebuffer(self) -> tuple[int, int, bytes]:
        return self.world.width, self.world.height, self.world.frame_rgba()

    # -- lifecycle ---------------------------------------------------------------
    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def serial(self) -> str:
        """The serial the adb server gives this phone: ``HOST:PORT`` after ``adb
        connect``, ``emulator-N`` for one started as an emulator."""
        if self.console_port is not None:
            return f"emulator-{self.console_port}"
        return f"{self.host}:{self.port}"

    def listen(self, name: str, handler: SocketHandler) -> None:
        """Serve ``tcp:PORT`` / ``localabstract:NAME`` streams opened on this phone with
        ``handler(stream)`` (a stand-in for an on-device server); without one the
        phone refuses them as a phone without that server does."""
        spec = socket_spec(name)
        if spec is None:
            raise ValueError(f"not a socket name adbd connects to: {name!r}")
        self.listeners[spec] = handler

    # -- state snapshots ---------------------------------------------------------
    def save_state(self) -> PhoneState:
        """What an emulator snapshot keeps: deep copies of the world (apps, settings, the
        task stack), the files, the installed packages, system properties and the
        clipboard. What belongs to the phone process (faults, logcat, clocks, the
        renderer) is shared, not copied: time goes on across a restore, as it does on
        an emulator."""
        sh = self.shell.phone
        return PhoneState(copy.deepcopy((self.world, self.vfs, sh.installed, sh.props,
                                         sh.clipboard), self._process_objects(self.world)))

    def restore_state(self, state: PhoneState) -> None:
        """Put the phone back as :meth:`save_state` found it; ``state`` stays reusable."""
        world, vfs, installed, props, clip = copy.deepcopy(
            state.parts, self._process_objects(state.parts[0]))
        old = self.world
        self.faults.on_anr[:] = [world.show_anr if getattr(f, "__self__", None) is old else f
                                 for f in self.faults.on_anr]
        world._windows, world._dirty, world._sig = [], True, ()  # rebuilt on the new objects
        world._frame = world._png = world._xml = None
        world._version = old._version + 1  # screen caches keyed by version never go stale
        self.world, self.vfs = world, vfs
        sh = self.shell.phone
        sh.world, sh.vfs, sh.installed, sh.props, sh.clipboard = (world, vfs, installed,
                                                                   props, clip)

    def _process_objects(self, world: World) -> dict[int, Any]:
        """A deepcopy memo that keeps the phone process's own objects shared."""
        return {id(o): o for o in (self.faults, self.logcat, world._renderer, world.clock,
                                   world._wall)}

    def fault(self, kind: FaultKind | str, seconds: float | None = None,
              value: float | None = None) -> str:
        """Inject a fault (see ``FaultKind``); returns what happened, for logs."""
        return self.faults.apply(kind, seconds=seconds, value=value)

    def __repr__(self) -> str:
        return (f"SimPhone({self.spec.name!r}, serial={self.serial!r}, "
                f"profile={self.profile.name!r})")

"""Builds a Shell over the fake world or the real one, for the shell tests."""

from __future__ import annotations

import random
from dataclasses import dataclass

from farm.sim.faults import Faults
from farm.sim.profiles import LatencyProfile, get_profile
from farm.sim.shell import Shell
from farm.sim.spec import LogBuffer, PhoneSpec, ShellResult, WorldAPI
from farm.sim.vfs import VirtualFS
from tests.sim.fake_world import FakeWorld


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rig:
    shell: Shell
    world: WorldAPI
    vfs: VirtualFS
    faults: Faults
    logcat: LogBuffer
    clock: FakeClock
    spec: PhoneSpec

    async def run(self, cmd: str, stdin: bytes = b"") -> ShellResult:
        return await self.shell.run(cmd, stdin)

    async def out(self, cmd: str) -> str:
        r = await self.shell.run(cmd)
        return r.stdout_bytes.decode()


def make_rig(kind: str = "fake", profile: LatencyProfile | str = "instant",
             spec: PhoneSpec | None = None) -> Rig:
    spec = spec or PhoneSpec()
    clock = FakeClock()
    vfs = VirtualFS()
    faults = Faults(clock=clock)
    logcat = LogBuffer(clock=lambda: 1_700_000_000.25)
    world: WorldAPI
    if kind == "real":
        from farm.sim.world import World

        world = World(spec, vfs, faults, logcat, random.Random(1), clock)  # type: ignore[assignment]
    else:
        fake = FakeWorld(spec.screen.width, spec.screen.height, spec.screen.density,
                         faults.battery)
        fake.logcat = logcat
        world = fake  # type: ignore[assignment]
    prof = get_profile(profile) if isinstance(profile, str) else profile
    shell = Shell(spec, world, vfs, faults, prof, random.Random(7), logcat)
    return Rig(shell, world, vfs, faults, logcat, clock, spec)

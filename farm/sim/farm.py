"""Many simulated phones in one process, as an async context manager.

    async with SimFarm(count=4, seed=7) as farm:
        for phone in farm.phones:
            print(phone.serial)          # 127.0.0.1:PORT, ready for `adb connect`

Phone *i* gets the seed ``derive_seed(seed, i)`` and the name ``sim-<i>``, so a farm
repeats exactly under the same seed whatever the ports turn out to be.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from types import TracebackType

from farm.sim.console import ConsoleServer
from farm.sim.phone import SimPhone
from farm.sim.profiles import LatencyProfile, get_profile
from farm.sim.spec import PhoneSpec, ScreenSpec

# adb servers probe 5555–5585 for emulators on start and would adopt phones there
# as emulator-NNNN on every server of the user; keep away from that range.
DEFAULT_BASE_PORT = 15555


def derive_seed(seed: int, index: int) -> int:
    digest = hashlib.sha256(f"distrl-sim:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def phone_spec(index: int, *, seed: int, screen: ScreenSpec) -> PhoneSpec:
    return PhoneSpec(
        name=f"sim-{index}",
        screen=screen,
        seed=derive_seed(seed, index),
        serialno=f"SIM{seed % 10000:04d}{index:06d}",
    )


class SimFarm:
    """Start ``count`` phones on loopback; ``base_port=0`` picks free ports."""

    def __init__(
        self,
        count: int = 1,
        *,
        profile: LatencyProfile | str = "instant",
        seed: int = 0,
        base_port: int = 0,
        screen: ScreenSpec | str = "phone",
        host: str = "127.0.0.1",
        as_emulator: bool = False,
        console_token: Path | None = None,
    ) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.screen = ScreenSpec.preset(screen) if isinstance(screen, str) else screen
        self.seed = seed
        self.as_emulator = as_emulator
        self.console_token = console_token  # default ~/.emulator_console_auth_token
        self.consoles: list[ConsoleServer] = []
        if as_emulator:
            base_port = 0  # the emulator range instead: see start()
        self.phones = [
            SimPhone(
                phone_spec(i, seed=seed, screen=self.screen),
                profile=self.profile,
                host=host,
                port=base_port + i if base_port else 0,
            )
            for i in range(count)
        ]

    async def start(self) -> None:
        started: list[SimPhone] = []
        try:
            if self.as_emulator:
                pairs = emulator_port_pairs(len(self.phones))
                for phone, console in zip(self.phones, pairs, strict=True):
                    phone.server.listen_on(console + 1)
            for phone in self.phones:
                await phone.start()
                started.append(phone)
                if self.as_emulator:
                    await self._console(phone)
        except BaseException:
            await self.stop()
            raise

    async def _console(self, phone: SimPhone) -> None:
        async def kill() -> None:  # `emu kill`: the emulator exits
            await phone.stop()
            await console.stop()

        console = ConsoleServer(phone, phone.port - 1, kill)
        if self.console_token is not None:
            console.token_path = self.console_token
        await console.start()
        phone.console_port = console.port
        self.consoles.append(console)

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.consoles), return_exceptions=True)
        await asyncio.gather(*(p.stop() for p in self.phones), return_exceptions=True)

    async def __aenter__(self) -> SimFarm:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def serials(self) -> list[str]:
        return [p.serial for p in self.phones]

    def phone(self, key: str) -> SimPhone:
        """Find a phone by serial (``127.0.0.1:15555``), name (``sim-0``) or port."""
        for p in self.phones:
            if key in (p.serial, p.spec.name, str(p.port)):
                return p
        raise KeyError(f"no sim phone {key!r}; have: {', '.join(self.serials)}")


#: the ports the adb server scans for emulators: console 5554, 5556 … (adb one above)
EMULATOR_CONSOLE_PORTS = range(5554, 5586, 2)


def emulator_port_pairs(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` console ports whose pair (console, console + 1) is free now, lowest
    first; OSError when the emulator range has fewer free pairs."""
    import socket

    out: list[int] = []
    for console in EMULATOR_CONSOLE_PORTS:
        socks: list[socket.socket] = []
        try:
            for port in (console, console + 1):
                s = socket.socket()
                socks.append(s)
                # as asyncio's servers bind: a port left in TIME_WAIT by an earlier
                # phone is free to listen on
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, port))
            out.append(console)
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
        if len(out) == count:
            return out
    raise OSError(f"only {len(out)} free emulator port pairs in 5554–5585 "
                  f"(wanted {count}); stop other emulators or use fewer phones")

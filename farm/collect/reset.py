"""Per-episode device reset: every episode starts from the same phone.

A phone keeps what earlier episodes did to it (a renamed device, a half-typed alarm,
a setting the agent toggled on the way). A task's ``setup`` restores what that task
depends on, not everything else, so without a reset an episode's outcome can depend
on which episodes that phone played before it. The DistRL and DigiRL launchers boot
every episode's emulator from one saved snapshot for that reason.

An :class:`EpisodeReset` runs on the leased device before the task's setup, inside the
episode's timeout. If it fails, the episode ends ``aborted`` with the failure as a
device error (the registry recovers or quarantines the device), and is never played on
a half-reset phone.

- :class:`ConsoleSnapshotReset`: ``avd snapshot load NAME`` through the emulator
  console, for devices the adb server lists as ``emulator-N`` (real emulators, and sim
  phones started with ``sim up --as-emulator``).
- ``farm.sim.reset.SimStateReset``: in-process sim phones put back as they were before
  their first episode.
"""

from __future__ import annotations

import os
from typing import Protocol

from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError
from farm.device.emulator import EmulatorConsole

__all__ = ["ConsoleSnapshotReset", "EpisodeReset", "ResetByKind", "console_port",
           "snapshot_names"]


class EpisodeReset(Protocol):
    """Puts a leased device back in a known state; raises ``DeviceError`` if it cannot.
    ``label`` names the reset in reports (``"snapshot:clean"``)."""

    label: str

    async def __call__(self, serial: str, device: Device) -> None: ...


def console_port(serial: str) -> int | None:
    """The console port of an ``emulator-N`` serial (N), else None."""
    head, _, port = serial.partition("-")
    if head == "emulator" and port.isdecimal():
        return int(port)
    return None


def snapshot_names(listing: str) -> set[str]:
    """The TAG column of an ``avd snapshot list`` reply: the rows under the ``ID  TAG …``
    header (the emulator prints ``--`` or a number as the ID)."""
    names: set[str] = set()
    rows = iter(listing.splitlines())
    for row in rows:
        if row.split()[:2] == ["ID", "TAG"]:
            break
    for row in rows:
        cols = row.split()
        if len(cols) >= 2 and cols[0] not in ("OK", "KO:"):
            names.add(cols[1])
    return names


class ConsoleSnapshotReset:
    """Load the emulator snapshot ``snapshot`` before every episode. Loading takes an
    emulator a few seconds; the console's auth token is read from ``token_path``
    (default ``~/.emulator_console_auth_token``, as ``adb emu`` does)."""

    def __init__(self, snapshot: str, *, host: str = "127.0.0.1", timeout_s: float = 60.0,
                 token_path: str | os.PathLike[str] | None = None) -> None:
        if not snapshot or any(c.isspace() for c in snapshot):
            raise ValueError(f"not a snapshot name: {snapshot!r}")
        self.snapshot, self.host, self.timeout_s = snapshot, host, timeout_s
        self.token_path = token_path
        self.label = f"snapshot:{snapshot}"

    def _console(self, serial: str) -> EmulatorConsole:
        port = console_port(serial)
        if port is None:
            raise DeviceError(f"{serial} is not an emulator (emulator-N): no console to "
                              "load a snapshot from", serial=serial)
        return EmulatorConsole(port, host=self.host, timeout=self.timeout_s,
                               token_path=self.token_path)

    async def check(self, serial: str) -> None:
        """Raise ``DeviceError`` unless ``serial`` is an emulator whose console lists the
        snapshot (run before an evaluation, so a typo is an error, not aborted episodes)."""
        listing = await self._console(serial).command("avd snapshot list")
        names = snapshot_names(listing)
        if self.snapshot not in names:
            have = ", ".join(sorted(names)) or "none"
            raise DeviceError(f"no snapshot {self.snapshot!r} (it has: {have})",
                              serial=serial)

    async def __call__(self, serial: str, device: Device) -> None:
        await self._console(serial).command(f"avd snapshot load {self.snapshot}")


class ResetByKind:
    """A farm's reset: its sim phones (``sim_serials``) by ``sims``, emulators (``emulator-N``)
    by ``emulators``; any other device (a physical phone) is not reset."""

    def __init__(self, *, sims: EpisodeReset | None = None,
                 sim_serials: frozenset[str] = frozenset(),
                 emulators: EpisodeReset | None = None) -> None:
        self.sims, self.sim_serials, self.emulators = sims, sim_serials, emulators
        self.label = " + ".join(r.label for r in (sims, emulators) if r is not None) or "none"

    async def __call__(self, serial: str, device: Device) -> None:
        if serial in self.sim_serials:
            if self.sims is not None:
                await self.sims(serial, device)
        elif console_port(serial) is not None and self.emulators is not None:
            await self.emulators(serial, device)

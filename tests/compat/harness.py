"""What the compatibility suite runs on: one sim phone, a private adb server, a case list.

A *case* is one thing a stack does to a phone — a command sequence plus the stack's
own way of reading the answer (re-written here from the project's public code; none
of it is copied) — as a function of a :class:`Rig` that raises ``AssertionError`` when
the phone's answer would break that stack. A case the sim does not support yet
carries a ``gap`` saying what is missing: it is still run (so closing the gap is
noticed) and counts against the stack's coverage.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import traceback
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from farm.sim.console import register_with_adb
from farm.sim.phone import SimPhone

T = TypeVar("T")


@dataclass
class Rig:
    """One sim phone as a stack sees it: through ``adb`` (the binary) or adbutils."""

    bg: BackgroundFarm
    adb_server: PrivateAdbServer
    serial: str
    tmp: Path

    @property
    def phone(self) -> SimPhone:
        assert self.bg.farm is not None
        return self.bg.farm.phones[0]

    def adb(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``adb -s SERIAL ARGS…`` as subprocess-based stacks run it."""
        return self.adb_server.run("-s", self.serial, *args, timeout=timeout)

    def adb_line(self, line: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """A command line written for ``subprocess.run(f"adb -s X {line}", shell=True)``:
        the host shell splits it first, exactly once."""
        return self.adb(*shlex.split(line), timeout=timeout)

    def shell(self, line: str) -> str:
        """``adb shell LINE`` stdout; fails the case on a non-zero adb exit status."""
        proc = self.adb_line(f"shell {line}")
        assert proc.returncode == 0, (line, proc.returncode, proc.stderr)
        return str(proc.stdout)

    def device(self) -> Any:
        """An adbutils ``AdbDevice`` for the phone, through the same adb server."""
        return self.adb_server.client().device(self.serial)

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the phones' loop (to inspect or prepare the world)."""
        return self.bg.call(coro)


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Rig], None]
    gap: str | None = None  # why the sim cannot do this yet; None: it must pass


@dataclass
class Outcome:
    case: Case
    passed: bool
    error: str = ""


@dataclass
class Report:
    stack: str
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    def line(self) -> str:
        pct = 100 * self.passed / self.total if self.total else 0.0
        return f"{self.stack:<14} {self.passed:3d}/{self.total:<3d} ({pct:5.1f}%)"

    def regressions(self) -> list[Outcome]:
        """Cases that must pass but did not."""
        return [o for o in self.outcomes if not o.passed and o.case.gap is None]

    def closed_gaps(self) -> list[Outcome]:
        """Cases marked as gaps that pass now: the mark is out of date."""
        return [o for o in self.outcomes if o.passed and o.case.gap is not None]


def run_cases(stack: str, cases: list[Case], rig: Rig) -> Report:
    report = Report(stack)
    for case in cases:
        try:
            case.run(rig)
        except Exception as exc:  # any failure is the case's result, not the suite's
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            report.outcomes.append(Outcome(case, False, detail[:500]))
        else:
            report.outcomes.append(Outcome(case, True))
    return report


@contextmanager
def rig(adb_path: str | None = None, seed: int = 0, *, as_emulator: bool = False
        ) -> Iterator[Rig]:
    """A fresh phone (seed ``seed``) behind a private adb server of its own: connected as
    ``127.0.0.1:PORT``, or (``as_emulator``) started as an emulator that registers with
    the server and is ``emulator-NNNN``, its console behind the server HOME's token."""
    with PrivateAdbServer(adb_path) as adb, \
            tempfile.TemporaryDirectory(prefix="distrl-compat-") as tmp:
        token = Path(adb.home) / ".emulator_console_auth_token"
        bg = BackgroundFarm(1, seed=seed, as_emulator=as_emulator, console_token=token)
        farm = bg.start()
        try:
            phone = farm.phones[0]
            if as_emulator:
                adb.run("start-server", check=True)
                assert bg.call(register_with_adb(adb.port, phone.port))
                _wait_listed(adb, phone.serial)
            else:
                adb.connect(phone.serial)
            yield Rig(bg, adb, phone.serial, Path(tmp))
        finally:
            bg.stop()


def _wait_listed(adb: PrivateAdbServer, serial: str, timeout: float = 20.0) -> None:
    """Until ``adb devices`` lists ``serial`` as a device (the server connects to a
    registered emulator on its own schedule)."""
    import time

    deadline = time.monotonic() + timeout
    while f"{serial}\tdevice" not in str(adb.run("devices").stdout):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{serial} never appeared in adb devices")
        time.sleep(0.1)  # polling the adb server's device list, not synchronising on time

"""``Shell``: the simulated phone's /system/bin/sh, as adbd sees it."""

from __future__ import annotations

import asyncio
import logging
import random

import farm.sim.shell.commands  # noqa: F401  (registers every command)
from farm.sim.faults import Faults
from farm.sim.profiles import CommandKind, LatencyProfile
from farm.sim.shell.commands.pm import install_bytes
from farm.sim.shell.context import ENV_DEFAULTS, ExitShell, Phone, Session, enc
from farm.sim.shell.interp import SH, end_jobs, pay_latency, run_script
from farm.sim.shell.parser import ShellSyntaxError, parse
from farm.sim.spec import LiveStdin, LogBuffer, PhoneSpec, ShellResult, WorldAPI
from farm.sim.vfs import VirtualFS

log = logging.getLogger(__name__)


class Shell:
    """Runs command lines from ``shell:``, ``shell,v2:`` and ``exec:`` services.

    ``run`` never raises (except on cancellation): parse errors, unknown commands and
    even bugs in a command come back as stderr plus an exit status, as on a phone.
    """

    def __init__(self, spec: PhoneSpec, world: WorldAPI, vfs: VirtualFS, faults: Faults,
                 profile: LatencyProfile, rng: random.Random, logcat: LogBuffer) -> None:
        self.phone = Phone(spec, world, vfs, faults, profile, rng, logcat)
        self._env = dict(ENV_DEFAULTS, HOSTNAME=spec.name, ANDROID_SERIAL=spec.serialno)
        self._next_pid = 5000 + rng.randrange(20000)

    @property
    def spec(self) -> PhoneSpec:
        return self.phone.spec

    @property
    def wm_size_override(self) -> tuple[int, int] | None:
        return self.phone.wm_size

    def _session(self) -> Session:
        self._next_pid = 5000 + (self._next_pid - 4999) % 25000
        return Session(self.phone, dict(self._env), pid=self._next_pid)

    async def run(self, command: str, stdin: bytes = b"",
                  result: ShellResult | None = None,
                  live_stdin: LiveStdin | None = None) -> ShellResult:
        """Run one command line; output goes into ``result`` (a new one by default) as it
        is written, so a caller watching ``result.log`` can relay it while this runs.
        ``live_stdin`` is the stream's input as it arrives (``read`` waits on it).
        Background jobs still running when the line ends are ended (SIGHUP)."""
        if result is None:
            result = ShellResult()
        session = self._session()
        session.live_stdin = live_stdin
        try:
            return await self._run(command, stdin, result, session)
        finally:
            await end_jobs(session)

    async def _run(self, command: str, stdin: bytes, result: ShellResult,
                   session: Session) -> ShellResult:
        try:
            try:
                script = parse(command)
            except ShellSyntaxError as e:
                await pay_latency(session, CommandKind.SHELL)
                result.err(enc(f"{SH}: {e.message}\n"))
                result.exit_code = 2
                return result
            except RecursionError:
                result.err(enc(f"{SH}: syntax error: expression recurses too deeply\n"))
                result.exit_code = 2
                return result
            try:
                code = await run_script(script, session, stdin, result.stdout, result.stderr)
            except ExitShell as e:
                code = e.code
            if not script:
                await pay_latency(session, CommandKind.SHELL)
            result.exit_code = code & 0xFF
        except asyncio.CancelledError:
            raise
        except Exception as e:  # last line of defence: the protocol layer must get an answer
            log.exception("shell crashed on %r", command[:200])
            result.err(enc(f"{SH}: internal error: {type(e).__name__}\n"))
            result.exit_code = 1
        return result

    async def install_apk_bytes(self, data: bytes, args: list[str]) -> str:
        """Streamed install (``exec:cmd package 'install' -S N``): ``Success\\n`` or
        ``Failure [INSTALL_…: …]\\n``."""
        session = self._session()
        await pay_latency(session, CommandKind.INSTALL)
        try:
            return install_bytes(self.phone, data) + "\n"
        except Exception as e:
            log.exception("install crashed")
            return f"Failure [INSTALL_FAILED_INTERNAL_ERROR: {type(e).__name__}]\n"

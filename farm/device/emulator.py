"""Launch, boot-gate, reset, restart and stop Android emulators (AVDs).

Each instance gets a unique **even console port** N and the **adb port N+1** (the
emulator's own convention, ``-port N``). The adb server finds real emulators by
scanning console/adb port pairs 5554/5555 … 5584/5585 and names them
``emulator-N``; instances outside that window (the 17th and later, or any port you
choose above 5585) are invisible to that scan, so ``adb_connect=True`` makes the
manager ``adb connect 127.0.0.1:N+1`` instead and the serial becomes
``127.0.0.1:N+1``. The test stand-in (``tests/farm/fixtures/fake_emulator.py``) is
a sim phone plus a tiny console, always reached that way; it is **not** picked up as
``emulator-N`` and does not boot a real system image, so the boot gate, console
commands and process handling are tested, the real emulator's quirks are not.

Boot gate: ``getprop sys.boot_completed`` through the adb server until it reads 1,
within ``boot_timeout`` (the process dying first is reported with its log tail).

Snapshot reset goes through the **emulator console** (telnet-style, port N):
``avd snapshot load NAME`` after ``auth <token>`` when the console asks for it (token
from ``~/.emulator_console_auth_token``). That is exactly what ``adb emu avd
snapshot load NAME`` relays, without needing an ``emulator-N`` serial. Stop is the
console's ``kill``, then SIGTERM, then SIGKILL. ``record_failure`` restarts an
instance (stop + launch on the same ports) after ``max_failures`` in a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from distrl_sdk.errors import AdbTimeout, ConfigError, DeviceError
from farm.adb.client import AdbServerClient, AdbServerError
from farm.device.adb_device import AdbDevice

__all__ = ["EmulatorConsole", "EmulatorInstance", "EmulatorManager"]

DEFAULT_ARGS = ("-no-window", "-no-audio", "-no-boot-anim", "-no-snapshot-save")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class EmulatorConsole:
    """A minimal client of the emulator console (one command a connection)."""

    def __init__(self, port: int, *, host: str = "127.0.0.1", timeout: float = 10.0,
                 token_path: str | os.PathLike[str] | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.token_path = Path(token_path) if token_path else (
            Path.home() / ".emulator_console_auth_token")

    async def _read_reply(self, reader: asyncio.StreamReader) -> str:
        lines: list[str] = []
        while True:
            line = (await reader.readline()).decode(errors="replace")
            if not line:
                return "".join(lines)
            lines.append(line)
            if line.startswith(("OK", "KO")):
                return "".join(lines)

    async def command(self, command: str) -> str:
        """Send one command; returns its reply, raises ``DeviceError`` on ``KO``."""
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await asyncio.open_connection(self.host, self.port)
                try:
                    banner = await self._read_reply(reader)
                    if "Authentication required" in banner:
                        token = self.token_path.read_text().strip()
                        writer.write(f"auth {token}\r\n".encode())
                        await writer.drain()
                        auth = await self._read_reply(reader)
                        if not auth.startswith("OK") and "\nOK" not in auth:
                            raise DeviceError(f"console auth failed: {auth.strip()}",
                                              serial=f"emulator-{self.port}")
                    writer.write(f"{command}\r\n".encode())
                    await writer.drain()
                    reply = await self._read_reply(reader)
                finally:
                    writer.close()
        except TimeoutError:
            raise AdbTimeout(f"console `{command}` took longer than {self.timeout:g} s",
                             serial=f"emulator-{self.port}") from None
        except OSError as exc:
            raise DeviceError(f"console :{self.port}: {exc}",
                              serial=f"emulator-{self.port}") from None
        last = reply.strip().splitlines()[-1] if reply.strip() else ""
        if not last.startswith("OK"):
            raise DeviceError(f"console `{command}`: {reply.strip() or 'no reply'}",
                              serial=f"emulator-{self.port}")
        return reply


@dataclass
class EmulatorInstance:
    avd: str
    console_port: int
    adb_port: int
    serial: str
    args: tuple[str, ...]
    snapshot: str | None
    process: asyncio.subprocess.Process | None = None
    log_path: Path | None = None
    started_at: float = field(default_factory=time.time)
    failures: int = 0
    restarts: int = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


class EmulatorManager:
    def __init__(
        self,
        emulator: str | Sequence[str] = "emulator",
        *,
        adb_host: str = "127.0.0.1",
        adb_port: int = 5037,
        ports: Iterable[int] = range(5554, 5586, 2),
        adb_connect: bool = False,
        boot_timeout: float = 300.0,
        default_args: Sequence[str] = DEFAULT_ARGS,
        env: Mapping[str, str] | None = None,
        max_failures: int = 3,
        console_token: str | os.PathLike[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.command = [emulator] if isinstance(emulator, str) else list(emulator)
        self.ports = [p for p in ports if p % 2 == 0]
        if not self.ports:
            raise ConfigError("EmulatorManager needs at least one even console port")
        self.adb_host, self.adb_port = adb_host, adb_port
        self.adb_connect = adb_connect
        self.boot_timeout = boot_timeout
        self.default_args = tuple(default_args)
        self.env = dict(env) if env is not None else None
        self.max_failures = max_failures
        self.console_token = console_token
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="distrl-emu-"))
        self.client = AdbServerClient(adb_host, adb_port, timeout=10.0)
        self.instances: dict[str, EmulatorInstance] = {}

    def _allocate(self) -> int:
        used = {i.console_port for i in self.instances.values()}
        for port in self.ports:
            if port not in used and _port_free(port) and _port_free(port + 1):
                return port
        raise ConfigError(f"no free even console port in {self.ports[0]}–{self.ports[-1]} "
                          f"({len(used)} emulators running)")

    def console(self, inst: EmulatorInstance, timeout: float = 10.0) -> EmulatorConsole:
        return EmulatorConsole(inst.console_port, timeout=timeout, token_path=self.console_token)

    def device(self, inst: EmulatorInstance) -> AdbDevice:
        return AdbDevice(inst.serial, host=self.adb_host, port=self.adb_port)

    async def launch(self, avd: str, *, snapshot: str | None = None,
                     args: Sequence[str] = (), wait: bool = True) -> EmulatorInstance:
        """Start an AVD on fresh ports; with ``wait`` block until it has booted."""
        port = self._allocate()
        serial = f"127.0.0.1:{port + 1}" if self.adb_connect else f"emulator-{port}"
        inst = EmulatorInstance(avd, port, port + 1, serial, tuple(args), snapshot)
        self.instances[serial] = inst
        try:
            await self._spawn(inst)
            if wait:
                await self.wait_boot(inst)
        except BaseException:
            await self.stop(inst)
            raise
        return inst

    async def _spawn(self, inst: EmulatorInstance) -> None:
        argv = [*self.command, "-avd", inst.avd, "-port", str(inst.console_port),
                *self.default_args, *inst.args]
        if inst.snapshot:
            argv += ["-snapshot", inst.snapshot]
        inst.log_path = self.log_dir / f"{inst.avd}-{inst.console_port}.log"
        with open(inst.log_path, "ab") as log:  # noqa: ASYNC230 (a local log, opened once)
            try:
                inst.process = await asyncio.create_subprocess_exec(
                    *argv, stdout=log, stderr=asyncio.subprocess.STDOUT,
                    stdin=asyncio.subprocess.DEVNULL, env=self.env, start_new_session=True)
            except FileNotFoundError:
                raise ConfigError(f"emulator binary not found: {self.command[0]!r} (set the "
                                  "path to $ANDROID_HOME/emulator/emulator)") from None
        inst.started_at = time.time()

    def _log_tail(self, inst: EmulatorInstance, n: int = 2000) -> str:
        try:
            return inst.log_path.read_text(errors="replace")[-n:] if inst.log_path else ""
        except OSError:
            return ""

    async def wait_boot(self, inst: EmulatorInstance, timeout: float | None = None) -> None:
        """Until ``sys.boot_completed`` is 1 through the adb server (AdbTimeout if not)."""
        limit = self.boot_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        dev = AdbDevice(inst.serial, host=self.adb_host, port=self.adb_port, timeout=5.0)
        last = "not seen by the adb server yet"
        while time.monotonic() < deadline:
            if not inst.running:
                code = inst.process.returncode if inst.process else None
                raise DeviceError(f"emulator exited with {code} while booting; log tail:\n"
                                  f"{self._log_tail(inst)}", serial=inst.serial)
            if self.adb_connect:
                with contextlib.suppress(AdbServerError):
                    await self.client.connect(inst.serial)
            try:
                res = await dev.shell("getprop sys.boot_completed", timeout=5.0)
                if res.stdout.strip() == "1":
                    return
                last = f"sys.boot_completed={res.stdout.strip()!r}"
            except DeviceError as exc:
                last = str(exc)
            await asyncio.sleep(0.25)
        raise AdbTimeout(f"{inst.avd} did not boot within {limit:g} s ({last})",
                         serial=inst.serial)

    async def reset(self, inst: EmulatorInstance, snapshot: str | None = None) -> None:
        """Load a snapshot (the instance's own by default) via the console."""
        name = snapshot or inst.snapshot
        if not name:
            raise ConfigError(f"{inst.serial}: no snapshot to reset to")
        await self.console(inst, timeout=60.0).command(f"avd snapshot load {name}")

    async def record_failure(self, inst: EmulatorInstance) -> bool:
        """Count a failure; restart after ``max_failures`` in a row. True if restarted."""
        inst.failures += 1
        if inst.failures < self.max_failures:
            return False
        await self.restart(inst)
        return True

    def record_success(self, inst: EmulatorInstance) -> None:
        inst.failures = 0

    async def restart(self, inst: EmulatorInstance, *, wait: bool = True) -> None:
        await self.stop(inst, forget=False)
        inst.failures = 0
        inst.restarts += 1
        await self._spawn(inst)
        if wait:
            await self.wait_boot(inst)

    async def stop(self, inst: EmulatorInstance, *, grace: float = 5.0,
                   forget: bool = True) -> None:
        """Drops the adb connection, then console ``kill``, SIGTERM, SIGKILL.

        The connection goes first: adb keeps a TCP device whose socket closed under it
        listed ``offline`` while it tries to reconnect, so a disconnect sent after the
        kill could race that retry and leave the serial behind."""
        proc = inst.process
        await self._disconnect(inst)
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(DeviceError):
                await self.console(inst, timeout=2.0).command("kill")
            try:
                await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), grace)
                except TimeoutError:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    await proc.wait()
        await self._disconnect(inst)  # in case a retry re-added it meanwhile
        if forget:
            self.instances.pop(inst.serial, None)

    async def _disconnect(self, inst: EmulatorInstance) -> None:
        if self.adb_connect:
            with contextlib.suppress(AdbServerError):
                await self.client.disconnect(inst.serial)

    async def close(self) -> None:
        await asyncio.gather(*(self.stop(i) for i in list(self.instances.values())),
                             return_exceptions=True)

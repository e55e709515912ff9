"""The emulator console of a sim phone started as an emulator (``sim up --as-emulator``).

An Android emulator listens on an even console port and the odd port above it for adb
(5554/5555, 5556/5557 …), and tells the adb server about itself (``host:emulator:PORT``),
which then lists it as ``emulator-<console port>``. Tools that manage emulators (DigiRL's
and android_env's launchers, ``adb emu``) talk to the console: a line protocol on
loopback, behind an auth token read from ``~/.emulator_console_auth_token`` (created
with a random token if missing, as the emulator does; an empty file turns auth off).

Commands answered: ``auth``, ``help``, ``avd name|status|snapshot list|save|load|
delete``, ``kill``, ``sms send NUMBER TEXT``, ``gsm call|accept|cancel NUMBER|list``,
``power capacity N|ac on|off|status``,
``rotate``, ``geo fix LON LAT``, ``quit``/``exit``. Replies end with ``OK`` or ``KO:
reason`` lines, as the emulator's do. Snapshots keep the whole phone (apps, settings,
files, the task stack) in memory for the life of the sim process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from farm.sim.phone import PhoneState, SimPhone

log = logging.getLogger(__name__)

__all__ = ["ConsoleServer", "auth_token_path", "read_auth_token", "register_with_adb"]

MAX_LINE = 4096
HELP = [
    "Android console commands:", "",
    "    help|h|?         print a list of commands",
    "    auth             user authentication for the emulator console",
    "    avd              control virtual device execution",
    "    kill             kill the emulator instance",
    "    sms              SMS related commands",
    "    gsm              GSM related commands",
    "    power            power related commands",
    "    rotate           rotate the screen clockwise by 90 degrees",
    "    geo              Geo-location commands",
    "    quit|exit        quit control session", "",
    "try 'help <command>' for command-specific help",
]


def auth_token_path() -> Path:
    return Path(os.path.expanduser("~")) / ".emulator_console_auth_token"


def read_auth_token(path: Path) -> str:
    """The token in ``path`` ('' = auth off); a missing file is created with a random
    token, as the emulator does on its first start."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        token = secrets.token_urlsafe(12)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token)
        return token


async def register_with_adb(adb_port: int, emulator_adb_port: int,
                            host: str = "127.0.0.1") -> bool:
    """Tell the adb server an emulator's adbd listens on ``emulator_adb_port``
    (``host:emulator:PORT``, what a starting emulator sends); False when no server
    listens (it finds the emulator by its port scan when it starts later)."""
    req = f"host:emulator:{emulator_adb_port}".encode()
    try:
        _r, w = await asyncio.wait_for(asyncio.open_connection(host, adb_port), 5)
    except (OSError, TimeoutError):
        return False
    with contextlib.suppress(OSError):
        w.write(b"%04x" % len(req) + req)
        await w.drain()
    w.close()
    with contextlib.suppress(OSError):
        await w.wait_closed()
    return True


@dataclass
class _Snapshot:
    name: str
    taken_at: float
    state: PhoneState


@dataclass
class ConsoleServer:
    """The console of ``phone`` on ``port``; ``on_kill`` stops the phone (``kill``)."""

    phone: SimPhone
    port: int
    on_kill: Callable[[], Coroutine[Any, Any, None]]
    token_path: Path = field(default_factory=auth_token_path)
    host: str = "127.0.0.1"
    snapshots: dict[str, _Snapshot] = field(default_factory=dict)
    geo: tuple[float, float] | None = None
    _server: asyncio.Server | None = None
    _kill: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._token = read_auth_token(self.token_path)
        self._server = await asyncio.start_server(self._serve, self.host, self.port,
                                                  limit=MAX_LINE)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None

    # -- a session ---------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        authed = not self._token

        def say(*lines: str) -> None:
            writer.write("".join(f"{ln}\r\n" for ln in lines).encode())

        if authed:
            say("Android Console: type 'help' for a list of commands", "OK")
        else:
            say("Android Console: Authentication required",
                "Android Console: type 'auth <auth_token>' to authenticate",
                "Android Console: you can find your <auth_token> in ",
                f"'{self.token_path}'", "OK")
        try:
            while True:
                await writer.drain()
                try:
                    raw = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    say("KO: line too long")
                    break
                if not raw:
                    break
                words = raw.decode("utf-8", "replace").strip().split()
                if not words:
                    continue
                cmd, args = words[0].lower(), words[1:]
                if cmd in ("quit", "exit"):
                    break
                if cmd == "auth":
                    if (args and args[0] == self._token) or not self._token:
                        authed = True
                        say("Android Console: type 'help' for a list of commands", "OK")
                    else:
                        say("KO: authentication token does not match "
                            "~/.emulator_console_auth_token")
                    continue
                if cmd in ("help", "h", "?"):
                    say(*HELP, "OK")
                    continue
                if not authed:
                    say("KO: unknown command, try 'help'")
                    continue
                if cmd == "kill":
                    say("OK: killing emulator, bye bye")
                    await writer.drain()
                    writer.close()
                    self._kill = asyncio.get_running_loop().create_task(self.on_kill())
                    return
                say(*self._command(cmd, args))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()

    def _command(self, cmd: str, args: list[str]) -> list[str]:
        try:
            if cmd == "avd":
                return self._avd(args)
            if cmd == "sms":
                return self._sms(args)
            if cmd == "gsm":
                return self._gsm(args)
            if cmd == "power":
                return self._power(args)
            if cmd == "rotate":
                world = self.phone.world
                world.settings.put("system", "accelerometer_rotation", "0")
                world.settings.put("system", "user_rotation", str((world.rotation + 1) % 4))
                return ["OK"]
            if cmd == "geo" and args[:1] == ["fix"] and len(args) >= 3:
                self.geo = (float(args[1]), float(args[2]))
                return ["OK"]
        except ValueError as exc:
            return [f"KO: {exc}"]
        except Exception as exc:  # a bug in one command must not end the console session
            log.exception("emulator console: %s %s", cmd, args)
            return [f"KO: {type(exc).__name__}: {exc}"]
        return ["KO: unknown command, try 'help'"]

    def _avd(self, args: list[str]) -> list[str]:
        sub = args[0] if args else ""
        if sub == "name":
            return [self.phone.spec.name, "OK"]
        if sub == "status":
            return ["virtual device is running", "OK"]
        if sub != "snapshot" or len(args) < 2:
            return ["KO: missing sub-command"] if not sub else ["KO: bad sub-command"]
        op, name = args[1], (args[2] if len(args) > 2 else "")
        if op == "list":
            rows = ["List of snapshots present on all disks:",
                    "ID        TAG                 VM SIZE                DATE       VM CLOCK"]
            for i, s in enumerate(self.snapshots.values(), 1):
                rows.append(f"{i:<9} {s.name:<19} {'0 B':>7}  "
                            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(s.taken_at))}"
                            "   00:00:00.000")
            return [*rows, "OK"]
        if not name:
            return [f"KO: missing snapshot name for '{op}'"]
        if op == "save":
            self.snapshots[name] = _Snapshot(name, time.time(), self.phone.save_state())
            return ["OK"]
        if op == "load":
            snap = self.snapshots.get(name)
            if snap is None:
                return [f"KO: snapshot '{name}' does not exist"]
            self.phone.restore_state(snap.state)
            return ["OK"]
        if op == "delete":
            if self.snapshots.pop(name, None) is None:
                return [f"KO: snapshot '{name}' does not exist"]
            return ["OK"]
        return ["KO: bad sub-command"]

    def _sms(self, args: list[str]) -> list[str]:
        if args[:1] != ["send"] or len(args) < 3:
            return ["KO: missing argument, try 'sms send <phonenumber> <text message>'"]
        from farm.sim.world.apps.telephony_provider import PKG, SmsProvider

        provider = self.phone.world.app(PKG)
        if not isinstance(provider, SmsProvider):
            return ["KO: no SMS provider on this phone"]
        number, text = args[1], " ".join(args[2:])
        provider.receive(number, text)
        self.phone.world.post_notification("com.google.android.apps.messaging", number, text)
        return ["OK"]

    def _gsm(self, args: list[str]) -> list[str]:
        """``gsm call|accept|cancel NUMBER`` (an incoming call, answered, hung up) and
        ``gsm list``."""
        from farm.sim.world.apps.dialer import PKG, Dialer

        dialer = self.phone.world.app(PKG)
        if not isinstance(dialer, Dialer):
            return ["KO: no Phone app on this phone"]
        op = args[0] if args else ""
        call = dialer.call
        if op == "list":
            rows = [] if call is None else [
                f"{'inbound from' if call.incoming else 'outbound to'}  {call.number} : "
                f"{'active' if call.answered else 'incoming'}"]
            return [*rows, "OK"]
        if op not in ("call", "accept", "cancel") or len(args) != 2:
            return ["KO: bad sub-command, try 'help gsm'"]
        number = args[1]
        if op == "call":
            if not number.lstrip("+").isdecimal():
                return ["KO: bad phone number format, use digits, # and * only"]
            dialer.ring(number)
        elif call is None or call.number != number:
            return [f"KO: could not {op} this number"]
        elif op == "accept":
            dialer.accept()
        else:
            dialer.end_call()
        return ["OK"]

    def _power(self, args: list[str]) -> list[str]:
        battery = self.phone.faults.battery
        if args[:1] == ["capacity"] and len(args) == 2:
            level = int(args[1])
            if not 0 <= level <= 100:
                return ["KO: Usage: \"capacity <percentage>\""]
            battery.level, battery.drain_per_min = level, 0.0
            return ["OK"]
        if args[:1] == ["ac"] and len(args) == 2 and args[1] in ("on", "off"):
            battery.plugged_usb = args[1] == "on"
            return ["OK"]
        if args[:1] == ["status"] or not args:
            return [f"capacity: {battery.current_level(self.phone.faults.clock())}", "OK"]
        return ["KO: bad sub-command"]


"""A private adb server on a port of its own, so sim phones never touch the user's.

The adb server a user already runs (on :5037) keeps its devices and its state: we
start another server with ``adb -P PORT start-server`` and kill exactly that one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

SYSTEM_ADB_CANDIDATES = ("/usr/bin/adb", "/usr/lib/android-sdk/platform-tools/adb")


def bundled_adb() -> str | None:
    """The ``adb`` binary inside adbutils' wheel (platform-tools 36 at the time of writing)."""
    try:
        import adbutils
    except ImportError:
        return None
    path = Path(adbutils.__file__).parent / "binaries" / "adb"
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def system_adb() -> str | None:
    """An ``adb`` installed outside Python (Debian's platform-tools 29, an SDK …)."""
    bundled = bundled_adb()
    on_path = shutil.which("adb")
    for cand in (*SYSTEM_ADB_CANDIDATES, on_path):
        if cand and os.access(cand, os.X_OK) and cand != bundled and "site-packages" not in cand:
            return cand
    return None


def find_adb() -> str:
    """``$DISTRL_ADB``, then the adb on PATH, then the one adbutils ships."""
    env = os.environ.get("DISTRL_ADB")
    if env:
        return env
    found = system_adb() or bundled_adb()
    if not found:
        raise FileNotFoundError(
            "no adb binary found: install Android platform-tools or `pip install adbutils`, "
            "or point DISTRL_ADB at one"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateAdbServer:
    """Start, use and kill an adb server on its own port, with a scratch HOME.

        with PrivateAdbServer() as adb:
            adb.connect("127.0.0.1:15555")
            print(adb.run("devices", "-l").stdout)

    The scratch HOME keeps the user's ~/.android (keys, settings) out of it, and the
    environment is cleared of variables that would steer it elsewhere. It does not scan
    the emulator ports: an adb server scans 5555–5585 at start and would adopt whatever
    emulator-style sim phone happens to listen there (another test's, another farm's);
    phones started as emulators register with it instead
    (``farm.sim.console.register_with_adb``), which still works. ``ADB_EMU=0`` switches
    the scanner off; ``ADB_LOCAL_TRANSPORT_MAX_PORT`` below the range alone is not
    enough, because adb starts the scanner thread before it reads that variable (adb
    29.0.6 adopted a phone on 7 of 15 starts with it alone, 0 of 30 with ``ADB_EMU=0``).
    """

    def __init__(self, adb_path: str | None = None, port: int | None = None) -> None:
        self.adb_path = adb_path or find_adb()
        self._own_port = port is None  # ours to change if someone else takes it first
        self.port = port or free_port()
        self.home = tempfile.mkdtemp(prefix="distrl-adb-")
        env = dict(os.environ)
        for var in ("ANDROID_SERIAL", "ADB_VENDOR_KEYS", "ADB_TRACE",
                    "ANDROID_ADB_SERVER_ADDRESS"):
            env.pop(var, None)
        env.update(HOME=self.home, TMPDIR=self.home,
                   ANDROID_USER_HOME=os.path.join(self.home, ".android"),
                   ANDROID_ADB_SERVER_PORT=str(self.port), ADB_MDNS_AUTO_CONNECT="0",
                   ADB_LOCAL_TRANSPORT_MAX_PORT="5553",  # for adbs without ADB_EMU
                   ADB_EMU="0")
        self.env = env

    def run(
        self, *args: str, timeout: float = 30.0, check: bool = False, text: bool = True,
        input: Any = None,
    ) -> subprocess.CompletedProcess[Any]:
        """Run ``adb -P PORT ARGS…`` against this server."""
        return subprocess.run(
            [self.adb_path, "-P", str(self.port), *args],
            capture_output=True, text=text, timeout=timeout, check=check, env=self.env,
            input=input, stdin=None if input is not None else subprocess.DEVNULL,
        )

    def start(self) -> None:
        proc = self.run("start-server", timeout=30, text=True)
        for _ in range(3):
            # a free port can be taken by another process before adb binds it: then the
            # client finds a stranger there ("protocol fault") or the bind fails
            taken = ("protocol fault" in proc.stderr or "cannot bind" in proc.stderr
                     or "Address already in use" in proc.stderr)
            if proc.returncode == 0 or not (taken and self._own_port):
                break
            self.port = free_port()
            self.env["ANDROID_ADB_SERVER_PORT"] = str(self.port)
            proc = self.run("start-server", timeout=30, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"adb start-server failed on port {self.port}: {proc.stderr.strip()}"
            )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.run("kill-server", timeout=15)
        shutil.rmtree(self.home, ignore_errors=True)

    def text(self, *args: str, timeout: float = 30.0) -> str:
        """stdout and stderr of ``adb ARGS…`` as one string."""
        proc = self.run(*args, timeout=timeout, text=True)
        return str(proc.stdout) + str(proc.stderr)

    def state(self, serial: str) -> str | None:
        """The serial's state in ``adb devices`` (device, offline …); None if absent."""
        for line in str(self.run("devices", text=True).stdout).splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) == 2 and parts[0] == serial:
                return parts[1].strip()
        return None

    def wait_state(self, serial: str, wanted: str | None, timeout: float = 10.0) -> str | None:
        deadline = time.monotonic() + timeout
        state = self.state(serial)
        while state != wanted and time.monotonic() < deadline:
            time.sleep(0.05)
            state = self.state(serial)
        return state

    def connect(self, serial: str, timeout: float = 20.0) -> str:
        """``adb connect`` and wait until the serial is ``device``."""
        out = self.text("connect", serial, timeout=timeout).strip()
        if "connected to" not in out:
            raise RuntimeError(f"adb connect {serial} failed: {out}")
        state = self.wait_state(serial, "device", timeout=timeout)
        if state != "device":
            raise RuntimeError(f"{serial} is {state!r} after adb connect: {out}")
        return out

    def disconnect(self, serial: str) -> None:
        self.run("disconnect", serial, timeout=10)

    @property
    def major_version(self) -> int:
        """29 for Debian's platform-tools 29.0.6, 36 for adbutils' wheel …"""
        match = re.search(r"Version (\d+)\.", str(self.run("version", text=True).stdout))
        return int(match.group(1)) if match else 0

    def client(self, socket_timeout: float | None = None) -> Any:
        """An ``adbutils.AdbClient`` for this server."""
        import adbutils

        return adbutils.AdbClient(host="127.0.0.1", port=self.port,
                                  socket_timeout=socket_timeout)

    def __enter__(self) -> PrivateAdbServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

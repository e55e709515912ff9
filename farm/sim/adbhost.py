"""A private adb server on a port of its own, so sim phones never touch the user's.

The adb server a user already runs (on :5037) keeps its devices and its state: we
start another server with ``adb -P PORT start-server`` and kill exactly that one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
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
    """Start, use and kill an adb server on its own port.

        with PrivateAdbServer() as adb:
            adb.connect("127.0.0.1:15555")
            print(adb.run("devices", "-l").stdout)
    """

    def __init__(self, adb_path: str | None = None, port: int | None = None) -> None:
        self.adb_path = adb_path or find_adb()
        self.port = port or free_port()
        self._env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(self.port)}

    def run(
        self, *args: str, timeout: float = 30.0, check: bool = False, text: bool = True,
        input: Any = None,
    ) -> subprocess.CompletedProcess[Any]:
        """Run ``adb -P PORT ARGS…`` against this server."""
        return subprocess.run(
            [self.adb_path, "-P", str(self.port), *args],
            capture_output=True, text=text, timeout=timeout, check=check, env=self._env,
            input=input, stdin=None if input is not None else subprocess.DEVNULL,
        )

    def start(self) -> None:
        proc = self.run("start-server", timeout=30)
        if proc.returncode != 0:
            raise RuntimeError(
                f"adb start-server failed on port {self.port}: {proc.stderr.strip()}"
            )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.run("kill-server", timeout=10)

    def connect(self, serial: str, timeout: float = 20.0) -> str:
        out = str(self.run("connect", serial, timeout=timeout).stdout).strip()
        if "connected to" not in out:
            raise RuntimeError(f"adb connect {serial} failed: {out}")
        return out

    def disconnect(self, serial: str) -> None:
        self.run("disconnect", serial, timeout=10)

    def client(self) -> Any:
        """An ``adbutils.AdbClient`` for this server."""
        import adbutils

        return adbutils.AdbClient(host="127.0.0.1", port=self.port)

    def __enter__(self) -> PrivateAdbServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

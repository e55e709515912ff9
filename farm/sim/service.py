"""``distrl sim up`` as a background service, and the control channel to reach it.

The service runs a :class:`SimFarm` and a small JSON-lines control server on
loopback. Its address, a random token and the phones' serials go to a state file
(mode 0600) that ``distrl sim status|fault|down`` read. One service per name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from farm.sim.adbhost import find_adb
from farm.sim.console import register_with_adb
from farm.sim.control import MAX_REQUEST_BYTES, handle_connection, write_private
from farm.sim.farm import SimFarm
from farm.sim.faults import FaultKind


def state_dir() -> Path:
    env = os.environ.get("DISTRL_STATE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "distrl"


def state_file(name: str) -> Path:
    return state_dir() / f"sim-{name}.json"


def log_file(name: str) -> Path:
    return state_dir() / f"sim-{name}.log"


class SimServiceError(Exception):
    """A user-facing problem with the sim service (not running, bad phone …)."""


@dataclass
class ServeOptions:
    count: int = 3
    profile: str = "instant"
    seed: int = 0
    base_port: int = 15555
    screen: str = "phone"
    name: str = "default"
    connect: bool = False  # `adb connect` each phone on the user's adb server
    adb_port: int | None = None
    as_emulator: bool = False  # emulator ports + console, registered with the adb server


def _adb_cmd(adb_port: int | None, *args: str) -> list[str]:
    cmd = [find_adb()]
    if adb_port:
        cmd += ["-P", str(adb_port)]
    return [*cmd, *args]


async def _adb(adb_port: int | None, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *_adb_cmd(adb_port, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
    return out.decode(errors="replace").strip()


def phone_rows(farm: SimFarm) -> list[dict[str, Any]]:
    rows = []
    for p in farm.phones:
        f = p.faults
        active = [
            k for k, on in (
                ("hung", f.hung()), ("disconnected", f.disconnected()),
                ("booting", not f.boot_completed()), ("slow-frames", f.frame_delay() > 0),
            ) if on
        ]
        rows.append({
            "name": p.spec.name, "serial": p.serial, "port": p.port,
            "profile": p.profile.name, "screen": f"{p.world.width}x{p.world.height}",
            "focus": "/".join(p.world.current_focus() or ("-", "-")),
            "battery": f.battery.current_level(f.clock()), "faults": active,
        })
    return rows


async def serve(opts: ServeOptions,
                on_ready: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Run phones and the control server until ``down`` or SIGINT/SIGTERM; ``on_ready``
    gets the service's state (its phones) once they listen (`sim up --foreground` prints
    it)."""
    path = state_file(opts.name)
    if path.exists() and _alive(path):
        raise SimServiceError(
            f"a sim farm named {opts.name!r} is already up; `{_down(opts.name)}` first "
            f"(or pick another --name)"
        )
    farm = SimFarm(opts.count, profile=opts.profile, seed=opts.seed,
                   base_port=opts.base_port, screen=opts.screen, as_emulator=opts.as_emulator)
    try:
        await farm.start()
    except OSError as exc:
        if opts.as_emulator:
            raise SimServiceError(f"cannot start emulators: {exc.strerror or exc}") from None
        raise SimServiceError(
            f"cannot listen on ports {opts.base_port}–{opts.base_port + opts.count - 1}: "
            f"{exc.strerror or exc}; choose another --base-port"
        ) from None
    stop = asyncio.Event()
    token = secrets.token_hex(16)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await handle_connection(reader, writer, token, lambda req: _dispatch(farm, req, stop))

    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=MAX_REQUEST_BYTES)
    control_port = server.sockets[0].getsockname()[1]
    connected: list[str] = []
    try:
        if opts.as_emulator:  # as a starting emulator does: `host:emulator:PORT`
            adb_port = opts.adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", 5037))
            for p in farm.phones:
                if not await register_with_adb(adb_port, p.port):
                    print(f"note: no adb server on port {adb_port}; it finds the emulators "
                          "by its port scan when it starts", file=sys.stderr)
                    break
        elif opts.connect:
            for p in farm.phones:
                out = await _adb(opts.adb_port, "connect", p.serial)
                if "connected to" in out:
                    connected.append(p.serial)
                else:
                    print(f"warning: adb connect {p.serial}: {out}", file=sys.stderr)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        state = {
            "pid": os.getpid(), "control_port": control_port, "token": token,
            "name": opts.name, "started_at": time.time(), "seed": opts.seed,
            "adb_port": opts.adb_port, "connected": connected,
            "phones": phone_rows(farm),
        }
        write_private(path, json.dumps(state, indent=2))  # it holds the token
        if on_ready is not None:
            on_ready(state)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        for serial in connected:
            with contextlib.suppress(Exception):
                await _adb(opts.adb_port, "disconnect", serial)
        server.close()
        await server.wait_closed()
        await farm.stop()
        with contextlib.suppress(FileNotFoundError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()


def _dispatch(farm: SimFarm, req: dict[str, Any], stop: asyncio.Event) -> dict[str, Any]:
    op = req.get("op")
    if op == "status":
        return {"ok": True, "phones": phone_rows(farm)}
    if op == "down":
        stop.set()
        return {"ok": True}
    if op == "fault":
        try:
            phone = farm.phone(str(req.get("phone")))
            kind = FaultKind(str(req.get("kind")))
        except (KeyError, ValueError) as exc:
            return {"ok": False, "error": str(exc).strip("'\"")}
        msg = phone.fault(kind, seconds=req.get("seconds"), value=req.get("value"))
        return {"ok": True, "phone": phone.serial, "result": msg}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _down(name: str) -> str:
    return "distrl sim down" + ("" if name == "default" else f" --name {name}")


def _alive(path: Path) -> bool:
    try:
        pid = int(json.loads(path.read_text())["pid"])
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return False
    return True


def request(name: str, op: str, **fields: Any) -> dict[str, Any]:
    """Send one control request to the running service ``name``."""
    import socket

    path = state_file(name)
    if not path.exists() or not _alive(path):
        raise SimServiceError(f"no sim farm named {name!r} is up; start one with `distrl sim up`")
    state = json.loads(path.read_text())
    try:
        with socket.create_connection(("127.0.0.1", state["control_port"]), timeout=10) as s:
            s.sendall(json.dumps({"token": state["token"], "op": op, **fields}).encode() + b"\n")
            data = s.makefile("rb").readline()
    except OSError as exc:
        raise SimServiceError(f"sim farm {name!r} did not answer: {exc}") from None
    reply: dict[str, Any] = json.loads(data or b"{}")
    if not reply.get("ok"):
        raise SimServiceError(str(reply.get("error", "request failed")))
    return reply


def spawn_detached(argv: list[str], name: str, timeout: float = 30.0) -> dict[str, Any]:
    """Start ``distrl sim serve …`` in its own session and wait for its state file."""
    path = state_file(name)
    if path.exists() and _alive(path):
        raise SimServiceError(f"a sim farm named {name!r} is already up; `{_down(name)}` first")
    path.unlink(missing_ok=True)
    log = log_file(name)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "farm.cli", *argv], stdout=logf, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            state: dict[str, Any] = json.loads(path.read_text())
            return state
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            raise SimServiceError("sim farm failed to start:\n  " + "\n  ".join(tail))
        time.sleep(0.05)
    proc.terminate()
    raise SimServiceError(f"sim farm did not come up within {timeout:g} s; see {log}")

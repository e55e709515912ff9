"""``distrl tui`` / ``python -m tui``: flags, clear errors for bad input, and the real
program in a pseudo-terminal (starts, shows the fleet, quits on q and on SIGTERM)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.broker import free_port
from tui.cli import tui

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_flags() -> None:
    res = CliRunner().invoke(tui, ["--help"])
    assert res.exit_code == 0
    for flag in ("--broker", "--farm", "--readonly"):
        assert flag in res.output


@pytest.mark.parametrize(("args", "message"), [
    (["--broker", "ftp://host"], "unsupported broker URL scheme"),
    (["--broker", "mqtt://host:99999"], "bad port"),
    (["--farm", "a/b"], "bad farm id"),
])
def test_bad_input_is_a_clear_error(args: list[str], message: str) -> None:
    res = CliRunner().invoke(tui, args)
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output


def test_needs_a_terminal() -> None:
    res = CliRunner().invoke(tui, ["--broker", "mqtt://127.0.0.1:1"])
    assert res.exit_code == 2 and "needs a terminal" in res.output


def _run_in_pty(args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    proc = subprocess.Popen([sys.executable, "-m", "tui", *args], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT, env=env, start_new_session=True)
    os.close(slave)
    return proc, master


def _read_until(master: int, needle: bytes, timeout: float = 30.0) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} not on screen; got {buf[-2000:]!r}")
        r, _w, _x = select.select([master], [], [], 0.2)
        if r:
            try:
                buf += os.read(master, 65536)
            except OSError:
                break
    return buf


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["q", "SIGTERM"])
def test_python_m_tui_runs_in_a_terminal_and_stops_cleanly(stop: str) -> None:
    # no broker on this port: the TUI starts anyway and says it is disconnected
    proc, master = _run_in_pty(["--broker", f"mqtt://127.0.0.1:{free_port()}", "--readonly"])
    try:
        screen = _read_until(master, b"READ-ONLY")
        assert b"fleet" in screen
        _read_until(master, b"disconnected")
        if stop == "q":
            os.write(master, b"q")
        else:
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_entry_point_target_is_the_click_command() -> None:
    import importlib

    mod, _, attr = "tui.cli:tui".partition(":")
    assert getattr(importlib.import_module(mod), attr) is tui

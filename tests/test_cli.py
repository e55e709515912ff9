"""The `distrl` command line, run as a user runs it: a subprocess of the installed script."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

DISTRL = shutil.which("distrl") or str(Path(sys.executable).parent / "distrl")


def distrl(*args: str, env: dict[str, str] | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DISTRL, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def free_port_run(n: int) -> int:
    """A base port with ``n`` free ports after it."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        if base + n > 65535:
            continue
        try:
            socks = []
            for i in range(n):
                t = socket.socket()
                socks.append(t)
                t.bind(("127.0.0.1", base + i))
        except OSError:
            continue
        finally:
            for t in socks:
                t.close()
        return base
    raise RuntimeError("no free port run")


@pytest.mark.parametrize("args", [
    [], ["sim"], ["sim", "up"], ["sim", "down"], ["sim", "status"], ["sim", "fault"],
    ["sim", "tour"], ["demo"], ["tasks"], ["tasks", "list"], ["tasks", "show"],
    ["tasks", "validate"], ["tasks", "run"], ["broker"], ["farm", "up"], ["learner"],
    ["deploy"], ["config", "show"], ["tui"],
])
def test_help_at_every_level(args: list[str]) -> None:
    proc = distrl(*args, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage: distrl" in proc.stdout
    if args == ["sim", "fault"]:
        assert "hang" in proc.stdout and "boot-delay" in proc.stdout


def test_user_mistakes_get_clear_errors_not_tracebacks(tmp_path: Path) -> None:
    env = {"DISTRL_STATE_DIR": str(tmp_path)}
    proc = distrl("sim", "status", env=env)
    assert proc.returncode == 2 and "no sim farm named 'default' is up" in proc.stderr
    proc = distrl("sim", "up", "--profile", "warp-speed", env=env)
    assert proc.returncode == 2 and "warp-speed" in proc.stderr
    proc = distrl("sim", "fault", "sim-0", "explode", env=env)
    assert proc.returncode == 2 and "explode" in proc.stderr
    for p in (proc,):
        assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_sim_up_status_fault_down(tmp_path: Path) -> None:
    env = {"DISTRL_STATE_DIR": str(tmp_path)}
    base = free_port_run(2)
    up = distrl("sim", "up", "--count", "2", "--base-port", str(base), "--seed", "4", env=env)
    assert up.returncode == 0, up.stderr
    try:
        assert f"127.0.0.1:{base}" in up.stdout and f"127.0.0.1:{base + 1}" in up.stdout
        again = distrl("sim", "up", "--base-port", str(base), env=env)
        assert again.returncode == 2 and "already up" in again.stderr
        status = distrl("sim", "status", "--json", env=env)
        phones = json.loads(status.stdout)
        assert [p["name"] for p in phones] == ["sim-0", "sim-1"]
        fault = distrl("sim", "fault", "sim-1", "boot-delay", "--seconds", "30", env=env)
        assert fault.returncode == 0 and "booting for 30 s" in fault.stdout
        phones = json.loads(distrl("sim", "status", "--json", env=env).stdout)
        assert phones[1]["faults"] == ["booting"] and phones[0]["faults"] == []
        unknown = distrl("sim", "fault", "sim-7", "hang", env=env)
        assert unknown.returncode == 2 and "no sim phone 'sim-7'" in unknown.stderr
    finally:
        down = distrl("sim", "down", env=env)
    assert down.returncode == 0, down.stderr
    assert not (tmp_path / "sim-default.json").exists()
    with socket.socket() as s:  # the phones' ports are free again
        s.bind(("127.0.0.1", base))


@pytest.mark.slow
def test_sim_up_foreground_says_what_runs_and_how_to_stop_it(tmp_path: Path) -> None:
    env = {**os.environ, "DISTRL_STATE_DIR": str(tmp_path), "COLUMNS": "80"}
    base = free_port_run(1)
    proc = subprocess.Popen(
        [DISTRL, "sim", "up", "-n", "1", "--base-port", str(base),
         "--name", "fg", "--foreground"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, stdin=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        seen = ""
        for line in proc.stdout:
            seen += line
            if "Stop with:" in line:
                break
        assert f"127.0.0.1:{base}" in seen and "1 phone(s) up in this process" in seen, seen
        assert "Stop with:     Ctrl-C or distrl sim down --name fg" in seen, seen
        # 80 columns: one line per phone, nothing folded
        assert all(len(ln) <= 80 for ln in seen.splitlines()), seen
        assert sum("127.0.0.1:" in ln for ln in seen.splitlines()) == 1, seen
        down = distrl("sim", "down", "--name", "fg", env={"DISTRL_STATE_DIR": str(tmp_path)})
        assert down.returncode == 0, down.stderr
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_tail_names_the_policy_version_once() -> None:
    from farm.cli.farm import _policy_label

    assert _policy_label({"policy": "uitree@v755", "policy_version": 755}) == "uitree@v755"
    assert _policy_label({"policy": "uitree", "policy_version": 3}) == "uitree@v3"
    assert _policy_label({"policy": "random", "policy_version": None}) == "random"
    assert _policy_label({}) == "?"


@pytest.mark.slow
def test_demo_walks_to_wifi_and_saves_screens(tmp_path: Path) -> None:
    out = tmp_path / "shots"
    proc = distrl("sim", "tour", "--count", "2", "--duration", "0", "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wifi_on: 1 → 0" in proc.stdout
    assert "model:DistRL_Sim_Phone" in proc.stdout
    shots = sorted(p.name for p in out.glob("*.png"))
    assert shots == ["1-home.png", "2-settings.png", "3-wifi-toggled.png"]
    assert "Stopped the phones and the private adb server." in proc.stdout


@pytest.mark.slow
def test_sim_up_connect_uses_the_callers_adb_server_and_down_disconnects(tmp_path: Path) -> None:
    from farm.sim.adbhost import PrivateAdbServer, bundled_adb

    base = free_port_run(2)
    with PrivateAdbServer(bundled_adb()) as adb:
        # "your adb server" is a private one here: $ANDROID_ADB_SERVER_PORT points at it
        env = {"DISTRL_STATE_DIR": str(tmp_path), "ANDROID_ADB_SERVER_PORT": str(adb.port),
               "DISTRL_ADB": adb.adb_path}
        up = distrl("sim", "up", "-n", "2", "--base-port", str(base), "--connect", env=env)
        assert up.returncode == 0, up.stderr
        try:
            assert "Connected on your adb server" in up.stdout
            for port in (base, base + 1):
                assert adb.wait_state(f"127.0.0.1:{port}", "device") == "device"
        finally:
            assert distrl("sim", "down", env=env).returncode == 0
        assert adb.wait_state(f"127.0.0.1:{base}", None) is None

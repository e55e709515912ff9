"""EmulatorManager with a stand-in `emulator` (tests/farm/fixtures/fake_emulator.py).

The stand-in is a sim phone on the adb port N+1 plus a small console on N; it is
reached with `adb connect 127.0.0.1:N+1` (adb_connect=True), not as emulator-N.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from distrl_sdk import ConfigError, DeviceError
from farm.device.emulator import EmulatorConsole, EmulatorManager
from farm.sim.adbhost import PrivateAdbServer

FAKE = Path(__file__).parent / "fixtures" / "fake_emulator.py"
REPO = Path(__file__).resolve().parents[2]


def _free_even_ports(n: int) -> list[int]:
    """Even ports p with p and p+1 free, away from the adb server's 5554–5585 scan."""
    out: list[int] = []
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1] & ~1
        if p > 5600 and p not in out:
            out.append(p)
        if len(out) == n:
            break
    return out


def _manager(adb: PrivateAdbServer, tmp_path: Path, **env: str) -> EmulatorManager:
    full_env = dict(os.environ, FAKE_EMU_LOG=str(tmp_path / "console.log"),
                    FAKE_EMU_BOOT_S="1.0", PYTHONPATH=str(REPO), **env)
    return EmulatorManager([sys.executable, str(FAKE)], adb_port=adb.port, adb_connect=True,
                           ports=_free_even_ports(4), boot_timeout=20, env=full_env,
                           max_failures=2, log_dir=tmp_path)


@pytest.mark.slow
async def test_emulator_lifecycle(private_adb: PrivateAdbServer, tmp_path: Path) -> None:
    mgr = _manager(private_adb, tmp_path)
    try:
        a = await mgr.launch("Pixel_API_34", snapshot="clean")
        b = await mgr.launch("Pixel_API_34")
        assert a.console_port % 2 == 0 and a.adb_port == a.console_port + 1
        assert a.console_port != b.console_port
        assert a.serial == f"127.0.0.1:{a.adb_port}"
        res = await mgr.device(a).shell("getprop sys.boot_completed")
        assert res.stdout.strip() == "1"

        await mgr.reset(a)
        log = (tmp_path / "console.log").read_text()
        assert f"Pixel_API_34:{a.console_port} avd snapshot load clean" in log
        with pytest.raises(ConfigError, match="no snapshot"):
            await mgr.reset(b)
        with pytest.raises(DeviceError, match="KO"):
            await EmulatorConsole(a.console_port).command("bogus")

        pid = a.process.pid if a.process else None
        assert not await mgr.record_failure(a)
        assert await mgr.record_failure(a)  # second in a row: restarted, same ports
        assert a.restarts == 1 and a.failures == 0 and a.running
        assert a.process is not None and a.process.pid != pid
        assert (await mgr.device(a).shell("echo up")).stdout == "up\n"

        await mgr.stop(b)
        assert not b.running and b.serial not in mgr.instances
        assert private_adb.state(b.serial) is None
    finally:
        await mgr.close()
    assert not a.running
    assert (tmp_path / "console.log").read_text().count("kill") >= 3


async def test_emulator_that_dies_while_booting(private_adb: PrivateAdbServer,
                                               tmp_path: Path) -> None:
    mgr = _manager(private_adb, tmp_path, FAKE_EMU_FAIL="1")
    with pytest.raises(DeviceError, match=r"exited with 3[\s\S]*fake failure"):
        await mgr.launch("Broken_AVD")
    assert mgr.instances == {}
    bad = EmulatorManager("/nonexistent/emulator", ports=_free_even_ports(1))
    with pytest.raises(ConfigError, match="not found"):
        await bad.launch("x")
    assert bad.instances == {}

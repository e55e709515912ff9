"""`distrl farm up`: sim phones → collector → MQTT → a learner that acks, end to end."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.wire import DecodedTrajectory
from farm.broker import Backend, EmbeddedBroker, find_mosquitto
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import LifecycleConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from farm.transport import TrajectorySubscriber

FAST = LifecycleConfig(heartbeat_s=0.2, reaper_s=1.5, probe_timeout_s=0.5, boot_timeout_s=5,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                       reconnect_timeout_s=1.0)
FAST_TASKS = ("settings.wifi_off", "settings.open_display")
DISTRL = [sys.executable, "-m", "farm.cli"]


# the "Must show": against real mosquitto and the embedded amqtt fallback
BACKENDS = [
    pytest.param("mosquitto", marks=pytest.mark.skipif(
        find_mosquitto() is None, reason="no mosquitto binary")),
    "amqtt",
]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
async def test_farm_controller_delivers_every_trajectory_once(tmp_path: Path,
                                                              backend: Backend) -> None:
    reg = TaskRegistry.discover()
    tasks = [reg.get(n) for n in FAST_TASKS]
    received: list[DecodedTrajectory] = []
    with BackgroundFarm(8, seed=5) as sims, PrivateAdbServer() as adb:
        async with EmbeddedBroker(backend=backend) as broker:
            assert broker.backend == backend
            sub = TrajectorySubscriber(broker.url, farm_id="f1", client_id="test-learner",
                                       handler=received.append)
            async with sub:
                ctl = FarmController(FarmConfig(
                    broker_url=broker.url, farm_id="f1", adb_port=adb.port,
                    devices=sims.serials, tasks=tasks, policy="random", mode="async",
                    duration_s=8.0, spool_dir=tmp_path / "spool", lifecycle=FAST,
                    flush_timeout_s=15.0))
                stats = await asyncio.wait_for(ctl.run(), 60)
    ids = [d.msg.id for d in received]
    assert stats.episodes > 0 and stats.sink_errors == 0
    assert len(ctl.sink.ids) == stats.episodes
    assert len(ids) == len(set(ids)), "a trajectory was delivered twice"
    assert set(ids) == set(ctl.sink.ids)
    assert ctl.flushed is True and ctl.spool_depth() == 0
    assert len(stats.by_device) == 8
    d = received[0]
    meta = json.loads(d.attachments["meta.json"])
    assert meta["episode_id"] == d.msg.id and meta["serial"] == d.msg.device_id
    assert d.msg.task in FAST_TASKS and d.msg.started_at is not None


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DISTRL, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.slow
def test_cli_farm_up_sim_json(tmp_path: Path) -> None:
    proc = _run("farm", "up", "--sim", "2", "--duration", "6", "--json", "--flush-timeout", "1",
                "--task", "settings.wifi_off", "--task", "settings.open_display",
                "--spool", str(tmp_path / "spool"), "--reset")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["episodes"] > 0
    assert summary["published"] == summary["episodes"]
    assert "mqtt://127.0.0.1:" in proc.stderr  # the embedded broker's URL
    # every episode that played began on a reset phone (one stopped at the end may not)
    assert summary["completed"] <= summary["resets"] <= summary["episodes"]
    assert "devices reset before each episode: sim-state" in proc.stderr


def test_cli_farm_status_unreachable_broker() -> None:
    proc = _run("farm", "status", "--broker", "mqtt://127.0.0.1:1", timeout=30)
    assert proc.returncode == 2
    assert "cannot reach the MQTT broker" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_farm_up_reset_needs_sims() -> None:
    proc = _run("farm", "up", "--reset", "--device", "emulator-5554", timeout=30)
    assert proc.returncode == 2
    assert "--reset (collect.reset) resets sim phones" in proc.stderr
    proc = _run("farm", "up", "--reset-snapshot", "two words", timeout=30)
    assert proc.returncode == 2 and "not a snapshot name" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_farm_up_unknown_task() -> None:
    proc = _run("farm", "up", "--task", "no.such_task", timeout=30)
    assert proc.returncode == 2
    assert "unknown task" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_cli_tail_and_status_watch_a_running_farm(tmp_path: Path) -> None:
    """`traj tail` sees trajectories without acking them; `farm status` shows the devices;
    SIGTERM stops `farm up` cleanly with a summary."""
    up = subprocess.Popen(
        [*DISTRL, "farm", "up", "--sim", "2", "--farm-id", "f2", "--json", "--flush-timeout",
         "1", "--task", "settings.wifi_off", "--spool", str(tmp_path / "spool")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        assert up.stderr is not None
        url = ""
        for line in up.stderr:
            if line.startswith("broker ("):
                url = line.split(" on ", 1)[1].split(";", 1)[0]
                break
        assert url.startswith("mqtt://"), "no broker URL printed"
        # the embedded broker has accounts: anonymous watchers are refused and told why
        anon = _run("farm", "status", "--broker", url, timeout=30)
        assert anon.returncode == 2 and "refused the login" in anon.stderr, anon.stderr
        viewer = ["--broker", url.replace("mqtt://", "mqtt://viewer@"), "--password-file",
                  os.path.join(os.environ["DISTRL_BROKER_ACCOUNTS"], "viewer.password")]
        tail = _run("traj", "tail", *viewer, "--farm-id", "f2", "--count", "3",
                    "--duration", "30", "--json", timeout=45)
        assert tail.returncode == 0, tail.stderr
        lines = [json.loads(x) for x in tail.stdout.splitlines()]
        assert len(lines) == 3 and all(x["task"] == "settings.wifi_off" for x in lines)
        status = _run("farm", "status", *viewer, "--json", timeout=30)
        assert status.returncode == 0, status.stderr
        rows = json.loads(status.stdout)
        assert {r["farm_id"] for r in rows} == {"f2"}
        rows = [r for r in rows if r["device_id"] != "controller"]  # the publisher's own
        assert len(rows) == 2
        assert {r["state"] for r in rows} <= {"ready", "busy", "preparing"}
        # the human table and tail lines: no "@None" steps, the version said once
        table = _run("farm", "status", *viewer, timeout=30)
        assert table.returncode == 0 and "f2" in table.stdout, table.stderr
        assert "@None" not in table.stdout, table.stdout
        human = _run("traj", "tail", *viewer, "--farm-id", "f2", "--count", "1",
                     "--duration", "30", timeout=45)
        assert human.returncode == 0 and " policy=random@v0 " in human.stdout, human.stdout
        up.terminate()
        out, _ = up.communicate(timeout=30)
    finally:
        if up.poll() is None:
            up.kill()
            up.communicate()
    assert up.returncode == 0
    summary = json.loads(out)
    assert summary["episodes"] >= 3
    assert summary["acked"] == 0  # the watcher never acked anything

"""``distrl deploy`` on sim phones: it completes a task, refuses dangerous actions without
touching the phone, and a dry run changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from PIL import Image

from distrl_sdk.actions import Complete, OpenApp, Wait
from distrl_sdk.policy import Observation
from distrl_sdk.wire import TrajectoryMsg
from farm.broker import free_port
from farm.cli import cli
from farm.deploy import DeployOptions, Guard, run_deploy

pytestmark = pytest.mark.slow  # a sim phone + an adb server per test: a few seconds each


def deploy(adb: Any, serial: str, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["deploy", "--device", serial, "--adb-port", str(adb.port),
                                    "--settle", "0.05", *args], input=stdin)


def state(dev: Any) -> dict[str, Any]:
    """What a deploy could change: foreground, settings, packages, what is on screen
    (the status bar clock and battery, which change by themselves, left out)."""
    ui = dev.shell("uiautomator dump /dev/tty")
    ui = re.sub(r'(?:text|content-desc)="\d{1,2}:\d{2}(?: [AP]M)?"|content-desc="Battery[^"]*"',
                "", ui)
    return {"focus": dev.shell("dumpsys window | grep mCurrentFocus").strip(),
            "global": dev.shell("settings list global"),
            "system": dev.shell("settings list system"),
            "packages": dev.shell("pm list packages"), "ui": ui}


@pytest.fixture
def phone(sim_farm: Any, private_adb: Any) -> tuple[Any, str, Any]:
    serial = sim_farm.phones[0].serial
    private_adb.connect(serial)
    return private_adb, serial, private_adb.client().device(serial)


def test_oracle_completes_a_sample_task_and_records_it(phone: tuple[Any, str, Any],
                                                       tmp_path: Path) -> None:
    import cv2

    adb, serial, dev = phone
    out = tmp_path / "run"
    res = deploy(adb, serial, "--policy", "oracle", "--task", "settings.wifi_off", "--out",
                 str(out), "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["success"] is True and summary["stop_reason"] == "completed"
    assert summary["instruction"] == "Turn off Wi-Fi" and summary["refused"] == 0
    n = len(summary["steps"])
    assert n >= 4 and summary["executed"] == n
    assert [s["outcome"] for s in summary["steps"]] == ["allowed"] * n
    assert dev.shell("settings get global wifi_on").strip() == "0"  # the phone really changed
    gif = Image.open(out / "episode.gif")
    assert gif.n_frames == n + 1  # one per decision + the screen at the end
    cap = cv2.VideoCapture(str(out / "episode.mp4"))
    assert cap.get(cv2.CAP_PROP_FRAME_COUNT) == (n + 1) * 10
    traj = TrajectoryMsg.model_validate_json((out / "trajectory.json").read_text())
    assert traj.status == "success" and traj.reward == 1.0 and len(traj.steps) == n
    assert traj.farm_id == "deploy" and traj.device_id == serial
    assert traj.steps[0].action == {"action_type": "open_app", "app_name": "Settings"}
    assert json.loads((out / "deploy.json").read_text())["steps"] == summary["steps"]


def test_trained_checkpoint_is_refused_at_uninstall_and_nothing_runs(
        phone: tuple[Any, str, Any], tmp_path: Path, script_checkpoint: Any) -> None:
    adb, serial, dev = phone
    dev.shell("am start -n 'com.android.settings/.Settings$ManageApplicationsActivity'")
    ckpt = script_checkpoint([["tap", "Shop"], ["tap", "Uninstall"]], version=3)
    out = tmp_path / "run"
    res = deploy(adb, serial, "Open the Shop app's info page", "--policy", str(ckpt),
                 "--out", str(out))
    assert res.exit_code == 3, res.output
    assert "test-script@v3" in res.output
    assert "refused tap" in res.output
    assert '"Uninstall": uninstalling apps is denied (rule text:uninstall)' in res.output
    summary = json.loads((out / "deploy.json").read_text())
    last = summary["steps"][-1]
    assert summary["stop_reason"] == "refused" and last["outcome"] == "refused"
    assert last["executed"] is False and last["rule"] == "text:uninstall"
    assert all(s["executed"] for s in summary["steps"][:-1])  # the walk there did run
    assert all(s["log_prob"] == 0.0 for s in summary["steps"])  # PolicyAgent's decisions
    # nothing was executed: the app is installed and its info page is still up
    assert "package:org.distrl.shop" in dev.shell("pm list packages -3")
    ui = dev.shell("uiautomator dump /dev/tty")
    assert 'text="Uninstall"' in ui and 'text="App info"' in ui
    assert Image.open(out / "episode.gif").n_frames == len(summary["steps"]) + 1


class Scripted:
    """An in-process policy with a fixed list of actions."""

    name = "scripted"

    def __init__(self, *actions: Any) -> None:
        self.actions = list(actions)

    async def act(self, observation: Observation) -> Any:
        return self.actions.pop(0) if self.actions else Complete()


async def test_denied_app_and_uri_are_refused_and_the_phone_is_untouched(
        sim_adb_device: Any, private_adb: Any, tmp_path: Path) -> None:
    import asyncio

    dev = private_adb.client().device(sim_adb_device.serial)
    before = await asyncio.to_thread(state, dev)
    opts = DeployOptions("Call mum", tmp_path / "a", Guard(), settle_s=0.0)
    res = await run_deploy(sim_adb_device, Scripted(OpenApp("Phone"), Complete()), opts)
    assert res.stop_reason == "refused" and len(res.steps) == 1
    assert not res.steps[0].executed and res.steps[0].rule == "package"
    assert res.error == ("refused open_app 'Phone' on com.google.android.dialer: opening "
                         "com.google.android.dialer is denied (rule package)")
    assert await asyncio.to_thread(state, dev) == before
    # --on-deny skip: record it, ask again, go on
    skip = DeployOptions("Text mum", tmp_path / "b", Guard(), on_deny="skip", settle_s=0.0)
    res2 = await run_deploy(sim_adb_device,
                            Scripted(OpenApp("sms:5551234"), OpenApp("tel:5551234"), Complete()),
                            skip)
    assert [s.outcome for s in res2.steps] == ["refused", "refused", "allowed"]
    assert [s.rule for s in res2.steps[:2]] == ["uri", "uri"]
    assert res2.stop_reason == "completed" and res2.success is None
    assert await asyncio.to_thread(state, dev) == before
    traj = json.loads((tmp_path / "b" / "trajectory.json").read_text())
    assert traj["error"] == "not scored: no --task" and len(traj["steps"]) == 3


def test_dry_run_executes_nothing(phone: tuple[Any, str, Any], tmp_path: Path) -> None:
    adb, serial, dev = phone
    dev.shell("am start -n 'com.android.settings/.Settings'")
    before = state(dev)
    out = tmp_path / "dry"
    res = deploy(adb, serial, "Play around", "--policy", "random", "--seed", "5",
                 "--max-steps", "8", "--dry-run", "--out", str(out), "--json")
    assert res.exit_code in (0, 1), res.output
    summary = json.loads(res.stdout)
    assert summary["dry_run"] is True and summary["executed"] == 0
    outcomes = {s["outcome"] for s in summary["steps"]}
    assert "dry-run" in outcomes and outcomes <= {"dry-run", "refused", "invalid"}
    assert state(dev) == before


def test_dry_run_with_a_task_skips_its_setup(phone: tuple[Any, str, Any],
                                             tmp_path: Path) -> None:
    adb, serial, dev = phone
    dev.shell("settings put global wifi_on 0")  # the task's setup would turn it on
    before = state(dev)
    res = deploy(adb, serial, "--policy", "random", "--task", "settings.wifi_off",
                 "--dry-run", "--max-steps", "3", "--out", str(tmp_path / "d"),
                 "--broker", f"mqtt://127.0.0.1:{free_port()}")
    assert "DRY RUN" in res.output and "Traceback" not in res.output
    assert "warning: cannot reach the MQTT broker" in res.output and "not shown live" in res.output
    assert "3 step(s), 0 executed" in res.output
    assert state(dev) == before


def test_confirm_runs_what_you_accept_and_stops_at_a_no(phone: tuple[Any, str, Any],
                                                       tmp_path: Path) -> None:
    adb, serial, dev = phone
    res = deploy(adb, serial, "--policy", "oracle", "--task", "settings.wifi_off", "--confirm",
                 "--out", str(tmp_path / "c"), stdin="y\nn\n")
    assert res.exit_code == 3, res.output
    assert "step 1: run open_app 'Settings'?" in res.output
    assert "declined tap" in res.output
    assert "com.android.settings" in dev.shell("dumpsys window | grep mCurrentFocus")
    assert dev.shell("settings get global wifi_on").strip() == "1"  # step 2 never ran


async def test_time_limit_and_interrupt_still_leave_a_recording(sim_adb_device: Any,
                                                                tmp_path: Path) -> None:
    import asyncio

    from farm.deploy import GuardConfig

    slow = Scripted(Wait(30.0))
    opts = DeployOptions("Wait", tmp_path / "t", Guard(GuardConfig(max_seconds=1.0)),
                         settle_s=0.0)
    res = await run_deploy(sim_adb_device, slow, opts)
    assert res.stop_reason == "time-limit" and "1 s" in (res.error or "")
    assert json.loads((tmp_path / "t" / "deploy.json").read_text())["stop_reason"] \
        == "time-limit"
    run = asyncio.create_task(run_deploy(sim_adb_device, Scripted(Wait(30.0)), DeployOptions(
        "Wait", tmp_path / "i", Guard(), settle_s=0.0)))
    await asyncio.sleep(1.0)  # observed, decided, and inside the 30 s wait by now
    assert not run.done()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    summary = json.loads((tmp_path / "i" / "deploy.json").read_text())
    assert summary["stop_reason"] == "interrupted"
    [step] = summary["steps"]
    assert step["executed"] is False and "stopped while executing" in step["message"]
    assert (tmp_path / "i" / "episode.gif").is_file()


async def test_a_policy_returning_junk_runs_nothing(sim_adb_device: Any, tmp_path: Path) -> None:
    res = await run_deploy(sim_adb_device, Scripted(None, "tap there", Complete()),
                           DeployOptions("x", tmp_path, Guard(), settle_s=0.0, record=False))
    assert [s.outcome for s in res.steps] == ["invalid", "invalid", "allowed"]
    assert "returned NoneType, not an action" in res.steps[0].message
    assert not (tmp_path / "episode.gif").exists() and (tmp_path / "deploy.json").is_file()


class Watching(Scripted):
    """Scripted, and keeps what each observation says about the screen before it."""

    def __init__(self, *actions: Any) -> None:
        super().__init__(*actions)
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> Any:
        self.seen.append(observation)
        return await super().act(observation)


async def test_each_observation_carries_the_screen_the_previous_action_was_chosen_on(
        sim_adb_device: Any, tmp_path: Path) -> None:
    policy = Watching(OpenApp("Settings"), Wait(0.05), Complete())
    await run_deploy(sim_adb_device, policy,
                     DeployOptions("x", tmp_path, Guard(), settle_s=0.0, record=False))
    first, second, third = policy.seen
    assert first.previous_elements is None
    assert second.previous_elements == first.elements != second.elements  # Settings opened
    assert third.previous_elements == second.elements

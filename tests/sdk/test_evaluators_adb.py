"""The shipped evaluators through the real adb path: farm.device.AdbDevice → private adb
server → a sim phone's adbd (the same bytes a USB phone would send)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from distrl_sdk.device import Device
from distrl_sdk.evaluators import (
    ActivityIs,
    FileContains,
    LogcatRegex,
    ModelJudge,
    ShellRegex,
    UIPredicate,
    evaluator_from_config,
    safe_evaluate,
)
from distrl_sdk.trajectory import Trajectory
from farm.sim.farm import SimFarm
from tests.sdk.test_judge import FakeBackend


async def test_evaluators_over_adb(sim_adb_device: Any, sim_farm: SimFarm) -> None:
    dev: Device = sim_adb_device
    assert isinstance(dev, Device)
    t = Trajectory(task="settings.wifi_off", instruction="Turn off Wi-Fi in Settings")
    success = evaluator_from_config({"all": [
        {"type": "setting", "namespace": "global", "key": "wifi_on", "value": "0"},
        {"type": "activity", "package": "com.android.settings", "activity": ".Settings"},
        {"type": "ui", "text": "Network & internet"},
        {"type": "ui", "xpath": ".//node[@resource-id='com.android.settings:id/homepage_title']"},
    ]})
    assert (await safe_evaluate(success, dev, t, {})).unwrap() == 0.0
    await dev.shell("settings put global wifi_on 0")
    await dev.shell("am start -n com.android.settings/.Settings")
    assert (await safe_evaluate(success, dev, t, {})).unwrap() == 1.0
    assert await ActivityIs("com.android.chrome").evaluate(dev, t, {}) == 0.0
    assert await UIPredicate(text="Wi-Fi", exists=False).evaluate(dev, t, {}) == 1.0

    assert await ShellRegex("getprop ro.build.version.sdk", r"^\d+$").evaluate(dev, t, {}) == 1.0
    await dev.push(json.dumps({"alarm": {"hour": 7}}).encode(), "/sdcard/Download/a.json")
    f = FileContains("/sdcard/Download/a.json", json_path="alarm.hour", value="{h}")
    assert await f.evaluate(dev, t, {"h": 7}) == 1.0
    assert await FileContains("/sdcard/Download/missing.json").evaluate(dev, t, {}) == 0.0

    await dev.shell("logcat -c")
    reward = LogcatRegex(r"^reward: 1", tag="AndroidRLTask")
    assert await reward.step_reward(dev, t, {}) == 0.0
    sim_farm.phones[0].logcat.log("I", "AndroidRLTask", "reward: 1.0")  # the app's Log.i
    assert await reward.step_reward(dev, t, {}) == 1.0
    assert await reward.evaluate(dev, t, {}) == 1.0

    judge = ModelJudge(FakeBackend("Status: success"))
    assert await judge.evaluate(dev, t, {}) == 1.0
    png = judge.backend.calls[0][0][0]  # type: ignore[attr-defined]
    assert png.startswith(b"\x89PNG")


async def test_logcat_reward_plugin_over_adb(sim_adb_device: Any, sim_farm: SimFarm) -> None:
    pytest.importorskip("distrl_logcat_reward")
    dev: Device = sim_adb_device
    t = Trajectory(task="game", instruction="play")
    ev = evaluator_from_config({"type": "logcat_reward"})
    await dev.shell("logcat -c")
    phone = sim_farm.phones[0]
    phone.logcat.log("I", "AndroidRLTask", "score: 2")
    assert await ev.step_reward(dev, t, {}) == 2.0
    phone.logcat.log("I", "AndroidRLTask", "episode end")
    assert await ev.episode_ended(dev, t, {})  # type: ignore[attr-defined]
    assert await ev.evaluate(dev, t, {}) == 1.0

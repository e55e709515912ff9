"""run_episode: outcomes; task, evaluator and device faults never count against the agent."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from distrl_sdk.actions import Answer, Complete, Key, OpenApp, Tap
from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceOffline
from distrl_sdk.evaluators import RewardEvaluator, SettingEquals
from distrl_sdk.policy import Observation, OraclePolicy
from distrl_sdk.runner import run_episode
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.sim.phone import SimPhone
from tests.sdk.sim_device import SimDevice


class Boom(RewardEvaluator):
    name = "boom"

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        raise ZeroDivisionError("evaluator bug")


class WifiOff(Task):
    name = "t.wifi_off"
    template = "Turn off Wi-Fi"
    success: ClassVar[RewardEvaluator | None] = SettingEquals("global", "wifi_on", "0")
    teardowns = 0

    async def setup(self, device: Device) -> None:
        await device.shell("settings put global wifi_on 1")

    async def teardown(self, device: Device) -> None:
        WifiOff.teardowns += 1

    async def oracle(self, device: Device) -> AsyncIterator[Any]:
        await device.shell("settings put global wifi_on 0")  # a shortcut, fine for a test
        yield Key("home")


class Broken(WifiOff):
    name = "t.broken"
    success = Boom()


class Question(WifiOff):
    name = "t.question"
    needs_answer = True

    async def is_successful(self, device: Device, trajectory: Trajectory) -> float:
        return 1.0 if trajectory.answer == "42" else 0.0

    async def oracle(self, device: Device) -> AsyncIterator[Any]:
        yield OpenApp("Settings")
        yield Answer("42")
        yield Tap(0.5, 0.5)  # never reached: Answer ends the episode


class Script:
    name = "script"

    def __init__(self, *actions: Any) -> None:
        self.actions = list(actions)

    async def act(self, observation: Observation) -> Any:
        return self.actions.pop(0) if self.actions else Complete()


async def test_success_failure_and_answer() -> None:
    device = SimDevice(SimPhone())
    task = WifiOff()
    ok = await run_episode(task, device, OraclePolicy(task.oracle(device)))
    assert ok.status is EpisodeStatus.SUCCESS and ok.reward == 1.0
    assert [type(a).__name__ for a in ok.actions] == ["Key", "Complete"]
    assert ok.steps[0].screen and ok.steps[0].info["observe_ms"] >= 0
    fail = await run_episode(task, device, Script(Key("home"), Key("back"), *[Key("home")] * 8))
    assert fail.status is EpisodeStatus.FAILURE and fail.reward == 0.0
    assert len(fail.steps) == task.max_steps
    q = Question()
    traj = await run_episode(q, device, OraclePolicy(q.oracle(device)))
    assert traj.answer == "42" and traj.status is EpisodeStatus.SUCCESS
    assert len(traj.steps) == 2


async def test_evaluator_bug_is_errored_and_the_device_stays_usable() -> None:
    device = SimDevice(SimPhone())
    before = WifiOff.teardowns
    bad = await run_episode(Broken(), device, Script(Key("home")))
    assert bad.status is EpisodeStatus.ERRORED and "evaluator bug" in (bad.error or "")
    assert WifiOff.teardowns == before + 1
    good = await run_episode(WifiOff(), device, OraclePolicy(WifiOff().oracle(device)))
    assert good.status is EpisodeStatus.SUCCESS


async def test_device_fault_is_aborted_not_failure() -> None:
    phone = SimPhone()
    device = SimDevice(phone)

    class Unplugged(Script):
        async def act(self, observation: Observation) -> Any:
            raise DeviceOffline("cable pulled", serial="sim")

    traj = await run_episode(WifiOff(), device, Unplugged())
    assert traj.status is EpisodeStatus.ABORTED and "cable pulled" in (traj.error or "")


async def test_policy_bug_is_errored() -> None:
    class Crashy(Script):
        async def act(self, observation: Observation) -> Any:
            raise KeyError("oops")

    traj = await run_episode(WifiOff(), SimDevice(SimPhone()), Crashy())
    assert traj.status is EpisodeStatus.ERRORED and "KeyError" in (traj.error or "")

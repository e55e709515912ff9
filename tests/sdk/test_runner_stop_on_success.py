"""run_episode(stop_on_success=True): the episode ends as SUCCESS at the first executed
step after which the task's evaluator passes, so post-goal actions are never recorded."""

from __future__ import annotations

from typing import Any

from distrl_sdk.actions import Complete, Key
from distrl_sdk.device import Device
from distrl_sdk.policy import Observation
from distrl_sdk.runner import run_episode
from distrl_sdk.trajectory import EpisodeStatus
from farm.sim.phone import SimPhone
from tests.sdk.sim_device import SimDevice
from tests.sdk.test_runner import WifiOff


class MeetsGoalAt:
    """Presses home every step; at step ``goal_step`` it also turns Wi-Fi off (through
    the device, as an oracle's shortcut would), which is what WifiOff checks."""

    name = "meets-goal"

    def __init__(self, device: Device, goal_step: int | None, steps: int = 6) -> None:
        self.device, self.goal_step, self.left = device, goal_step, steps

    async def act(self, observation: Observation) -> Any:
        if observation.step == self.goal_step:
            await self.device.shell("settings put global wifi_on 0")
        self.left -= 1
        return Key("home") if self.left >= 0 else Complete()


async def test_episode_ends_at_the_step_that_met_the_goal() -> None:
    device = SimDevice(SimPhone())
    traj = await run_episode(WifiOff(), device, MeetsGoalAt(device, goal_step=1),
                             stop_on_success=True)
    assert traj.status is EpisodeStatus.SUCCESS and traj.reward == 1.0
    assert len(traj.steps) == 2  # steps 0 and 1; nothing after the goal was met
    assert traj.steps[-1].info.get("stopped_on_success") is True


async def test_default_keeps_the_ordinary_ending() -> None:
    device = SimDevice(SimPhone())
    traj = await run_episode(WifiOff(), device, MeetsGoalAt(device, goal_step=1))
    assert traj.status is EpisodeStatus.SUCCESS
    assert len(traj.steps) == 7  # six presses of home, then Complete
    assert not any(s.info.get("stopped_on_success") for s in traj.steps)


async def test_never_met_ends_as_an_ordinary_failure() -> None:
    device = SimDevice(SimPhone())
    traj = await run_episode(WifiOff(), device, MeetsGoalAt(device, goal_step=None),
                             stop_on_success=True)
    assert traj.status is EpisodeStatus.FAILURE and traj.reward == 0.0
    assert len(traj.steps) == 7

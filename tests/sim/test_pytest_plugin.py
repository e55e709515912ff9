"""The fixtures DistRL's pytest plugin gives task and plugin authors (entry point pytest11)."""

from __future__ import annotations

from typing import Any

import pytest

from farm.sim.background import BackgroundFarm
from farm.sim.farm import SimFarm


def test_sim_device_is_a_connected_adbutils_device(sim_device: Any) -> None:
    sim_device.shell("am start -n com.android.settings/.Settings")
    assert sim_device.app_current().package == "com.android.settings"
    assert sim_device.shell("getprop ro.product.model") == "DistRL Sim Phone"


@pytest.mark.sim(count=3, seed=11, screen="small")
def test_sim_marker_configures_the_farm(sim_farm: SimFarm,
                                         sim_background: BackgroundFarm) -> None:
    assert len(sim_farm.phones) == 3
    assert {(p.world.width, p.world.height) for p in sim_farm.phones} == {(360, 800)}
    assert sim_background.fault("sim-2", "boot-delay", seconds=60) == "booting for 60 s"
    assert not sim_farm.phone("sim-2").faults.boot_completed()


def test_run_task_fixture_runs_a_task_in_one_line(run_task: Any) -> None:
    from distrl_sdk.registry import TaskRegistry
    from distrl_sdk.trajectory import EpisodeStatus

    task = TaskRegistry.discover().get("settings.dark_theme_on")({"say": "Turn on dark theme"})
    assert run_task(task).status is EpisodeStatus.SUCCESS
    assert run_task(task, policy="random", seed=1).status in (
        EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE)


def test_run_task_plays_the_near_miss_which_scores_zero(run_task: Any) -> None:
    from distrl_sdk.registry import TaskRegistry

    task = TaskRegistry.discover().get("settings.wifi_off")({})
    assert run_task(task).reward == 1.0
    assert run_task(task, policy="near_miss").reward == 0.0


async def test_arun_task_runs_in_an_async_test(arun_task: Any) -> None:
    """run_task cannot start an event loop inside a running one; arun_task is awaited."""
    from distrl_sdk.registry import TaskRegistry

    task = TaskRegistry.discover().get("settings.wifi_off")({})
    assert (await arun_task(task)).reward == 1.0
    assert (await arun_task(task, policy="near_miss")).reward == 0.0

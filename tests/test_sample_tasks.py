"""Every sample task on a sim phone: the oracle scores 1 on train and test instances;
the untouched start state and the task's near-miss score 0."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from distrl_sdk.policy import OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.runner import run_episode
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus
from farm.device import AdbDevice
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.background import BackgroundFarm

REGISTRY = TaskRegistry.discover(use_env=False)
SAMPLE = [t for t in REGISTRY if REGISTRY.source(t.name) == "plugin sample"]


def test_suite_size_and_spread() -> None:
    assert not REGISTRY.problems, REGISTRY.problems
    assert len(SAMPLE) >= 30, [t.name for t in SAMPLE]
    apps = {app for t in SAMPLE for app in t.apps}
    assert len(apps) >= 5, apps
    assert all(t().has_oracle for t in SAMPLE)


@pytest.fixture(scope="module")
def device() -> Iterator[AdbDevice]:
    with BackgroundFarm(1, seed=21) as farm, PrivateAdbServer(bundled_adb()) as adb:
        adb.connect(farm.phones[0].serial)
        yield AdbDevice(farm.phones[0].serial, port=adb.port)


async def _nothing() -> AsyncIterator[Any]:
    return
    yield  # an async generator that yields nothing: the agent gives up at once


def _run(task: Task, device: AdbDevice, actions: AsyncIterator[Any]) -> Any:
    return asyncio.run(run_episode(task, device, OraclePolicy(actions)))


@pytest.mark.slow
@pytest.mark.parametrize("task_cls", SAMPLE, ids=[t.name for t in SAMPLE])
def test_oracle_succeeds_and_near_misses_fail(task_cls: type[Task], device: AdbDevice) -> None:
    rng = random.Random(task_cls.name)
    for split in ("train", "test"):
        task = task_cls.sample(rng, split)  # type: ignore[arg-type]
        traj = _run(task, device, task.oracle(device))
        assert traj.status is EpisodeStatus.SUCCESS and traj.reward == 1.0, \
            (split, task.params, traj.error, traj.actions)
    task = task_cls.sample(rng, "train")
    untouched = _run(task, device, _nothing())
    assert untouched.status is EpisodeStatus.FAILURE and untouched.reward == 0.0, untouched.error
    miss = task.near_miss(device)
    if miss is not None:
        near = _run(task, device, miss)
        assert near.status is EpisodeStatus.FAILURE and near.reward == 0.0, \
            (task.params, near.error, near.actions)

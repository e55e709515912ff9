"""Pytest fixtures for task and plugin authors: simulated phones in a few lines.

Installed with DistRL (entry point ``pytest11``), so any test can ask for them:

    def test_settings_opens(sim_device):
        sim_device.shell("am start -n com.android.settings/.Settings")
        assert "com.android.settings" in sim_device.app_current().package

``sim_farm`` is a running :class:`~farm.sim.farm.SimFarm` (one phone, ``instant``
latency, seed 0; parametrise with ``@pytest.mark.sim(count=4, seed=1)``);
``private_adb`` an adb server on a port of its own, killed afterwards;
``sim_device`` an adbutils device for the first phone, connected through it;
``sim_adb_device`` the same phone as a ``distrl_sdk.Device``; ``run_task`` runs a
task on it with the oracle, random or any policy and returns the trajectory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported lazily: this module loads in every pytest run
    from farm.sim.adbhost import PrivateAdbServer
    from farm.sim.background import BackgroundFarm
    from farm.sim.farm import SimFarm


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sim(count=1, profile='instant', seed=0, screen='phone'): sim_farm options"
    )


@pytest.fixture
def sim_background(request: pytest.FixtureRequest) -> Iterator[BackgroundFarm]:
    """The :class:`BackgroundFarm` behind ``sim_farm`` (for ``.fault()`` and ``.call()``)."""
    from farm.sim.background import BackgroundFarm

    marker = request.node.get_closest_marker("sim")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    count = int(kwargs.pop("count", 1))
    bg = BackgroundFarm(count, **kwargs)
    bg.start()
    try:
        yield bg
    finally:
        bg.stop()


@pytest.fixture
def sim_farm(sim_background: BackgroundFarm) -> SimFarm:
    assert sim_background.farm is not None
    return sim_background.farm


@pytest.fixture
def private_adb() -> Iterator[PrivateAdbServer]:
    from farm.sim.adbhost import PrivateAdbServer

    with PrivateAdbServer() as adb:
        yield adb


@pytest.fixture
def sim_device(sim_farm: SimFarm, private_adb: PrivateAdbServer) -> Any:
    """An ``adbutils.AdbDevice`` for the first sim phone, via the private adb server."""
    serial = sim_farm.phones[0].serial
    private_adb.connect(serial)
    return private_adb.client().device(serial)


@pytest.fixture
def sim_adb_device(sim_farm: SimFarm, private_adb: PrivateAdbServer) -> Any:
    """A ``distrl_sdk.Device`` (farm.device.AdbDevice) for the first sim phone."""
    from farm.device import AdbDevice

    serial = sim_farm.phones[0].serial
    private_adb.connect(serial)
    return AdbDevice(serial, port=private_adb.port)


def _episode(device: Any, task: Any, policy: Any, seed: int) -> Any:
    """The coroutine of one episode: ``policy`` is "oracle", "near_miss" (the task's
    plausible wrong ending, which must score 0), "random" or a Policy."""
    from distrl_sdk.policy import OraclePolicy, RandomPolicy
    from distrl_sdk.runner import run_episode

    if policy == "oracle":
        policy = OraclePolicy(task.oracle(device))
    elif policy == "near_miss":
        actions = task.near_miss(device)
        if actions is None:
            raise ValueError(f"task {task.name} defines no near miss")
        policy = OraclePolicy(actions)
    elif policy == "random":
        policy = RandomPolicy(seed)
    return run_episode(task, device, policy)


@pytest.fixture
def run_task(sim_adb_device: Any) -> Any:
    """``run_task(task, policy="oracle"|"near_miss"|"random"|Policy, seed=0) -> Trajectory``
    on a sim phone (in a test without an event loop; async tests use ``arun_task``).

        def test_my_task(run_task):
            traj = run_task(MyTask({"city": "Paris"}))
            assert traj.reward == 1.0
            assert run_task(MyTask({"city": "Paris"}), policy="near_miss").reward == 0.0
    """
    import asyncio

    def run(task: Any, policy: Any = "oracle", seed: int = 0) -> Any:
        return asyncio.run(_episode(sim_adb_device, task, policy, seed))

    return run


@pytest.fixture
def arun_task(sim_adb_device: Any) -> Any:
    """``await arun_task(task, policy=…, seed=0)``: ``run_task`` for async tests (it runs
    on the test's own event loop, where ``run_task`` cannot start one).

        async def test_my_task(arun_task):
            assert (await arun_task(MyTask({"city": "Paris"}))).reward == 1.0
    """
    async def run(task: Any, policy: Any = "oracle", seed: int = 0) -> Any:
        return await _episode(sim_adb_device, task, policy, seed)

    return run

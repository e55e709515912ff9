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


@pytest.fixture
def run_task(sim_adb_device: Any) -> Any:
    """``run_task(task, policy="oracle"|"random"|Policy, seed=0) -> Trajectory`` on a sim phone.

        def test_my_task(run_task):
            traj = run_task(MyTask({"city": "Paris"}))
            assert traj.reward == 1.0
    """
    import asyncio

    from distrl_sdk.policy import OraclePolicy, RandomPolicy
    from distrl_sdk.runner import run_episode

    def run(task: Any, policy: Any = "oracle", seed: int = 0) -> Any:
        if policy == "oracle":
            policy = OraclePolicy(task.oracle(sim_adb_device))
        elif policy == "random":
            policy = RandomPolicy(seed)
        return asyncio.run(run_episode(task, sim_adb_device, policy))

    return run

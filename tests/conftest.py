from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _broker_accounts_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Brokers that `distrl broker` and `farm up` start keep their accounts under the
    test's temp dir, not the user's ~/.local/state (subprocesses inherit it)."""
    d: Path = tmp_path_factory.mktemp("broker-accounts")
    monkeypatch.setenv("DISTRL_BROKER_ACCOUNTS", str(d))


@pytest.fixture(autouse=True)
def _keys_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The local learner key that `distrl learner`, `farm up` and `deploy` share by
    default lives under the test's temp dir too (one per test: processes a test starts
    agree on it, tests do not share it)."""
    monkeypatch.setenv("DISTRL_KEYS", str(tmp_path_factory.mktemp("keys")))


@pytest.fixture(scope="module")
def shared_sim_device() -> Iterator[Any]:
    """One sim phone (seed 5) as a ``farm.device.AdbDevice``, shared by a module's tests:
    for the ones that replay many oracle episodes and reset the apps themselves."""
    from farm.device import AdbDevice
    from farm.sim.adbhost import PrivateAdbServer, bundled_adb
    from farm.sim.background import BackgroundFarm

    with BackgroundFarm(1, seed=5) as farm, PrivateAdbServer(bundled_adb()) as adb:
        adb.connect(farm.phones[0].serial)
        yield AdbDevice(farm.phones[0].serial, port=adb.port)

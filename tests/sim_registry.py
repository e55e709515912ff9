"""Sim phones behind a private adb server, in a DeviceRegistry (real adb protocol): the
``registry`` fixture that the collection and evaluation tests' conftests import."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

# fast fault detection (a disconnected phone goes offline within ~1.5 s)
FAST = LifecycleConfig(heartbeat_s=0.2, reaper_s=1.5, probe_timeout_s=0.5, boot_timeout_s=5,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                       reconnect_timeout_s=1.0)
# no faults expected: a probe slowed by a busy CI box must not revoke a lease
STEADY = LifecycleConfig(heartbeat_s=0.5, reaper_s=10, probe_timeout_s=5, boot_timeout_s=10,
                         boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                         reconnect_timeout_s=2.0)


@pytest.fixture
async def registry(request: pytest.FixtureRequest, sim_background: BackgroundFarm,
                   private_adb: PrivateAdbServer) -> AsyncIterator[DeviceRegistry]:
    """Over the sim phones (``@pytest.mark.sim(count=…)``), FAST timeouts;
    ``@pytest.mark.steady``: STEADY ones (tests without faults)."""
    assert sim_background.farm is not None
    config = STEADY if request.node.get_closest_marker("steady") else FAST
    reg = DeviceRegistry(port=private_adb.port, targets=sim_background.farm.serials,
                         config=config, discover=False, device_timeout=3)
    async with reg:
        for s in sim_background.farm.serials:
            await reg.wait_for(s, DeviceState.READY, timeout=30)
        yield reg

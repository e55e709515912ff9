"""Simulated Android phones that speak the real ADB wire protocol.

    async with SimFarm(count=2) as farm:     # in-process, on this event loop
        ...
    with BackgroundFarm(count=2) as farm:    # on a thread, for blocking clients
        ...

Names load on first use, so ``import farm.sim`` (done by the pytest plugin in every
test run) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "PROFILES": "farm.sim.profiles",
    "BackgroundFarm": "farm.sim.background",
    "FaultKind": "farm.sim.faults",
    "Faults": "farm.sim.faults",
    "LatencyProfile": "farm.sim.profiles",
    "PhoneSpec": "farm.sim.spec",
    "PrivateAdbServer": "farm.sim.adbhost",
    "ScreenSpec": "farm.sim.spec",
    "SimFarm": "farm.sim.farm",
    "SimPhone": "farm.sim.phone",
    "bundled_adb": "farm.sim.adbhost",
    "find_adb": "farm.sim.adbhost",
    "get_profile": "farm.sim.profiles",
    "system_adb": "farm.sim.adbhost",
}

__all__ = [
    "PROFILES",
    "BackgroundFarm",
    "FaultKind",
    "Faults",
    "LatencyProfile",
    "PhoneSpec",
    "PrivateAdbServer",
    "ScreenSpec",
    "SimFarm",
    "SimPhone",
    "bundled_adb",
    "find_adb",
    "get_profile",
    "system_adb",
]

if TYPE_CHECKING:
    from farm.sim.adbhost import PrivateAdbServer, bundled_adb, find_adb, system_adb
    from farm.sim.background import BackgroundFarm
    from farm.sim.farm import SimFarm
    from farm.sim.faults import FaultKind, Faults
    from farm.sim.phone import SimPhone
    from farm.sim.profiles import PROFILES, LatencyProfile, get_profile
    from farm.sim.spec import PhoneSpec, ScreenSpec


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'farm.sim' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

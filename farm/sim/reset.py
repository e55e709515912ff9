"""Per-episode reset for in-process sim phones (:mod:`farm.collect.reset`).

Each phone is saved just before its first episode and put back that way before every
later one (:meth:`SimPhone.save_state` / :meth:`SimPhone.restore_state`; a restore
costs a few milliseconds). The phones live on their own event loop (a
:class:`BackgroundFarm`'s thread, or the caller's loop for a :class:`SimFarm`), so the
restore runs there, between the phone's own requests, never beside them.
"""

from __future__ import annotations

import asyncio

from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError
from farm.sim.background import BackgroundFarm
from farm.sim.farm import SimFarm
from farm.sim.phone import PhoneState, SimPhone

__all__ = ["SimStateReset"]


class SimStateReset:
    """``Collector(..., reset=SimStateReset(bg))``: every episode on a sim phone starts
    from the phone as it was before its first episode."""

    label = "sim-state"

    def __init__(self, farm: BackgroundFarm | SimFarm) -> None:
        self._farm = farm
        self._saved: dict[str, PhoneState] = {}
        self.restores = 0

    def _phone(self, serial: str) -> SimPhone:
        farm = self._farm.farm if isinstance(self._farm, BackgroundFarm) else self._farm
        if farm is not None:
            for phone in farm.phones:
                if phone.serial == serial:
                    return phone
        raise DeviceError(f"{serial} is not a phone of this sim farm", serial=serial)

    async def __call__(self, serial: str, device: Device) -> None:
        phone = self._phone(serial)

        async def reset() -> None:
            saved = self._saved.get(serial)
            if saved is None:
                self._saved[serial] = phone.save_state()
            else:
                phone.restore_state(saved)
                self.restores += 1

        if isinstance(self._farm, BackgroundFarm):
            await asyncio.wrap_future(self._farm.submit(reset()))
        else:
            await reset()

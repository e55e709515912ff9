"""The farm's device registry: discovery, reconnects, state machines and leases.

Devices come from two places: the adb server's ``host:track-devices`` stream (USB
phones, emulators, anything someone ``adb connect``-ed) and configured ``adb
connect`` targets, which the registry connects itself and reconnects with
exponential backoff whenever they drop. Each device gets a
:class:`~farm.device.lifecycle.ManagedDevice` (state machine + heartbeat/reaper
supervisor). Workers call :meth:`DeviceRegistry.acquire` for a lease; status
reporting reads :meth:`DeviceRegistry.snapshot`, a list of immutable views.

    async with DeviceRegistry(port=5037, targets=["192.168.1.20:5555"]) as reg:
        async with await reg.acquire(timeout=30, owner="worker-0") as lease:
            await run_episode(task, lease.device, policy)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType

from distrl_sdk.errors import DeviceBusy, DeviceError
from farm.adb.client import AdbServerClient, AdbServerError
from farm.adb.track import track_devices
from farm.device.adb_device import AdbDevice
from farm.device.health import Health
from farm.device.lifecycle import (
    DeviceState,
    Lease,
    LifecycleConfig,
    ManagedDevice,
    StateChanged,
    Transport,
    classify_serial,
)

__all__ = ["DeviceRegistry", "DeviceView"]

log = logging.getLogger(__name__)
StateChangedListener = Callable[[StateChanged], None]


@dataclass(frozen=True, slots=True)
class DeviceView:
    """An immutable snapshot of one device, for status topics, the TUI and logs."""

    serial: str
    transport: Transport
    state: DeviceState
    event: str
    reason: str
    since: float  # time.time() of the last transition
    adb_state: str | None
    configured: bool  # an adb connect target of this registry
    failures: int
    leased_by: str | None
    lease_id: int | None
    last_ok_age_s: float
    health: Health | None
    paused: bool = False  # an operator's pause (state ``paused``, or busy and pausing)


class DeviceRegistry:
    def __init__(self, *, host: str = "127.0.0.1", port: int = 5037,
                 targets: Iterable[str] = (), config: LifecycleConfig | None = None,
                 discover: bool = True, device_timeout: float = 30.0,
                 only: Iterable[str] | None = None) -> None:
        self.host, self.port = host, port
        self.config = config or LifecycleConfig()
        self.discover = discover
        # an allow-list (``farm up --device/--connect``): other devices on the same adb
        # server, e.g. the user's own phone, are never managed, so never get actions
        self.only: frozenset[str] | None = None if only is None else frozenset(only)
        self.device_timeout = device_timeout
        self.client = AdbServerClient(host, port, timeout=10.0)
        self.targets: set[str] = set()
        self.devices: dict[str, ManagedDevice] = {}
        self.server_up = False
        self._changed = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []
        self._listeners: list[StateChangedListener] = []
        self._started = False
        self._rr = 0
        self._reconnect_locks: dict[str, asyncio.Lock] = {}
        self._reconnected_at: dict[str, float] = {}  # monotonic end of the last good one
        for t in targets:
            self.add_target(t)

    # -- membership --------------------------------------------------------------------
    def _ensure(self, serial: str, initial: DeviceState) -> ManagedDevice:
        md = self.devices.get(serial)
        if md is None:
            dev = AdbDevice(serial, host=self.host, port=self.port, timeout=self.device_timeout)
            md = ManagedDevice(dev, config=self.config, initial=initial,
                               reconnect=self._reconnect, keep_connected=serial in self.targets)
            md.listeners.append(self._on_change)
            self.devices[serial] = md
            if self._started:
                md.start()
            self._notify()
        return md

    def add_target(self, target: str) -> ManagedDevice:
        """Manage an ``adb connect`` target (``host:port``); connected in the background."""
        if classify_serial(target) is not Transport.TCP:
            raise ValueError(f"{target!r} is not an adb connect target (host:port)")
        if self.only is not None and target not in self.only:
            raise ValueError(f"{target!r} is not in this registry's allowed devices")
        self.targets.add(target)
        md = self._ensure(target, DeviceState.OFFLINE)
        md.keep_connected = True
        return md

    async def _reconnect(self, serial: str, failed_since: float | None = None) -> None:
        """``adb disconnect`` + ``adb connect`` (the recovery for TCP devices).

        One device's reconnects never overlap: a disconnect that lands while another
        caller's connect is still handshaking kicks that pending transport, and the adb
        server answers it "failed to connect to …" (an operator's ``reconnect`` racing the
        supervisor's own recovery, which the operator's disconnect had set off). A caller
        whose failure was seen at monotonic time ``failed_since`` skips its reconnect when
        another one succeeded after that moment: the failure it saw was that reconnect's.
        """
        async with self._reconnect_lock(serial):
            done = self._reconnected_at.get(serial)
            if failed_since is not None and done is not None and done > failed_since:
                return
            await self._disconnect_connect(serial)

    def _reconnect_lock(self, serial: str) -> asyncio.Lock:
        return self._reconnect_locks.setdefault(serial, asyncio.Lock())

    async def _disconnect_connect(self, serial: str) -> None:
        try:
            with contextlib.suppress(AdbServerError):
                await self.client.disconnect(serial)
            await self.client.connect(serial)
        except AdbServerError as exc:
            raise DeviceError(str(exc), serial=serial) from None
        self._reconnected_at[serial] = time.monotonic()

    def get(self, serial: str) -> ManagedDevice:
        return self.devices[serial]

    # -- operator actions (farm commands) ------------------------------------------------
    def pause(self, serial: str, reason: str = "by operator") -> None:
        """No new leases for ``serial``; a running episode finishes first."""
        self.devices[serial].pause(reason)

    def resume(self, serial: str, reason: str = "by operator") -> None:
        self.devices[serial].resume(reason)

    def quarantine(self, serial: str, reason: str = "by operator") -> None:
        """Quarantine now: a running episode loses its lease and ends as aborted."""
        self.devices[serial].quarantine(reason)

    def release(self, serial: str) -> None:
        """Lift a quarantine (the device is prepared again, failures forgotten)."""
        self.devices[serial].unquarantine()

    async def reconnect(self, serial: str) -> Health:
        """``adb disconnect`` + ``adb connect`` for TCP devices, then probe (all devices).
        Raises ``DeviceError`` when the device does not answer."""
        md = self.devices[serial]
        async with self._reconnect_lock(serial):  # the probe too: nobody disconnects under it
            if md.transport is Transport.TCP:
                await asyncio.wait_for(self._disconnect_connect(serial),
                                       self.config.reconnect_timeout_s)
            return await md.probe_now()

    # -- events ------------------------------------------------------------------------
    def on_change(self, listener: StateChangedListener) -> None:
        self._listeners.append(listener)

    def _on_change(self, change: StateChanged) -> None:
        for cb in list(self._listeners):
            try:
                cb(change)
            except Exception:
                log.exception("registry listener failed")
        self._notify()

    def _notify(self) -> None:
        async def wake() -> None:
            async with self._changed:
                self._changed.notify_all()

        with contextlib.suppress(RuntimeError):  # no running loop (construction time)
            task = asyncio.get_running_loop().create_task(wake())
            self._tasks.append(task)
            task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[None]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)

    async def _track(self) -> None:
        async for change in track_devices(self.host, self.port):
            self.server_up = change.server_up
            for serial, state in change.devices.items():
                md = self.devices.get(serial)
                if md is None:
                    if not self.discover or (self.only is not None
                                             and serial not in self.only):
                        continue
                    md = self._ensure(serial, DeviceState.PREPARING if state == "device"
                                      else DeviceState.OFFLINE)
                md.presence(state)
            for serial in change.removed:
                md = self.devices.get(serial)
                if md is not None:
                    md.presence(None)

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        self._started = True
        for md in self.devices.values():
            md.start()
        self._tasks.append(asyncio.create_task(self._track(), name="track-devices"))

    async def close(self) -> None:
        self._started = False
        tasks, self._tasks = list(self._tasks), []
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(md.close() for md in self.devices.values()),
                             return_exceptions=True)

    async def __aenter__(self) -> DeviceRegistry:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    # -- leasing -------------------------------------------------------------------------
    def _pick(self, serial: str | None) -> ManagedDevice | None:
        ready = [md for s, md in sorted(self.devices.items())
                 if md.state is DeviceState.READY and (serial is None or s == serial)]
        if not ready:
            return None
        self._rr += 1
        return ready[self._rr % len(ready)]

    async def acquire(self, timeout: float | None = None, *, owner: str = "",
                      serial: str | None = None) -> Lease:
        """Wait for a ready device (or that ``serial``) and lease it.

        Raises ``DeviceBusy`` when none becomes ready within ``timeout`` seconds.
        Use the lease as ``async with``, so it is released on every path.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        async with self._changed:
            while True:
                md = self._pick(serial)
                if md is not None:
                    return md.lease(owner).acquire()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DeviceBusy(f"no ready device within {timeout:g} s "
                                     f"({self.summary()})", serial=serial)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), left)

    async def wait_for(self, serial: str, *states: DeviceState, timeout: float = 30.0) -> None:
        """Wait until ``serial`` is in one of ``states`` (tests, tools)."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not (serial in self.devices and self.devices[serial].state in states):
                left = deadline - time.monotonic()
                if left <= 0:
                    now = self.devices[serial].state if serial in self.devices else "unknown"
                    raise TimeoutError(f"{serial} is {now}, not {'/'.join(states)}, "
                                       f"after {timeout:g} s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), left)

    # -- status --------------------------------------------------------------------------
    def snapshot(self) -> list[DeviceView]:
        now = time.monotonic()
        return [
            DeviceView(
                serial=s, transport=md.transport, state=md.state, event=md.event,
                reason=md.reason, since=md.since, adb_state=md.adb_state,
                configured=s in self.targets, failures=md.failures,
                leased_by=md.lease_holder.owner if md.lease_holder else None,
                lease_id=md.lease_holder.id if md.lease_holder else None,
                last_ok_age_s=now - md.last_ok, health=md.health, paused=md.paused,
            )
            for s, md in sorted(self.devices.items())
        ]

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for md in self.devices.values():
            counts[md.state] = counts.get(md.state, 0) + 1
        return ", ".join(f"{n} {st}" for st, n in sorted(counts.items())) or "no devices"


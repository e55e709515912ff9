"""Per-device state machine, heartbeat/reaper, leases and quarantine.

States and the only transitions allowed (anything else raises ``RuntimeError``):

    ============  ==========================================  ===========================
    from          to                                          past-tense event
    ============  ==========================================  ===========================
    preparing     ready (paused, if pausing)                  prepared
    preparing     recovering / quarantined                    failed (boot timeout)
    preparing     offline                                     disappeared
    ready         busy                                        leased
    ready         paused                                      paused (manual)
    ready         recovering / quarantined                    heartbeat_missed
    ready         offline                                     disappeared
    busy          ready                                       released
    busy          paused                                      released (while pausing)
    busy          recovering / quarantined                    failed / heartbeat_missed
    busy          offline                                     disappeared
    paused        ready                                       resumed (manual)
    paused        recovering / quarantined                    heartbeat_missed
    paused        offline                                     disappeared
    recovering    preparing                                   recovered
    recovering    offline                                     reaped / disappeared
    recovering    quarantined                                 failed
    offline       preparing                                   appeared / reconnected
    offline       quarantined                                 quarantined (manual)
    quarantined   preparing                                   unquarantined (manual)
    quarantined   offline                                     disappeared
    ============  ==========================================  ===========================

Timing (STF's defaults are the bar: 10 s heartbeat, 30 s reaper): every
``heartbeat_s`` a ready/busy device is probed (:func:`farm.device.health.health`, each
call bounded by ``probe_timeout_s``). A failed probe moves it to *recovering*: for
``adb connect`` targets the recovery is ``host:disconnect`` + ``host:connect``, then a
probe; success goes back through *preparing*. When no probe has succeeded for
``reaper_s`` the device is *offline* (reaped); an offline device is probed (and
reconnected, for TCP targets) with exponential backoff until it answers.

Failures (boot timeout, missed heartbeat, a lease ended by a ``DeviceError``) count
up; ``max_failures`` in a row quarantine the device until :meth:`unquarantine`. Only
a lease released cleanly resets the count (a device that recovers and hangs again
and again is exactly what quarantine is for).

Pause (an operator's command): a paused device takes no new lease. A ready one is
*paused* at once; a busy one finishes its episode first (its release lands in
*paused*, not *ready*). The pause outlives recovery and quarantine (a device that
comes back while paused comes back *paused*) until :meth:`ManagedDevice.resume`.
A paused device keeps its heartbeat.

Leases: one episode per device. ``async with managed.lease(owner) as lease:`` raises
``DeviceBusy`` when already leased and ``DeviceOffline``/``DeviceError`` when not
ready; the lease is released on every path out of the block (return, exception,
cancellation). A device that goes offline or stops answering mid-lease revokes the
lease (``lease.revoked`` set, ``lease.lost`` event fired): the worker's next device
call fails and the block's exit is then a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType

from distrl_sdk.errors import AdbTimeout, DeviceBusy, DeviceError, DeviceOffline
from farm.aio import cancel_and_wait
from farm.device.adb_device import AdbDevice
from farm.device.health import Health, health

__all__ = [
    "ALLOWED",
    "DeviceState",
    "Lease",
    "LifecycleConfig",
    "ManagedDevice",
    "StateChanged",
    "Transport",
    "classify_serial",
]

log = logging.getLogger(__name__)


class DeviceState(enum.StrEnum):
    PREPARING = "preparing"
    READY = "ready"
    BUSY = "busy"
    RECOVERING = "recovering"
    OFFLINE = "offline"
    QUARANTINED = "quarantined"
    PAUSED = "paused"  # healthy, but an operator said: no new episodes


S = DeviceState
ALLOWED: dict[DeviceState, frozenset[DeviceState]] = {
    S.PREPARING: frozenset({S.READY, S.RECOVERING, S.OFFLINE, S.QUARANTINED, S.PAUSED}),
    S.READY: frozenset({S.BUSY, S.RECOVERING, S.OFFLINE, S.QUARANTINED, S.PAUSED}),
    S.BUSY: frozenset({S.READY, S.RECOVERING, S.OFFLINE, S.QUARANTINED, S.PAUSED}),
    S.PAUSED: frozenset({S.READY, S.RECOVERING, S.OFFLINE, S.QUARANTINED}),
    S.RECOVERING: frozenset({S.PREPARING, S.OFFLINE, S.QUARANTINED}),
    S.OFFLINE: frozenset({S.PREPARING, S.QUARANTINED}),
    S.QUARANTINED: frozenset({S.PREPARING, S.OFFLINE}),
}


class Transport(enum.StrEnum):
    EMULATOR = "emulator"  # emulator-NNNN (found by the adb server's console-port scan)
    TCP = "tcp"  # host:port (adb connect), also mDNS adb-…._adb-tls-connect._tcp
    USB = "usb"


def classify_serial(serial: str) -> Transport:
    if serial.startswith("emulator-") and serial[9:].isdecimal():
        return Transport.EMULATOR
    host, sep, port = serial.rpartition(":")
    if (sep and host and port.isdecimal()) or "._adb-tls-" in serial:
        return Transport.TCP
    return Transport.USB


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    heartbeat_s: float = 10.0
    reaper_s: float = 30.0
    probe_timeout_s: float = 5.0
    boot_timeout_s: float = 120.0
    boot_poll_s: float = 1.0
    max_failures: int = 3
    backoff_min_s: float = 0.5
    backoff_max_s: float = 30.0
    reconnect_timeout_s: float = 10.0  # adb connect to a hung phone can block that long


@dataclass(frozen=True, slots=True)
class StateChanged:
    """A transition that happened (callbacks get these, after the fact)."""

    serial: str
    previous: DeviceState
    state: DeviceState
    event: str  # past tense: prepared, leased, released, failed, heartbeat_missed, …
    reason: str
    at: float  # time.time()


Listener = Callable[[StateChanged], None]
_lease_ids = itertools.count(1)


class Lease:
    """One episode's exclusive hold on a device; an async context manager."""

    def __init__(self, managed: ManagedDevice, owner: str) -> None:
        self.managed = managed
        self.owner = owner
        self.id = next(_lease_ids)
        self.acquired_at: float | None = None
        self.released = False
        self.revoked: str | None = None  # why the device took the lease back
        self.lost = asyncio.Event()
        self.failure: BaseException | None = None

    @property
    def device(self) -> AdbDevice:
        return self.managed.device

    @property
    def serial(self) -> str:
        return self.managed.serial

    @property
    def active(self) -> bool:
        return self.acquired_at is not None and not self.released and self.revoked is None

    def report_failure(self, exc: BaseException) -> None:
        """For workers that catch device errors themselves: count it on release."""
        self.failure = exc

    def acquire(self) -> Lease:
        self.managed._take(self)
        return self

    def release(self, exc: BaseException | None = None) -> None:
        """Idempotent; ``exc`` (a ``DeviceError``) counts as a device failure."""
        if self.released:
            return
        self.released = True
        self.managed._give_back(self, exc if exc is not None else self.failure)

    async def __aenter__(self) -> Lease:
        if self.acquired_at is None:
            self.acquire()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        self.release(exc)

    def __repr__(self) -> str:
        status = ("released" if self.released else f"revoked: {self.revoked}" if self.revoked
                  else "active" if self.acquired_at else "new")
        return f"Lease#{self.id}({self.serial}, owner={self.owner!r}, {status})"


ProbeFn = Callable[[AdbDevice, float], Awaitable[Health]]
ReconnectFn = Callable[[str, float | None], Awaitable[None]]  # serial, failed_since


async def _default_probe(device: AdbDevice, timeout: float) -> Health:
    return await health(device, timeout=timeout)


class ManagedDevice:
    """One device, its state machine and its supervisor task."""

    def __init__(self, device: AdbDevice, *, config: LifecycleConfig | None = None,
                 initial: DeviceState = DeviceState.PREPARING,
                 reconnect: ReconnectFn | None = None, probe: ProbeFn | None = None,
                 keep_connected: bool = False) -> None:
        self.device = device
        self.serial = device.serial
        self.transport = classify_serial(self.serial)
        self.config = config or LifecycleConfig()
        self.state = initial
        self.since = time.time()
        self.event = "discovered"
        self.reason = ""
        self.failures = 0
        self.adb_state: str | None = "device" if initial is DeviceState.PREPARING else None
        self.health: Health | None = None
        self.last_ok: float = time.monotonic()  # monotonic time of the last good probe
        self.lease_holder: Lease | None = None
        self.listeners: list[Listener] = []
        self._reconnect = reconnect
        self.keep_connected = keep_connected  # a configured adb connect target
        self.adb_state_since = time.monotonic()
        self._probe = probe or _default_probe
        self._gen = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.history: list[StateChanged] = []
        self.paused = False  # an operator's pause: see the module docstring

    # -- transitions -------------------------------------------------------------------
    def _set(self, new: DeviceState, event: str, reason: str = "") -> None:
        old = self.state
        if new is DeviceState.READY and self.paused:
            new = DeviceState.PAUSED  # ready, but held back by the operator
        if new is old:
            return
        if new not in ALLOWED[old]:
            raise RuntimeError(f"{self.serial}: illegal transition {old} → {new} ({event})")
        self.state, self.event, self.reason, self.since = new, event, reason, time.time()
        self._gen += 1
        if new not in (DeviceState.BUSY,) and self.lease_holder is not None:
            holder, self.lease_holder = self.lease_holder, None
            if new is not DeviceState.READY:
                holder.revoked = f"{new}: {reason or event}"
                holder.lost.set()
        change = StateChanged(self.serial, old, new, event, reason, self.since)
        self.history.append(change)
        del self.history[:-100]
        log.info("%s: %s → %s (%s%s)", self.serial, old, new, event,
                 f": {reason}" if reason else "")
        self._wake.set()
        for cb in list(self.listeners):
            try:
                cb(change)
            except Exception:  # a listener's bug must not break the state machine
                log.exception("state listener failed")

    def _fail(self, event: str, reason: str) -> None:
        """Count a failure: recovering, or quarantined after ``max_failures`` in a row."""
        self.failures += 1
        if self.failures >= self.config.max_failures:
            self._set(DeviceState.QUARANTINED, "quarantined",
                      f"{self.failures} failures in a row; last: {reason}")
        else:
            self._set(DeviceState.RECOVERING, event, reason)

    # -- leases ------------------------------------------------------------------------
    def lease(self, owner: str = "") -> Lease:
        """``async with managed.lease("worker-1") as lease: … lease.device …``"""
        return Lease(self, owner)

    def _take(self, lease: Lease) -> None:
        if self.lease_holder is not None or self.state is DeviceState.BUSY:
            raise DeviceBusy(f"leased to {self.lease_holder.owner if self.lease_holder else '?'}",
                             serial=self.serial)
        if self.state is not DeviceState.READY:
            cls = DeviceOffline if self.state is DeviceState.OFFLINE else DeviceError
            raise cls(f"not ready ({self.state}{': ' + self.reason if self.reason else ''})",
                      serial=self.serial)
        self._set(DeviceState.BUSY, "leased", lease.owner)
        self.lease_holder = lease
        lease.acquired_at = time.time()

    def _give_back(self, lease: Lease, exc: BaseException | None) -> None:
        if self.lease_holder is not lease:
            return  # revoked earlier (offline, hung …): nothing to hand back
        self.lease_holder = None
        if isinstance(exc, DeviceError) and not isinstance(exc, DeviceBusy):
            self._fail("failed", str(exc))
        else:
            # clean end, cancellation, or a bug outside the device: the device is fine
            if exc is None:
                self.failures = 0
            self._set(DeviceState.READY, "released", lease.owner)

    # -- presence (from track-devices) ---------------------------------------------------
    def presence(self, adb_state: str | None) -> None:
        """The adb server's view changed: ``device``, ``offline``, … or None (gone)."""
        if adb_state != self.adb_state:
            self.adb_state, self.adb_state_since = adb_state, time.monotonic()
        if adb_state == "device":
            if self.state is DeviceState.OFFLINE:
                self._set(DeviceState.PREPARING, "appeared")
        elif self.state is not DeviceState.OFFLINE:
            self._set(DeviceState.OFFLINE, "disappeared",
                      f"adb server lists it {adb_state}" if adb_state else "adb lost it")
        self._wake.set()

    def unquarantine(self) -> None:
        if self.state is DeviceState.QUARANTINED:
            self.failures = 0
            self._set(DeviceState.PREPARING, "unquarantined", "by operator")

    def quarantine(self, reason: str = "by operator") -> None:
        """Quarantine now; a running episode loses its lease (the worker aborts it)."""
        self._set(DeviceState.QUARANTINED, "quarantined", reason)

    def pause(self, reason: str = "by operator") -> None:
        """No new leases; a busy device finishes its episode first."""
        self.paused = True
        if self.state is DeviceState.READY:
            self._set(DeviceState.PAUSED, "paused", reason)

    def resume(self, reason: str = "by operator") -> None:
        self.paused = False
        if self.state is DeviceState.PAUSED:
            self._set(DeviceState.READY, "resumed", reason)

    async def probe_now(self) -> Health:
        """Probe at once (an operator's re-probe); raises the probe's ``DeviceError``.
        The supervisor is woken too, so an offline device retries right away."""
        self._wake.set()
        return await self._check()

    # -- supervision ---------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"device:{self.serial}")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake early on any transition or presence change."""
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _check(self) -> Health:
        h = await self._probe(self.device, self.config.probe_timeout_s)
        self.health = h
        self.last_ok = time.monotonic()
        return h

    async def _supervise(self) -> None:
        backoff = self.config.backoff_min_s
        while True:
            state, gen = self.state, self._gen
            try:
                if state is DeviceState.PREPARING:
                    await self._prepare(gen)
                elif state in (DeviceState.READY, DeviceState.BUSY, DeviceState.PAUSED):
                    await self._heartbeat(gen)
                elif state is DeviceState.RECOVERING:
                    await self._recover(gen)
                elif state is DeviceState.OFFLINE:
                    if await self._revive(gen):
                        backoff = self.config.backoff_min_s
                    else:
                        await self._sleep(backoff)
                        backoff = min(self.config.backoff_max_s, backoff * 2)
                else:  # quarantined: wait for an operator
                    await self._sleep(3600)
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the supervisor die silently
                log.exception("%s: supervisor step failed", self.serial)
                await asyncio.sleep(self.config.backoff_min_s)

    async def _prepare(self, gen: int) -> None:
        deadline = time.monotonic() + self.config.boot_timeout_s
        last = "no probe yet"
        while time.monotonic() < deadline:
            try:
                h = await self._check()
            except DeviceOffline as exc:
                if self._gen == gen:
                    self._set(DeviceState.OFFLINE, "disappeared", str(exc))
                return
            except DeviceError as exc:
                last = str(exc)
            else:
                if self._gen != gen:
                    return
                if h.boot_completed:
                    self._set(DeviceState.READY, "prepared", ", ".join(h.problems()))
                    return
                last = "sys.boot_completed is not 1"
            if self._gen != gen:
                return
            await self._sleep(self.config.boot_poll_s)
            if self._gen != gen:
                return
        if self._gen == gen:
            self._fail("failed", f"not ready within {self.config.boot_timeout_s:g} s: {last}")

    async def _heartbeat(self, gen: int) -> None:
        try:
            await self._check()
        except DeviceOffline as exc:
            if self._gen == gen:
                self._set(DeviceState.OFFLINE, "disappeared", str(exc))
            return
        except DeviceError as exc:
            if self._gen == gen:
                kind = "hung" if isinstance(exc, AdbTimeout) else "failed"
                self._fail("heartbeat_missed", f"{kind}: {exc}")
            return
        if self._gen == gen:
            await self._sleep(self.config.heartbeat_s)

    async def _reconnect_tcp(self, failed_since: float | None = None) -> None:
        if self._reconnect is not None and self.transport is Transport.TCP:
            with contextlib.suppress(DeviceError, OSError, TimeoutError):
                await asyncio.wait_for(self._reconnect(self.serial, failed_since),
                                       self.config.reconnect_timeout_s)

    async def _recover(self, gen: int) -> None:
        backoff = self.config.backoff_min_s
        while self._gen == gen:
            if time.monotonic() - self.last_ok >= self.config.reaper_s:
                self._set(DeviceState.OFFLINE, "reaped",
                          f"no answer for {self.config.reaper_s:g} s")
                return
            probed_at = time.monotonic()
            for attempt in range(2):  # probe; if that fails, reconnect (TCP) and probe again
                if attempt:  # unless a reconnect finished since that probe began (the cause)
                    await self._reconnect_tcp(failed_since=probed_at)
                if self._gen != gen:
                    return
                try:
                    await self._check()
                except DeviceError:
                    continue
                if self._gen == gen:
                    self._set(DeviceState.PREPARING, "recovered")
                return
            if self._gen != gen:
                return
            await self._sleep(min(backoff, max(0.0, self.config.reaper_s
                                               - (time.monotonic() - self.last_ok))))
            backoff = min(self.config.backoff_max_s, backoff * 2)

    async def _revive(self, gen: int) -> bool:
        """Offline: probe (and reconnect, for configured TCP targets); True when it answered.

        Only targets this farm connected itself are re-connected, and only once the adb
        server has dropped them (or left them ``offline`` for longer than the reaper
        timeout): a transport that is ``connecting``/``authorizing`` belongs to an
        ``adb connect`` in progress, and someone else's ``adb disconnect`` is respected.
        """
        stuck = (self.adb_state == "offline"
                 and time.monotonic() - self.adb_state_since >= self.config.reaper_s)
        if self.keep_connected and (self.adb_state is None or stuck):
            # not when a reconnect (an operator's) already succeeded since the device went
            # away: the adb server's device list just has not caught up with it yet
            await self._reconnect_tcp(failed_since=None if stuck else self.adb_state_since)
        if self.adb_state != "device":
            return False
        try:
            await self._check()
        except DeviceError:
            return False
        if self._gen == gen and self.state is DeviceState.OFFLINE:
            self._set(DeviceState.PREPARING, "reconnected")
        return True

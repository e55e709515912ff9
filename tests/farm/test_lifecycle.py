"""Device state machine, leases, heartbeat/reaper, quarantine and the registry, on sim phones."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest

from distrl_sdk import DeviceBusy, DeviceError
from farm.device.adb_device import AdbDevice
from farm.device.lifecycle import (
    ALLOWED,
    DeviceState,
    LifecycleConfig,
    ManagedDevice,
    Transport,
    classify_serial,
)
from farm.device.registry import DeviceRegistry
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

S = DeviceState
FAST = LifecycleConfig(heartbeat_s=0.2, reaper_s=1.5, probe_timeout_s=0.5, boot_timeout_s=5,
                       boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                       reconnect_timeout_s=1.0)


def test_classify_serial() -> None:
    assert classify_serial("emulator-5554") is Transport.EMULATOR
    assert classify_serial("127.0.0.1:15555") is Transport.TCP
    assert classify_serial("[::1]:5555") is Transport.TCP
    assert classify_serial("adb-R58M-x._adb-tls-connect._tcp") is Transport.TCP
    assert classify_serial("R58M123ABC") is Transport.USB
    assert classify_serial("emulator-x") is Transport.USB


async def test_transition_table_is_enforced() -> None:
    md = ManagedDevice(AdbDevice("127.0.0.1:1", port=1), config=FAST)
    assert S.BUSY not in ALLOWED[S.PREPARING] and S.READY not in ALLOWED[S.OFFLINE]
    with pytest.raises(RuntimeError, match="illegal transition"):
        md._set(S.BUSY, "leased")
    with pytest.raises(DeviceError, match="not ready"):
        md.lease("w").acquire()
    seen: list[str] = []
    md.listeners.append(lambda ch: seen.append(f"{ch.previous}>{ch.state}:{ch.event}"))
    md._set(S.READY, "prepared")
    async with md.lease("w") as lease:
        assert lease.active and md.state is S.BUSY
        with pytest.raises(DeviceBusy):
            md.lease("w2").acquire()
    assert md.state is S.READY and lease.released and not lease.active
    assert seen == ["preparing>ready:prepared", "ready>busy:leased", "busy>ready:released"]


@pytest.fixture
async def registry(sim_background: BackgroundFarm,
                   private_adb: PrivateAdbServer) -> AsyncIterator[DeviceRegistry]:
    assert sim_background.farm is not None
    reg = DeviceRegistry(port=private_adb.port, targets=sim_background.farm.serials,
                         config=FAST, discover=False, device_timeout=5)
    async with reg:
        for s in sim_background.farm.serials:
            await reg.wait_for(s, S.READY, timeout=15)
        yield reg


@pytest.mark.sim(count=1)
async def test_lease_released_on_every_path(registry: DeviceRegistry) -> None:
    serial = registry.snapshot()[0].serial
    md = registry.get(serial)
    async with await registry.acquire(timeout=5, owner="w0") as lease:
        assert (await lease.device.shell("echo hi")).stdout == "hi\n"
        view = registry.snapshot()[0]
        assert (view.state, view.leased_by, view.transport) == (S.BUSY, "w0", Transport.TCP)
        with pytest.raises(DeviceBusy):
            await registry.acquire(timeout=0.2)
    assert md.state is S.READY

    with pytest.raises(ValueError):  # a bug in the worker: released, device not blamed
        async with await registry.acquire(timeout=5):
            raise ValueError("policy bug")
    assert (md.state, md.failures) == (S.READY, 0)

    entered = asyncio.Event()

    async def worker() -> None:
        async with await registry.acquire(timeout=5, owner="w1"):
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(worker())
    await entered.wait()
    assert md.state is S.BUSY
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert md.state is S.READY and md.lease_holder is None

    with pytest.raises(DeviceError):  # a device error: counted, recovered
        async with await registry.acquire(timeout=5):
            raise DeviceError("screen froze", serial=serial)
    assert md.failures == 1 and md.state is S.RECOVERING
    await registry.wait_for(serial, S.READY, timeout=10)
    async with await registry.acquire(timeout=5):
        pass
    assert md.failures == 0
    events = [c.event for c in md.history]
    assert events[-5:] == ["failed", "recovered", "prepared", "leased", "released"]


@pytest.mark.sim(count=1)
async def test_quarantine_after_n_failures(registry: DeviceRegistry) -> None:
    serial = registry.snapshot()[0].serial
    for _ in range(FAST.max_failures):
        await registry.wait_for(serial, S.READY, timeout=10)
        with pytest.raises(DeviceError):
            async with await registry.acquire(timeout=5):
                raise DeviceError("crashed", serial=serial)
    md = registry.get(serial)
    assert md.state is S.QUARANTINED and "3 failures in a row" in md.reason
    with pytest.raises(DeviceBusy, match="no ready device"):
        await registry.acquire(timeout=0.3)
    await asyncio.sleep(0.5)
    assert md.state is S.QUARANTINED  # stays until an operator lets it out
    md.unquarantine()
    await registry.wait_for(serial, S.READY, timeout=10)


@pytest.mark.slow
@pytest.mark.sim(count=2)
async def test_phone_killed_mid_lease(sim_background: BackgroundFarm,
                                      registry: DeviceRegistry) -> None:
    assert sim_background.farm is not None
    victim, other = sim_background.farm.phones
    victim_serial = victim.serial
    lease = await registry.acquire(timeout=5, owner="w0", serial=victim_serial)
    async with lease:
        sim_background.call(victim.stop())
        await registry.wait_for(victim_serial, S.OFFLINE, timeout=10)
        assert not lease.active and lease.revoked and lease.lost.is_set()
        with pytest.raises(DeviceError):
            await lease.device.shell("echo hi", timeout=2)
        # the other phone keeps working meanwhile
        async with await registry.acquire(timeout=5, owner="w1") as second:
            assert second.serial == other.serial
            assert (await second.device.shell("echo ok")).stdout == "ok\n"
    assert registry.get(victim_serial).lease_holder is None
    sim_background.call(victim.start())  # same port again
    assert victim.serial == victim_serial
    await registry.wait_for(victim_serial, S.READY, timeout=20)
    async with await registry.acquire(timeout=5, serial=victim_serial) as again:
        assert (await again.device.shell("echo back")).stdout == "back\n"


@pytest.mark.slow
@pytest.mark.sim(count=2)
async def test_hung_phone_detected_by_timeout(sim_background: BackgroundFarm,
                                              registry: DeviceRegistry) -> None:
    assert sim_background.farm is not None
    hung, other = sim_background.farm.serials
    lease = await registry.acquire(timeout=5, owner="w0", serial=hung)
    async with lease:
        sim_background.fault(hung, "hang", seconds=4)
        await registry.wait_for(hung, S.RECOVERING, S.OFFLINE, timeout=5)
        assert lease.revoked and not lease.active
        await registry.wait_for(hung, S.OFFLINE, timeout=10)
    md = registry.get(hung)
    assert md.history[-1].event in ("reaped", "disappeared")
    assert any(c.event == "heartbeat_missed" and "hung" in c.reason for c in md.history)
    assert registry.get(other).state is S.READY
    await registry.wait_for(hung, S.READY, timeout=20)  # the hang ended: back by itself


@pytest.mark.sim(count=1)
async def test_registry_discovers_tracked_devices(sim_background: BackgroundFarm,
                                                  private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial = sim_background.farm.serials[0]
    changes: list[str] = []
    async with DeviceRegistry(port=private_adb.port, config=FAST) as reg:
        reg.on_change(lambda ch: changes.append(f"{ch.serial} {ch.state}"))
        assert reg.snapshot() == []
        await asyncio.to_thread(private_adb.connect, serial)  # someone else's adb connect
        await reg.wait_for(serial, S.READY, timeout=10)
        (view,) = reg.snapshot()
        assert (view.serial, view.state, view.configured, view.adb_state) == (
            serial, S.READY, False, "device")
        assert view.health is not None and view.health.battery_level == 85
        with pytest.raises(AttributeError):
            view.state = S.BUSY  # type: ignore[misc]
        await asyncio.to_thread(private_adb.disconnect, serial)
        await reg.wait_for(serial, S.OFFLINE, timeout=10)
    # (adb may list it `connecting`/`offline` first: those are offline → preparing hops)
    assert f"{serial} ready" in changes and changes[-1] == f"{serial} offline"


@pytest.mark.sim(count=1)
async def test_boot_gate_and_boot_timeout(sim_background: BackgroundFarm,
                                          private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial = sim_background.farm.serials[0]
    sim_background.fault(serial, "boot-delay", seconds=1.0)
    async with DeviceRegistry(port=private_adb.port, targets=[serial], config=FAST,
                              discover=False) as reg:
        await reg.wait_for(serial, S.PREPARING, timeout=10)
        await asyncio.sleep(0.4)
        assert reg.get(serial).state is S.PREPARING  # gated on sys.boot_completed
        await reg.wait_for(serial, S.READY, timeout=10)
        sim_background.fault(serial, "boot-delay", seconds=60)  # "reboots" and never finishes
    slow = dataclasses.replace(FAST, boot_timeout_s=0.5)
    async with DeviceRegistry(port=private_adb.port, targets=[serial], config=slow,
                              discover=False) as reg:
        await reg.wait_for(serial, S.QUARANTINED, timeout=15)
        md = reg.get(serial)
        assert [c.event for c in md.history].count("failed") == slow.max_failures - 1
        assert "not ready within 0.5 s" in md.reason


@pytest.mark.sim(count=1)
async def test_reconnects_of_one_device_never_overlap(registry: DeviceRegistry) -> None:
    """An operator's reconnect and the supervisor's own recovery used to interleave: the
    second disconnect kicked the first caller's pending transport and the adb server
    answered "failed to connect to …" (a CI failure of test_commands). The real adb
    server does the work; the seam only records when each call starts and ends."""
    serial = next(iter(registry.devices))
    client = registry.client
    events: list[str] = []
    under_way = asyncio.Event()
    real_connect, real_disconnect = client.connect, client.disconnect

    async def connect(target: str) -> str:
        events.append("connect>")
        try:
            return await real_connect(target)
        finally:
            events.append("connect<")

    async def disconnect(target: str) -> str:
        events.append("disconnect>")
        under_way.set()
        try:
            return await real_disconnect(target)
        finally:
            events.append("disconnect<")

    client.connect, client.disconnect = connect, disconnect  # type: ignore[method-assign]
    # the operator's reconnect and a recovery whose failure was seen before it finished
    seen_before = asyncio.get_running_loop().time()
    operator = asyncio.create_task(registry.reconnect(serial))
    await under_way.wait()  # the operator's reconnect holds the device's turn
    await asyncio.gather(operator, registry._reconnect(serial, seen_before))
    assert events == ["disconnect>", "disconnect<", "connect>", "connect<"], events
    # a failure seen after the last reconnect finished is a new one: reconnect again
    events.clear()
    await registry._reconnect(serial, asyncio.get_running_loop().time())
    assert events == ["disconnect>", "disconnect<", "connect>", "connect<"], events
    # and without any such hint, concurrent callers still take turns
    events.clear()
    healths = await asyncio.gather(*(registry.reconnect(serial) for _ in range(3)))
    assert events == ["disconnect>", "disconnect<", "connect>", "connect<"] * 3, events
    assert all(h.boot_completed for h in healths)  # each probe ran before the next disconnect

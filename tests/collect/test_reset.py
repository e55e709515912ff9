"""Per-episode reset (farm.collect.reset, farm.sim.reset) through the real Collector, adb
server and sim phones: a probe policy reads a setting at its first step and then
changes it, so every episode tells what the previous one on its phone left behind.
Without a reset the probe sees the leftover (the control); with one it never does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.actions.types import Complete
from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceError
from distrl_sdk.policy import Observation
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.collect import Collector, CollectorConfig, MemorySink, PolicyChoice, TaskSampler
from farm.collect.reset import ConsoleSnapshotReset, ResetByKind, console_port, snapshot_names
from farm.device.lifecycle import DeviceState
from farm.device.registry import DeviceRegistry
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm
from farm.sim.console import register_with_adb
from farm.sim.reset import SimStateReset
from tests.sim_registry import STEADY


class LeftoverProbe(Task):
    name = "test.leftover_probe"
    template = "Turn airplane mode on"
    max_steps = 1

    async def is_successful(self, device: Device, trajectory: Trajectory) -> float:
        return 1.0


class _Probe:
    """Reads airplane mode at its first step, turns it on, and completes."""

    name = "probe"

    def __init__(self, device: Device, seen: list[str]) -> None:
        self.device, self.seen = device, seen

    async def act(self, observation: Observation) -> Any:
        got = await self.device.shell("settings get global airplane_mode_on")
        self.seen.append(got.stdout.strip())
        await self.device.shell("settings put global airplane_mode_on 1")
        return Complete()


class _ProbeProvider:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        return PolicyChoice(_Probe(device, self.seen), None)


async def _collect(reg: DeviceRegistry, reset: Any, episodes: int = 3
                   ) -> tuple[list[str], MemorySink]:
    provider, sink = _ProbeProvider(), MemorySink()
    col = Collector(reg, TaskSampler([LeftoverProbe]), provider, sink,
                    CollectorConfig(max_episodes=episodes), reset=reset)
    await col.run()
    return provider.seen, sink


@pytest.mark.steady  # no fault injected: a loaded CI box must not revoke a lease
async def test_without_reset_an_episode_sees_what_the_last_one_left(
        registry: DeviceRegistry) -> None:
    seen, sink = await _collect(registry, None)
    assert seen == ["0", "1", "1"]  # the control: the probe detects leftovers
    assert all(t.status is EpisodeStatus.SUCCESS for t, _ in sink.items)


@pytest.mark.steady  # no fault injected: a loaded CI box must not revoke a lease
async def test_sim_state_reset_starts_every_episode_from_the_same_phone(
        registry: DeviceRegistry, sim_background: BackgroundFarm) -> None:
    reset = SimStateReset(sim_background)
    seen, sink = await _collect(registry, reset, episodes=4)
    assert seen == ["0", "0", "0", "0"]
    assert reset.restores == 3  # saved before the first episode, restored before the rest
    assert all(t.status is EpisodeStatus.SUCCESS for t, _ in sink.items)


class _FailingReset:
    label = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, serial: str, device: Device) -> None:
        self.calls += 1
        raise DeviceError("console refused", serial=serial)


@pytest.mark.steady  # no fault injected: a loaded CI box must not revoke a lease
async def test_a_failed_reset_aborts_the_episode_before_the_phone_is_touched(
        registry: DeviceRegistry) -> None:
    reset = _FailingReset()
    seen, sink = await _collect(registry, reset, episodes=2)
    assert seen == []  # the policy never ran on a phone in an unknown state
    assert reset.calls == 2
    for traj, meta in sink.items:
        assert traj.status is EpisodeStatus.ABORTED
        assert (traj.error or "").startswith("reset (broken) failed:")
        assert "console refused" in (traj.error or "")
        assert meta.abort_reason and meta.abort_reason.startswith("device error")


async def test_sim_state_reset_refuses_a_phone_of_another_farm(
        sim_background: BackgroundFarm) -> None:
    with pytest.raises(DeviceError, match="not a phone of this sim farm"):
        await SimStateReset(sim_background)("127.0.0.1:1", None)  # type: ignore[arg-type]


def test_console_port_and_snapshot_listing() -> None:
    assert console_port("emulator-5554") == 5554
    assert console_port("127.0.0.1:5555") is None and console_port("emulator-x") is None
    emulator = ("List of snapshots present on all disks:\n"
                "ID        TAG                 VM SIZE                DATE       VM CLOCK\n"
                "--        default_boot           93M 2020-05-15 10:48:28   00:00:11.713\n"
                "--        clean                  90M 2020-05-15 11:00:00   00:00:03.000\n"
                "OK\n")
    assert snapshot_names(emulator) == {"default_boot", "clean"}
    assert snapshot_names("List of snapshots present on all disks:\nOK\n") == set()
    with pytest.raises(ValueError):
        ConsoleSnapshotReset("two words")


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_console_snapshot_reset_on_a_phone_started_as_an_emulator(
        tmp_path: Path) -> None:
    """The emulator console path end to end: the sim registers with a real adb server as
    emulator-N, the registry discovers it, and the reset loads the snapshot through the
    console (auth token and all) before every episode."""
    token = tmp_path / "console_token"
    token.write_text("s3cret\n")
    with PrivateAdbServer() as adb, BackgroundFarm(1, as_emulator=True, seed=5,
                                                   console_token=token) as farm:
        await asyncio.to_thread(adb.run, "start-server")
        phone = farm.phones[0]
        assert await register_with_adb(adb.port, phone.port)
        reset = ConsoleSnapshotReset("clean", token_path=token)
        with pytest.raises(DeviceError, match="no snapshot 'clean'"):
            await reset.check(phone.serial)
        await reset._console(phone.serial).command("avd snapshot save clean")
        await reset.check(phone.serial)
        async with DeviceRegistry(port=adb.port, config=STEADY, discover=True,
                                  device_timeout=5) as reg:
            await reg.wait_for(phone.serial, DeviceState.READY, timeout=30)
            seen, _ = await _collect(reg, reset)
            assert seen == ["0", "0", "0"]
            seen, _ = await _collect(reg, None, episodes=2)
            assert seen == ["1", "1"]  # the control: the last reset episode left it on


class _Recording:
    def __init__(self, label: str) -> None:
        self.label = label
        self.serials: list[str] = []

    async def __call__(self, serial: str, device: Device) -> None:
        self.serials.append(serial)


async def test_a_farm_resets_sims_and_emulators_each_their_way_and_phones_never() -> None:
    sims, emulators = _Recording("sim-state"), _Recording("snapshot:clean")
    reset = ResetByKind(sims=sims, sim_serials=frozenset({"127.0.0.1:7001"}),
                        emulators=emulators)
    assert reset.label == "sim-state + snapshot:clean"
    for serial in ("127.0.0.1:7001", "emulator-5556", "R58M12ABCDE", "192.168.1.20:5555"):
        await reset(serial, None)  # type: ignore[arg-type]
    assert sims.serials == ["127.0.0.1:7001"] and emulators.serials == ["emulator-5556"]
    sims_only = ResetByKind(sims=sims, sim_serials=frozenset({"127.0.0.1:7001"}))
    await sims_only("emulator-5556", None)  # type: ignore[arg-type]
    assert emulators.serials == ["emulator-5556"] and sims_only.label == "sim-state"

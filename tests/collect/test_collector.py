"""Episode workers and collection modes on 8 sim phones through a private adb server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from distrl_sdk.registry import TaskRegistry
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus
from farm.collect import (
    Collector,
    CollectorConfig,
    JsonlSink,
    MemorySink,
    Mode,
    OracleProvider,
    RandomProvider,
    StaticProvider,
    TaskSampler,
)
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

S = DeviceState
FAST_TASKS = ("settings.wifi_off", "settings.bluetooth_on", "settings.open_display")


@pytest.fixture(scope="module")
def tasks() -> list[type[Task]]:
    reg = TaskRegistry.discover()
    return [reg.get(n) for n in FAST_TASKS]


def assert_all_released(reg: DeviceRegistry) -> None:
    for md in reg.devices.values():
        assert md.lease_holder is None, md.serial
        assert md.state is not S.BUSY, md.serial


def test_sampler_is_seeded_and_weighted(tasks: list[type[Task]]) -> None:
    a = [t.name for t in (TaskSampler(tasks, seed=3).sample() for _ in range(50))]
    b = [t.name for t in (TaskSampler(tasks, seed=3).sample() for _ in range(50))]
    assert a == b
    s = TaskSampler(tasks, weights={"settings.wifi_off": 1, "settings.bluetooth_on": 0,
                                    "settings.open_display": 0}, seed=1)
    assert {s.sample().name for _ in range(20)} == {"settings.wifi_off"}
    with pytest.raises(ValueError):
        TaskSampler(tasks, weights={"nope": 1})
    with pytest.raises(ValueError):
        TaskSampler([])


@pytest.mark.sim(count=8)
@pytest.mark.steady
@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_modes_collect_every_episode_once(registry: DeviceRegistry,
                                                tasks: list[type[Task]], mode: Mode,
                                                tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "t.jsonl")
    col = Collector(registry, TaskSampler(tasks, seed=1), RandomProvider(seed=5), sink,
                    CollectorConfig(mode=mode, max_episodes=40, max_steps=4,
                                    episode_timeout_s=20))
    stats = await col.run()
    rows = sink.read()
    assert stats.episodes == len(rows) == 40
    ids = [r["meta"]["episode_id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert stats.completed == 40, stats.as_dict()  # no fault injected: nothing aborted
    assert sum(stats.by_device.values()) == 40 and len(stats.by_device) == 8
    for r in rows:
        m = r["meta"]
        assert m["mode"] == mode and m["policy"] == "random" and m["policy_version"] == 0
        assert m["serial"] in registry.devices and m["worker"]
        assert m["wall_s"] > 0 and {"setup_ms", "observe_ms", "policy_ms", "act_ms",
                                    "evaluate_ms", "teardown_ms"} <= set(m["timings"])
        assert r["trajectory"]["status"] in ("success", "failure")
        assert 1 <= len(r["trajectory"]["steps"]) <= 4
    if mode == "sync":
        assert stats.rounds == 5 and all(r["meta"]["round"] is not None for r in rows)
        by_round: dict[int, set[str]] = {}
        for r in rows:
            by_round.setdefault(r["meta"]["round"], set()).add(r["meta"]["serial"])
        assert all(len(v) == 8 for v in by_round.values())  # one episode per device a round
    assert_all_released(registry)


@pytest.mark.sim(count=2)
async def test_oracle_provider_and_policy_version(registry: DeviceRegistry,
                                                  tasks: list[type[Task]]) -> None:
    sink = MemorySink()
    col = Collector(registry, TaskSampler(tasks[:1], seed=0), OracleProvider(), sink,
                    CollectorConfig(max_episodes=4))
    await col.run()
    assert len(sink) == 4
    assert all(t.status is EpisodeStatus.SUCCESS for t, _ in sink.items)
    assert {m.policy_version for _, m in sink.items} == {"oracle"}

    from distrl_sdk.policy import RandomPolicy
    provider = StaticProvider(RandomPolicy(0), version=7)
    sink2 = MemorySink()
    col2 = Collector(registry, TaskSampler(tasks, seed=0), provider, sink2,
                     CollectorConfig(max_episodes=3, max_steps=2))
    await col2.run()
    assert {m.policy_version for _, m in sink2.items} == {7}
    assert_all_released(registry)


@pytest.mark.sim(count=8)
async def test_stop_cancels_in_flight_and_loses_nothing(registry: DeviceRegistry,
                                                        tasks: list[type[Task]]) -> None:
    sink = MemorySink()
    col = Collector(registry, TaskSampler(tasks, seed=2), RandomProvider(), sink,
                    CollectorConfig(mode="async", settle_s=0.05))  # ~0.3 s an episode
    run = asyncio.create_task(col.run())
    await asyncio.sleep(1.0)
    assert col.stats.episodes > 0
    t0 = time.monotonic()
    col.stop()
    stats = await asyncio.wait_for(run, 10)
    assert time.monotonic() - t0 < 3
    assert stats.episodes == len(sink) and len({m.episode_id for _, m in sink.items}) == len(sink)
    stopped = [m for t, m in sink.items if m.abort_reason == "stopped"]
    assert stopped and all(t.status is EpisodeStatus.ABORTED for t, m in sink.items
                           if m.abort_reason == "stopped")
    assert_all_released(registry)
    assert all(md.state is S.READY for md in registry.devices.values())


@pytest.mark.slow
@pytest.mark.sim(count=8)
# STEADY: a killed phone needs no probe timeout to be found, and with FAST's 0.5 s one a
# healthy phone's `dumpsys battery` slowed by a loaded CI box once lost its lease too
@pytest.mark.steady
async def test_killed_phone_aborts_its_episode_only(sim_background: BackgroundFarm,
                                                    registry: DeviceRegistry,
                                                    tasks: list[type[Task]]) -> None:
    assert sim_background.farm is not None
    victim = sim_background.farm.phones[3]
    serial = victim.serial
    sink = MemorySink()
    col = Collector(registry, TaskSampler(tasks, seed=4), RandomProvider(), sink,
                    CollectorConfig(mode="async", settle_s=0.05, episode_timeout_s=20))
    run = asyncio.create_task(col.run())
    await registry.wait_for(serial, S.BUSY, timeout=10)
    await asyncio.sleep(0.1)  # mid-episode
    sim_background.call(victim.stop())
    await registry.wait_for(serial, S.OFFLINE, timeout=10)
    # the others keep producing while the victim is gone
    before = {s: n for s, n in col.stats.by_device.items()}
    others = [s for s in registry.devices if s != serial]

    def all_moved_on() -> bool:
        return all(col.stats.by_device[s] > before.get(s, 0) for s in others)

    # wait for the event (each other phone finishes an episode), not a fixed time: a
    # random-policy episode on a loaded machine can take several seconds
    deadline = time.monotonic() + 60
    while not all_moved_on() and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    assert all_moved_on(), col.stats.by_device
    assert registry.devices[serial].state is S.OFFLINE  # … all while the victim was gone
    victim_count = col.stats.by_device[serial]
    sim_background.call(victim.start())  # same port again
    await registry.wait_for(serial, S.BUSY, S.READY, timeout=20)
    await asyncio.sleep(1.0)
    col.stop()
    stats = await asyncio.wait_for(run, 10)
    assert stats.by_device[serial] > victim_count  # back in service
    aborted = [(t, m) for t, m in sink.items
               if m.serial == serial and m.abort_reason and m.abort_reason != "stopped"]
    assert aborted and all(t.status is EpisodeStatus.ABORTED for t, _ in aborted)
    others_aborted = [(m.serial, m.abort_reason) for _, m in sink.items
                      if m.serial != serial and m.abort_reason and m.abort_reason != "stopped"]
    assert not others_aborted, others_aborted
    assert len({m.episode_id for _, m in sink.items}) == len(sink) == stats.episodes
    assert_all_released(registry)


@pytest.mark.slow
@pytest.mark.sim(count=8)
@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_hung_phone_does_not_stall(sim_background: BackgroundFarm,
                                         registry: DeviceRegistry,
                                         tasks: list[type[Task]], mode: Mode) -> None:
    assert sim_background.farm is not None
    hung = sim_background.farm.serials[5]
    sink = MemorySink()
    col = Collector(registry, TaskSampler(tasks, seed=6), RandomProvider(), sink,
                    CollectorConfig(mode=mode, settle_s=0.05,
                                    episode_timeout_s=3))
    run = asyncio.create_task(col.run())
    await registry.wait_for(hung, S.BUSY, timeout=10)
    await asyncio.sleep(0.05)
    t_hang = time.monotonic()
    sim_background.fault(hung, "hang", seconds=30)
    await asyncio.sleep(3.5)
    # detected (lease revoked by the heartbeat, or the episode timeout) well within 3.5 s
    hung_eps = [(t, m) for t, m in sink.items if m.serial == hung and m.abort_reason]
    assert hung_eps, [m.abort_reason for _, m in sink.items]
    t, m = hung_eps[0]
    assert t.status is EpisodeStatus.ABORTED
    assert m.abort_reason is not None and m.abort_reason.startswith(("lease lost", "timeout"))
    assert registry.get(hung).state in (S.RECOVERING, S.OFFLINE, S.QUARANTINED)
    before = col.stats.completed
    await asyncio.sleep(1.0)
    assert col.stats.completed > before  # the others go on
    col.stop()
    stats = await asyncio.wait_for(run, 10)
    assert time.monotonic() - t_hang < 10
    assert len({m.episode_id for _, m in sink.items}) == len(sink) == stats.episodes
    assert_all_released(registry)


@pytest.mark.slow
@pytest.mark.sim(count=2)
async def test_hang_caught_by_episode_timeout_without_heartbeat(
        sim_background: BackgroundFarm, private_adb: PrivateAdbServer,
        tasks: list[type[Task]]) -> None:
    """With a lenient heartbeat probe, only the episode timeout can end a hung episode."""
    assert sim_background.farm is not None
    hung = sim_background.farm.serials[0]
    slow_hb = LifecycleConfig(heartbeat_s=60, reaper_s=120, probe_timeout_s=30,
                              boot_poll_s=0.1, backoff_min_s=0.1, backoff_max_s=0.4,
                              reconnect_timeout_s=1.0)
    async with DeviceRegistry(port=private_adb.port, targets=sim_background.farm.serials,
                              config=slow_hb, discover=False, device_timeout=30) as reg:
        for s in sim_background.farm.serials:
            await reg.wait_for(s, S.READY, timeout=20)
        sink = MemorySink()
        col = Collector(reg, TaskSampler(tasks, seed=6), RandomProvider(), sink,
                        CollectorConfig(settle_s=0.05, episode_timeout_s=1.5,
                                        cancel_grace_s=0.3))
        run = asyncio.create_task(col.run())
        await reg.wait_for(hung, S.BUSY, timeout=10)
        sim_background.fault(hung, "hang", seconds=20)
        await asyncio.sleep(2.5)
        timed_out = [m for _, m in sink.items if m.serial == hung and m.abort_reason]
        assert timed_out and timed_out[0].abort_reason is not None
        assert timed_out[0].abort_reason.startswith("timeout")
        # reported as a device failure: the registry takes it out of service
        assert reg.get(hung).state in (S.RECOVERING, S.OFFLINE, S.QUARANTINED)
        col.stop()
        stats = await asyncio.wait_for(run, 10)
        assert stats.by_device[sim_background.farm.serials[1]] > 0
        assert_all_released(reg)


class _BrokenProvider:
    async def policy_for(self, task: Task, device: object) -> object:
        raise RuntimeError("learner unreachable")


class _FlakySink(MemorySink):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def put(self, trajectory: object, meta: object) -> None:
        self.calls += 1
        if self.calls % 2:
            raise OSError("disk full")
        await super().put(trajectory, meta)  # type: ignore[arg-type]


@pytest.mark.sim(count=2)
async def test_provider_and_sink_bugs_do_not_kill_workers(registry: DeviceRegistry,
                                                          tasks: list[type[Task]]) -> None:
    sink = MemorySink()
    col = Collector(registry, TaskSampler(tasks), _BrokenProvider(), sink,  # type: ignore[arg-type]
                    CollectorConfig(max_episodes=4))
    stats = await col.run()
    assert stats.by_status == {"errored": 4} and len(sink) == 4
    assert all("learner unreachable" in (t.error or "") for t, _ in sink.items)
    flaky = _FlakySink()
    col2 = Collector(registry, TaskSampler(tasks), RandomProvider(), flaky,
                     CollectorConfig(max_episodes=6, max_steps=2))
    stats2 = await col2.run()
    assert stats2.episodes == 6 and stats2.sink_errors == 3 and len(flaky) == 3
    assert_all_released(registry)
    assert all(md.state is S.READY for md in registry.devices.values())

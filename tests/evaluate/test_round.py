"""Evaluation rounds on sim phones over a private adb server: the oracle's ceiling, the
random floor, fixed instances, retries of aborted episodes, the eval mark on every episode."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from distrl_sdk.device import Device
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.task import Task
from farm.collect import MemorySink, PolicyChoice
from farm.device.registry import DeviceRegistry
from farm.evaluate import EvalInstance, EvalRound, OracleEval, RandomEval, plan_instances
from farm.sim.background import BackgroundFarm

REG = TaskRegistry.discover()
SUBSET = [REG.get(n) for n in ("settings.wifi_off", "clock.alarm_dial", "chrome.search",
                               "contacts.add")]


def test_plan_is_fixed_interleaved_and_held_out() -> None:
    a = plan_instances(SUBSET, 3, seed=5)
    b = plan_instances(list(reversed(SUBSET)), 3, seed=5)
    assert [(i.task.name, i.params) for i in a] == [(i.task.name, i.params) for i in b]
    assert [i.index for i in a] == list(range(12))
    assert [i.task.name for i in a[:4]] == sorted(t.name for t in SUBSET)  # task by task
    # the same instance k of a task whatever else is planned
    alone = plan_instances([REG.get("clock.alarm_dial")], 3, seed=5)
    assert [i.params for i in alone] == [i.params for i in a if i.task.name == "clock.alarm_dial"]
    # parameterised tasks: test instances are not train instances
    dial = REG.get("clock.alarm_dial")
    test = {str(i.params) for i in plan_instances([dial], 20, seed=0, split="test")}
    train = {str(i.params) for i in plan_instances([dial], 20, seed=0, split="train")}
    assert test and not test & train
    with pytest.raises(ValueError):
        plan_instances(SUBSET, 0)


@pytest.mark.sim(count=3)
@pytest.mark.steady
async def test_oracle_scores_one_on_every_task_of_the_suite(registry: DeviceRegistry) -> None:
    tasks = list(REG)
    assert len(tasks) >= 35
    sink = MemorySink()
    report = await EvalRound(registry, plan_instances(tasks, 1, seed=0), OracleEval(),
                             sink=sink, greedy=None).run()
    assert report.complete and report.episodes == len(tasks)
    failed = {n: s.as_dict() for n, s in report.tally.tasks.items() if s.success_rate != 1.0}
    assert not failed
    assert report.success_rate == 1.0 and report.ci_high == 1.0 and report.ci_low > 0.85
    # every episode reached the sink marked as evaluation, instance by instance
    infos = [m.eval for _, m in sink.items]
    assert all(i is not None for i in infos)
    assert sorted(i["instance"] for i in infos if i) == list(range(len(tasks)))
    assert {(i["planned"], i["final"], i["split"]) for i in infos if i} == {
        (len(tasks), True, "test")}


@pytest.mark.sim(count=3)
@pytest.mark.steady
async def test_random_policy_sits_near_its_floor(registry: DeviceRegistry) -> None:
    tasks = [t for t in REG if t.name.startswith(("settings.", "clock.", "contacts."))]
    report = await EvalRound(registry, plan_instances(tasks, 2, seed=1), RandomEval(1),
                             greedy=None).run()
    assert report.complete and report.episodes == 2 * len(tasks)
    assert report.success_rate <= 0.15  # measured ≈ 0.01 over the whole suite
    assert report.ci_low < report.success_rate + 1e-9 <= report.ci_high
    d = report.as_dict()
    assert d["policy"] == "random" and d["greedy"] is None and d["planned"] == 2 * len(tasks)


class _FaultOnce:
    """The oracle, except that the first episode's phone is disconnected mid-episode."""

    name = "oracle"
    version: int | None = None

    def __init__(self, bg: BackgroundFarm) -> None:
        self.bg = bg
        self.hit: tuple[int, str] | None = None

    def choose(self, instance: EvalInstance, task: Task, device: Device) -> PolicyChoice:
        choice = OracleEval().choose(instance, task, device)
        if self.hit is not None:
            return choice
        self.hit = (instance.index, device.serial)
        bg = self.bg

        class Faulting:
            name = "oracle"

            async def act(self, obs: Any) -> Any:
                if obs.step == 1:  # after the first action: the phone drops off
                    await asyncio.to_thread(bg.fault, device.serial, "disconnect", 30)
                return await choice.policy.act(obs)

        return PolicyChoice(Faulting(), "oracle")


@pytest.mark.sim(count=2)
async def test_an_aborted_episode_is_played_again_and_only_the_final_one_scored(
        registry: DeviceRegistry, sim_background: BackgroundFarm) -> None:
    sink = MemorySink()
    policy = _FaultOnce(sim_background)
    tasks = [REG.get("settings.wifi_off"), REG.get("settings.open_display")]
    report = await EvalRound(registry, plan_instances(tasks, 2, seed=0), policy, sink=sink,
                             episode_timeout_s=20, timeout_s=120).run()
    assert policy.hit is not None
    index = policy.hit[0]
    attempts = [(t.status.value, m.eval) for t, m in sink.items
                if m.eval and m.eval["instance"] == index]
    assert attempts[0][0] == "aborted" and attempts[0][1]["final"] is False
    assert attempts[-1][1]["final"] is True and attempts[-1][0] == "success"
    assert report.complete and report.episodes == 4 and report.success_rate == 1.0
    assert sum(s.aborted for s in report.tally.tasks.values()) == 0  # retried, not scored


@pytest.mark.sim(count=2)
@pytest.mark.steady
async def test_stop_ends_a_round_incomplete(registry: DeviceRegistry) -> None:
    tasks = list(REG)
    finals: list[tuple[str, bool]] = []
    round_ = EvalRound(registry, plan_instances(tasks, 3, seed=0), OracleEval(),
                       on_episode=lambda _i, traj, final: finals.append((traj.status.value,
                                                                         final)))
    run = asyncio.create_task(round_.run())
    async with asyncio.timeout(60):
        while round_.done < 3:  # noqa: ASYNC110 - the round's own progress
            await asyncio.sleep(0.02)
    round_.stop()
    report = await asyncio.wait_for(run, 60)
    assert not report.complete and 3 <= report.episodes < 3 * len(tasks)
    # the episodes the stop cut short are not final: a learner never completes (and
    # publishes) this round from the ones that happened to finish first
    assert ("aborted", True) not in finals and round_.done == sum(f for _s, f in finals)
    assert all(not round_.registry.devices[s].lease_holder for s in round_.registry.devices)

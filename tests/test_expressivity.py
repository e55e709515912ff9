"""Every oracle action of every sample task is expressible by the UI-tree policy's action
space, and doing the matching candidates instead still solves the task (live sim phone).

The candidate-driven replay is what ``distrl demos record`` does; a failure names the
task, the step and the action no candidate stands for. Each task runs on up to eight
parameter combinations per split (every one for most tasks)."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Iterator

import pytest

from distrl_sdk.learn.demo_record import record_episode
from distrl_sdk.policies.uitree import UITreeConfig
from distrl_sdk.policy import OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.task import Split, Task
from farm.device import AdbDevice
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.background import BackgroundFarm

REGISTRY = TaskRegistry.discover(use_env=False)
SAMPLE = [t for t in REGISTRY if REGISTRY.source(t.name) == "plugin sample"]


def _instances(task_cls: type[Task], per_split: int = 8) -> list[tuple[Split, Task]]:
    """Up to ``per_split`` distinct parameter combinations of each split (all of them for
    most tasks): an oracle action that only some instances need is still met."""
    spec = getattr(task_cls, "spec", None)
    out: list[tuple[Split, Task]] = []
    for split in ("train", "test"):
        if spec is None:
            rng = random.Random(task_cls.name)
            out += [(split, task_cls.sample(rng, split)) for _ in range(2)]
            continue
        pools = {k: p.split(split) for k, p in spec.params.items()}
        combos = [dict(zip(pools, vals, strict=True))
                  for vals in itertools.product(*pools.values())]
        random.Random(task_cls.name).shuffle(combos)
        out += [(split, task_cls(c)) for c in combos[:per_split]]
    return out


@pytest.fixture(scope="module")
def device() -> Iterator[AdbDevice]:
    with BackgroundFarm(1, seed=23) as farm, PrivateAdbServer(bundled_adb()) as adb:
        adb.connect(farm.phones[0].serial)
        yield AdbDevice(farm.phones[0].serial, port=adb.port)


def test_whole_suite_is_covered() -> None:
    assert len(SAMPLE) == 35, [t.name for t in SAMPLE]


@pytest.mark.slow
@pytest.mark.parametrize("task_cls", SAMPLE, ids=[t.name for t in SAMPLE])
def test_oracle_actions_are_candidates(task_cls: type[Task], device: AdbDevice) -> None:
    for split, task in _instances(task_cls):
        ep, unmatched = asyncio.run(record_episode(
            task, device, OraclePolicy(task.oracle(device)), split=split,
            uitree=UITreeConfig(), drive=True, frames=False))
        assert not unmatched, (split, task.instruction, unmatched)
        assert ep.status == "success" and ep.reward == 1.0, \
            (split, task.instruction, ep.error, [s.action for s in ep.steps])
        for s in ep.steps:  # every step carries the candidate it was
            ch = s.encodings["uitree"]["choice"]
            assert ch is not None and 0 <= ch["index"] < len(s.encodings["uitree"]["obs"]["c"])

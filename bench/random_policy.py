"""Success of a seeded random policy on every sample task, on sim phones.

The floor a learner must beat, per task: N episodes each (train split), spread over
several sim phones in this process through a private adb server. Also checks the
oracle once per task, so the table shows the task is solvable.

    .venv/bin/python bench/random_policy.py --episodes 20 --phones 4 --markdown
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import _common  # noqa: F401 - puts the repo on sys.path

from distrl_sdk.policy import OraclePolicy, RandomPolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.runner import run_episode
from distrl_sdk.trajectory import EpisodeStatus
from farm.device import AdbDevice
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.farm import SimFarm


async def run(episodes: int, phones: int, markdown: bool) -> None:
    reg = TaskRegistry.discover(use_env=False)
    tasks = [t for t in reg if reg.source(t.name) == "plugin sample"]
    farm = SimFarm(phones, seed=1)
    await farm.start()
    adb = PrivateAdbServer(bundled_adb())
    await asyncio.to_thread(adb.start)
    try:
        devices = []
        for p in farm.phones:
            await asyncio.to_thread(adb.connect, p.serial)
            devices.append(AdbDevice(p.serial, port=adb.port))
        queue: asyncio.Queue[tuple[type, int]] = asyncio.Queue()
        for t in tasks:
            for i in range(episodes):
                queue.put_nowait((t, i))
        wins: dict[str, int] = {t.name: 0 for t in tasks}
        other: dict[str, int] = {t.name: 0 for t in tasks}

        async def worker(device: AdbDevice) -> None:
            while not queue.empty():
                cls, i = queue.get_nowait()
                task = cls.sample(random.Random(f"{cls.name}:{i}"), "train")
                traj = await run_episode(task, device, RandomPolicy(i))
                if traj.status is EpisodeStatus.SUCCESS:
                    wins[cls.name] += 1
                elif traj.status is not EpisodeStatus.FAILURE:
                    other[cls.name] += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(d) for d in devices))
        secs = time.perf_counter() - t0
        oracle_ok = {}
        for cls in tasks:
            task = cls.sample(random.Random(0), "train")
            traj = await run_episode(task, devices[0], OraclePolicy(task.oracle(devices[0])))
            oracle_ok[cls.name] = traj.status is EpisodeStatus.SUCCESS
            if not oracle_ok[cls.name]:
                print(f"oracle failed on {cls.name}: {traj.status.value} {traj.error or ''} "
                      f"after {traj.actions}")
    finally:
        await asyncio.to_thread(adb.stop)
        await farm.stop()
    if markdown:
        print("| task | difficulty | random success | oracle |")
        print("|---|---|---|---|")
    for cls in tasks:
        rate = wins[cls.name] / episodes
        if markdown:
            print(f"| {cls.name} | {cls.difficulty} | {rate:.0%} ({wins[cls.name]}/{episodes}) "
                  f"| {'✓' if oracle_ok[cls.name] else '✗'} |")
        else:
            print(f"{cls.name:34} {cls.difficulty:7} random {rate:5.0%} "
                  f"({wins[cls.name]}/{episodes}, {other[cls.name]} aborted/errored)  "
                  f"oracle {'ok' if oracle_ok[cls.name] else 'FAILED'}")
    total = sum(wins.values()) / (episodes * len(tasks))
    print(f"\n{len(tasks)} tasks × {episodes} random episodes on {phones} sim phones in "
          f"{secs:.0f} s; mean random success {total:.1%}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--phones", type=int, default=4)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    asyncio.run(run(a.episodes, a.phones, a.markdown))

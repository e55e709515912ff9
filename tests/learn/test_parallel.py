"""Data-parallel A-RIDE (distrl_sdk.learn.parallel): two processes on gloo take the same
steps as one process on the same batches — the leader's parameters and the worker's
equal the single process's after every update."""

from __future__ import annotations

import copy
import multiprocessing as mp
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from distrl_sdk.learn import ARIDEConfig, ARIDETrainer
from distrl_sdk.learn.parallel import DataParallel, shard_bounds
from tests.learn.test_aride_toy import BanditPolicy, collect

BASE: dict[str, Any] = dict(actor_lr=1e-2, critic_lr=3e-3, min_episodes=8, batch_episodes=8,
                            refresh_every=0, seed=3, demo_coef=0.0)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(init: str, out: str) -> None:
    torch.set_num_threads(1)
    trainer = ARIDETrainer(BanditPolicy(seed=99), ARIDEConfig(**BASE))  # weights come by sync
    dp = DataParallel.join(1, 2, init)
    try:
        followed = dp.serve(trainer)
        torch.save({"weights": trainer.policy.weights(), "updates": followed}, out)
    finally:
        dp.close()


@pytest.mark.parametrize(("n", "world"), [(10, 2), (3, 2), (1, 2), (7, 3), (0, 2)])
def test_shards_cover_every_step_once_in_order(n: int, world: int) -> None:
    parts = [shard_bounds(n, world, r) for r in range(world)]
    assert [i for sl in parts for i in range(n)[sl]] == list(range(n))
    sizes = [sl.stop - sl.start for sl in parts]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.timeout(180)
def test_two_processes_take_the_single_process_steps(tmp_path: Path) -> None:
    init = f"tcp://127.0.0.1:{_port()}"
    out = tmp_path / "worker.pt"
    proc = mp.get_context("spawn").Process(target=_worker, args=(init, str(out)))
    proc.start()
    dp = DataParallel.join(0, 2, init)
    try:
        one = ARIDETrainer(BanditPolicy(seed=5), ARIDEConfig(**BASE))
        two = ARIDETrainer(BanditPolicy(seed=5), ARIDEConfig(**BASE))
        two.parallel = dp
        dp.sync(two.policy, two.actor_opt)
        start = copy.deepcopy(one.policy.weights())
        behaviour = copy.deepcopy(one.policy)
        rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
        evaluated = 0
        for _ in range(4):
            for ep in collect(copy.deepcopy(behaviour), one.version, 6, rng_a):
                one.add_episode(ep)
            for ep in collect(copy.deepcopy(behaviour), two.version, 6, rng_b):
                two.add_episode(ep)
            ma, mb = one.update(), two.update()
            evaluated += int(mb["steps"])
            assert abs(ma["actor_loss"] - mb["actor_loss"]) < 1e-5
            assert ma["steps"] == mb["steps"] and ma["entropy"] == pytest.approx(mb["entropy"])
            for k, v in one.policy.weights().items():
                torch.testing.assert_close(two.policy.weights()[k], v, rtol=1e-5, atol=1e-6)
        # replayed episodes travel once: the workers keep them (featurised) by id
        assert 0 < dp.sent_steps < evaluated
        dp.stop()
    finally:
        dp.close()
        proc.join(30)
        if proc.is_alive():  # a failed leader leaves it waiting for the next message
            proc.kill()
            proc.join()
    assert proc.exitcode == 0
    got = torch.load(out)
    assert got["updates"] == 4
    assert any(not torch.equal(start[k], v) for k, v in one.policy.weights().items())
    for k, v in two.policy.weights().items():  # the worker holds the leader's parameters
        torch.testing.assert_close(got["weights"][k], v, rtol=0, atol=0)

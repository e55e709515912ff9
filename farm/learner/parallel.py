"""``distrl learner --nproc N``: the learner's trainer as the leader of N−1 worker
processes (:mod:`distrl_sdk.learn.parallel`) on this machine.

The leader (the learner process itself) keeps MQTT ingest, replay, the critics,
checkpoints and publishing; each worker holds a copy of the policy and its optimiser and
takes a shard of every update's policy passes. Workers are started with the ``spawn``
method (no inherited event loop, sockets or threads), join over TCP on loopback, get
the leader's weights and optimiser state, and die with the leader (a parent-death
signal), so a SIGKILLed learner never leaves them blocked in a collective."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing as mp
import os
import signal
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from distrl_sdk.learn.api import Trainer
    from distrl_sdk.learn.parallel import DataParallel
    from farm.learner.service import LearnerConfig

log = logging.getLogger(__name__)

__all__ = ["WorkerGroup", "start_workers", "worker_main"]

JOIN_TIMEOUT_S = 120.0  # a worker that cannot start (import error, no memory) fails the run


def _die_with_parent() -> None:
    """PR_SET_PDEATHSIG: the kernel sends SIGTERM when the leader dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


def worker_main(rank: int, world: int, init_method: str, kind: str,
                policy_config: dict[str, Any], config_json: str, leader_pid: int) -> None:
    """One worker: build the same policy and trainer, join, follow until ``stop``."""
    _die_with_parent()
    if os.getppid() != leader_pid:  # the leader died before the signal was armed
        return
    import torch

    from distrl_sdk.learn.parallel import DataParallel
    from distrl_sdk.policies import build_policy
    from farm.learner.service import LearnerConfig, default_trainer

    config = LearnerConfig.model_validate_json(config_json)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    trainer = default_trainer(build_policy(kind, policy_config), config)
    dp = DataParallel.join(rank, world, init_method, timeout_s=JOIN_TIMEOUT_S)
    try:
        dp.serve(trainer)
    finally:
        dp.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WorkerGroup:
    """The leader's side: the process group and the worker processes."""

    dp: DataParallel
    procs: Sequence[BaseProcess] = field(default_factory=list)

    def stop(self, timeout: float = 30.0) -> None:
        """Tell the workers to leave, close the group, reap them (killed if they hang)."""
        with contextlib.suppress(Exception):  # a dead worker: the group is broken anyway
            self.dp.stop()
        with contextlib.suppress(Exception):
            self.dp.close()
        for p in self.procs:
            p.join(timeout)
            if p.is_alive():
                log.warning("data-parallel worker %s did not stop; killing it", p.pid)
                p.kill()
                p.join()


def start_workers(trainer: Trainer, config: LearnerConfig) -> WorkerGroup:
    """(trainer thread) Start ``config.nproc − 1`` workers for ``trainer`` and lead them:
    its updates are sharded from now on. Raises ConfigError for a trainer that cannot be
    split, RuntimeError when the workers do not join."""
    from distrl_sdk.errors import ConfigError
    from distrl_sdk.learn.parallel import DataParallel

    if not hasattr(trainer, "parallel"):
        raise ConfigError(f"--nproc {config.nproc}: only the A-RIDE trainer runs data-"
                          f"parallel (got {type(trainer).__name__}); use --algo aride")
    world = config.nproc
    init = f"tcp://127.0.0.1:{_free_port()}"
    policy = trainer.policy
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker_main, name=f"distrl-learner-rank{r}", daemon=True,
                         args=(r, world, init, policy.kind, policy.config_dict(),
                               config.model_dump_json(), os.getpid()))
             for r in range(1, world)]
    for p in procs:
        p.start()
    try:
        dp = DataParallel.join(0, world, init, timeout_s=JOIN_TIMEOUT_S)
    except Exception as exc:
        for p in procs:
            p.kill()
        raise RuntimeError(f"data-parallel workers did not join: {exc}") from exc
    group = WorkerGroup(dp, procs)
    trainer.parallel = dp
    dp.sync(policy, trainer.actor_opt)  # type: ignore[attr-defined]
    log.info("data-parallel learner: %d processes", world)
    return group

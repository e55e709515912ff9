"""The farm controller: devices → collector → MQTT, with device statuses on the side.

    ctl = FarmController(FarmConfig(broker_url=url, farm_id="f1", adb_port=port,
                                    devices=serials, tasks=[WifiOff], spool_dir=path))
    stats = await ctl.run()   # until duration / stop(); then flushes the spool (bounded)

Every finished episode goes through :class:`MqttSink` (SDK trajectory → wire message,
episode id as the trajectory id so a redelivery dedupes) into the spooling
:class:`~farm.transport.Publisher`; every device lifecycle change is published as a
retained :class:`~distrl_sdk.wire.DeviceStatus`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distrl_sdk.task import Task
from distrl_sdk.trajectory import Trajectory
from distrl_sdk.wire import DeviceStatus, trajectory_to_msg
from farm.collect import (
    Collector,
    CollectorConfig,
    CollectorStats,
    EpisodeMeta,
    Mode,
    OracleProvider,
    PolicyProvider,
    RandomProvider,
    TaskSampler,
)
from farm.device.lifecycle import DeviceState, LifecycleConfig, StateChanged
from farm.device.registry import DeviceRegistry
from farm.transport import Publisher

__all__ = ["FarmConfig", "FarmController", "MqttSink", "status_of"]

log = logging.getLogger(__name__)

_WIRE_STATE = {
    DeviceState.PREPARING: "preparing",
    DeviceState.READY: "ready",
    DeviceState.BUSY: "busy",
    DeviceState.RECOVERING: "preparing",
    DeviceState.OFFLINE: "offline",
    DeviceState.QUARANTINED: "quarantined",
}


def status_of(state: DeviceState) -> str:
    """Registry state → wire ``DeviceStatus.state`` (recovering is reported as preparing)."""
    return _WIRE_STATE.get(state, "offline")


class MqttSink:
    """A :class:`~farm.collect.TrajectorySink` that spools each trajectory into a Publisher.

    Frames travel only when the collector captured screenshots; the :class:`EpisodeMeta`
    rides along as the ``meta.json`` attachment."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        self.ids: list[str] = []
        self.errors = 0

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        msg = trajectory_to_msg(trajectory, farm_id=self.publisher.farm_id,
                                device_id=meta.serial, traj_id=meta.episode_id)
        version = meta.policy_version if isinstance(meta.policy_version, int) else None
        steps = [s if s.policy_version is not None or version is None or version < 0
                 else s.model_copy(update={"policy_version": version}) for s in msg.steps]
        msg = msg.model_copy(update={"steps": steps, "started_at": meta.started_at,
                                     "ended_at": meta.started_at + meta.wall_s})
        frames: dict[int, bytes] = {}
        for s in trajectory.steps:
            shot = s.info.get("screenshot_png")
            if isinstance(shot, bytes | bytearray) and shot:
                frames[s.index] = bytes(shot)
        extra = {"meta.json": ("application/json", json.dumps(meta.as_dict()).encode())}
        try:
            await self.publisher.publish(msg, frames or None, extra)
        except Exception:
            self.errors += 1
            raise
        self.ids.append(msg.id)


@dataclass
class FarmConfig:
    broker_url: str
    farm_id: str = "farm"
    adb_host: str = "127.0.0.1"
    adb_port: int = 5037
    devices: list[str] = field(default_factory=list)  # empty: every device on the server
    tasks: list[type[Task]] = field(default_factory=list)
    policy: str = "random"  # random | oracle
    mode: Mode = "async"
    duration_s: float | None = None
    spool_dir: str | Path = "runs/spool"
    seed: int = 0
    with_screenshots: bool = False
    flush_timeout_s: float = 10.0  # after collection: wait this long for acks
    ready_timeout_s: float = 30.0  # for the listed devices to become ready
    lifecycle: LifecycleConfig | None = None
    episode_timeout_s: float = 120.0


class FarmController:
    def __init__(self, config: FarmConfig, *, policies: PolicyProvider | None = None) -> None:
        if not config.tasks:
            raise ValueError("no tasks to collect")
        if config.policy not in ("random", "oracle") and policies is None:
            raise ValueError(f"unknown policy {config.policy!r} (random | oracle)")
        self.config = config
        self.policies: PolicyProvider = policies or (
            OracleProvider() if config.policy == "oracle" else RandomProvider(seed=config.seed))
        self.publisher = Publisher(config.broker_url, config.farm_id, config.spool_dir)
        self.sink = MqttSink(self.publisher)
        self.registry: DeviceRegistry | None = None
        self.collector: Collector | None = None
        self.episodes_by_device: Counter[str] = Counter()
        self.flushed: bool | None = None
        self._status_tasks: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()

    # -- status --------------------------------------------------------------------------
    @property
    def stats(self) -> CollectorStats:
        return self.collector.stats if self.collector is not None else CollectorStats()

    def spool_depth(self) -> int:
        return len(self.publisher.spool)

    async def _publish_status(self, serial: str, state: DeviceState, detail: str) -> None:
        try:
            await self.publisher.set_status(DeviceStatus(
                device_id=serial, state=status_of(state),  # type: ignore[arg-type]
                detail=detail[:200] or None, episodes=self.stats.by_device[serial]))
        except Exception:
            log.exception("status publish failed for %s", serial)

    def _on_change(self, change: StateChanged) -> None:
        detail = f"{change.event}: {change.reason}" if change.reason else change.event
        t = asyncio.get_running_loop().create_task(
            self._publish_status(change.serial, change.state, detail))
        self._status_tasks.add(t)
        t.add_done_callback(self._status_tasks.discard)

    async def _publish_snapshot(self) -> None:
        if self.registry is None:
            return
        for v in self.registry.snapshot():
            await self._publish_status(v.serial, v.state, v.event)

    # -- run -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop collecting (in-flight episodes end as aborted and are still published)."""
        self._stop.set()
        if self.collector is not None:
            self.collector.stop()

    async def _wait_ready(self, reg: DeviceRegistry) -> None:
        cfg = self.config
        t0 = time.monotonic()
        deadline = t0 + cfg.ready_timeout_s
        while time.monotonic() < deadline and not self._stop.is_set():
            if not reg.server_up and time.monotonic() - t0 > min(5.0, cfg.ready_timeout_s):
                raise RuntimeError(f"no adb server at {cfg.adb_host}:{cfg.adb_port} "
                                   "(start one with `adb start-server`, or use --sim N)")
            states = {v.serial: v.state for v in reg.snapshot()}
            ready = [s for s, st in states.items() if st is DeviceState.READY]
            if cfg.devices and all(states.get(s) is DeviceState.READY for s in cfg.devices):
                return
            if not cfg.devices and ready and all(
                    st in (DeviceState.READY, DeviceState.QUARANTINED, DeviceState.OFFLINE)
                    for st in states.values()):
                return
            await asyncio.sleep(0.1)
        if not any(v.state is DeviceState.READY for v in reg.snapshot()):
            raise RuntimeError(
                f"no device became ready within {cfg.ready_timeout_s:.0f} s "
                f"(adb server {cfg.adb_host}:{cfg.adb_port}: {reg.summary()})")

    async def run(self) -> CollectorStats:
        """Collect until the duration is over or :meth:`stop`; then flush (bounded) and stop
        everything. Returns the collector's stats."""
        cfg = self.config
        tcp = [d for d in cfg.devices if ":" in d]
        reg = DeviceRegistry(host=cfg.adb_host, port=cfg.adb_port, targets=tcp,
                             config=cfg.lifecycle, discover=True)
        self.registry = reg
        reg.on_change(self._on_change)
        await self.publisher.start()
        try:
            async with reg:
                await self._wait_ready(reg)
                await self._publish_snapshot()
                if self._stop.is_set():
                    return self.stats
                self.collector = Collector(
                    reg, TaskSampler(cfg.tasks, seed=cfg.seed), self.policies, self.sink,
                    CollectorConfig(mode=cfg.mode, duration_s=cfg.duration_s,
                                    with_screenshots=cfg.with_screenshots,
                                    episode_timeout_s=cfg.episode_timeout_s),
                    name=cfg.farm_id)
                stats = await self.collector.run()
                await self._publish_snapshot()
            self.flushed = await self.publisher.wait_acked(cfg.flush_timeout_s)
            return stats
        finally:
            for t in list(self._status_tasks):
                t.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._status_tasks, return_exceptions=True)
            await self.publisher.stop()

    def summary(self) -> dict[str, Any]:
        out = self.stats.as_dict()
        ps = self.publisher.stats
        out.update(farm_id=self.config.farm_id, broker=self.config.broker_url,
                   published=len(self.sink.ids), acked=ps.acked, spool_depth=self.spool_depth(),
                   flushed=self.flushed)
        return out

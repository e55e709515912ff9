"""The farm controller: devices → collector → MQTT, with live statuses, thumbnails and
operator commands on the side.

    ctl = FarmController(FarmConfig(broker_url=url, farm_id="f1", adb_port=port,
                                    devices=serials, tasks=[WifiOff], spool_dir=path))
    stats = await ctl.run()   # until duration / stop(); then flushes the spool (bounded)

Every finished episode goes through :class:`MqttSink` (SDK trajectory → wire message,
episode id as the trajectory id so a redelivery dedupes) into the spooling
:class:`~farm.transport.Publisher`; every device lifecycle change is published as a
retained :class:`~distrl_sdk.wire.DeviceStatus`.

Live view (for the TUI): while an episode runs, the device's retained status also
carries the task, instruction, step, return so far (the final score included once
evaluated), newest action, battery and temperature (from the heartbeat's health probe),
coalesced to at most ``status_hz`` per device: a step only marks the device dirty (a few
attribute writes on the hot path); one loop publishes the dirty ones. The busy ↔ ready
churn between episodes is coalesced the same way (other transitions — paused, offline,
quarantined … — go out at once): with fast episodes (sim phones finish several a second)
the immediate ``leased``/``released`` statuses, sent before the first step, would
otherwise replace the live one within milliseconds, and a watcher would hardly ever see
a step or a return. An episode that ends before any status showed it gets one final busy
status (its last step and return, detail ``episode over``), so every episode is seen at
least once. Thumbnails (``frames_hz`` > 0) come from a task per device that, at most
``frames_hz`` times a second, takes a screenshot — only while someone could watch (the
command connection to the broker is up), the device is busy and its screen has moved on
by a step — shrinks it to ``frame_width`` px JPEG in a worker thread and publishes it
with the newest actions in pixels and the compact UI elements of the newest observation
(QoS 0, not retained). The elements are the ones the policy already saw (a reference
kept on the step, compacted only when a thumbnail goes out): never an extra UI dump, as
a device has one UiAutomation client and the CPU is budgeted.
A thumbnail costs ~15 ms of CPU (reading a 10 MB raw frame, shrinking, encoding), so
``frames_total_hz`` caps the farm's thumbnails per second whatever the device count:
with many devices each one's thumbnails just come less often.

Commands (:mod:`farm.commands`): pause, resume, reconnect, quarantine, release and
run_task arrive on ``cmd/<device>``, are answered on ``cmd_result``; refused messages
are counted in :attr:`FarmController.rejects`.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from distrl_sdk.actions import InvalidAction, to_dict
from distrl_sdk.device import Device
from distrl_sdk.errors import DistRLError
from distrl_sdk.policy import Decision, Observation, Policy
from distrl_sdk.task import Task
from distrl_sdk.trajectory import Trajectory
from distrl_sdk.uitree import UIElement
from distrl_sdk.wire import (
    Command,
    CommandResult,
    DeviceFrame,
    DeviceStatus,
    EvalInfo,
    compact_elements,
    encode_frame,
    topics,
    trajectory_to_msg,
)
from distrl_sdk.wire.signing import SigningKey, TrustedKeys
from farm.collect import (
    Collector,
    CollectorConfig,
    CollectorStats,
    EpisodeMeta,
    Mode,
    OracleProvider,
    PolicyChoice,
    PolicyProvider,
    RandomProvider,
)
from farm.collect.reset import EpisodeReset
from farm.commands import CommandExecutor, CommandListener, DirectedSampler
from farm.device.lifecycle import DeviceState, LifecycleConfig, ManagedDevice, StateChanged
from farm.device.observe import Frame
from farm.device.registry import DeviceRegistry
from farm.transport import Publisher, parse_broker_url

__all__ = ["FarmConfig", "FarmController", "MqttSink", "status_of"]

log = logging.getLogger(__name__)

_WIRE_STATE = {
    DeviceState.PREPARING: "preparing",
    DeviceState.READY: "ready",
    DeviceState.BUSY: "busy",
    DeviceState.RECOVERING: "preparing",
    DeviceState.OFFLINE: "offline",
    DeviceState.QUARANTINED: "quarantined",
    DeviceState.PAUSED: "paused",
}


#: the churn between episodes, coalesced into the live status updates
_CHURN = frozenset({DeviceState.BUSY, DeviceState.READY})
#: steps of one episode kept for its statuses (a status carries at most 64 of them)
_MAX_EPISODE_STEPS = 1000
_STATUS_STEPS = 64


def status_of(state: DeviceState) -> str:
    """Registry state → wire ``DeviceStatus.state`` (recovering is reported as preparing)."""
    return _WIRE_STATE.get(state, "offline")


class MqttSink:
    """A :class:`~farm.collect.TrajectorySink` that spools each trajectory into a Publisher.

    Frames travel only when the collector captured screenshots; the :class:`EpisodeMeta`
    rides along as the ``meta.json`` attachment."""

    def __init__(self, publisher: Publisher,
                 on_done: Callable[[Trajectory, EpisodeMeta], None] | None = None) -> None:
        self.publisher = publisher
        self.on_done = on_done  # told of every episode, before it is spooled
        self.ids: list[str] = []
        self.errors = 0

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        if self.on_done is not None:
            self.on_done(trajectory, meta)
        msg = trajectory_to_msg(trajectory, farm_id=self.publisher.farm_id,
                                device_id=meta.serial, traj_id=meta.episode_id)
        version = meta.policy_version if isinstance(meta.policy_version, int) else None
        steps = [s if s.policy_version is not None or version is None or version < 0
                 else s.model_copy(update={"policy_version": version}) for s in msg.steps]
        msg = msg.model_copy(update={"steps": steps, "started_at": meta.started_at,
                                     "ended_at": meta.started_at + meta.wall_s,
                                     "eval": EvalInfo.model_validate(meta.eval)
                                     if meta.eval is not None else None})
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
    """What one controller runs (built by ``distrl farm up`` from :mod:`farm.config`)."""

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
    ledger: str | Path | None = None  # append every durably spooled trajectory id here
    seed: int = 0
    with_screenshots: bool = False
    flush_timeout_s: float = 10.0  # after collection: wait this long for acks
    ready_timeout_s: float = 30.0  # for the listed devices to become ready
    lifecycle: LifecycleConfig | None = None
    episode_timeout_s: float = 120.0
    status_hz: float = 2.0  # live status updates per busy device per second (at most)
    frames_hz: float = 1.0  # thumbnails per device per second (at most); 0: none
    frames_total_hz: float = 10.0  # thumbnails per second for the whole farm (CPU cap)
    frame_width: int = 240  # thumbnail width in pixels
    frame_quality: int = 70  # thumbnail JPEG quality
    commands: bool = True  # listen for operator commands on cmd/+
    sim_devices: frozenset[str] = frozenset()  # serials of sim phones (kind "sim")
    reset: EpisodeReset | None = None  # before every episode (farm.collect.reset)
    # learner keys whose signed acks may delete spooled trajectories; None: any ack
    trusted_learners: TrustedKeys | None = None
    # operator keys whose signed commands this farm runs; None: any command
    trusted_operators: TrustedKeys | None = None
    signing_key: SigningKey | None = None  # signs every trajectory this farm publishes


def _px_action(action: Any, size: tuple[int, int]) -> dict[str, Any]:
    """An action as JSON with its normalised coordinates in pixels of a ``size`` screen."""
    if isinstance(action, InvalidAction):
        return {"action_type": "invalid"}
    try:
        d = to_dict(action)
    except TypeError:
        return {"action_type": "unknown"}
    w, h = size
    for k in ("x", "x1", "x2"):
        if isinstance(d.get(k), float | int):
            d[k] = min(w - 1, max(0, round(float(d[k]) * w)))  # type: ignore[arg-type]
    for k in ("y", "y1", "y2"):
        if isinstance(d.get(k), float | int):
            d[k] = min(h - 1, max(0, round(float(d[k]) * h)))  # type: ignore[arg-type]
    return d


def _last_action_json(action: Any) -> dict[str, Any] | None:
    if action is None:
        return None
    if isinstance(action, InvalidAction):
        return {"action_type": "invalid"}
    try:
        return to_dict(action)
    except TypeError:
        return None


def _thumbnail(width: int, height: int, rgba: bytes | memoryview, target_w: int, quality: int
               ) -> tuple[bytes, int, int]:
    """Raw RGBA → (JPEG, w, h) about ``target_w`` wide; runs in a worker thread."""
    img = Frame(width, height, rgba).image()
    th = max(1, round(height * target_w / width))
    if width >= 4 * target_w:
        # nearest-sample to twice the size, then a 2×2 box: ~2 ms for a 1080×2400 frame,
        # where a box/bilinear filter over the full frame costs 10–18 ms of CPU
        img = img.resize((2 * target_w, 2 * th), Image.Resampling.NEAREST).reduce(2)
    elif width > target_w:
        img = img.resize((target_w, th), Image.Resampling.BILINEAR)
    out = io.BytesIO()
    img.convert("RGB").save(out, format="JPEG", quality=quality)
    return out.getvalue(), img.width, img.height


@dataclass
class _Live:
    """One running episode as the TUI sees it (written on the hot path: keep it cheap)."""

    task: str
    instruction: str
    policy_version: int | None
    step: int | None = None
    episode_return: float = 0.0
    last_action: Any = None
    screen: tuple[int, int] = (1, 1)
    actions: deque[Any] = field(default_factory=lambda: deque(maxlen=8))
    elements: Sequence[UIElement] = ()  # of the newest observation (a reference, not a copy)
    framed_step: int | None = -1  # the step of the last thumbnail sent
    published: bool = False  # a status has shown this episode
    episode: int | None = None  # its ordinal on the device (1, 2, …)
    steps: list[tuple[int, dict[str, Any] | None]] = field(default_factory=list)
    reported: int = 0  # steps already carried by a status
    device: Any = None  # to take the screenshot a thumbnail shows (Device)
    # set by the device's thumbnail task: the next decision takes the screenshot of the
    # screen it was made on, before its action runs, and hands over all four together
    frame_wanted: asyncio.Future[_Shot] | None = None


@dataclass(frozen=True)
class _Shot:
    """One step's truth for a thumbnail: the screen an action was chosen on, its UI
    elements, the action and the step number."""

    step: int
    action: Any
    elements: Sequence[UIElement]
    width: int
    height: int
    rgba: Any


class _LivePolicy:
    """Forwards ``act`` and notes the step for the live status (O(1) per step)."""

    def __init__(self, inner: Policy, live: _Live, touch: Any) -> None:
        self.inner, self.live, self._touch = inner, live, touch
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:  # version, weights … of the real policy
        return getattr(self.inner, name)

    async def act(self, observation: Observation) -> Any:
        out = await self.inner.act(observation)
        live = self.live
        action = out.action if isinstance(out, Decision) else out
        if isinstance(out, Decision) and out.policy_version is not None:
            live.policy_version = int(out.policy_version)
        live.step, live.last_action, live.screen = observation.step, action, \
            observation.screen_size
        live.elements = observation.elements
        live.actions.append(action)
        if len(live.steps) < _MAX_EPISODE_STEPS:
            live.steps.append((observation.step, _last_action_json(action)))
        wanted = live.frame_wanted
        if wanted is not None and not wanted.done() and live.device is not None:
            try:  # ~5-15 ms, at most frames_hz times a second, before the action runs
                w, h, rgba = await live.device.screenshot_rgba()
            except Exception as exc:  # the thumbnail task reports it; the step goes on
                if not wanted.done():
                    wanted.set_exception(exc)
            else:
                if not wanted.done():
                    wanted.set_result(_Shot(observation.step, action, observation.elements,
                                            w, h, rgba))
        self._touch()
        return out


class _LiveProvider:
    """Wraps the farm's :class:`PolicyProvider` so each episode reports its progress."""

    def __init__(self, inner: PolicyProvider, ctl: FarmController) -> None:
        self.inner, self.ctl = inner, ctl

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        choice = await self.inner.policy_for(task, device)
        serial = device.serial
        try:
            instruction = task.instruction
        except DistRLError:
            instruction = task.template
        live = _Live(task.name, instruction,
                     choice.version if isinstance(choice.version, int) else None)
        self.ctl._episode_no[serial] += 1
        live.episode, live.device = self.ctl._episode_no[serial], device
        self.ctl._live[serial] = live
        started = self.ctl._live_started.pop(serial, None)
        if started is not None:
            started.set()

        def touch() -> None:
            self.ctl._dirty.add(serial)

        step_reward = task.step_reward

        async def counted(dev: Device, traj: Trajectory) -> float | None:
            r = await step_reward(dev, traj)
            if r is not None:
                live.episode_return += float(r)
            return r

        is_successful = task.is_successful

        async def scored(dev: Device, traj: Trajectory) -> float:
            score = await is_successful(dev, traj)
            if isinstance(score, int | float):  # the episode's final reward: the return
                live.episode_return += float(score)  # so the last status shows it all
            return score

        task.step_reward = counted  # type: ignore[method-assign,assignment]  # this instance
        task.is_successful = scored  # type: ignore[method-assign,assignment]
        touch()
        return PolicyChoice(_LivePolicy(choice.policy, live, touch), choice.version)


class FarmController:
    def __init__(self, config: FarmConfig, *, policies: PolicyProvider | None = None,
                 evaluation: Any | None = None) -> None:
        if not config.tasks:
            raise ValueError("no tasks to collect")
        if config.policy not in ("random", "oracle") and policies is None:
            raise ValueError(f"unknown policy {config.policy!r} (random | oracle)")
        self.config = config
        # a farm.evaluate.PeriodicEval: held-out rounds on the same devices while collecting
        self.evaluation = evaluation
        self.policies: PolicyProvider = policies or (
            OracleProvider() if config.policy == "oracle" else RandomProvider(seed=config.seed))
        self.publisher = Publisher(config.broker_url, config.farm_id, config.spool_dir,
                                   tasks=[t.name for t in config.tasks],
                                   trusted_acks=config.trusted_learners,
                                   signer=config.signing_key, ledger=config.ledger)
        self.sink = MqttSink(self.publisher, on_done=self._episode_done)
        self.sampler = DirectedSampler(config.tasks, seed=config.seed)
        self.registry: DeviceRegistry | None = None
        self.collector: Collector | None = None
        self.commands: CommandListener | None = None
        self.executor: CommandExecutor | None = None
        self.episodes_by_device: Counter[str] = Counter()
        self.flushed: bool | None = None
        self.frames_sent: Counter[str] = Counter()
        self.frame_errors = 0
        self.status_updates = 0  # live (coalesced) status publishes
        self._live: dict[str, _Live] = {}
        self._episode_no: Counter[str] = Counter()  # episodes started, per device
        self._live_started: dict[str, asyncio.Event] = {}  # a thumbnail waits for one
        self._ended: dict[str, _Live] = {}  # the newest finished episode, until it is sunk
        self._last_episode: dict[str, dict[str, Any]] = {}  # its outcome, for statuses
        self._dirty: set[str] = set()
        self._pending: dict[str, str] = {}  # serial → detail of a coalesced busy/ready change
        self._framers: dict[str, asyncio.Task[None]] = {}
        self._frame_next = 0.0  # loop time of the farm's next thumbnail slot
        self._status_tasks: set[asyncio.Task[None]] = set()
        self._stop = asyncio.Event()

    # -- status --------------------------------------------------------------------------
    @property
    def stats(self) -> CollectorStats:
        return self.collector.stats if self.collector is not None else CollectorStats()

    @property
    def rejects(self) -> Counter[str]:
        """Refused messages by reason: on the command topics (see
        :class:`farm.commands.CommandListener`) and, prefixed ``ack:``, on the ack topic."""
        out = Counter(self.commands.rejects) if self.commands is not None else Counter()
        out.update({f"ack:{k}": v for k, v in self.publisher.rejects.items()})
        return out

    def spool_depth(self) -> int:
        return len(self.publisher.spool)

    def _status(self, serial: str, state: DeviceState, detail: str | None,
                live: _Live | None = None) -> DeviceStatus:
        """``live``: the episode to show (default: the device's running one, if busy)."""
        md: ManagedDevice | None = self.registry.devices.get(serial) if self.registry else None
        h = md.health if md is not None else None
        if live is None and state is DeviceState.BUSY:
            live = self._live.get(serial)
        steps: list[dict[str, Any]] = []
        if live is not None:
            live.published = True
            # every step since the previous status (statuses are coalesced to status_hz)
            steps = [{"step": k, "action": a} for k, a in live.steps[live.reported:]
                     ][-_STATUS_STEPS:]
            live.reported = len(live.steps)
        kind = "sim" if serial in self.config.sim_devices else (
            md.transport.value if md is not None else None)
        if md is not None and md.paused and state is DeviceState.BUSY:
            detail = f"{detail}; pausing after this episode" if detail else "pausing"
        return DeviceStatus(
            device_id=serial, state=status_of(state),  # type: ignore[arg-type]
            detail=(detail or "")[:200] or None, episodes=self.stats.by_device[serial],
            battery=h.battery_level if h is not None and h.battery_level is not None
            and 0 <= h.battery_level <= 100 else None,
            temperature_c=h.temperature_c if h is not None else None, kind=kind,
            adb_server=f"{self.config.adb_host}:{self.config.adb_port}",
            task=live.task[:256] if live else None,
            instruction=live.instruction[:1024] if live else None,
            step=live.step if live else None,
            episode_return=live.episode_return if live else None,
            last_action=_last_action_json(live.last_action) if live else None,
            policy_version=live.policy_version if live else None,
            episode=live.episode if live else None, steps=steps,
            last_episode=self._last_episode.get(serial))

    def _episode_done(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        """(the sink, as the episode is handed over) Its outcome goes into the device's
        statuses from now on, with the next (coalesced) status."""
        serial = meta.serial
        live = self._ended.pop(serial, None)
        if live is None or live.episode is None:
            return
        self._last_episode[serial] = {
            "episode": live.episode, "outcome": trajectory.status.value,
            "return": round(live.episode_return, 4), "steps": len(trajectory.steps)}
        md = self.registry.devices.get(serial) if self.registry is not None else None
        if md is None:
            return
        # the next coalesced status carries it: the live one of its next episode, or,
        # idle, the one of its release (that went out before the outcome was known)
        if md.state is not DeviceState.BUSY and md.state in _CHURN:
            self._pending.setdefault(serial, "episode over")
        self._dirty.add(serial)

    async def _publish_status(self, serial: str, state: DeviceState, detail: str) -> None:
        try:
            await self.publisher.set_status(self._status(serial, state, detail))
        except Exception:
            log.exception("status publish failed for %s", serial)

    async def _send_status(self, status: DeviceStatus) -> None:
        try:
            await self.publisher.set_status(status)
        except Exception:
            log.exception("status publish failed for %s", status.device_id)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._status_tasks.add(t)
        t.add_done_callback(self._status_tasks.discard)

    def _on_change(self, change: StateChanged) -> None:
        serial = change.serial
        detail = f"{change.event}: {change.reason}" if change.reason else change.event
        if change.state is not DeviceState.BUSY:
            live = self._live.pop(serial, None)  # the episode is over
            self._dirty.discard(serial)
            if live is not None:
                self._ended[serial] = live
                if live.frame_wanted is not None:
                    live.frame_wanted.cancel()  # no decision will take that screenshot
                if not live.published or live.reported < len(live.steps):
                    # its last steps (or the whole of a short episode) were never shown
                    self._spawn(self._send_status(
                        self._status(serial, DeviceState.BUSY, "episode over", live)))
        elif self.config.frames_hz > 0 and serial not in self._framers:
            self._framers[serial] = asyncio.get_running_loop().create_task(
                self._frames(serial), name=f"frames:{serial}")
        if (self.config.status_hz > 0 and change.previous in _CHURN
                and change.state in _CHURN):
            self._pending[serial] = detail  # the status loop publishes it (coalesced)
            self._dirty.add(serial)
            return
        self._pending.pop(serial, None)  # this state supersedes a coalesced one
        self._spawn(self._publish_status(serial, change.state, detail))

    async def _publish_snapshot(self) -> None:
        if self.registry is None:
            return
        self._dirty.clear()
        self._pending.clear()
        if self._status_tasks:  # statuses already under way go out first, not after
            await asyncio.gather(*list(self._status_tasks), return_exceptions=True)
        for v in self.registry.snapshot():
            await self._publish_status(v.serial, v.state, v.event)

    async def _status_loop(self) -> None:
        """Publish the dirty devices (a step taken, or a coalesced busy ↔ ready change) as
        they are now, at most ``status_hz`` times a second each."""
        period = 1.0 / self.config.status_hz
        while True:
            await asyncio.sleep(period)
            if not self._dirty or self.registry is None:
                continue
            dirty, self._dirty = self._dirty, set()
            for serial in dirty:
                md = self.registry.devices.get(serial)
                pending = self._pending.pop(serial, None)
                if md is None:
                    continue
                if md.state is DeviceState.BUSY and serial in self._live:
                    detail = "episode running"
                elif pending is None or md.state not in _CHURN:
                    continue  # its state change published the last word already
                else:
                    detail = pending
                self.status_updates += 1
                await self._publish_status(serial, md.state, detail)

    async def _frames(self, serial: str) -> None:
        """One device's thumbnails: at most ``frames_hz``, only when worth looking at.
        Each is one step's truth: the screen the step's action was chosen on (taken by
        that decision, before the action ran), its UI elements, the action and the step
        number, so a viewer never mixes a fresh screen with an older step's elements."""
        cfg = self.config
        period = 1.0 / cfg.frames_hz
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(period)
            live, cmds, reg = self._live.get(serial), self.commands, self.registry
            if (live is None or cmds is None or reg is None or not cmds.connected.is_set()
                    or live.step == live.framed_step):
                continue
            md = reg.devices.get(serial)
            if md is None or md.state is not DeviceState.BUSY:
                continue
            await self._frame_slot()
            # the slot is ours even if that episode ended meanwhile: the next one takes it
            shot = await self._next_shot(serial, loop.time() + max(2.0, 4 * period))
            if shot is None:
                continue
            try:
                jpeg, tw, th = await asyncio.to_thread(_thumbnail, shot.width, shot.height,
                                                       shot.rgba, cfg.frame_width,
                                                       cfg.frame_quality)
                size = (shot.width, shot.height)
                frame = DeviceFrame(device_id=serial, width=tw, height=th,
                                    screen_width=shot.width, screen_height=shot.height,
                                    step=shot.step, actions=[_px_action(shot.action, size)],
                                    elements=compact_elements(shot.elements))
                payload = encode_frame(frame, jpeg, farm_id=cfg.farm_id)
            except (DistRLError, OSError, ValueError) as exc:
                self.frame_errors += 1
                log.debug("thumbnail of %s failed: %s", serial, exc)
                continue
            if (live := self._live.get(serial)) is not None:
                live.framed_step = shot.step
            if await cmds.publish(topics.frame(cfg.farm_id, serial), payload, qos=0):
                self.frames_sent[serial] += 1

    async def _next_shot(self, serial: str, deadline: float) -> _Shot | None:
        """The next decision's screen on ``serial`` (see :class:`_Shot`), waiting through
        episode ends and the gaps between episodes until ``deadline`` (loop time)."""
        loop = asyncio.get_running_loop()
        while (left := deadline - loop.time()) > 0:
            live = self._live.get(serial)
            if live is None:  # between episodes: wait for the next to start
                started = self._live_started.setdefault(serial, asyncio.Event())
                try:
                    await asyncio.wait_for(started.wait(), left)
                except TimeoutError:
                    return None
                continue
            wanted: asyncio.Future[_Shot] = loop.create_future()
            live.frame_wanted = wanted
            try:  # the next decision fills it; the episode's end cancels it
                return await asyncio.wait_for(wanted, left)
            except TimeoutError:
                return None
            except asyncio.CancelledError:
                me = asyncio.current_task()
                if me is not None and me.cancelling():
                    raise  # this task is being stopped, not just the wait
                continue  # the episode ended before its next decision: try the next one
            except (DistRLError, OSError, ValueError) as exc:
                self.frame_errors += 1
                log.debug("screenshot of %s failed: %s", serial, exc)
                return None
            finally:
                if live.frame_wanted is wanted:
                    live.frame_wanted = None
        return None

    async def _frame_slot(self) -> None:
        """Wait for the farm-wide thumbnail budget (``frames_total_hz``): slots are handed
        out in order, one every 1/frames_total_hz seconds."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        at = max(now, self._frame_next)
        self._frame_next = at + 1.0 / max(1e-3, self.config.frames_total_hz)
        if at > now:
            await asyncio.sleep(at - now)

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
        up = (DeviceState.READY, DeviceState.PAUSED)
        while time.monotonic() < deadline and not self._stop.is_set():
            if not reg.server_up and time.monotonic() - t0 > min(5.0, cfg.ready_timeout_s):
                raise RuntimeError(f"no adb server at {cfg.adb_host}:{cfg.adb_port} "
                                   "(start one with `adb start-server`, or use --sim N)")
            states = {v.serial: v.state for v in reg.snapshot()}
            ready = [s for s, st in states.items() if st in up]
            if cfg.devices and all(states.get(s) in up for s in cfg.devices):
                return
            if not cfg.devices and ready and all(
                    st in (*up, DeviceState.QUARANTINED, DeviceState.OFFLINE)
                    for st in states.values()):
                return
            await asyncio.sleep(0.1)
        if not any(v.state in up for v in reg.snapshot()):
            raise RuntimeError(
                f"no device became ready within {cfg.ready_timeout_s:.0f} s "
                f"(adb server {cfg.adb_host}:{cfg.adb_port}: {reg.summary()})")

    async def _start_commands(self, reg: DeviceRegistry) -> None:
        cfg = self.config
        self.executor = CommandExecutor(
            reg, cfg.tasks, self.sampler, seed=cfg.seed,
            reconnect_timeout_s=(cfg.lifecycle or LifecycleConfig()).reconnect_timeout_s + 5)
        executor = self.executor

        async def execute(cmd: Command) -> CommandResult:
            result = await executor.execute(cmd)
            if reg.devices.get(cmd.device_id) is not None and cmd.device_id in self._live:
                self._dirty.add(cmd.device_id)  # e.g. "pausing" shows on the next update
            return result

        self.commands = CommandListener(cfg.broker_url, cfg.farm_id, execute,
                                        known_device=lambda s: s in reg.devices,
                                        trusted=cfg.trusted_operators,
                                        signer=cfg.signing_key)
        await self.commands.start()

    async def run(self) -> CollectorStats:
        """Collect until the duration is over or :meth:`stop`; then flush (bounded) and stop
        everything. Returns the collector's stats."""
        cfg = self.config
        tcp = [d for d in cfg.devices if ":" in d]
        # listed devices: exactly those (others on the adb server are left alone)
        reg = DeviceRegistry(host=cfg.adb_host, port=cfg.adb_port, targets=tcp,
                             config=cfg.lifecycle, discover=True,
                             only=cfg.devices or None)
        self.registry = reg
        reg.on_change(self.sampler.on_change)  # first: run_task needs the lease order
        reg.on_change(self._on_change)
        await self.publisher.start()
        background: list[asyncio.Task[None]] = []
        try:
            async with reg:
                if cfg.commands:
                    await self._start_commands(reg)
                if cfg.status_hz > 0:
                    background.append(asyncio.create_task(self._status_loop(),
                                                          name="live-status"))
                await self._wait_ready(reg)
                await self._publish_snapshot()
                if self._stop.is_set():
                    return self.stats
                self.collector = Collector(
                    reg, self.sampler, _LiveProvider(self.policies, self), self.sink,
                    CollectorConfig(mode=cfg.mode, duration_s=cfg.duration_s,
                                    with_screenshots=cfg.with_screenshots,
                                    episode_timeout_s=cfg.episode_timeout_s),
                    name=cfg.farm_id, reset=cfg.reset)
                evaluation, evaluating = self.evaluation, None
                if evaluation is not None:
                    evaluating = asyncio.create_task(evaluation.run(
                        reg, self.sink, lambda p: _LiveProvider(p, self), reset=cfg.reset),
                        name="eval")
                    background.append(evaluating)
                stats = await self.collector.run()
                if evaluation is not None and evaluating is not None:
                    evaluation.stop()  # its last episodes are sunk (and flushed) too
                    await evaluating
                await self._publish_snapshot()
            self.flushed = await self.publisher.wait_acked(cfg.flush_timeout_s)
            return stats
        finally:
            tasks = [*background, *self._framers.values(), *self._status_tasks]
            self._framers.clear()
            for t in tasks:
                t.cancel()
            with contextlib.suppress(Exception):
                await asyncio.gather(*tasks, return_exceptions=True)
            if self.commands is not None:
                await self.commands.stop()
            await self.publisher.stop()

    def summary(self) -> dict[str, Any]:
        out = self.stats.as_dict()
        ps = self.publisher.stats
        out.update(farm_id=self.config.farm_id, broker=str(parse_broker_url(
                       self.config.broker_url)),  # never the password
                   published=len(self.sink.ids), acked=ps.acked, spool_depth=self.spool_depth(),
                   flushed=self.flushed, command_rejects=dict(self.rejects),
                   # refused policy pointers/blobs (stale, forged, corrupt): a learned policy
                   policy_refused=dict(getattr(self.policies, "refused", None) or {}),
                   commands=dict(self.commands.results) if self.commands else {},
                   frames_sent=sum(self.frames_sent.values()))
        if self.evaluation is not None:
            out["eval"] = self.evaluation.summary()
        return out

"""Episode workers over the device registry, in two modes.

``async`` (DistRL): one worker per device. Each worker loops on its own — lease any
ready device, sample a task, ask the :class:`PolicyProvider` for a policy, run the
episode, hand the trajectory to the sink, release — with no barrier anywhere. A
device that faults costs only its own episode: the lease reports the failure (the
registry recovers or quarantines the device) and the worker leases another one.

``sync`` (the DigiRL baseline): rounds. Every ready device runs one episode, then a
barrier waits for *all* of them before the next round starts, so each round lasts as
long as its slowest device (or the episode timeout, for a hung one).

In both modes an episode ends early, as ``aborted``, when the device revokes the
lease (it went offline or missed a heartbeat), when it runs past
``episode_timeout_s`` (a hung phone), or when the collector is stopped. Every
episode reaches the sink exactly once with an :class:`EpisodeMeta`.

    async with DeviceRegistry(port=…, targets=serials) as reg:
        c = Collector(reg, TaskSampler(tasks), RandomProvider(), MemorySink(),
                      CollectorConfig(mode="async", duration_s=60))
        stats = await c.run()
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from distrl_sdk.errors import AdbTimeout, DeviceBusy, DeviceError
from distrl_sdk.policy import Observation, Policy
from distrl_sdk.runner import run_episode
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.collect.policy import PolicyChoice, PolicyProvider
from farm.collect.reset import EpisodeReset
from farm.collect.sampler import EpisodeSampler
from farm.collect.sink import EpisodeMeta, TrajectorySink
from farm.device.lifecycle import DeviceState, Lease
from farm.device.registry import DeviceRegistry

__all__ = ["Collector", "CollectorConfig", "CollectorStats", "Mode"]

log = logging.getLogger(__name__)
Mode = Literal["async", "sync"]
COUNTED = (EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE)  # real agent outcomes


@dataclass(frozen=True)
class CollectorConfig:
    mode: Mode = "async"
    duration_s: float | None = None  # stop after this long (in-flight episodes: aborted)
    max_episodes: int | None = None  # or after this many episodes started
    workers: int | None = None  # async: default one per device known at start
    max_steps: int | None = None  # per episode; default the task's own budget
    episode_timeout_s: float = 120.0  # a hung device never stalls a worker longer
    acquire_poll_s: float = 0.5  # how often an idle worker re-checks the stop flag
    cancel_grace_s: float = 2.0  # teardown after a cancel gets this long, then re-cancel
    settle_s: float = 0.0
    with_screenshots: bool = False
    # end an episode as soon as the task's evaluator says it succeeded: actions taken
    # after the goal was met are never rewarded (nor can they undo it)
    stop_on_success: bool = True


@dataclass
class CollectorStats:
    started_at: float = 0.0  # monotonic
    ended_at: float | None = None
    episodes: int = 0  # that reached the sink
    steps: int = 0  # env steps taken (policy decisions), in sunk episodes
    by_status: Counter[str] = field(default_factory=Counter)
    by_device: Counter[str] = field(default_factory=Counter)
    abort_reasons: Counter[str] = field(default_factory=Counter)
    rounds: int = 0  # sync mode: rounds completed (all episodes over, none stopped)
    sink_errors: int = 0
    resets: int = 0  # devices reset before an episode (Collector(reset=…))

    @property
    def elapsed_s(self) -> float:
        end = self.ended_at if self.ended_at is not None else time.monotonic()
        return max(1e-9, end - self.started_at)

    @property
    def completed(self) -> int:
        """Episodes that ended as an agent outcome (success or failure)."""
        return sum(self.by_status[s] for s in COUNTED)

    @property
    def per_minute(self) -> float:
        """Completed trajectories per minute of wall time."""
        return self.completed * 60.0 / self.elapsed_s

    def as_dict(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "completed": self.completed, "steps": self.steps,
                "elapsed_s": round(self.elapsed_s, 3),
                "trajectories_per_min": round(self.per_minute, 2),
                "by_status": dict(self.by_status), "by_device": dict(self.by_device),
                "abort_reasons": dict(self.abort_reasons), "rounds": self.rounds,
                "sink_errors": self.sink_errors, "resets": self.resets}


class _CountingPolicy:
    """Counts decisions (steps survive a cancelled episode only as this count)."""

    def __init__(self, inner: Policy) -> None:
        self.inner, self.name, self.calls = inner, inner.name, 0

    async def act(self, observation: Observation) -> Any:
        self.calls += 1
        return await self.inner.act(observation)


class _NoPolicy:
    """Stands in when the provider failed: the episode ends as errored."""

    name = "none"

    def __init__(self, why: str) -> None:
        self.why = why

    async def act(self, observation: Observation) -> Any:
        raise RuntimeError(f"no policy: {self.why}")


def _instruction(task: Task) -> str:
    try:
        return task.instruction
    except Exception:  # a template that does not fit its params: errored already
        return task.template


def _instrument(task: Task, timings: dict[str, float]) -> None:
    """Time the task's hooks on this instance only (phase → summed milliseconds)."""

    def wrap(name: str, phase: str) -> None:
        fn: Callable[..., Awaitable[Any]] = getattr(task, name)

        @functools.wraps(fn)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                timings[phase] = timings.get(phase, 0.0) + (time.perf_counter() - t0) * 1000

        setattr(task, name, timed)

    wrap("setup", "setup_ms")
    wrap("step_reward", "evaluate_ms")
    wrap("episode_ended", "evaluate_ms")
    wrap("is_successful", "evaluate_ms")
    wrap("teardown", "teardown_ms")


class Collector:
    def __init__(self, registry: DeviceRegistry, sampler: EpisodeSampler,
                 policies: PolicyProvider, sink: TrajectorySink,
                 config: CollectorConfig | None = None, *, name: str = "farm",
                 reset: EpisodeReset | None = None) -> None:
        self.registry, self.sampler, self.policies, self.sink = registry, sampler, policies, sink
        self.reset = reset  # before every episode, on the leased device (farm.collect.reset)
        self.config = config or CollectorConfig()
        self.name = name
        self.stats = CollectorStats()
        self._stop = asyncio.Event()
        self._started = 0  # episodes begun (the max_episodes budget)
        self._inflight: set[asyncio.Task[Any]] = set()
        self._running = False

    # -- control -----------------------------------------------------------------------
    def stop(self) -> None:
        """Stop now: in-flight episodes are cancelled (→ aborted, still sunk)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _take_budget(self) -> bool:
        if self._stop.is_set():
            return False
        cap = self.config.max_episodes
        if cap is not None and self._started >= cap:
            return False
        self._started += 1
        return True

    async def run(self) -> CollectorStats:
        """Collect until the duration/episode budget is spent or :meth:`stop`."""
        if self._running:
            raise RuntimeError("collector already running")
        self._running = True
        self._stop.clear()
        self._started = 0
        self.stats = CollectorStats(started_at=time.monotonic())
        timer: asyncio.TimerHandle | None = None
        if self.config.duration_s is not None:
            timer = asyncio.get_running_loop().call_later(self.config.duration_s, self.stop)
        try:
            if self.config.mode == "async":
                await self._run_async()
            elif self.config.mode == "sync":
                await self._run_sync()
            else:
                raise ValueError(f"unknown mode {self.config.mode!r}")
        finally:
            if timer is not None:
                timer.cancel()
            self.stats.ended_at = time.monotonic()
            self._running = False
        return self.stats

    # -- async mode ----------------------------------------------------------------------
    async def _run_async(self) -> None:
        n = self.config.workers or max(1, len(self.registry.devices))
        workers = [asyncio.create_task(self._worker(f"{self.name}/w{i}"), name=f"worker-{i}")
                   for i in range(n)]
        try:
            await asyncio.gather(*workers)
        finally:
            self._stop.set()
            for w in workers:  # only if run() itself was cancelled
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _acquire(self, owner: str) -> Lease | None:
        """A lease, or None once stopping (an idle worker never blocks stop())."""
        while not self._stop.is_set():
            try:
                return await self.registry.acquire(self.config.acquire_poll_s, owner=owner)
            except DeviceBusy:
                continue
        return None

    async def _worker(self, wid: str) -> None:
        while self._take_budget():
            lease = await self._acquire(wid)
            if lease is None:
                self._started -= 1
                return
            if not await self._episode(lease, wid, None):
                return  # the sampler has nothing left to play

    # -- sync mode -----------------------------------------------------------------------
    async def _run_sync(self) -> None:
        rnd = 0
        while not self._stop.is_set():
            ready = [md for _, md in sorted(self.registry.devices.items())
                     if md.state is DeviceState.READY]
            if not ready:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.config.acquire_poll_s / 5)
                continue
            leases: list[Lease] = []
            for md in ready:
                if not self._take_budget():
                    break
                try:
                    leases.append(md.lease(f"{self.name}/w{len(leases)}").acquire())
                except DeviceError:
                    self._started -= 1
            if not leases:
                if self._stop.is_set() or self._budget_spent():
                    return
                continue
            # the barrier: the next round starts when every episode of this one is over
            ran = await asyncio.gather(*(self._episode(lease, lease.owner, rnd)
                                         for lease in leases))
            rnd += 1
            if not self._stop.is_set():  # a round cut short by stop() is not counted
                self.stats.rounds = rnd
            if self._budget_spent() or not all(ran):
                return

    def _budget_spent(self) -> bool:
        cap = self.config.max_episodes
        return cap is not None and self._started >= cap

    # -- one episode ----------------------------------------------------------------------
    async def _episode(self, lease: Lease, wid: str, rnd: int | None) -> bool:
        """Run one episode on a held lease; always releases it and sinks one trajectory.
        False (lease released, nothing sunk) when the sampler is exhausted."""
        cfg = self.config
        t_start, started_at = time.perf_counter(), time.time()
        serial = lease.serial
        timings: dict[str, float] = {}
        release_exc: BaseException | None = None  # a device fault, reported on release
        reason: str | None = None
        run: asyncio.Task[Trajectory] | None = None
        try:
            sampled = self.sampler.sample()
            if sampled is None:  # an exhausted sampler (evaluation): this worker is done
                self._started -= 1
                lease.release()
                return False
            task = sampled
            _instrument(task, timings)
            try:
                choice = await self.policies.policy_for(task, lease.device)
            except Exception as exc:  # the provider's bug: recorded, the run goes on
                log.exception("policy provider failed")
                choice = PolicyChoice(_NoPolicy(f"{type(exc).__name__}: {exc}"), None)
            policy = _CountingPolicy(choice.policy)
            run = asyncio.create_task(self._play(task, lease, policy), name=f"episode:{serial}")
            self._inflight.add(run)
            lost = asyncio.create_task(lease.lost.wait())
            stop = asyncio.create_task(self._stop.wait())
            try:
                await asyncio.wait({run, lost, stop}, timeout=cfg.episode_timeout_s,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                lost.cancel()
                stop.cancel()
            if not run.done():
                if lease.revoked is not None:
                    reason = f"lease lost: {lease.revoked}"
                elif self._stop.is_set():
                    reason = "stopped"
                    release_exc = asyncio.CancelledError()  # not the device's fault
                else:
                    reason = f"timeout: no end after {cfg.episode_timeout_s:g} s"
                    release_exc = AdbTimeout(reason, serial=serial)
            traj, crash = await self._cancel(run)
            self._inflight.discard(run)
            if traj is None:
                traj = Trajectory(task=task.name, instruction=_instruction(task),
                                  params=dict(task.params))
                if crash is not None and reason is None:  # a bug outside run_episode's net
                    traj.status, traj.error = EpisodeStatus.ERRORED, crash
                else:
                    traj.status, traj.error = EpisodeStatus.ABORTED, reason
            elif traj.status is not EpisodeStatus.ABORTED:  # it ended just as we cancelled
                reason, release_exc = None, None
            else:
                reason = reason or f"device error: {traj.error}"
                if release_exc is None:
                    release_exc = DeviceError(traj.error or "device error", serial=serial)
            steps = [s.info for s in traj.steps]
            for key, phase in (("observe_ms", "observe_ms"), ("policy_ms", "policy_ms"),
                               ("act_ms", "act_ms")):
                timings[phase] = sum(float(i.get(key, 0.0)) for i in steps)
            meta = EpisodeMeta(
                episode_id=uuid.uuid4().hex, serial=serial, worker=wid, mode=cfg.mode,
                policy=policy.name, policy_version=choice.version, started_at=started_at,
                wall_s=time.perf_counter() - t_start, round=rnd, abort_reason=reason,
                decisions=policy.calls, timings={k: round(v, 3) for k, v in timings.items()})
        except BaseException as exc:  # run() itself cancelled, or a bug here
            if run is not None and not run.done():
                run.cancel()
            lease.release(exc if isinstance(exc, DeviceError) else asyncio.CancelledError())
            raise
        if isinstance(release_exc, DeviceError):
            lease.report_failure(release_exc)  # the registry recovers or quarantines it
            lease.release()
        else:  # clean, or cancelled by stop(): the device is fine
            lease.release(release_exc)
        await self._sink(traj, meta)
        return True

    async def _play(self, task: Task, lease: Lease, policy: Policy) -> Trajectory:
        """Reset the device (if a reset is set), then run the episode. A failed reset ends
        the episode aborted, as a device error, before the task's setup touches the phone."""
        cfg = self.config
        if self.reset is not None:
            try:
                await self.reset(lease.serial, lease.device)
                self.stats.resets += 1
            except DeviceError as exc:
                return Trajectory(task=task.name, instruction=_instruction(task),
                                  params=dict(task.params), status=EpisodeStatus.ABORTED,
                                  error=f"reset ({self.reset.label}) failed: {exc}")
        return await run_episode(
            task, lease.device, policy, max_steps=cfg.max_steps, settle_s=cfg.settle_s,
            with_screenshots=cfg.with_screenshots, stop_on_success=cfg.stop_on_success)

    async def _cancel(self, run: asyncio.Task[Trajectory]) -> tuple[Trajectory | None, str | None]:
        """Cancel an episode (unless over); a teardown stuck on a hung device is cancelled
        again. Returns the trajectory, or None and what crashed."""
        while not run.done():
            run.cancel()
            await asyncio.wait({run}, timeout=self.config.cancel_grace_s)
        if run.cancelled():
            return None, None
        exc = run.exception()
        if exc is not None:
            log.warning("episode task failed outside run_episode: %r", exc)
            return None, f"{type(exc).__name__}: {exc}"
        return run.result(), None

    async def _sink(self, traj: Trajectory, meta: EpisodeMeta) -> None:
        st = self.stats
        st.episodes += 1
        st.steps += max(len(traj.steps), meta.decisions)  # env steps, cancelled ones too
        st.by_status[traj.status.value] += 1
        st.by_device[meta.serial] += 1
        if meta.abort_reason:
            st.abort_reasons[meta.abort_reason.split(":")[0]] += 1
        try:
            await self.sink.put(traj, meta)
        except Exception:
            st.sink_errors += 1
            log.exception("sink lost episode %s", meta.episode_id)

"""In-process learning: the collector feeds a trainer directly, no broker in between.

    Collector ──trajectory──► LearningSink ─► pending episodes
        ▲                                         │ (drained by the learner's loop)
        │ PolicyAgent(snapshot of vN)             ▼
    LearningProvider ◄──publish(weights, vN)── LocalLearner: trainer.add_episode / update

Two schedules, matching the two collection modes compared in the paper:

``concurrent`` (A-RIDE with async collection): a loop trains whenever the trainer is
ready, in a worker thread (``asyncio.to_thread``), while the phones keep playing the
newest published weights; new weights are published every ``publish_every`` updates.

``rounds`` (DigiRL-style with sync collection): nothing trains in the background. The
sync collector's barrier means the first ``policy_for`` of a round arrives after every
episode of the previous round reached the sink; that call runs ``updates_per_round``
updates and publishes, while the round waits — collect, train, collect.

The trainer is only ever touched from the event loop's thread or from the one
``to_thread`` update in flight, never both at once: episodes wait in a list until the
loop hands them to ``trainer.add_episode`` between updates, so no trainer needs locks.
Phones act on a *snapshot* policy (rebuilt from ``config_dict`` + ``weights()``), never
on the object being trained.

Held-out evaluation (``eval_every_s`` / ``eval_every_updates``, with ``eval_registry`` and
``eval_tasks``): rounds of :class:`farm.evaluate.EvalRound` on the same phones, alongside
collection, playing the snapshot published when the round started, greedy, on the test
split (the same instances every round). Their episodes go to the round, never to
``.sink``: the trainer never sees them. Each round appends an :class:`EvalPoint` to
``eval_history`` (the held-out learning curve); :meth:`LocalLearner.evaluate_now` runs
one on demand (e.g. the final score, after collection stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from distrl_sdk.device import Device
from distrl_sdk.learn.api import EpisodeRecord, PolicyAgent, TrainablePolicy, Trainer
from distrl_sdk.policies import build_policy
from distrl_sdk.task import Split, Task
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.collect.policy import PolicyChoice
from farm.collect.sink import EpisodeMeta, TrajectorySink

if TYPE_CHECKING:
    import torch

    from farm.device.registry import DeviceRegistry
    from farm.evaluate import EvalReport, EvalRound

__all__ = ["EvalPoint", "LearningPoint", "LearningProvider", "LearningSink", "LocalLearner",
           "LocalLearnerConfig", "Schedule"]

log = logging.getLogger(__name__)
Schedule = Literal["concurrent", "rounds"]


@dataclass(frozen=True)
class LocalLearnerConfig:
    """How the in-process learner trains and publishes."""

    schedule: Schedule = "concurrent"  # see the module docstring
    publish_every: int = 1  # concurrent: updates between two published versions
    updates_per_round: int = 4  # rounds: updates after each collection round
    window: int = 64  # finished episodes in the sliding success-rate window
    torch_threads: int | None = 1  # torch intra-op threads (None: leave as is); 2 shared cores
    idle_s: float = 0.05  # concurrent: wait for new episodes this long when not ready
    # concurrent: at most this many updates per learnable episode received (the replay
    # ratio; None = train flat out). On 2 shared cores an unbounded trainer takes the CPU
    # the phones need and replays a few episodes to death.
    max_updates_per_episode: float | None = None
    # concurrent: the other side of that band. Phones wait at an episode's start while the
    # trainer has made fewer than this many updates per learnable episode (beyond
    # ``collect_slack`` episodes of headroom). Equal to ``max_updates_per_episode`` it pins
    # the replay ratio, as a synchronous round does, while still collecting during
    # updates. None: phones never wait (a farm of real phones, where they are the
    # bottleneck); on shared cores the phones otherwise take the trainer's CPU.
    min_updates_per_episode: float | None = None
    collect_slack: int = 32
    greedy: bool = False  # phones take the argmax instead of sampling (evaluation runs)
    max_batch: int = 32  # PolicyAgent: decisions batched into one decide()
    farm_id: str = "local"  # recorded on the EpisodeRecords
    # held-out evaluation rounds (see the module docstring); both None: none
    eval_every_s: float | None = None  # start to start
    eval_every_updates: int | None = None  # or after this many updates since the last one
    eval_at_start: bool = True  # a round of the initial policy when the learner starts
    eval_episodes_per_task: int = 1
    eval_split: Split = "test"
    eval_seed: int = 0  # of the instances (the same every round)
    eval_episode_timeout_s: float = 120.0


@dataclass(frozen=True)
class LearningPoint:
    """One sample of the learning curve."""

    wall_s: float  # since the learner started
    success_rate: float  # over the last ``window`` finished episodes
    episodes: int  # finished (success/failure) episodes so far
    version: int  # the policy version published at that moment
    updates: int  # trainer updates so far


@dataclass(frozen=True)
class EvalPoint:
    """One held-out evaluation round: a frozen version's success on the test split."""

    wall_s: float  # since the learner started, when the round ended
    started_s: float  # … when it started (the version was frozen then)
    version: int
    updates: int  # trainer updates when the round started
    success_rate: float  # the suite mean over tasks
    ci_low: float  # 95 % (farm.evaluate.stats)
    ci_high: float
    episodes: int  # scored episodes
    complete: bool  # every planned instance scored (not cut short)
    by_task: dict[str, float] = field(default_factory=dict)


@dataclass
class LearnerStats:
    episodes: int = 0  # that reached the sink (any status)
    finished: int = 0  # success or failure
    successes: int = 0
    unlearnable: int = 0  # finished, but without the policy's obs/choice/log-prob
    learnable: int = 0  # handed to the trainer (accepted or not)
    refused: int = 0  # the trainer's add_episode said no (e.g. policy lag)
    updates: int = 0
    update_s: float = 0.0  # wall time spent in trainer.update
    errors: int = 0  # updates that raised
    last_metrics: dict[str, float] = field(default_factory=dict)
    eval_rounds: int = 0
    eval_episodes: int = 0  # played in evaluation rounds (never learned from)
    collect_wait_s: float = 0.0  # phone-seconds spent waiting for the trainer (throttle)


class LearningProvider:
    """Every episode plays the newest published weights through one batching
    :class:`PolicyAgent` (concurrent ``act`` calls from all phones → one ``decide``)."""

    def __init__(self, policy: TrainablePolicy, version: int = 0, *, greedy: bool = False,
                 max_batch: int = 32, seed: int = 0) -> None:
        self._kind, self._config = policy.kind, policy.config_dict()
        self._seed = seed
        self.agent = PolicyAgent(self._snapshot(policy.weights(), version), version,
                                 greedy=greedy, max_batch=max_batch)
        # awaited before every episode's policy is handed out: the rounds schedule trains here
        self.before_episode: Callable[[], Awaitable[None]] | None = None

    def _snapshot(self, weights: Mapping[str, torch.Tensor], version: int) -> TrainablePolicy:
        snap = build_policy(self._kind, self._config)
        snap.load_weights(weights)
        reseed = getattr(snap, "reseed", None)
        if callable(reseed):  # a rebuilt policy would otherwise replay the same samples
            reseed(self._seed * 1_000_003 + version)
        return snap

    @property
    def version(self) -> int:
        return self.agent.version

    def publish(self, weights: Mapping[str, torch.Tensor], version: int) -> None:
        """Phones use these weights from their next decision on."""
        self.agent.swap(self._snapshot(weights, version), version)

    async def policy_for(self, task: Task, device: Device) -> PolicyChoice:
        if self.before_episode is not None:
            await self.before_episode()
        return PolicyChoice(self.agent, self.agent.version)


class LearningSink:
    """Turns finished trajectories into :class:`EpisodeRecord` s for the learner and keeps
    the sliding success rate (aborted/errored episodes are counted, never learned)."""

    def __init__(self, learner: LocalLearner) -> None:
        self._learner = learner

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        self._learner._on_episode(trajectory, meta)


class LocalLearner:
    """Trains ``trainer`` on what ``.sink`` receives; ``.provider`` serves its weights.

        learner = LocalLearner(ARIDETrainer(policy, cfg))
        collector = Collector(reg, sampler, learner.provider, learner.sink, …)
        async with learner.running():
            await collector.run()
        learner.history  # [LearningPoint …] for the plot
    """

    def __init__(self, trainer: Trainer, config: LocalLearnerConfig | None = None, *,
                 seed: int = 0, eval_registry: DeviceRegistry | None = None,
                 eval_tasks: Sequence[type[Task]] = (),
                 eval_sink: TrajectorySink | None = None) -> None:
        self.trainer = trainer
        self.config = cfg = config or LocalLearnerConfig()
        scheduled = cfg.eval_every_s is not None or cfg.eval_every_updates is not None
        if scheduled and (eval_registry is None or not eval_tasks):
            raise ValueError("eval_every_s / eval_every_updates need eval_registry and "
                             "eval_tasks")
        if (cfg.eval_every_s is not None and cfg.eval_every_s <= 0) or (
                cfg.eval_every_updates is not None and cfg.eval_every_updates < 1):
            raise ValueError("eval_every_s > 0 and eval_every_updates ≥ 1 are required")
        self.eval_registry, self.eval_tasks = eval_registry, list(eval_tasks)
        self.eval_sink = eval_sink  # also gets every evaluation episode (meta.eval set)
        self.eval_history: list[EvalPoint] = []
        self.eval_reports: list[EvalReport] = []
        self._eval_round: EvalRound | None = None
        self._eval_lock = asyncio.Lock()
        self._updated = asyncio.Event()
        if cfg.publish_every < 1 or cfg.updates_per_round < 0 or cfg.window < 1 or (
                cfg.max_updates_per_episode is not None and cfg.max_updates_per_episode <= 0):
            raise ValueError("publish_every ≥ 1, updates_per_round ≥ 0, window ≥ 1 and "
                             "max_updates_per_episode > 0 are required")
        low, high = cfg.min_updates_per_episode, cfg.max_updates_per_episode
        if low is not None and (low <= 0 or cfg.collect_slack < 0 or (
                high is not None and low > high) or cfg.schedule != "concurrent"):
            raise ValueError("min_updates_per_episode must be > 0 and ≤ "
                             "max_updates_per_episode, with collect_slack ≥ 0, on the "
                             "concurrent schedule (rounds pace themselves)")
        self.provider = LearningProvider(trainer.policy, trainer.version, greedy=cfg.greedy,
                                         max_batch=cfg.max_batch, seed=seed)
        self.sink = LearningSink(self)
        self.stats = LearnerStats()
        self.history: list[LearningPoint] = []
        self._pending: list[EpisodeRecord] = []
        self._outcomes: deque[bool] = deque(maxlen=cfg.window)
        self._by_task: dict[str, deque[bool]] = {}
        self._arrived = asyncio.Event()
        self._stop = asyncio.Event()
        self._t0 = time.monotonic()
        self._round_lock = asyncio.Lock()
        self._trained = asyncio.Condition()  # notified after every update attempt
        # trainer.ready() as the training loop last saw it: the phones' pacing reads this,
        # never the trainer, which an update may be changing in its worker thread
        self._ready = False
        if cfg.schedule == "rounds":
            self.provider.before_episode = self._train_round
        elif cfg.schedule != "concurrent":
            raise ValueError(f"unknown schedule {cfg.schedule!r} (concurrent | rounds)")
        elif low is not None:
            self.provider.before_episode = self._wait_for_trainer

    # -- what the sink sees ------------------------------------------------------------------
    def _on_episode(self, traj: Trajectory, meta: EpisodeMeta) -> None:
        st = self.stats
        st.episodes += 1
        if traj.status not in (EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE):
            return
        st.finished += 1
        ok = traj.status is EpisodeStatus.SUCCESS
        st.successes += ok
        self._outcomes.append(ok)
        self._by_task.setdefault(traj.task, deque(maxlen=self.config.window)).append(ok)
        rec = EpisodeRecord.from_trajectory(traj, episode_id=meta.episode_id,
                                            farm_id=self.config.farm_id, device_id=meta.serial)
        if rec is None:
            st.unlearnable += 1
        else:
            st.learnable += 1
            self._pending.append(rec)
            self._arrived.set()
        self._record()

    @property
    def success_rate(self) -> float:
        return sum(self._outcomes) / len(self._outcomes) if self._outcomes else 0.0

    def success_by_task(self) -> dict[str, float]:
        """Each task's success rate over its own last ``window`` finished episodes."""
        return {t: sum(d) / len(d) for t, d in sorted(self._by_task.items()) if d}

    def _record(self) -> None:
        self.history.append(LearningPoint(
            wall_s=round(time.monotonic() - self._t0, 3), success_rate=self.success_rate,
            episodes=self.stats.finished, version=self.provider.version,
            updates=self.stats.updates))

    # -- training ------------------------------------------------------------------------------
    def _drain(self) -> None:
        pending, self._pending = self._pending, []
        for rec in pending:
            if not self.trainer.add_episode(rec):
                self.stats.refused += 1

    async def _update(self) -> bool:
        """One trainer update in a worker thread; False if it raised (logged, counted)."""
        t0 = time.perf_counter()
        try:
            metrics = await asyncio.to_thread(self.trainer.update)
        except Exception:
            self.stats.errors += 1
            log.exception("trainer update failed")
            return False
        else:
            self.stats.updates += 1
            self.stats.last_metrics = dict(metrics)
            self._updated.set()
        finally:
            self.stats.update_s += time.perf_counter() - t0
            await self._notify_trained()  # after the counters moved (errors: above)
        return True

    async def _notify_trained(self) -> None:
        async with self._trained:
            self._trained.notify_all()

    def _collection_ahead(self) -> bool:
        """concurrent with ``min_updates_per_episode``: the phones are more than
        ``collect_slack`` episodes ahead of what the trainer has consumed. Never while the
        trainer is not ready (it needs episodes for that), nor after :meth:`stop`; failed
        updates count as made, so a broken trainer cannot hold the phones forever."""
        low, st = self.config.min_updates_per_episode, self.stats
        if low is None or self._stop.is_set() or not self._ready:
            return False
        return st.updates + st.errors < low * (st.learnable - self.config.collect_slack)

    async def _wait_for_trainer(self) -> None:
        t0 = time.perf_counter()
        async with self._trained:
            while self._collection_ahead():  # woken by an update; the timeout sees stop()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._trained.wait(), self.config.idle_s)
        self.stats.collect_wait_s += time.perf_counter() - t0

    def _publish(self) -> None:
        self.provider.publish(self.trainer.policy.weights(), self.trainer.version)

    async def _train_round(self) -> None:
        """rounds: the first episode of a round trains on the previous round's data."""
        async with self._round_lock:
            if not self._pending:
                return
            self._drain()
            done = 0
            for _ in range(self.config.updates_per_round):
                if not self.trainer.ready() or self._stop.is_set():
                    break
                if await self._update():
                    done += 1
            if done:
                self._publish()
                self._record()

    # -- held-out evaluation -----------------------------------------------------------------
    async def evaluate_now(self, episodes_per_task: int | None = None) -> EvalPoint:
        """One evaluation round of the snapshot published now (greedy, ``eval_split``;
        ``episodes_per_task`` instances of each task, default the config's); rounds never
        overlap. Needs ``eval_registry`` and ``eval_tasks``."""
        from distrl_sdk.learn.api import PolicyAgent
        from farm.evaluate import AgentEval, EvalRound, plan_instances

        cfg = self.config
        if self.eval_registry is None or not self.eval_tasks:
            raise ValueError("evaluate_now needs eval_registry and eval_tasks")
        async with self._eval_lock:
            # the provider's snapshot is never modified (a publish builds a new one), so
            # this round plays exactly the version published when it started
            agent = PolicyAgent(self.provider.agent.policy, self.provider.version, greedy=True,
                                max_batch=cfg.max_batch)
            started, updates = time.monotonic() - self._t0, self.stats.updates
            self._eval_round = EvalRound(
                self.eval_registry, plan_instances(
                    self.eval_tasks, episodes_per_task or cfg.eval_episodes_per_task,
                    seed=cfg.eval_seed, split=cfg.eval_split),
                AgentEval(agent), sink=self.eval_sink, split=cfg.eval_split, greedy=True,
                episode_timeout_s=cfg.eval_episode_timeout_s)
            try:
                report = await self._eval_round.run()
                played = self._eval_round.stats.episodes
            finally:
                self._eval_round = None
        st = self.stats
        st.eval_rounds += 1
        st.eval_episodes += played
        point = EvalPoint(wall_s=round(time.monotonic() - self._t0, 3),
                          started_s=round(started, 3), version=agent.version, updates=updates,
                          success_rate=report.success_rate, ci_low=report.ci_low,
                          ci_high=report.ci_high, episodes=report.episodes,
                          complete=report.complete, by_task=report.by_task)
        self.eval_reports.append(report)
        self.eval_history.append(point)
        log.info("held-out v%d: %.3f [%.3f, %.3f] over %d episodes", point.version,
                 point.success_rate, point.ci_low, point.ci_high, point.episodes)
        return point

    async def _eval_loop(self) -> None:
        cfg = self.config
        if cfg.eval_at_start:
            await self.evaluate_now()
        last_t, last_u = time.monotonic(), self.stats.updates
        while not self._stop.is_set():
            now = time.monotonic()
            due_t = last_t + cfg.eval_every_s if cfg.eval_every_s is not None else None
            due_u = cfg.eval_every_updates is not None and \
                self.stats.updates - last_u >= cfg.eval_every_updates
            if due_u or (due_t is not None and now >= due_t):
                last_t, last_u = now, self.stats.updates
                await self.evaluate_now()
                continue
            self._updated.clear()
            wait = None if due_t is None else due_t - now
            with contextlib.suppress(TimeoutError):  # woken by an update, or the clock
                await asyncio.wait_for(self._updated.wait(), wait)

    async def run(self) -> None:
        """concurrent: train until :meth:`stop`; rounds: just wait (training happens in
        the provider's hook). Evaluation rounds run alongside, if scheduled."""
        if self.config.torch_threads is not None:
            import torch

            torch.set_num_threads(self.config.torch_threads)
        self._t0 = time.monotonic()
        cfg = self.config
        evaluating: asyncio.Task[None] | None = None
        if cfg.eval_every_s is not None or cfg.eval_every_updates is not None:
            evaluating = asyncio.create_task(self._eval_loop(), name="local-eval")
        try:
            await self._train()
        finally:
            if evaluating is not None:  # a round under way ends now (not complete)
                if self._eval_round is not None:
                    self._eval_round.stop()
                done, _ = await asyncio.wait({evaluating}, timeout=60)
                if not done:
                    evaluating.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await evaluating
                elif (exc := evaluating.exception()) is not None:
                    raise exc

    async def _train(self) -> None:
        if self.config.schedule == "rounds":
            await self._stop.wait()
            return
        since_publish = 0
        while not self._stop.is_set():
            self._drain()
            ratio = self.config.max_updates_per_episode
            self._ready = self.trainer.ready()
            if not self._ready or (
                    ratio is not None and self.stats.updates >= ratio * self.stats.learnable):
                self._arrived.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait(), self.config.idle_s)
                continue
            if await self._update():
                since_publish += 1
            else:
                await asyncio.sleep(self.config.idle_s)  # a failing trainer must not spin
            if since_publish >= self.config.publish_every:
                self._publish()
                since_publish = 0
                self._record()
        self._drain()

    def stop(self) -> None:
        self._stop.set()
        self._updated.set()  # the evaluation loop looks again

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[LocalLearner]:
        """Run the learner's loop for the duration of the block."""
        self._stop.clear()
        task = asyncio.create_task(self.run(), name="local-learner")
        try:
            yield self
        finally:
            self.stop()
            await asyncio.wait({task}, timeout=60)
            if not task.done():
                task.cancel()
            elif (exc := task.exception()) is not None:
                raise exc

"""In-process learning: LocalLearner + LearningSink/Provider + UITreePolicy (+ sim phones)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
import torch

from distrl_sdk.learn.api import EpisodeRecord, PolicyAgent, TrainablePolicy
from distrl_sdk.policies.uitree import UITreePolicy
from distrl_sdk.policy import Decision, Observation
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory
from distrl_sdk.uitree import Bounds, UIElement
from farm.collect import Collector, CollectorConfig, EpisodeMeta, TaskSampler
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.learner import LocalLearner, LocalLearnerConfig
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

SMALL = {"buckets": 2048, "embed_dim": 16, "hidden": 32}


class Reinforce:
    """The smallest Trainer: on-policy REINFORCE with a running-mean baseline.

    What the loop is tested against, independent of the A-RIDE/DigiRL trainers."""

    def __init__(self, policy: TrainablePolicy, *, batch: int = 8, lr: float = 3e-3,
                 beta: float = 0.01) -> None:
        self.policy, self.version, self.batch, self.beta = policy, 0, batch, beta
        self.buf: list[EpisodeRecord] = []
        self.lr = lr
        self.baseline = 0.0

    def add_episode(self, episode: EpisodeRecord) -> bool:
        self.buf.append(episode)
        return True

    def ready(self) -> bool:
        return len(self.buf) >= self.batch

    def update(self) -> dict[str, float]:
        eps, self.buf = self.buf, []
        steps = [s for e in eps for s in e.steps]
        ret = torch.tensor([e.reward for e in eps for _ in e.steps])
        adv = ret - self.baseline
        self.baseline = 0.9 * self.baseline + 0.1 * float(ret.mean())
        out = self.policy.evaluate(steps)
        loss = -(adv * out.log_prob).mean() - self.beta * out.entropy.mean()
        params = self.policy.trainable_parameters()
        for p in params:
            p.grad = None
        loss.backward()  # plain SGD: importing torch.optim alone costs seconds
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.sub_(self.lr * p.grad)
        self.version += 1
        return {"loss": float(loss.detach()), "entropy": float(out.entropy.detach().mean())}

    def state_tensors(self) -> dict[str, torch.Tensor]:
        return self.policy.weights()

    def state_meta(self) -> dict[str, Any]:
        return {"version": self.version}

    def load_state(self, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> None:
        self.policy.load_weights(tensors)
        self.version = int(meta["version"])


BUTTON = UIElement(index=0, depth=0, parent=None, text="OK", resource_id="", class_name="B",
                   package="p", content_desc="", bounds=Bounds(0, 0, 100, 100), clickable=True)


def episode(policy: UITreePolicy, status: EpisodeStatus, n: int = 0) -> tuple[Trajectory,
                                                                              EpisodeMeta]:
    """A two-step trajectory as run_episode records it, decided by ``policy``."""
    ds = policy.decide([Observation("Press OK", [BUTTON], (100, 100), i) for i in range(2)])
    traj = Trajectory(task="t.ok", instruction="Press OK", status=status,
                      reward=1.0 if status is EpisodeStatus.SUCCESS else 0.0)
    for i, d in enumerate(ds):
        traj.steps.append(Step(i, d.action, info={"log_prob": d.log_prob, "policy_version": 0,
                                                  "policy_obs": d.obs,
                                                  "policy_choice": d.choice}))
    meta = EpisodeMeta(episode_id=f"e{n}", serial="s", worker="w", mode="async", policy="p",
                       policy_version=0, started_at=0.0, wall_s=0.0)
    return traj, meta


async def test_sink_learns_finished_episodes_and_counts_the_rest() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = Reinforce(policy, batch=100)
    learner = LocalLearner(trainer, LocalLearnerConfig(window=4))
    for n, st in enumerate([EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE,
                            EpisodeStatus.ABORTED, EpisodeStatus.SUCCESS,
                            EpisodeStatus.SUCCESS, EpisodeStatus.SUCCESS]):
        await learner.sink.put(*episode(policy, st, n))
    bare, meta = episode(policy, EpisodeStatus.FAILURE, 9)
    bare.steps[0].info.pop("policy_obs")  # e.g. a scripted policy's episode
    await learner.sink.put(bare, meta)
    st = learner.stats
    assert (st.episodes, st.finished, st.successes, st.unlearnable) == (7, 6, 4, 1)
    assert learner.success_rate == pytest.approx(3 / 4)  # window 4: S S S F
    learner._drain()
    assert [e.id for e in trainer.buf] == ["e0", "e1", "e3", "e4", "e5"]
    assert trainer.buf[0].steps[-1].reward == 1.0 and trainer.buf[1].steps[-1].reward == 0.0
    assert [p.episodes for p in learner.history] == [1, 2, 3, 4, 5, 6]


async def test_concurrent_schedule_trains_and_publishes_snapshots() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = Reinforce(policy, batch=4, lr=0.05)
    learner = LocalLearner(trainer, LocalLearnerConfig(publish_every=2, idle_s=0.01))
    agent = (await learner.provider.policy_for(None, None)).policy  # type: ignore[arg-type]
    assert isinstance(agent, PolicyAgent) and agent.version == 0
    assert agent.policy is not policy, "phones never act on the object being trained"
    async with learner.running():
        for n in range(16):
            await learner.sink.put(*episode(policy, EpisodeStatus.SUCCESS, n))
            await asyncio.sleep(0.02)
        deadline = time.monotonic() + 30
        while learner.stats.updates < 4 and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    assert learner.stats.updates == trainer.version == 4
    assert learner.provider.version == 4  # published every 2 updates
    choice = await learner.provider.policy_for(None, None)  # type: ignore[arg-type]
    snap = choice.policy.policy  # type: ignore[attr-defined]
    assert choice.version == 4 and snap is not policy
    for k, v in policy.weights().items():
        assert torch.equal(v, snap.weights()[k])
    d = await choice.policy.act(Observation("Press OK", [BUTTON], (100, 100), 0))
    assert isinstance(d, Decision) and d.policy_version == 4


async def test_replay_ratio_bounds_the_updates() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = Reinforce(policy, batch=1)
    learner = LocalLearner(trainer, LocalLearnerConfig(max_updates_per_episode=0.25,
                                                       idle_s=0.01))
    async with learner.running():
        for n in range(8):
            await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
    assert learner.stats.learnable == 8
    assert 1 <= learner.stats.updates <= 2  # 8 episodes × 0.25, though REINFORCE was ready
    with pytest.raises(ValueError, match="max_updates_per_episode"):
        LocalLearner(trainer, LocalLearnerConfig(max_updates_per_episode=0))


class GatedTrainer(Reinforce):
    """Ready from the first episode; each update waits for a permit (``allow``), or raises
    while ``failing`` — the trainer's pace is the test's to set."""

    def __init__(self, policy: TrainablePolicy) -> None:
        super().__init__(policy, batch=1)
        self.permits = threading.Semaphore(0)
        self.failing = False

    def allow(self, n: int = 1) -> None:
        self.permits.release(n)

    def update(self) -> dict[str, float]:
        self.permits.acquire()
        if self.failing:
            raise RuntimeError("broken trainer")
        self.buf = self.buf[-1:]  # stays ready
        self.version += 1
        return {}


async def _returns(aw: Any, within: float = 10.0) -> bool:
    task = asyncio.ensure_future(aw)
    done, _ = await asyncio.wait({task}, timeout=within)
    if not done:
        task.cancel()
    return bool(done)


async def test_min_replay_ratio_holds_phones_until_the_trainer_catches_up() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = GatedTrainer(policy)
    learner = LocalLearner(trainer, LocalLearnerConfig(
        min_updates_per_episode=0.5, collect_slack=2, idle_s=0.01))
    get = learner.provider.policy_for
    async with learner.running():
        try:
            for n in range(2):  # within the slack: phones never wait
                await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            assert await _returns(get(None, None), 1)  # type: ignore[arg-type]
            for n in range(2, 6):  # 6 episodes, 0 updates: 0.5 × (6 − 2) = 2 are owed
                await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            waiting = asyncio.ensure_future(get(None, None))  # type: ignore[arg-type]
            await asyncio.sleep(0.2)
            assert not waiting.done(), "a phone starts while the trainer is 2 updates behind"
            trainer.allow()
            await asyncio.sleep(0.2)
            assert not waiting.done() and learner.stats.updates == 1
            trainer.allow()
            assert await _returns(waiting), "2 updates for 6 episodes: the phone goes on"
            assert learner.stats.collect_wait_s > 0.3
            # a broken trainer cannot hold the phones: failed updates count as made
            for n in range(6, 10):
                await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            waiting = asyncio.ensure_future(get(None, None))  # type: ignore[arg-type]
            await asyncio.sleep(0.2)
            assert not waiting.done()
            trainer.failing = True
            trainer.allow(2)
            assert await _returns(waiting) and learner.stats.errors == 2
            # nor can stop(): phones waiting then are let go
            trainer.failing = False
            for n in range(10, 20):
                await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            waiting = asyncio.ensure_future(get(None, None))  # type: ignore[arg-type]
            await asyncio.sleep(0.2)
            assert not waiting.done()
            learner.stop()
            assert await _returns(waiting)
        finally:
            trainer.allow(100)  # the update thread in flight ends
    for bad in ({"min_updates_per_episode": 0.0},
                {"min_updates_per_episode": 0.6, "max_updates_per_episode": 0.5},
                {"min_updates_per_episode": 0.5, "collect_slack": -1},
                {"min_updates_per_episode": 0.5, "schedule": "rounds"}):
        with pytest.raises(ValueError, match="min_updates_per_episode"):
            LocalLearner(trainer, LocalLearnerConfig(**bad))  # type: ignore[arg-type]


async def test_no_min_replay_ratio_never_holds_phones() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = GatedTrainer(policy)
    learner = LocalLearner(trainer, LocalLearnerConfig(idle_s=0.01))
    async with learner.running():
        try:  # beyond the default slack (32): with pacing on by default, this would wait
            for n in range(40):
                await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
            assert await _returns(learner.provider.policy_for(None, None), 1)  # type: ignore[arg-type]
        finally:
            trainer.allow(100)
    assert learner.stats.collect_wait_s == 0


async def test_rounds_schedule_trains_between_rounds() -> None:
    policy = UITreePolicy.from_config(SMALL)
    trainer = Reinforce(policy, batch=2)
    learner = LocalLearner(trainer, LocalLearnerConfig(schedule="rounds", updates_per_round=3))
    async with learner.running():
        await learner.provider.policy_for(None, None)  # type: ignore[arg-type]
        assert learner.stats.updates == 0  # nothing collected yet
        for n in range(2):  # one round's episodes
            await learner.sink.put(*episode(policy, EpisodeStatus.FAILURE, n))
        await asyncio.sleep(0.1)
        assert learner.stats.updates == 0, "rounds: nothing trains while a round runs"
        c = await learner.provider.policy_for(None, None)  # type: ignore[arg-type]
        # batch 2 ⇒ the first update empties REINFORCE's buffer: one update, then not ready
        assert learner.stats.updates == 1 and c.version == 1 == learner.provider.version
    with pytest.raises(ValueError, match="unknown schedule"):
        LocalLearner(trainer, LocalLearnerConfig(schedule="nope"))  # type: ignore[arg-type]


LIFECYCLE = LifecycleConfig(heartbeat_s=5, reaper_s=20, probe_timeout_s=5, boot_poll_s=0.1,
                            backoff_min_s=0.1)


@pytest.fixture
async def registry(sim_background: BackgroundFarm,
                   private_adb: PrivateAdbServer) -> AsyncIterator[DeviceRegistry]:
    assert sim_background.farm is not None
    reg = DeviceRegistry(port=private_adb.port, targets=sim_background.farm.serials,
                         config=LIFECYCLE, discover=False, device_timeout=10)
    async with reg:
        for s in sim_background.farm.serials:
            await reg.wait_for(s, DeviceState.READY, timeout=30)
        yield reg


@pytest.mark.slow
@pytest.mark.sim(count=2)
async def test_aride_on_two_sim_phones_learns_an_easy_task(registry: DeviceRegistry) -> None:
    """settings.open_display from a uniform start: the success rate of the last episodes
    beats the first ones (random play succeeds a few % of the time)."""
    from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer

    task = TaskRegistry.discover().get("settings.open_display")
    policy = UITreePolicy.from_config({"seed": 0})
    trainer = ARIDETrainer(policy, ARIDEConfig(actor_lr=3e-3, critic_lr=3e-3,
                                               traj_critic_lr=3e-3, min_episodes=16,
                                               max_policy_lag=None, entropy_coef=0.01))
    learner = LocalLearner(trainer, LocalLearnerConfig(window=24))
    col = Collector(registry, TaskSampler([task], seed=0), learner.provider, learner.sink,
                    CollectorConfig(mode="async", duration_s=50))

    async def watch() -> None:
        while True:
            await asyncio.sleep(0.5)
            if learner.stats.finished >= 48 and learner.success_rate >= 0.6:
                col.stop()
                return

    w = asyncio.create_task(watch())
    async with learner.running():
        await col.run()
    w.cancel()
    outcomes = [p.success_rate for p in learner.history]
    print(f"first window {learner.history[min(23, len(outcomes) - 1)].success_rate:.2f} → "
          f"{learner.success_rate:.2f}: {learner.stats}")
    first = learner.history[min(23, len(outcomes) - 1)].success_rate
    assert learner.stats.finished >= 48, learner.stats
    assert learner.stats.updates > 0 and learner.provider.version > 0
    assert learner.success_rate >= first + 0.25, (first, learner.success_rate, learner.stats)


class SlowReinforce(Reinforce):
    """REINFORCE that takes 0.8 s an update: at 0.5 updates per episode it lets the phones
    finish 2.5 episodes/s, well under what two sim phones manage even on a loaded machine
    (~10 episodes/s on a busy core), so they must wait for it."""

    def update(self) -> dict[str, float]:
        time.sleep(0.8)
        return super().update()


@pytest.mark.sim(count=2)
async def test_min_replay_ratio_paces_real_phones_to_the_trainer(
        registry: DeviceRegistry) -> None:
    """Two sim phones and the collector as the bench runs them: with the band pinned at
    0.5 updates per episode, the phones never run more than the slack (and the episodes
    in flight) ahead of the trainer — and they did wait for it."""
    task = TaskRegistry.discover().get("settings.open_display")
    policy = UITreePolicy.from_config({**SMALL, "seed": 0})
    slack, phones = 4, 2
    learner = LocalLearner(SlowReinforce(policy, batch=1), LocalLearnerConfig(
        min_updates_per_episode=0.5, max_updates_per_episode=0.5, collect_slack=slack,
        idle_s=0.01))
    col = Collector(registry, TaskSampler([task], seed=0), learner.provider, learner.sink,
                    CollectorConfig(mode="async", duration_s=8))
    async with learner.running():
        await col.run()
    st = learner.stats
    assert st.finished >= 12 and st.updates >= 4, st
    assert st.collect_wait_s > 2.0, st
    for p in learner.history:  # recorded at every finished episode
        assert p.episodes <= p.updates / 0.5 + slack + phones, (p, st)
    assert st.updates <= 0.5 * st.learnable + 1  # and the cap still holds

"""Held-out rounds inside LocalLearner on sim phones: frozen snapshots, greedy, test split,
on the same phones as training, never handed to the trainer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
import torch

from distrl_sdk.learn.api import EpisodeRecord, TrainablePolicy
from distrl_sdk.policies.uitree import UITreePolicy
from distrl_sdk.registry import TaskRegistry
from farm.collect import Collector, CollectorConfig, MemorySink, TaskSampler
from farm.device.registry import DeviceRegistry
from farm.learner import LocalLearner, LocalLearnerConfig

SMALL = {"buckets": 2048, "embed_dim": 16, "hidden": 32}
REG = TaskRegistry.discover()
TASKS = [REG.get(n) for n in ("settings.wifi_off", "settings.open_display")]


class Recording:
    """On-policy REINFORCE that records every episode it is handed."""

    def __init__(self, policy: TrainablePolicy, batch: int = 4) -> None:
        self.policy, self.version, self.batch = policy, 0, batch
        self.buf: list[EpisodeRecord] = []
        self.added: list[str] = []

    def add_episode(self, episode: EpisodeRecord) -> bool:
        self.added.append(episode.id)
        self.buf.append(episode)
        return True

    def ready(self) -> bool:
        return len(self.buf) >= self.batch

    def update(self) -> dict[str, float]:
        eps, self.buf = self.buf, []
        steps = [s for e in eps for s in e.steps]
        ret = torch.tensor([e.reward for e in eps for _ in e.steps])
        out = self.policy.evaluate(steps)
        loss = -((ret - ret.mean()) * out.log_prob).mean()
        params = self.policy.trainable_parameters()
        for p in params:
            p.grad = None
        loss.backward()  # type: ignore[no-untyped-call]
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.sub_(0.05 * p.grad)
        self.version += 1
        return {"loss": float(loss.detach())}

    def state_tensors(self) -> dict[str, torch.Tensor]:
        return self.policy.weights()

    def state_meta(self) -> dict[str, Any]:
        return {"version": self.version}

    def load_state(self, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> None:
        self.policy.load_weights(tensors)
        self.version = int(meta["version"])


def test_eval_schedule_needs_phones_and_tasks() -> None:
    trainer = Recording(UITreePolicy.from_config(SMALL))
    with pytest.raises(ValueError, match="eval_registry"):
        LocalLearner(trainer, LocalLearnerConfig(eval_every_s=10))
    with pytest.raises(ValueError, match="eval_every_updates"):
        LocalLearner(trainer, LocalLearnerConfig(eval_every_updates=0))


@pytest.mark.sim(count=3)
@pytest.mark.steady
async def test_eval_rounds_play_frozen_snapshots_and_never_reach_the_trainer(
        registry: DeviceRegistry) -> None:
    trainer = Recording(UITreePolicy.from_config(SMALL | {"seed": 1}))
    evals = MemorySink()
    learner = LocalLearner(trainer, LocalLearnerConfig(
        eval_every_updates=2, eval_episodes_per_task=2, idle_s=0.01), seed=1,
        eval_registry=registry, eval_tasks=TASKS, eval_sink=evals)
    col = Collector(registry, TaskSampler(TASKS, seed=1), learner.provider, learner.sink,
                    CollectorConfig(duration_s=120, episode_timeout_s=30))

    async def enough() -> None:  # two complete rounds while training (or the 120 s cap)
        while sum(p.complete for p in learner.eval_history) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        col.stop()

    async with learner.running():
        watch = asyncio.create_task(enough())
        stats = await col.run()
        watch.cancel()
    final = await learner.evaluate_now()  # after collection: the final held-out score

    st = learner.stats
    assert st.updates >= 4 and learner.provider.version == trainer.version
    # the training sink saw only the training collector's episodes; the trainer only those
    assert st.episodes == stats.episodes > 0
    assert trainer.added and len(trainer.added) == st.learnable
    eval_ids = {m.episode_id for _, m in evals.items}
    assert eval_ids and not eval_ids & set(trainer.added)
    assert st.eval_episodes == len(evals.items) and st.eval_rounds == len(learner.eval_history)
    # rounds: at start (v0), every 2 updates, and the final one; greedy, test split, frozen
    hist = learner.eval_history
    assert hist[0].version == 0 and hist[0].updates == 0 and len(hist) >= 3
    assert sum(p.complete for p in hist) >= 3 and hist[-2].version > 0  # trained meanwhile
    assert [p.version for p in hist] == sorted(p.version for p in hist)
    assert final is hist[-1] and final.complete and final.version == trainer.version
    assert final.episodes == 4 and set(final.by_task) == {t.name for t in TASKS}
    assert 0.0 <= final.ci_low <= final.success_rate <= final.ci_high <= 1.0
    for traj, meta in evals.items:
        assert meta.eval is not None and meta.eval["split"] == "test" and meta.eval["greedy"]
        versions = {s.info.get("policy_version") for s in traj.steps}
        assert versions <= {meta.eval["policy_version"]}  # one frozen version per round
    by_round: dict[str, set[Any]] = {}
    for _, meta in evals.items:
        assert meta.eval is not None
        by_round.setdefault(meta.eval["round"], set()).add(meta.eval["policy_version"])
    assert all(len(v) == 1 for v in by_round.values())

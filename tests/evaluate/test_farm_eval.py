"""``farm up --policy learned`` with evaluation rounds, in-process, on sim phones and a real
mosquitto: eval episodes travel marked, the learner scores them and never trains on them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from distrl_sdk.learn.api import EpisodeRecord, TrainablePolicy, Trainer
from distrl_sdk.registry import TaskRegistry
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.cli import cli
from farm.controller import FarmConfig, FarmController
from farm.device.lifecycle import LifecycleConfig
from farm.evaluate import PeriodicEval
from farm.learner.service import LearnerConfig, LearnerService, default_trainer
from farm.learner.weights import LearnedPolicyProvider
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

POLICY: dict[str, Any] = {"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0}
ALGO: dict[str, Any] = {"min_episodes": 2, "batch_episodes": 2, "critic_hidden": 16,
                        "capacity": 1000, "max_policy_lag": None}
STEADY = LifecycleConfig(heartbeat_s=0.5, reaper_s=10, probe_timeout_s=5, boot_timeout_s=10,
                         boot_poll_s=0.1, max_failures=3, backoff_min_s=0.1, backoff_max_s=0.4,
                         reconnect_timeout_s=2.0)


def test_eval_flags_need_the_learned_policy() -> None:
    r = CliRunner().invoke(cli, ["farm", "up", "--sim", "1", "--eval-every", "5"])
    assert r.exit_code == 2 and "need --policy learned" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["farm", "up", "--policy", "learned", "--sim", "1",
                                 "--eval-every", "-1"])
    assert r.exit_code == 2 and "collect.eval_every_s" in r.output


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_farm_evaluates_the_learned_policy_and_the_learner_never_trains_on_it(
        tmp_path: Path) -> None:
    reg = TaskRegistry.discover()
    tasks = [reg.get(n) for n in ("settings.wifi_off", "settings.open_display")]
    added: list[str] = []
    marked: dict[str, Any] = {}

    def factory(policy: TrainablePolicy, cfg: LearnerConfig) -> Trainer:
        trainer = default_trainer(policy, cfg)
        add = trainer.add_episode

        def spy(ep: EpisodeRecord) -> bool:
            added.append(ep.id)
            return add(ep)

        trainer.add_episode = spy  # type: ignore[method-assign,assignment]
        return trainer

    async with EmbeddedBroker(backend="mosquitto") as broker:
        svc = LearnerService(LearnerConfig.model_validate(dict(
            broker_url=broker.url, run_dir=tmp_path / "run", algo_config=ALGO,
            policy_config=POLICY, checkpoint_every_s=3600, metrics_every_s=0.2,
            client_id="learner-farm-eval", torch_threads=1, farm_id="f1")),
            trainer_factory=factory)
        original = svc._on_trajectory

        def seen(decoded: Any) -> Any:
            marked[decoded.msg.id] = decoded.msg.eval
            return original(decoded)  # the durability wait the subscriber acks after

        svc._on_trajectory = seen  # type: ignore[method-assign]
        task = asyncio.create_task(svc.run())
        await asyncio.wait_for(svc.ready.wait(), 60)
        with BackgroundFarm(3, seed=2) as sims, PrivateAdbServer() as adb:
            async with LearnedPolicyProvider(broker.url, client_id="f1-weights") as provider:
                await provider.wait_ready(30)
                evaluation = PeriodicEval(tasks, provider, every_s=3.0, episodes_per_task=2,
                                          farm_id="f1", episode_timeout_s=20)
                ctl = FarmController(FarmConfig(
                    broker_url=broker.url, farm_id="f1", adb_port=adb.port,
                    devices=sims.serials, tasks=tasks, policy="learned", duration_s=12.0,
                    spool_dir=tmp_path / "spool", lifecycle=STEADY, flush_timeout_s=30.0,
                    episode_timeout_s=20.0), policies=provider, evaluation=evaluation)
                await asyncio.wait_for(ctl.run(), 120)
        assert ctl.flushed is True  # acked: every trajectory went through the handler
        scalars = svc.metrics()
        svc.stop()
        summary = await asyncio.wait_for(task, 60)

    eval_ids = {i for i, e in marked.items() if e is not None}
    train_ids = set(marked) - eval_ids
    assert eval_ids and train_ids and set(marked) == set(ctl.sink.ids)
    assert not eval_ids & set(added) and set(added) <= train_ids
    assert summary["received"] == len(train_ids)
    rounds = ctl.summary()["eval"]["rounds"]
    assert rounds >= 2 and summary["eval"]["rounds"] >= 1  # the last may be cut short
    assert {e.planned for e in marked.values() if e} == {4}
    # a complete round of 4 is in the published version's figures: scored episodes plus
    # the ones whose final attempt was aborted (the farm's stop can end a round's last
    # episodes; under load it did, and eval/episodes counts scored ones only)
    pooled = svc.eval.by_version[int(scalars["eval/policy_version"])]
    accounted = sum(t.episodes + t.aborted + t.errored for t in pooled.tasks.values())
    assert accounted >= 4 and pooled.episodes >= scalars["eval/episodes"] >= 1
    assert 0.0 <= scalars["eval/success_rate"] <= 1.0
    assert scalars["eval/policy_version"] in {r.policy_version for r in evaluation.reports}
    assert {f"eval/task/{t.name}" for t in tasks} <= scalars.keys()

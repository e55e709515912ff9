"""Eval trajectories at the learner service, over a real mosquitto: scored per version
when a round completes, published as eval/* (broker metrics and scalars.jsonl), never
handed to the trainer, kept across a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal

import aiomqtt
import pytest

from distrl_sdk.learn.api import EpisodeRecord, TrainablePolicy, Trainer
from distrl_sdk.policies import build_policy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import Bounds, UIElement
from distrl_sdk.wire import (
    EvalInfo,
    Message,
    Metrics,
    StepMsg,
    TrajectoryMsg,
    parse_message,
    topics,
)
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.learner.metrics import read_scalars
from farm.learner.service import LearnerConfig, LearnerService, default_trainer
from farm.transport import Backoff, Publisher

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")

POLICY: dict[str, Any] = {"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0}
ALGO: dict[str, Any] = {"min_episodes": 4, "batch_episodes": 4, "critic_hidden": 16,
                        "capacity": 1000, "max_policy_lag": None}
BEHAVIOUR = build_policy("uitree", POLICY)
Status = Literal["success", "failure", "aborted"]


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(backend="mosquitto") as b:
        yield b


def traj(tid: str, task: str, ok: bool, *, version: int = 0,
         eval_info: EvalInfo | None = None, status: Status | None = None) -> TrajectoryMsg:
    """A learnable-looking trajectory (policy obs/choice/log-prob on every step): only its
    eval mark can keep it from the trainer."""
    el = UIElement(index=0, depth=0, parent=None, text="Wi-Fi", resource_id="",
                   class_name="android.widget.TextView", package="com.android.settings",
                   content_desc="", bounds=Bounds(0, 0, 1080, 90), clickable=True)
    ds = BEHAVIOUR.decide([Observation("Turn off Wi-Fi", [el], (1080, 2400), s)
                           for s in range(2)])
    return TrajectoryMsg(
        id=tid, farm_id="farm1", device_id="sim-0", task=task, instruction="Turn off Wi-Fi",
        status=status or ("success" if ok else "failure"), reward=1.0 if ok else 0.0,
        eval=eval_info,
        steps=[StepMsg(index=s, action={"action_type": "tap", "x": 0.5, "y": 0.05},
                       log_prob=d.log_prob, policy_version=version, obs=d.obs,
                       choice=d.choice) for s, d in enumerate(ds)])


def ev(round_: str, instance: int, planned: int, version: int, final: bool = True
       ) -> EvalInfo:
    return EvalInfo(round=round_, policy_version=version, instance=instance, planned=planned,
                    final=final)


async def until(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - polls state owned by other tasks
            await asyncio.sleep(0.02)


async def start(svc: LearnerService) -> asyncio.Task[dict[str, Any]]:
    task = asyncio.create_task(svc.run())
    done, _ = await asyncio.wait([task, asyncio.create_task(svc.ready.wait())], timeout=60,
                                 return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()
    return task


async def eval_metrics(url: str) -> dict[str, float]:
    """The retained learner metrics, once they carry eval/success_rate."""
    host, port = url.removeprefix("mqtt://").split(":")
    async with aiomqtt.Client(host, int(port)) as c:
        await c.subscribe(topics.learner_metrics(), qos=1)
        async with asyncio.timeout(20):
            async for m in c.messages:
                parsed = parse_message(str(m.topic), m.payload)
                if isinstance(parsed, Message) and isinstance(parsed.body, Metrics) \
                        and "eval/success_rate" in parsed.body.scalars:
                    return dict(parsed.body.scalars)
    raise AssertionError("unreachable")


async def test_eval_episodes_are_scored_published_and_never_trained_on(
        broker: EmbeddedBroker, tmp_path: Path) -> None:
    added: list[str] = []

    def factory(policy: TrainablePolicy, cfg: LearnerConfig) -> Trainer:
        trainer = default_trainer(policy, cfg)
        add = trainer.add_episode

        def spy(ep: EpisodeRecord) -> bool:  # every episode the trainer is ever handed
            added.append(ep.id)
            return add(ep)

        trainer.add_episode = spy  # type: ignore[method-assign,assignment]
        return trainer

    cfg = LearnerConfig.model_validate(dict(
        broker_url=broker.url, run_dir=tmp_path / "run", algo_config=ALGO,
        policy_config=POLICY, checkpoint_every_s=3600, metrics_every_s=0.2,
        client_id="learner-eval-test", torch_threads=1))
    svc = LearnerService(cfg, trainer_factory=factory)
    task = await start(svc)
    training = [traj(f"t{i}", "settings.wifi_off", i % 2 == 0) for i in range(6)]
    a, b = "settings.wifi_off", "clock.open_stopwatch"
    round1 = [  # v0, 4 instances: a ✓, b ✗, a (aborted once, then ✓), b ✓
        traj("e0", a, True, eval_info=ev("farm1-r1-v0", 0, 4, 0)),
        traj("e1", b, False, eval_info=ev("farm1-r1-v0", 1, 4, 0)),
        traj("e2x", a, False, status="aborted", eval_info=ev("farm1-r1-v0", 2, 4, 0, False)),
        traj("e2", a, True, eval_info=ev("farm1-r1-v0", 2, 4, 0)),
        traj("e3", b, True, eval_info=ev("farm1-r1-v0", 3, 4, 0))]
    partial = [traj(f"p{i}", a, False, version=1, eval_info=ev("farm1-r2-v1", i, 5, 1))
               for i in range(2)]  # a round at v1 that never completes
    async with Publisher(broker.url, "farm1", tmp_path / "spool",
                         backoff=Backoff(0.05, 0.5), resend_after_s=5) as pub:
        for m in [*training[:3], *round1, *training[3:], *partial]:
            await pub.publish(m)
        assert await pub.wait_acked(30)
    await until(lambda: svc.received == 6 and svc.eval.received == 7)
    scalars = await eval_metrics(broker.url)
    svc.stop()
    summary = await asyncio.wait_for(task, 60)

    eval_ids = {m.id for m in round1 + partial}
    assert not eval_ids & set(added) and sorted(added) == sorted(m.id for m in training)
    assert summary["received"] == 6 and summary["episodes"] == 6
    assert summary["eval"]["rounds"] == 1 and summary["eval"]["open_rounds"] == 1
    assert summary["unlearnable"] == {}  # eval episodes are not counted as unlearnable
    assert scalars["eval/success_rate"] == pytest.approx(0.75)  # (1.0 + 0.5) / 2
    assert scalars["eval/episodes"] == 4 and scalars["eval/policy_version"] == 0
    assert scalars["eval/ci_low"] < 0.75 < scalars["eval/ci_high"] <= 1.0
    assert scalars[f"eval/task/{a}"] == 1.0 and scalars[f"eval/task/{b}"] == 0.5
    # the scalar log: one record per metric per completed round, at the evaluated version
    recs = [r for r in read_scalars(tmp_path / "run" / "scalars.jsonl")
            if r["tag"].startswith("eval/")]
    assert sorted(r["tag"] for r in recs) == sorted(
        ["eval/success_rate", "eval/ci_low", "eval/ci_high", "eval/episodes",
         "eval/policy_version", f"eval/task/{a}", f"eval/task/{b}"])
    assert {r["step"] for r in recs} == {0}

    # a restarted learner still reports the evaluated version (from its checkpoint)
    svc2 = LearnerService(cfg, trainer_factory=factory)
    task2 = await start(svc2)
    assert svc2.metrics()["eval/success_rate"] == pytest.approx(0.75)
    svc2.stop()
    await asyncio.wait_for(task2, 60)

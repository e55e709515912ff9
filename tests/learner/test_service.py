"""The learner service end to end on a real mosquitto: real UITreePolicy + A-RIDE, real farm
Publisher (spool + acks), real WeightSubscriber / LearnedPolicyProvider on the farm side."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
import torch
from click.testing import CliRunner

from distrl_sdk.policies import build_policy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import Bounds, UIElement
from distrl_sdk.wire import (
    Envelope,
    Message,
    Metrics,
    StepMsg,
    TrajectoryMsg,
    encode_envelope,
    encode_trajectory,
    parse_message,
    split_chunks,
    topics,
)
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.learner.metrics import export_csv, read_scalars
from farm.learner.service import LearnerConfig, LearnerService
from farm.learner.weights import LearnedPolicyProvider, WeightSubscriber
from farm.transport import Backoff, Publisher, Spool

pytestmark = pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")

REPO = Path(__file__).resolve().parents[2]
POLICY: dict[str, Any] = {"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0}
# small, with neither lag pruning nor stale eviction, so replay contents are exact
# whatever the update rate (under load a run did enough updates for the stale-share
# eviction to drop 3 of 10 episodes that test_restart_… expects in replay)
ALGO: dict[str, Any] = {"min_episodes": 4, "batch_episodes": 4, "critic_hidden": 16,
                        "capacity": 1000, "max_policy_lag": None, "max_stale_share": None}
BEHAVIOUR = build_policy("uitree", POLICY)  # the "farm" policy that made the episodes


@pytest.fixture
async def broker() -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(backend="mosquitto") as b:
        yield b


def observation(instruction: str, step: int) -> Observation:
    def el(i: int, text: str, clickable: bool = True) -> UIElement:
        return UIElement(index=i, depth=1 if i else 0, parent=0 if i else None, text=text,
                         resource_id="", class_name="android.widget.TextView",
                         package="com.android.settings", content_desc="",
                         bounds=Bounds(0, 100 * i, 1080, 100 * i + 90), clickable=clickable)

    return Observation(instruction=instruction, screen_size=(1080, 2400), step=step,
                       elements=[el(0, "", False), el(1, "Wi-Fi"), el(2, "Bluetooth")])


def make_traj(i: int, *, farm: str = "farm1", version: int = 0, steps: int = 2,
              **kw: Any) -> TrajectoryMsg:
    instr = ("Turn off Wi-Fi", "Turn on Bluetooth")[i % 2]
    ds = BEHAVIOUR.decide([observation(instr, s) for s in range(steps)])
    ok = ds[-1].choice is not None and ds[-1].choice["label"] in instr
    msg = TrajectoryMsg(
        id=f"t{i:04d}", farm_id=farm, device_id="sim-0", task="toggle", instruction=instr,
        status="success" if ok else "failure", reward=1.0 if ok else 0.0,
        steps=[StepMsg(index=s, action={"type": "tap", "x": 540, "y": 150}, reward=0.0,
                       log_prob=d.log_prob, policy_version=version, obs=d.obs, choice=d.choice)
               for s, d in enumerate(ds)])
    return msg.model_copy(update=kw)


def config(broker: EmbeddedBroker, run_dir: Path, **kw: Any) -> LearnerConfig:
    base: dict[str, Any] = dict(
        broker_url=broker.url, run_dir=run_dir, algorithm="aride", algo_config=ALGO,
        policy_kind="uitree", policy_config=POLICY, checkpoint_every_s=3600,
        metrics_every_s=0.2, client_id="learner-test", torch_threads=1)
    return LearnerConfig(**(base | kw))


def farm(broker: EmbeddedBroker, spool: Path) -> Publisher:
    """A farm as `farm up` makes one: it signs with the local farm key, which
    `distrl learner` (test_killed_learner_…) trusts by default."""
    from farm.keys import farm_signing_key

    return Publisher(broker.url, "farm1", spool, backoff=Backoff(0.05, 0.5), resend_after_s=5,
                     signer=farm_signing_key())


async def until(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - polls state owned by other tasks
            await asyncio.sleep(0.02)


async def start(svc: LearnerService) -> asyncio.Task[dict[str, Any]]:
    task = asyncio.create_task(svc.run())
    done, _ = await asyncio.wait([task, asyncio.create_task(svc.ready.wait())], timeout=60,
                                 return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        task.result()  # raises what went wrong
    assert svc.ready.is_set()
    return task


def replay_ids(svc: LearnerService) -> list[str]:
    return [e.episode.id for e in svc.trainer.replay.entries()]  # type: ignore[union-attr]


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


async def test_learns_publishes_and_a_farm_hot_swaps(broker: EmbeddedBroker,
                                                     tmp_path: Path) -> None:
    svc = LearnerService(config(broker, tmp_path / "run"))
    task = await start(svc)
    async with LearnedPolicyProvider(broker.url) as provider, \
            farm(broker, tmp_path / "spool") as pub:
        assert await provider.wait_ready(30) == 0  # the initial policy, before any update
        for i in range(8):
            await pub.publish(make_traj(i))
        assert await pub.wait_acked(30)
        await until(lambda: svc.published_version >= 1)
        await provider.subscriber.wait_version(1, timeout=30)
        # metrics are retained on the learner topic as a Metrics envelope; the retained
        # one can predate the first update's figures (a tick every 0.2 s), so read on
        # until a tick carries them
        want = {"success_rate", "replay_size", "policy_lag_max", "updates_per_s",
                "trajectories_per_min"}
        host, port = broker.url.removeprefix("mqtt://").split(":")
        seen: list[set[str]] = []
        async with aiomqtt.Client(host, int(port)) as c:
            await c.subscribe(topics.learner_metrics(), qos=1)
            async with asyncio.timeout(10):
                async for m in c.messages:
                    parsed = parse_message(str(m.topic), m.payload)
                    assert isinstance(parsed, Message) and isinstance(parsed.body, Metrics)
                    seen.append(set(parsed.body.scalars))
                    if want <= seen[-1]:
                        break
        assert want <= seen[-1], seen
        svc.stop()
        summary = await asyncio.wait_for(task, 60)
        final = summary["published_version"]
        assert final == summary["version"] >= 1 and summary["updates"] >= 1
        await provider.subscriber.wait_version(final, timeout=30)
        agent = provider.agent
        assert agent is not None and agent.version == final
        assert same(agent.policy.weights(), svc.trainer.policy.weights())  # type: ignore[union-attr]
        d = await agent.act(observation("Turn off Wi-Fi", 0))
        assert d.policy_version == final
    assert summary["received"] == summary["episodes"] == summary["replay_size"] == 8
    assert summary["rejected"] == {} and summary["duplicates"] == 0
    scal = tmp_path / "run" / "scalars.jsonl"
    tags = {r["tag"] for r in read_scalars(scal)}
    assert {"success_rate", "return_mean", "replay_size", "policy_lag_avg",
            "policy/published_version"} <= tags
    assert any(t.startswith("train/") for t in tags)
    assert export_csv(scal, tmp_path / "s.csv", tags=["replay_size"]) >= 1
    # the same scalars as TensorBoard event files (the tensorboard package is a dev dep)
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))
    ckpts = sorted((tmp_path / "run" / "checkpoints").glob("ckpt-*"))
    assert len(ckpts) == 1 and (ckpts[0] / "policy" / "policy.safetensors").is_file()
    # what it learned from, exported: JSON lines and a Hugging Face dataset
    from farm.cli import cli

    res = CliRunner().invoke(cli, ["traj", "export", str(tmp_path / "run"), "--format",
                                   "jsonl", "--out", str(tmp_path / "eps.jsonl")])
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "eps.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == [f"t{i:04d}" for i in range(8)]
    res = CliRunner().invoke(cli, ["traj", "export", str(tmp_path / "run"), "--out",
                                   str(tmp_path / "hf")])
    assert res.exit_code == 0 and "16 steps of 8 episodes" in res.output, res.output
    from distrl_sdk.learn.episodes_hf import from_hf

    assert {e.id for e in from_hf(tmp_path / "hf")} == {f"t{i:04d}" for i in range(8)}
    again = CliRunner().invoke(cli, ["traj", "export", str(tmp_path / "run"), "--out",
                                     str(tmp_path / "hf")])
    assert again.exit_code == 2 and "already exists" in again.output
    res = CliRunner().invoke(cli, ["traj", "export", str(tmp_path), "--out",
                                   str(tmp_path / "x")])
    assert res.exit_code == 2 and "not a learner run dir" in res.output
    (tmp_path / "wrong.toml").write_text("[algo_config]\ncritic_hidden = 64\n")
    res = CliRunner().invoke(cli, ["traj", "export", str(tmp_path / "run"), "--config",
                                   str(tmp_path / "wrong.toml"), "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "no checkpoint loads" in res.output  # never an empty export
    assert not (tmp_path / "y").exists()


@pytest.mark.slow
async def test_a_two_process_learner_learns_and_its_worker_follows(broker: EmbeddedBroker,
                                                                   tmp_path: Path) -> None:
    """`distrl learner --nproc 2`: a spawned worker rank takes half of every update's
    policy passes; the learner trains, publishes and checkpoints as alone, the worker's
    parameters stay the leader's (it would otherwise diverge at once), and it is gone
    when the learner stops."""
    import psutil

    svc = LearnerService(config(broker, tmp_path / "run", nproc=2))
    task = await start(svc)
    assert svc._workers is not None
    worker = svc._workers.procs[0]
    assert worker.is_alive() and svc.trainer.parallel is not None  # type: ignore[union-attr]
    async with farm(broker, tmp_path / "spool") as pub:
        for i in range(8):
            await pub.publish(make_traj(i))
        assert await pub.wait_acked(30)
        await until(lambda: svc.updates >= 3)
    svc.stop()
    summary = await asyncio.wait_for(task, 60)
    assert summary["updates"] >= 3 and summary["published_version"] == summary["version"] >= 1
    assert summary["received"] == summary["episodes"] == 8
    worker.join(10)
    assert not worker.is_alive() and worker.exitcode == 0
    assert not [c for c in psutil.Process().children(recursive=True)
                if "rank" in " ".join(c.cmdline())]


async def test_restart_resumes_replay_version_and_dedupe(broker: EmbeddedBroker,
                                                         tmp_path: Path) -> None:
    cfg = config(broker, tmp_path / "run", checkpoint_every_s=0.5, keep_checkpoints=2)
    a = LearnerService(cfg)
    task = await start(a)
    async with farm(broker, tmp_path / "spool") as pub:
        first = [make_traj(i) for i in range(6)]
        for m in first:
            await pub.publish(m)
        assert await pub.wait_acked(30)
        await until(lambda: a.episodes == 6 and a.checkpoints >= 2)
        a.stop()
        sa = await asyncio.wait_for(task, 60)
        assert sa["replay_size"] == 6
        assert len(list((tmp_path / "run" / "checkpoints").glob("ckpt-*"))) == 2  # last 2

        # learner down: the farm keeps sending, including two redeliveries of old ids
        for i in range(6, 10):
            await pub.publish(make_traj(i))
        for m in first[:2]:
            await pub.publish(m)
        await asyncio.sleep(0.3)

        b = LearnerService(cfg)
        task = await start(b)
        assert b.restored_from is not None
        assert b.restored["replay_size"] == 6 and b.restored["version"] == sa["version"]
        assert b.restored["seen_ids"] == 6
        assert await pub.wait_acked(30)  # queued for the persistent session while down
        await until(lambda: b.received == 10 and b.subscriber is not None
                    and b.subscriber.duplicates >= 2)
        b.stop()
        sb = await asyncio.wait_for(task, 60)
    assert sb["received"] == sb["episodes"] == 10 and sb["duplicates"] >= 2
    ids = replay_ids(b)
    assert sorted(ids) == [f"t{i:04d}" for i in range(10)]  # nothing lost, nothing twice
    assert sb["version"] >= sa["version"]


def test_an_older_result_never_overwrites_the_replay_size(tmp_path: Path) -> None:
    """The training loop and the checkpoint task await the trainer thread separately, so
    their results can be merged out of order (a fresh-clone CI run once reported a
    replay of 4 after 6 episodes at stop, from a checkpoint merged after a later step)."""
    from farm.learner.service import _StepResult

    svc = LearnerService(LearnerConfig(broker_url="mqtt://127.0.0.1:1", run_dir=tmp_path))
    svc._merge(_StepResult(accepted=2, replay=6, seq=2))  # the newer reading first
    svc._merge(_StepResult(accepted=4, replay=4, seq=1))  # then the older one
    assert svc._replay == 6 and svc.episodes == 6  # episodes still all counted
    svc._merge(_StepResult(replay=3, seq=3))  # a newer, smaller replay (pruned) wins
    assert svc._replay == 3


async def test_hostile_trajectories_are_rejected_and_counted(broker: EmbeddedBroker,
                                                             tmp_path: Path) -> None:
    svc = LearnerService(config(broker, tmp_path / "run",
                                max_trajectory_bytes=4 * 1024 * 1024))
    task = await start(svc)
    host, port = broker.url.removeprefix("mqtt://").split(":")

    def traj_topic(tid: str, farm_id: str = "farm1") -> str:
        return topics.traj(farm_id, tid)

    def framed(header: bytes) -> bytes:
        return b"DRT1" + struct.pack(">I", len(header)) + header

    def chunked(tid: str, payload: bytes) -> list[tuple[str, bytes]]:
        return [(traj_topic(tid), c) for c in split_chunks(tid, payload)]

    wrong_schema = Envelope(schema="metrics", version=1, id="h4", codec="distrl-traj/1",
                            body={"source": "x"}).model_dump_json(by_alias=True).encode()
    bad_body = Envelope(schema="trajectory", version=1, id="h5", codec="distrl-traj/1",
                        body={"id": "h5", "task": "x"}).model_dump_json(by_alias=True).encode()
    huge_header = json.dumps({"m": "h6", "i": 0, "n": 10_000, "t": 10**10, "h": "0" * 64},
                             separators=(",", ":")).encode()
    hostile: list[tuple[str, bytes]] = [
        (traj_topic("h1"), b"\x00garbage, not even a chunk"),
        *chunked("h2", b"{not a trajectory payload"),
        *chunked("h3", framed(b"{bad json")),
        *chunked("h4", framed(wrong_schema)),
        *chunked("h5", framed(bad_body)),
        (traj_topic("h6"), b"DRK1" + struct.pack(">H", len(huge_header)) + huge_header + b"x"),
        (traj_topic("h7"), b"DRK1" + os.urandom(1_500_000)),  # over the 1 MB chunk bound
        *chunked("h8", encode_trajectory(make_traj(8, farm="farm2", id="h8"))),  # wrong farm
        (topics.traj("farm1", "h9"), encode_envelope(Metrics(source="x"))),
        *chunked("u1", encode_trajectory(make_traj(1, id="u1", status="aborted"))),
        *chunked("u2", encode_trajectory(make_traj(2, id="u2").model_copy(update={
            "steps": [StepMsg(index=0, action=None, reward=0.0)]}))),
    ]
    async with aiomqtt.Client(host, int(port)) as c:
        for topic, payload in hostile:
            await c.publish(topic, payload, qos=1)
    async with farm(broker, tmp_path / "spool") as pub:
        for i in range(4):
            await pub.publish(make_traj(i))
        assert await pub.wait_acked(30)
        await until(lambda: svc.updates >= 2, 90)  # training goes on (slow on a busy box)
    rejects = svc.subscriber.rejects  # type: ignore[union-attr]
    await until(lambda: sum(rejects.values()) >= 9)
    m = svc.metrics()
    svc.stop()
    summary = await asyncio.wait_for(task, 60)
    assert rejects["bad_chunk"] >= 2 and rejects["bad_payload"] >= 1
    assert rejects["bad_json"] == 1 and rejects["wrong_schema"] == 1
    assert rejects["bad_body"] == 2 and rejects["too_large"] >= 2
    assert m["rejected_total"] >= 9 and m["rejected/too_large"] >= 2
    assert summary["unlearnable"] == {"status_aborted": 1, "no_policy_data": 1}
    assert summary["episodes"] == summary["replay_size"] == 4


@pytest.mark.slow
async def test_killed_learner_and_restarted_farm_lose_nothing(broker: EmbeddedBroker,
                                                              tmp_path: Path) -> None:
    """SIGKILL the learner (a `distrl learner` process) before any checkpoint, crash the
    farm while it holds unacked trajectories, restart both: every trajectory is learned
    exactly once and published versions keep increasing."""
    run = tmp_path / "run"
    cfg_file = tmp_path / "learner.toml"
    cfg_file.write_text(
        f'broker_url = "{broker.url}"\nrun_dir = "{run}"\nclient_id = "learner-kill"\n'
        "checkpoint_every_s = 3600\nmetrics_every_s = 0.5\ntorch_threads = 1\n"
        f"[algo_config]\nmin_episodes = 4\nbatch_episodes = 4\ncritic_hidden = 16\n"
        f"capacity = 1000\n[policy_config]\nbuckets = 256\nembed_dim = 8\nhidden = 8\n")
    # its output goes to a file: a pipe nobody reads fills up and blocks the learner
    err = (tmp_path / "learner.err").open("wb")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "farm.cli", "learner", "--config", str(cfg_file), cwd=REPO,
        stdout=err, stderr=err)
    watch = WeightSubscriber(broker.url, lambda w, p: None)
    began = time.monotonic()

    def mark(step: str) -> None:  # shown if it fails: which step took the time
        print(f"{time.monotonic() - began:7.1f}s {step}")

    try:
        async with watch:
            await watch.wait_version(0, timeout=90)  # the learner is up and subscribed
            mark("learner up (v0)")
            spool = tmp_path / "spool"
            pub = farm(broker, spool)
            await pub.start()
            for i in range(10):
                await pub.publish(make_traj(i))
            assert await pub.wait_acked(30)
            mark("10 acked")
            await watch.wait_version(1, timeout=60)  # it trained on them
            mark("v1 published")
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            killed_at = watch.version
            mark("learner killed")
            assert not list((run / "checkpoints").glob("ckpt-*"))  # only the journal has them

            for i in range(10, 15):  # collected while the learner is dead …
                await pub.publish(make_traj(i))
            await pub.stop(graceful=False)  # … then the farm crashes too
            assert len(Spool(spool)) == 5
            mark("farm crashed")

            svc = LearnerService(config(broker, run, client_id="learner-kill"))
            task = await start(svc)
            mark("learner restarted")
            assert svc.restored["journal_episodes"] == 10 and svc.restored["replay_size"] == 10
            async with farm(broker, spool) as pub2:  # the farm restarts from its spool
                assert await pub2.wait_acked(30)
                mark("farm restarted, spool acked")
            await until(lambda: svc.received == 15)
            mark("15 received")
            await watch.wait_version(killed_at + 1, timeout=30)
            mark("new version published")
            svc.stop()
            summary = await asyncio.wait_for(task, 60)
            mark("learner stopped")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        err.close()
    assert sorted(replay_ids(svc)) == [f"t{i:04d}" for i in range(15)]
    assert summary["episodes"] == 15
    assert summary["version"] > killed_at and watch.refused == {}


def test_cli_refuses_bad_input_without_a_traceback(tmp_path: Path) -> None:
    from farm.cli import cli

    bad = tmp_path / "bad.toml"
    bad.write_text("publish_every = 0\nalgo = 'x'\n")
    r = CliRunner().invoke(cli, ["learner", "--config", str(bad)])
    assert r.exit_code == 2 and "publish_every" in r.output and "algo" in r.output
    assert "Traceback" not in r.output
    (tmp_path / "toml.toml").write_text("[learner\n")
    r = CliRunner().invoke(cli, ["learner", "--config", str(tmp_path / "toml.toml")])
    assert r.exit_code == 2 and "TOML syntax error" in r.output  # as the farm says it
    r = CliRunner().invoke(cli, ["learner", "--broker", "mqtt://127.0.0.1:1",
                                 "--run-dir", str(tmp_path / "r"), "--duration", "1"])
    assert r.exit_code == 2 and "cannot reach the MQTT broker" in r.output


@pytest.mark.slow
async def test_farm_plays_learned_policy_on_sim_phones(broker: EmbeddedBroker,
                                                       tmp_path: Path) -> None:
    """`farm up --policy learned` in-process: sim phones play the learner's versions
    (hot-swapped between episodes); every trajectory reaches the learner once and every
    step records the version that chose it."""
    from distrl_sdk.registry import TaskRegistry
    from farm.controller import FarmConfig, FarmController
    from farm.device.lifecycle import LifecycleConfig
    from farm.keys import trusted_learners
    from farm.sim.adbhost import PrivateAdbServer
    from farm.sim.background import BackgroundFarm

    fast = LifecycleConfig(heartbeat_s=0.2, reaper_s=1.5, probe_timeout_s=0.5,
                           boot_timeout_s=5, boot_poll_s=0.1, max_failures=3,
                           backoff_min_s=0.1, backoff_max_s=0.4, reconnect_timeout_s=1.0)
    reg = TaskRegistry.discover()
    tasks = [reg.get(n) for n in ("settings.wifi_off", "settings.open_display")]
    got: dict[str, list[int | None]] = {}
    svc = LearnerService(config(broker, tmp_path / "run", farm_id="f1",
                                algo_config=ALGO | {"min_episodes": 2, "batch_episodes": 2},
                                publish_every=2))
    original = svc._on_trajectory

    def spy(decoded: Any) -> Any:  # what the learner received, step versions included
        got[decoded.msg.id] = [s.policy_version for s in decoded.msg.steps]
        return original(decoded)  # the durability wait the subscriber acks after

    svc._on_trajectory = spy  # type: ignore[method-assign]
    task = await start(svc)
    with BackgroundFarm(2, seed=3) as sims, PrivateAdbServer() as adb:
        # as `farm up` and `distrl learner` on one host: both default to the local
        # learner key, the learner signing and the farm accepting only what it signed
        trusted = trusted_learners()
        async with LearnedPolicyProvider(broker.url, client_id="f1-weights",
                                         trusted=trusted) as provider:
            await provider.wait_ready(30)
            ctl = FarmController(FarmConfig(
                broker_url=broker.url, farm_id="f1", adb_port=adb.port, devices=sims.serials,
                tasks=tasks, policy="learned", duration_s=10.0, spool_dir=tmp_path / "spool",
                lifecycle=fast, flush_timeout_s=20.0, episode_timeout_s=20.0,
                trusted_learners=trusted), policies=provider)
            stats = await asyncio.wait_for(ctl.run(), 120)
    svc.stop()
    summary = await asyncio.wait_for(task, 60)
    assert stats.episodes > 0 and ctl.flushed is True
    assert set(got) == set(ctl.sink.ids) and summary["duplicates"] == 0
    played = {v for vs in got.values() for v in vs}
    assert None not in played and len(played) >= 2  # versions were swapped in during the run
    assert all(len(set(vs)) <= 1 for vs in got.values())  # one version per episode
    assert provider.swaps >= 2 and provider.refused == {}
    assert ctl.publisher.rejects == {}  # every ack was the learner's, signed
    learnable = sum(1 for s in ("success", "failure") for _ in range(stats.by_status[s]))
    assert summary["episodes"] == learnable and summary["updates"] >= 1


def test_the_ui_tree_policy_gets_the_measured_trainer_settings_by_default() -> None:
    """`distrl learner` by hand must learn as the demo does: the UI-tree settings are the
    learner's defaults (the demo no longer writes its own), algo_config still wins, and a
    VLM keeps the trainers' paper defaults."""
    from distrl_sdk.learn.aride import ARIDEConfig
    from distrl_sdk.policies import build_policy
    from farm.demo import learner_toml
    from farm.learner.service import LearnerConfig, default_trainer

    ui = build_policy("uitree", {"seed": 0})
    t = default_trainer(ui, LearnerConfig())
    assert (t.config.actor_lr, t.config.entropy_coef, t.config.max_policy_lag,
            t.config.actor_dropout, t.config.sil_coef, t.config.alpha,
            t.config.advantage_floor) == (3e-4, 0.01, 1000, True, 1.0, 0.0, 0.0)
    t = default_trainer(ui, LearnerConfig(algo_config={"actor_lr": 5e-4}))
    assert t.config.actor_lr == 5e-4 and t.config.critic_lr == 1e-3
    t = default_trainer(ui, LearnerConfig(algorithm="digirl"))
    assert t.config.actor_lr == 3e-4 and t.config.actor_dropout
    # the benchmark's RL arms read the same settings (its figures are the defaults')
    from bench.training_efficiency import LEARNER
    from farm.learner.service import KIND_ALGO_DEFAULTS

    assert LEARNER is KIND_ALGO_DEFAULTS["uitree"]["aride"]
    assert "algo_config" not in learner_toml() and "lr" not in learner_toml()
    assert LearnerConfig().publish_every == 5
    from farm.learner.service import effective_algo_config

    assert effective_algo_config("vlm", "aride", {}) == {}
    assert ARIDEConfig().actor_lr == 1e-4  # the paper's, for a pretrained VLM
    assert ARIDEConfig().advantage_floor is None  # … with the paper's signed advantage


def test_a_learner_file_turns_optional_trainer_knobs_off_with_none(tmp_path: Path) -> None:
    """TOML has no null, so a learner file spells "no lag bound" or "a fixed β" as the
    bench's flags do ("none"); the trainer gets None, not a string that fails a
    comparison, and a non-optional knob given "none" is still a clear config error."""
    from distrl_sdk.errors import ConfigError
    from farm.learner.service import default_trainer
    from farm.learner.settings import load_learner_settings

    ui = build_policy("uitree", {"seed": 0})
    (tmp_path / "l.toml").write_text(
        '[learner.algo_config]\nmax_policy_lag = "none"\nentropy_target = "none"\n'
        'max_stale_share = "None"\nactor_ratio = "none"\n')
    cfg = load_learner_settings(tmp_path / "l.toml", env={}).config
    t = default_trainer(ui, cfg)
    assert (t.config.max_policy_lag, t.config.entropy_target,
            t.config.max_stale_share) == (None, None, None)
    assert t.config.actor_ratio == "none"  # a mode of its own, not None
    assert t.replay.max_lag is None
    (tmp_path / "bad.toml").write_text('[learner.algo_config]\ngamma = "none"\n')
    with pytest.raises(ConfigError, match="gamma must be a number"):
        default_trainer(ui, load_learner_settings(tmp_path / "bad.toml", env={}).config)


def test_the_documented_digirl_rule_learner_file_builds_that_trainer(tmp_path: Path) -> None:
    """docs/aride.md's learner file for DigiRL-style's rule inside A-RIDE's trainer loads
    as written and sets what the bench's batch 19–20 flags set."""
    import re

    from farm.learner.service import default_trainer
    from farm.learner.settings import load_learner_settings

    doc = (Path(__file__).parents[2] / "docs" / "aride.md").read_text()
    block = re.search(r"### DigiRL-style's rule inside.*?```toml\n(.*?)```", doc, re.S)
    assert block is not None
    (tmp_path / "l.toml").write_text(block.group(1))
    c = default_trainer(build_policy("uitree", {"seed": 0}),
                        load_learner_settings(tmp_path / "l.toml", env={}).config).config
    assert (c.step_critic, c.gamma, c.actor_ratio, c.binarize_advantage,
            c.traj_filter_quantile, c.traj_filter_mode, c.entropy_coef, c.entropy_target,
            c.sil_coef, c.max_policy_lag, c.keep_successes) \
        == ("mc_classifier", 0.5, "none", True, 0.9, "buffer", 0.0, None, 0.0, None, True)
    assert c.actor_lr == 3e-4  # the UI-tree learner's other settings stay


@pytest.mark.parametrize("algorithm", ["aride", "digirl"])
def test_the_benchmarks_trainers_are_the_learners_by_default(algorithm: str) -> None:
    """bench/training_efficiency.py's figures stand for `distrl learner`'s: with no flag
    its trainers carry every setting the UI-tree learner sets (the bench once kept the
    paper's lag bound K = 50 where the learner's is 1000)."""
    from bench.training_efficiency import build_parser, make_trainer
    from distrl_sdk.policies import build_policy
    from farm.learner.service import KIND_ALGO_DEFAULTS, LearnerConfig, default_trainer

    policy = build_policy("uitree", {"seed": 0})
    bench = make_trainer(algorithm, policy, build_parser().parse_args([]), 0)
    learner = default_trainer(policy, LearnerConfig(algorithm=algorithm))
    keys = KIND_ALGO_DEFAULTS["uitree"][algorithm]
    assert {k: getattr(bench.config, k) for k in keys} \
        == {k: getattr(learner.config, k) for k in keys}  # type: ignore[attr-defined]


def test_the_dedupe_watermark_survives_a_checkpoint(tmp_path: Path) -> None:
    """The learner's ids, their ages and the watermark go into the checkpoint's
    seen_ids.txt and come back on restore (the subscriber shares the same memory)."""
    from farm.learner.service import LearnerConfig, LearnerService
    from farm.transport import SeenIds

    svc = LearnerService(LearnerConfig(run_dir=tmp_path / "run"))
    svc._ids = SeenIds(capacity=2)
    for i, at in enumerate([5.0, 6.0, 7.0]):
        svc._remember(f"t{i}", at)
    text = svc._ids.dump()
    assert text.splitlines()[0] == "#watermark 5.0" and "t2\t7.0" in text
    back = SeenIds(capacity=2)
    back.load_text(text)
    assert list(back) == ["t1", "t2"] and back.forgotten(5.0) and not back.forgotten(6.5)

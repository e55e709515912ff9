"""A trained UI-tree checkpoint completes a task through ``distrl deploy`` on a sim phone.

The policy is trained here by behaviour cloning of the task's oracle on the same kind of
phone (seconds on a CPU; the learner's A-RIDE run takes minutes), saved with
``save_policy`` and deployed greedily from the checkpoint directory, like a user would.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from distrl_sdk.actions import Complete, OpenApp, Tap
from distrl_sdk.policy import Observation, OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.runner import run_episode
from farm.cli import cli

pytestmark = pytest.mark.slow
uitree = pytest.importorskip("distrl_sdk.policies.uitree")


class Watching:
    """Passes the oracle's actions through, keeping what it saw."""

    name = "watching"

    def __init__(self, inner: Any) -> None:
        self.inner, self.seen = inner, []  # type: list[tuple[Observation, Any]]

    async def act(self, observation: Observation) -> Any:
        action = await self.inner.act(observation)
        self.seen.append((observation, action))
        return action


def candidate_for(enc: dict[str, Any], action: Any) -> int:
    """The index of the candidate that does what the oracle did."""
    best: tuple[float, int] | None = None
    for k, c in enumerate(enc["c"]):
        if isinstance(action, Tap) and c[0] == "tap":
            left, top, right, bottom = c[5:9]
            if left <= action.x <= right and top <= action.y <= bottom:
                area = (right - left) * (bottom - top)
                best = min(best or (area, k), (area, k))
        elif (isinstance(action, OpenApp) and c[0] == "open_app"
              and c[1].lower() == action.app_name.lower()) \
                or (isinstance(action, Complete) and c[0] == "complete"):
            return k
    assert best is not None, (action, enc["c"])
    return best[1]


def clone_oracle(device: Any, task_name: str, out: Path) -> Path:
    import torch

    from distrl_sdk.learn import StepRecord
    from distrl_sdk.policies import save_policy

    task = TaskRegistry.discover().get(task_name).sample(random.Random(0), "test")
    watch = Watching(OraclePolicy(task.oracle(device)))
    traj = asyncio.run(run_episode(task, device, watch))
    assert traj.status.value == "success", traj.error
    policy = uitree.UITreePolicy.from_config({"seed": 0})
    records = []
    for obs, action in watch.seen:
        enc = uitree.encode_observation(obs, policy.config)
        records.append(StepRecord(obs=enc, choice={"index": candidate_for(enc, action)},
                                  log_mu=0.0, reward=0.0, policy_version=0))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny batches: threads only contend on a shared box
    try:
        opt = torch.optim.Adam(policy.trainable_parameters(), lr=3e-2)
        for _ in range(300):
            lp = policy.evaluate(records).log_prob
            if float(lp.detach().min()) > -0.05:  # each oracle step is the clear greedy pick
                break
            opt.zero_grad()
            (-lp.mean()).backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    assert float(policy.evaluate(records).log_prob.detach().min()) > -0.05
    return save_policy(policy, out, version=7)


def test_trained_checkpoint_completes_wifi_off(sim_adb_device: Any, private_adb: Any,
                                               tmp_path: Path) -> None:
    ckpt = clone_oracle(sim_adb_device, "settings.wifi_off", tmp_path / "ckpt")
    out = tmp_path / "run"
    res = CliRunner().invoke(cli, [
        "deploy", "Turn off Wi-Fi", "--device", sim_adb_device.serial, "--adb-port",
        str(private_adb.port), "--policy", str(ckpt), "--task", "settings.wifi_off",
        "--settle", "0.05", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["policy"].startswith("uitree@v7")
    assert summary["success"] is True and summary["stop_reason"] == "completed", summary
    assert all(s["log_prob"] is not None for s in summary["steps"])
    dev = private_adb.client().device(sim_adb_device.serial)
    assert dev.shell("settings get global wifi_on").strip() == "0"
    assert (out / "episode.gif").is_file() and (out / "episode.mp4").is_file()


def test_the_published_policy_is_fetched_from_the_broker_and_deployed(
        sim_adb_device: Any, private_adb: Any, tmp_path: Path) -> None:
    """``--policy published --broker URL`` (what the TUI's `d` builds): the newest
    version a learner published, fetched and verified as a farm takes it, then played."""
    from distrl_sdk.policies import load_policy
    from farm.broker import EmbeddedBroker, find_mosquitto
    from farm.keys import learner_signing_key
    from farm.learner.weights import MqttLink, WeightPublisher

    if find_mosquitto() is None:  # the CLI runs its own event loop: the broker must not
        pytest.skip("needs mosquitto")  # live on this test's (amqtt is in-process)
    ckpt = clone_oracle(sim_adb_device, "settings.wifi_off", tmp_path / "ckpt")
    policy, _ = load_policy(ckpt)
    broker = EmbeddedBroker(backend="mosquitto")

    async def publish() -> None:
        await broker.start()
        async with MqttLink(broker.url) as link:
            # signed with the local learner key, as `distrl learner` on this host does
            pub = WeightPublisher(link, signer=learner_signing_key())
            untrained = uitree.UITreePolicy.from_config({"seed": 1})
            await pub.publish(untrained.weights(), 3, kind="uitree",
                              config=untrained.config_dict())
            await pub.publish(policy.weights(), 12, kind="uitree",
                              config=policy.config_dict())  # the newest wins

    try:
        asyncio.run(publish())
        res = CliRunner().invoke(cli, [
            "deploy", "--device", sim_adb_device.serial, "--adb-port", str(private_adb.port),
            "--policy", "published", "--broker", broker.url, "--task", "settings.wifi_off",
            "--settle", "0.05", "--out", str(tmp_path / "run"), "--json",
            "--fetch-timeout", "30"])
    finally:
        asyncio.run(broker.close())
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["policy"] == "published v12", summary["policy"]
    assert summary["success"] is True, summary
    dev = private_adb.client().device(sim_adb_device.serial)
    assert dev.shell("settings get global wifi_on").strip() == "0"


def test_published_without_a_broker_is_a_usage_error() -> None:
    res = CliRunner().invoke(cli, ["deploy", "--device", "x", "--policy", "published",
                                   "Turn off Wi-Fi"])
    assert res.exit_code == 2 and "--broker" in res.output

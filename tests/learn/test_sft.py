"""Behaviour cloning from oracle demonstrations recorded on live sim phones: SFT raises
the oracle action's likelihood on HELD-OUT (test split) instances, for the UI-tree
policy and the tiny VLM (LoRA, its chat format); the checkpoint is what `distrl deploy`
and `distrl learner --init` load."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner

from distrl_sdk.learn.demos import read_demos
from distrl_sdk.learn.sft import SFTConfig, evaluate_steps, sft_examples, train_sft
from distrl_sdk.policies import build_policy, load_policy, save_policy
from farm.cli import cli

pytestmark = pytest.mark.slow
TINY_UITREE: dict[str, Any] = {"buckets": 4096, "embed_dim": 16, "hidden": 32, "seed": 0}


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The easy tier's oracle on two sim phones: 2 train episodes per task, 1 test."""
    d = tmp_path_factory.mktemp("demos") / "easy"
    for split, k in (("train", "2"), ("test", "1")):
        r = CliRunner().invoke(cli, ["demos", "record", "--tag", "easy", "--split", split,
                                     "-k", k, "--sim", "2", "--out", str(d), "--append",
                                     "--seed", "1"])
        assert r.exit_code == 0, r.output
    return d


def test_record_cli_summary_and_refusals(demos: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["demos", "show", str(demos), "--json"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)
    assert m["splits"] == {"train": 20, "test": 10} and len(m["tasks"]) == 10
    # instances differ between splits: the held-out ones are really held out
    eps = list(read_demos(demos, frames=False))
    train = {(e.task, e.instruction) for e in eps if e.split == "train"}
    test = {(e.task, e.instruction) for e in eps if e.split == "test"}
    assert not train & test
    for args, msg in ((["--tag", "easy", "--out", str(tmp_path / "x")], "exactly one of"),
                      (["--tag", "nope", "--sim", "1", "--out", str(tmp_path / "x")], "no task"),
                      (["--tag", "easy", "--sim", "1", "--out", str(demos)], "already holds")):
        r = CliRunner().invoke(cli, ["demos", "record", *args])
        assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output, r.output


def test_uitree_sft_raises_heldout_oracle_likelihood(demos: Path) -> None:
    policy = build_policy("uitree", TINY_UITREE)
    train, skipped = sft_examples(policy, read_demos(demos, split="train"))
    held, skipped_te = sft_examples(policy, read_demos(demos, split="test"))
    assert skipped == skipped_te == 0 and len(train) >= 60 and len(held) >= 30
    report = train_sft(policy, train, held, SFTConfig(epochs=30, lr=3e-3, batch_size=32))
    before, after = report["before"]["heldout"], report["after"]["heldout"]
    print(json.dumps({"before": before, "after": after}))
    assert after["nll"] < 0.5 * before["nll"], (before, after)
    assert after["accuracy"] >= before["accuracy"] + 0.3 and after["accuracy"] >= 0.75
    # the report's figures are the policy's own: recomputed from its weights
    assert math.isclose(evaluate_steps(policy, held)["nll"], after["nll"], rel_tol=1e-5)


def test_sft_cli_checkpoint_loads_in_deploy(demos: Path, tmp_path: Path) -> None:
    out = tmp_path / "ckpt"
    r = CliRunner().invoke(cli, ["sft", "--demos", str(demos), "--epochs", "25",
                                 "--policy-config", json.dumps(TINY_UITREE),
                                 "--out", str(out), "--json", "--threads", "1"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    assert report["after"]["heldout"]["accuracy"] > report["before"]["heldout"]["accuracy"]
    assert json.loads((out / "sft_report.json").read_text())["after"] == report["after"]
    policy, version = load_policy(out)
    assert policy.kind == "uitree" and version == 0
    # --init continues from it (and refuses a kind mismatch, exit 2)
    r = CliRunner().invoke(cli, ["sft", "--demos", str(demos), "--epochs", "1", "--init",
                                 str(out), "--out", str(tmp_path / "c2"), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["before"]["heldout"]["nll"] == pytest.approx(
        report["after"]["heldout"]["nll"], rel=1e-4)
    r = CliRunner().invoke(cli, ["sft", "--demos", str(demos), "--policy", "vlm", "--init",
                                 str(out), "--out", str(tmp_path / "c3")])
    assert r.exit_code == 2 and "is a uitree policy" in r.output
    r = CliRunner().invoke(cli, ["sft", "--demos", str(tmp_path), "--out", str(tmp_path / "c")])
    assert r.exit_code == 2 and "not a demonstration dataset" in r.output
    # deploy plays it greedily on a sim phone, scored by the task (a train instance)
    from farm.sim.adbhost import PrivateAdbServer, bundled_adb
    from farm.sim.background import BackgroundFarm

    with BackgroundFarm(1, seed=2) as farm, PrivateAdbServer(bundled_adb()) as adb:
        adb.connect(farm.phones[0].serial)
        r = CliRunner().invoke(cli, ["deploy", "--device", farm.phones[0].serial, "--policy",
                                     str(out), "--task", "settings.bluetooth_on",
                                     "--adb-port", str(adb.port), "--no-record", "--settle",
                                     "0", "--out", str(tmp_path / "dep"), "--json"])
    assert r.exit_code in (0, 1), r.output  # it ran; 1 = the agent did not succeed
    assert "policy" in r.output


@pytest.fixture
async def broker() -> AsyncIterator[Any]:
    from farm.broker import EmbeddedBroker, find_mosquitto

    if find_mosquitto() is None:
        pytest.skip("no mosquitto binary")
    async with EmbeddedBroker(backend="mosquitto") as b:
        yield b


async def test_learner_init_starts_from_the_sft_checkpoint(broker: Any, demos: Path,
                                                          tmp_path: Path) -> None:
    from farm.learner.service import LearnerConfig, LearnerService
    from farm.learner.weights import LearnedPolicyProvider

    policy = build_policy("uitree", TINY_UITREE)
    train, _ = sft_examples(policy, read_demos(demos, split="train", frames=False))
    train_sft(policy, train, (), SFTConfig(epochs=3))
    ckpt = save_policy(policy, tmp_path / "sft")
    cfg = LearnerConfig.model_validate(dict(
        broker_url=broker.url, run_dir=tmp_path / "run", init_policy=ckpt, demos=[demos],
        algo_config={"min_episodes": 4, "batch_episodes": 4}, checkpoint_every_s=3600,
        client_id="learner-init", torch_threads=1))
    svc = LearnerService(cfg)
    task = asyncio.create_task(svc.run())
    try:
        # --demos: the train split's steps are the anchor, at the default weight
        await _until(lambda: svc.demo_steps > 0, 60)
        assert svc.demo_steps == len(train)
        assert svc.trainer.config.demo_coef == 0.5  # type: ignore[union-attr]
        async with LearnedPolicyProvider(broker.url) as provider:
            assert await provider.wait_ready(60) == 0
            agent = provider.agent
            assert agent is not None
            got, want = agent.policy.weights(), policy.weights()
            assert got.keys() == want.keys()
            assert all(torch.equal(got[k], want[k]) for k in want)
            assert agent.policy.config_dict() == policy.config_dict()
    finally:
        svc.stop()
        await asyncio.wait_for(task, 60)
    # a bad --init is a user error on the command line (exit 2, no traceback)
    r = CliRunner().invoke(cli, ["learner", "--init", str(tmp_path), "--broker", broker.url,
                                 "--run-dir", str(tmp_path / "r2"), "--duration", "1"])
    assert r.exit_code == 2 and "not a policy checkpoint" in r.output, r.output
    r = CliRunner().invoke(cli, ["learner", "--demos", str(tmp_path), "--broker", broker.url,
                                 "--run-dir", str(tmp_path / "r3"), "--duration", "1"])
    assert r.exit_code == 2 and "not a demonstration dataset" in r.output, r.output


async def _until(cond: Callable[[], bool], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # noqa: ASYNC110 - polls state the learner's task owns
            await asyncio.sleep(0.05)


def test_vlm_lora_sft_raises_heldout_likelihood(demos: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    # a random tiny model's output head is near zero and, frozen, caps every logit (its
    # input is normalised): the adapter also goes on lm_head here, unlike on a real
    # pretrained model, whose head already speaks the reply tokens
    from distrl_sdk.policies.vlm import VLMPolicy

    policy = build_policy("vlm", {
        "tiny": {"seed": 0}, "max_new_tokens": 16, "image_max_side": 64,
        "lora_target_modules": r".*(language_model.*\.(q_proj|k_proj|v_proj|o_proj)|lm_head)"})
    assert isinstance(policy, VLMPolicy)
    # one episode per task and split keeps the tiny model's CPU time to seconds
    seen: set[tuple[str, str]] = set()
    eps = []
    # in a fixed order: two sim phones record concurrently, so the dataset's order (and
    # with it which episodes a "first per task" pick takes) varies from run to run
    for ep in sorted(read_demos(demos), key=lambda e: (e.task, e.split, e.instruction)):
        if (ep.task, ep.split) not in seen and ep.task.startswith("settings."):
            seen.add((ep.task, ep.split))
            eps.append(ep)
    train, _ = sft_examples(policy, [e for e in eps if e.split == "train"][:4])
    held, _ = sft_examples(policy, [e for e in eps if e.split == "test"][:3])
    assert train[0].frame is not None and train[0].obs["image"]
    assert json.loads(train[0].choice["text"])["action_type"] == "open_app"
    base = {k: v.clone() for k, v in policy.model.state_dict().items() if "lora" not in k}
    report = train_sft(policy, train, held, SFTConfig(epochs=8, lr=2e-2, batch_size=4))
    before, after = report["before"]["heldout"], report["after"]["heldout"]
    print(json.dumps({"before": before, "after": after}))
    assert after["nll"] < 0.7 * before["nll"], (before, after)
    assert report["after"]["train"]["nll"] < 0.7 * report["before"]["train"]["nll"]
    after_state = policy.model.state_dict()
    assert all(torch.equal(after_state[k], v) for k, v in base.items())  # only LoRA moved
    # the checkpoint (adapter + config naming the base) rebuilds the same policy
    ckpt = save_policy(policy, tmp_path / "vlm")
    again, _ = load_policy(ckpt)
    assert evaluate_steps(again, held)["nll"] == pytest.approx(after["nll"], rel=1e-4)


@pytest.mark.parametrize("algo", ["aride", "digirl"])
def test_demonstration_anchor_pulls_the_actor_to_the_demonstrations(demos: Path,
                                                                   algo: str) -> None:
    """With demo_coef > 0 every actor update also clones the demonstrations: their NLL
    (on held-out steps too) falls from a uniform start, where the same updates without
    the anchor — replay holding only failed episodes — leave it where it was. The
    demonstrations never enter replay."""
    from distrl_sdk.learn.api import EpisodeRecord
    from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer
    from distrl_sdk.learn.digirl import DigiRLConfig, DigiRLTrainer

    def trainer(coef: float) -> Any:
        policy = build_policy("uitree", {**TINY_UITREE, "overlap_prior": 0.0})
        common = dict(actor_lr=3e-3, batch_episodes=4, min_episodes=4, demo_coef=coef,
                      demo_batch_steps=32)
        t = (ARIDETrainer(policy, ARIDEConfig(**common)) if algo == "aride"  # type: ignore[arg-type]
             else DigiRLTrainer(policy, DigiRLConfig(**common)))  # type: ignore[arg-type]
        train, _ = sft_examples(policy, read_demos(demos, split="train", frames=False))
        assert t.add_demonstrations(train) == len(train) > 0
        # replay: the same screens acted on uniformly at random, every episode failed
        rng = torch.Generator().manual_seed(0)
        for i, ep in enumerate(read_demos(demos, split="train", frames=False)):
            demo_steps, _ = sft_examples(policy, [ep])
            steps = [dataclasses.replace(
                s, choice={"index": int(torch.randint(len(s.obs["c"]), (1,), generator=rng))},
                log_mu=-math.log(len(s.obs["c"]))) for s in demo_steps]
            t.add_episode(EpisodeRecord(id=f"f{i}", task=ep.task, instruction=ep.instruction,
                                        steps=steps, success=False, reward=0.0))
        assert len(t.replay) == 20  # the failures only: demonstrations are kept apart
        return t

    for coef, expect_fall in ((1.0, True), (0.0, False)):
        t = trainer(coef)
        heldout, _ = sft_examples(t.policy, read_demos(demos, split="test", frames=False))
        before = evaluate_steps(t.policy, heldout)["nll"]
        for _ in range(30):
            m = t.update()
            assert ("demo_nll" in m) == (coef > 0)
        after = evaluate_steps(t.policy, heldout)["nll"]
        if expect_fall:
            assert after < before - 0.5, (algo, before, after)
        else:
            assert after > before - 0.2, (algo, before, after)

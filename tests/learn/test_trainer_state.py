"""Trainer checkpoints: save → load into a fresh trainer → training continues identically."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn import (
    ARIDEConfig,
    ARIDETrainer,
    DigiRLConfig,
    DigiRLTrainer,
    load_trainer_state,
    save_trainer,
)
from tests.learn.test_aride_toy import BanditPolicy, collect

CFG = ARIDEConfig(actor_lr=1e-2, critic_lr=3e-3, min_episodes=8, batch_episodes=8,
                  refresh_every=3, refresh_size=4, max_policy_lag=6)


def feed_and_train(trainer: ARIDETrainer | DigiRLTrainer, policy: BanditPolicy, rng_seed: int,
                   updates: int) -> list[dict[str, float]]:
    rng = np.random.default_rng(rng_seed)
    behaviour = copy.deepcopy(policy)
    out = []
    for _ in range(updates):
        for ep in collect(behaviour, trainer.version, 3, rng, frames=True):
            trainer.add_episode(ep)
        out.append(trainer.update())
    return out


def assert_same_trainer(a: ARIDETrainer | DigiRLTrainer, b: ARIDETrainer | DigiRLTrainer
                        ) -> None:
    ta, tb = a.state_tensors(), b.state_tensors()
    assert ta.keys() == tb.keys()
    for k in ta:
        assert torch.equal(ta[k], tb[k]), k
    assert a.version == b.version
    ea, eb = list(a.replay.entries()), list(b.replay.entries())
    assert [(e.slot, e.priority, e.seq, e.scored_at) for e in ea] == \
           [(e.slot, e.priority, e.seq, e.scored_at) for e in eb]
    assert [e.episode for e in ea] == [e.episode for e in eb]  # frames and all


def test_aride_round_trip_continues_identically(tmp_path: Path) -> None:
    policy = BanditPolicy(seed=5)
    trainer = ARIDETrainer(policy, CFG)
    feed_and_train(trainer, policy, 0, 7)
    assert trainer.actor_opt.state  # there is optimiser state to lose
    save_trainer(trainer, tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
        "replay.jsonl", "replay_frames.safetensors", "trainer.json", "trainer.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temporaries left behind

    fresh_policy = BanditPolicy(seed=99)  # different weights until loaded
    fresh = ARIDETrainer(fresh_policy, CFG)
    meta = load_trainer_state(fresh, tmp_path / "ckpt")
    assert meta["policy_kind"] == "toy-bandit"
    assert_same_trainer(trainer, fresh)

    after_a = feed_and_train(trainer, policy, 1, 5)
    after_b = feed_and_train(fresh, fresh_policy, 1, 5)
    assert after_a == after_b
    assert_same_trainer(trainer, fresh)


def test_digirl_round_trip(tmp_path: Path) -> None:
    cfg = DigiRLConfig(min_episodes=4, batch_episodes=4, actor_batch_episodes=4)
    policy = BanditPolicy(seed=6)
    trainer = DigiRLTrainer(policy, cfg)
    feed_and_train(trainer, policy, 0, 3)
    save_trainer(trainer, tmp_path / "d")
    fresh_policy = BanditPolicy(seed=7)
    fresh = DigiRLTrainer(fresh_policy, cfg)
    load_trainer_state(fresh, tmp_path / "d")
    assert_same_trainer(trainer, fresh)
    assert feed_and_train(trainer, policy, 1, 2) == feed_and_train(fresh, fresh_policy, 1, 2)


def test_resave_replaces_and_an_interrupted_swap_still_loads(tmp_path: Path) -> None:
    policy = BanditPolicy(seed=5)
    trainer = ARIDETrainer(policy, CFG)
    feed_and_train(trainer, policy, 0, 2)
    save_trainer(trainer, tmp_path / "ckpt")
    feed_and_train(trainer, policy, 1, 2)
    save_trainer(trainer, tmp_path / "ckpt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    # a crash between the two renames leaves only .ckpt.old: loading falls back to it
    os.replace(tmp_path / "ckpt", tmp_path / ".ckpt.old")
    fresh = ARIDETrainer(BanditPolicy(seed=8), CFG)
    load_trainer_state(fresh, tmp_path / "ckpt")
    assert fresh.version == trainer.version == 4


def test_bad_checkpoints_are_refused_with_a_reason(tmp_path: Path) -> None:
    trainer = ARIDETrainer(BanditPolicy(), CFG)
    with pytest.raises(ConfigError, match="not a trainer checkpoint"):
        load_trainer_state(trainer, tmp_path / "nothing")
    save_trainer(trainer, tmp_path / "ok")
    with pytest.raises(ConfigError, match="not DigiRL"):
        load_trainer_state(DigiRLTrainer(BanditPolicy()), tmp_path / "ok")
    meta = json.loads((tmp_path / "ok" / "trainer.json").read_text())
    meta["policy_kind"] = "vlm"
    (tmp_path / "ok" / "trainer.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="'vlm' policy"):
        load_trainer_state(trainer, tmp_path / "ok")
    (tmp_path / "ok" / "trainer.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ConfigError, match="unreadable"):
        load_trainer_state(trainer, tmp_path / "ok")

"""The append-only replay store: checkpoints that write only what is new, restore
identically, compact, and leave nothing a kept checkpoint needs to the garbage collector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn import ARIDEConfig, ARIDETrainer, load_trainer_state, save_trainer
from distrl_sdk.learn.state import gc_replay_store
from tests.learn.test_aride_toy import BanditPolicy
from tests.learn.test_trainer_state import CFG, assert_same_trainer, feed_and_train


def segment_lines(store: Path) -> dict[str, int]:
    return {p.stem: sum(1 for line in p.read_text().splitlines() if line.strip())
            for p in sorted(store.glob("seg-*.jsonl"))}


def index(ckpt: Path) -> dict:  # type: ignore[type-arg]
    return json.loads((ckpt / "replay_index.json").read_text())


def test_round_trip_through_the_store_continues_identically(tmp_path: Path) -> None:
    policy = BanditPolicy(seed=5)
    trainer = ARIDETrainer(policy, CFG)
    feed_and_train(trainer, policy, 0, 7)
    save_trainer(trainer, tmp_path / "ckpt", replay_store=tmp_path / "store")
    names = sorted(p.name for p in (tmp_path / "ckpt").iterdir())
    assert names == ["replay_index.json", "trainer.json", "trainer.safetensors"]

    fresh_policy = BanditPolicy(seed=99)
    fresh = ARIDETrainer(fresh_policy, CFG)
    load_trainer_state(fresh, tmp_path / "ckpt")
    assert_same_trainer(trainer, fresh)  # episodes with their frames, priorities, slots
    assert feed_and_train(trainer, policy, 1, 5) == feed_and_train(fresh, fresh_policy, 1, 5)


def test_each_save_appends_only_the_new_episodes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    policy = BanditPolicy(seed=1)
    trainer = ARIDETrainer(policy, ARIDEConfig(min_episodes=4, batch_episodes=4,
                                               capacity=1000, max_policy_lag=None))
    feed_and_train(trainer, policy, 0, 4)  # 3 episodes per update
    save_trainer(trainer, tmp_path / "c1", replay_store=store)
    assert sorted(segment_lines(store).values()) == [12]
    save_trainer(trainer, tmp_path / "c2", replay_store=store)  # nothing new: no segment
    assert len(segment_lines(store)) == 1
    feed_and_train(trainer, policy, 1, 2)
    save_trainer(trainer, tmp_path / "c3", replay_store=store)
    assert sorted(segment_lines(store).values()) == [6, 12]
    assert len(index(tmp_path / "c3")["segments"]) == 2

    # a trainer restored from the store knows what is there: it too appends only the new
    fresh = ARIDETrainer(BanditPolicy(seed=2), trainer.config)
    load_trainer_state(fresh, tmp_path / "c3")
    feed_and_train(fresh, fresh.policy, 2, 1)  # type: ignore[arg-type]
    save_trainer(fresh, tmp_path / "c4", replay_store=store)
    assert sorted(segment_lines(store).values()) == [3, 6, 12]


def test_eviction_compacts_and_gc_keeps_what_kept_checkpoints_need(tmp_path: Path) -> None:
    store = tmp_path / "store"
    policy = BanditPolicy(seed=3)
    trainer = ARIDETrainer(policy, ARIDEConfig(min_episodes=4, batch_episodes=4, capacity=12,
                                               max_policy_lag=None))
    saved = []
    for i in range(8):
        feed_and_train(trainer, policy, i, 2)  # 6 new episodes into a replay of 12
        saved.append(save_trainer(trainer, tmp_path / f"c{i}", replay_store=store))
        held = sum(segment_lines(store)[s] for s in index(saved[-1])["segments"])
        # oldest-first eviction: at most one segment is partly dead
        assert held <= len(trainer.replay) + 6
    gone = gc_replay_store(store, saved[-2:])  # keep the two newest checkpoints
    assert gone
    left = set(segment_lines(store))
    assert left == set(index(saved[-1])["segments"]) | set(index(saved[-2])["segments"])
    for ckpt in saved[-2:]:  # both still load
        load_trainer_state(ARIDETrainer(BanditPolicy(), trainer.config), ckpt)
    fresh = ARIDETrainer(BanditPolicy(), trainer.config)
    load_trainer_state(fresh, saved[-1])
    assert_same_trainer(trainer, fresh)


def test_a_replay_that_shrank_is_compacted(tmp_path: Path) -> None:
    """The lag bound can drop most of replay at once: the next save rewrites the few live
    episodes into one segment instead of keeping a mostly dead one referenced."""
    store = tmp_path / "store"
    policy = BanditPolicy(seed=7)
    trainer = ARIDETrainer(policy, ARIDEConfig(min_episodes=4, batch_episodes=4, capacity=100,
                                               max_policy_lag=1000))
    feed_and_train(trainer, policy, 0, 8)
    save_trainer(trainer, tmp_path / "c1", replay_store=store)
    assert list(segment_lines(store).values()) == [24]
    trainer.replay.max_lag = 1
    dropped = trainer.replay.prune(trainer.version)
    live = len(trainer.replay)
    assert dropped > 0 and 0 < live < 12
    save_trainer(trainer, tmp_path / "c2", replay_store=store)
    (seg,) = index(tmp_path / "c2")["segments"]
    assert segment_lines(store)[seg] == live
    assert gc_replay_store(store, [tmp_path / "c2"])  # the 24-episode segment goes
    fresh = ARIDETrainer(BanditPolicy(), trainer.config)
    fresh.replay.max_lag = 1
    load_trainer_state(fresh, tmp_path / "c2")
    assert [e.episode for e in fresh.replay.entries()] == \
        [e.episode for e in trainer.replay.entries()]


def test_a_missing_segment_is_refused_with_a_reason(tmp_path: Path) -> None:
    policy = BanditPolicy(seed=4)
    trainer = ARIDETrainer(policy, CFG)
    feed_and_train(trainer, policy, 0, 3)
    save_trainer(trainer, tmp_path / "ckpt", replay_store=tmp_path / "store")
    for seg in (tmp_path / "store").glob("seg-*.jsonl"):
        seg.unlink()
    with pytest.raises(ConfigError, match="replay store"):
        load_trainer_state(ARIDETrainer(BanditPolicy(), CFG), tmp_path / "ckpt")


def test_store_and_checkpoint_move_together(tmp_path: Path) -> None:
    policy = BanditPolicy(seed=6)
    trainer = ARIDETrainer(policy, CFG)
    feed_and_train(trainer, policy, 0, 3)
    save_trainer(trainer, tmp_path / "run" / "ckpt", replay_store=tmp_path / "run" / "store")
    (tmp_path / "run").rename(tmp_path / "moved")
    fresh = ARIDETrainer(BanditPolicy(), CFG)
    load_trainer_state(fresh, tmp_path / "moved" / "ckpt")
    assert_same_trainer(trainer, fresh)

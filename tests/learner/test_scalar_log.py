"""The learner's scalars: JSONL (read back, CSV export) and TensorBoard event files that
TensorBoard's own reader loads."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from farm.learner.metrics import ScalarLog, export_csv, read_scalars


def test_scalars_go_to_jsonl_and_tensorboard_event_files(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with ScalarLog(tmp_path / "scalars.jsonl", tmp_path / "tb") as log:
        assert log.tensorboard is not None and log.tensorboard_error is None
        log.write({"train/actor_loss": 0.5, "eval/success_rate": 0.25,
                   "bad": math.nan}, step=3, wall_time=100.0)
        log.write({"train/actor_loss": 0.25}, step=4, wall_time=101.0)
    recs = list(read_scalars(tmp_path / "scalars.jsonl"))
    assert [(r["tag"], r["step"], r["value"]) for r in recs] == [
        ("train/actor_loss", 3, 0.5), ("eval/success_rate", 3, 0.25),
        ("train/actor_loss", 4, 0.25)]
    assert export_csv(tmp_path / "scalars.jsonl", tmp_path / "s.csv") == 3
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == {"train/actor_loss", "eval/success_rate"}
    loss = acc.Scalars("train/actor_loss")
    assert [(e.step, e.value, e.wall_time) for e in loss] == [(3, 0.5, 100.0),
                                                                 (4, 0.25, 101.0)]


def test_without_tensorboard_the_jsonl_is_still_written(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_tensorboard(name: str, *args: object, **kw: object) -> object:
        if name.startswith("torch.utils.tensorboard"):
            raise ImportError("No module named 'tensorboard'")
        return real_import(name, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    with ScalarLog(tmp_path / "s.jsonl", tmp_path / "tb") as log:
        assert log.tensorboard is None and "pip install tensorboard" in str(
            log.tensorboard_error)
        assert log.write({"x": 1.0}, step=0) == 1
    assert len(list(read_scalars(tmp_path / "s.jsonl"))) == 1

"""Learned trajectories as a Hugging Face dataset: a round trip keeps every field and
the frames' bytes; a dataset that is not an export is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import EpisodeRecord, StepRecord

pytest.importorskip("datasets")

from distrl_sdk.learn.episodes_hf import from_hf, to_hf


def _episodes() -> list[EpisodeRecord]:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))  # bytes only: never decoded here
    return [
        EpisodeRecord(id="e1", task="settings.wifi_off", instruction="Turn off Wi-Fi",
                      success=True, reward=1.0, farm_id="farm1", device_id="sim-0",
                      meta={"wall_s": 3.5, "policy": "uitree@v7"},
                      steps=[StepRecord(obs={"v": 4, "i": "Turn off Wi-Fi",
                                             "c": [["tap", "Wi‑Fi"]]},
                                        choice={"index": 0}, log_mu=-0.25, reward=0.0,
                                        policy_version=7),
                             StepRecord(obs={"v": 4}, choice={"index": 3}, log_mu=-1.5,
                                        reward=1.0, policy_version=7, invalid=True,
                                        frame=png)]),
        EpisodeRecord(id="e2", task="clock.open_stopwatch", instruction="Open the stopwatch",
                      success=False, reward=0.0, steps=[StepRecord(
                          obs={"text": "…"}, choice={"text": "{}", "eos": True}, log_mu=-9.0,
                          reward=0.0, policy_version=8)]),
    ]


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    eps = _episodes()
    data = to_hf(eps)
    assert data.num_rows == 3 and data.features["image"].__class__.__name__ == "Image"
    data.save_to_disk(str(tmp_path / "hf"))
    back = from_hf(tmp_path / "hf")
    assert back == eps  # dataclass equality: every field, frames byte for byte
    assert back[0].steps[1].frame == eps[0].steps[1].frame and back[0].steps[0].frame is None


def test_not_an_export_is_refused(tmp_path: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"x": [1]}).save_to_disk(str(tmp_path / "other"))
    with pytest.raises(ConfigError, match="not a DistRL trajectory export"):
        from_hf(tmp_path / "other")
    with pytest.raises(ConfigError, match="not a saved Hugging Face dataset"):
        from_hf(tmp_path / "missing")
    assert to_hf([]).num_rows == 0

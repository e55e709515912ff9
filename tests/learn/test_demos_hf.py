"""Demonstrations as a Hugging Face dataset and back: recorded by the real oracle on a
sim phone, exported, read with `datasets` as another tool would, imported, equal."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
from click.testing import CliRunner
from PIL import Image

from distrl_sdk.learn.demos import DemoEpisode, DemoWriter, read_demos
from farm.cli import cli


def test_export_import_round_trip_keeps_every_field(tmp_path: Path) -> None:
    src = tmp_path / "demos"
    r = CliRunner().invoke(cli, ["demos", "record", "--task", "settings.wifi_off", "--task",
                                 "settings.android_version", "-k", "2", "--sim", "1",
                                 "--out", str(src), "--seed", "3"])
    assert r.exit_code == 0, r.output
    with DemoWriter(src, append=True) as w:  # an episode that never got to act
        w.write(DemoEpisode(id="00000000000000ff", task="settings.wifi_off",
                            instruction="Turn off Wi-Fi", params={}, split="test",
                            status="aborted", reward=0.0, steps=[], error="device lost"))
    hf = tmp_path / "hf"
    r = CliRunner().invoke(cli, ["demos", "export", str(src), "--format", "hf", "--out", str(hf)])
    assert r.exit_code == 0, r.output

    # what another tool sees: one row per step, the screen as an image feature
    data = datasets.load_from_disk(str(hf))
    before = list(read_demos(src))
    assert data.num_rows == sum(max(1, len(e.steps)) for e in before)
    row = data[0]
    assert isinstance(row["image"], Image.Image) and row["image"].size[0] > 0
    assert json.loads(row["action"])["action_type"] in ("open_app", "click")
    assert row["instruction"] == before[0].instruction and row["step"] == 0
    assert isinstance(data.features["image"], datasets.Image)

    back = tmp_path / "back"
    r = CliRunner().invoke(cli, ["demos", "import", str(hf), "--out", str(back)])
    assert r.exit_code == 0, r.output
    after = list(read_demos(back))
    assert after == before  # every episode, step, frame byte and encoding
    assert any(e.answer for e in after)  # the question task's answer came through

    # refusals: an existing --out, a directory that is no export
    again = CliRunner().invoke(cli, ["demos", "export", str(src), "--out", str(hf)])
    assert again.exit_code == 2 and "already exists" in again.output
    bad = CliRunner().invoke(cli, ["demos", "import", str(src), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "not a saved Hugging Face dataset" in bad.output, bad.output

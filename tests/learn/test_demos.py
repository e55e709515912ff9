"""Demonstration datasets: episodes recorded on a live sim phone survive write → read
unchanged (frames, UI elements, actions, encodings), and bad datasets are refused."""

from __future__ import annotations

import asyncio
import io
import json
import random
from pathlib import Path

import pytest

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.demo_record import record_episode
from distrl_sdk.learn.demos import (
    FORMAT_VERSION,
    DemoEpisode,
    DemoWriter,
    element_from_json,
    element_to_json,
    read_demos,
    read_manifest,
)
from distrl_sdk.policies.uitree import UITreeConfig, encode_observation
from distrl_sdk.policy import Observation, OraclePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.uitree import Bounds, UIElement
from farm.device import AdbDevice

REGISTRY = TaskRegistry.discover(use_env=False)


@pytest.fixture(scope="module")
def device(shared_sim_device: AdbDevice) -> AdbDevice:
    return shared_sim_device


@pytest.fixture(scope="module")
def recorded(device: AdbDevice) -> list[DemoEpisode]:
    out = []
    for name, split in (("settings.bluetooth_on", "train"), ("contacts.favorite", "test"),
                        ("settings.search", "train")):  # a toggle, a param, typing
        task = REGISTRY.get(name).sample(random.Random(3), split)  # type: ignore[arg-type]
        ep, unmatched = asyncio.run(record_episode(
            task, device, OraclePolicy(task.oracle(device)), split=split, seed=3,
            device_id=device.serial))
        assert ep.success and not unmatched, (name, ep.error, unmatched)
        out.append(ep)
    return out


def test_round_trip_is_exact(recorded: list[DemoEpisode], tmp_path: Path) -> None:
    with DemoWriter(tmp_path / "d", meta={"uitree_config": UITreeConfig().as_dict()}) as w:
        for ep in recorded:
            w.write(ep)
    back = list(read_demos(tmp_path / "d"))
    assert back == recorded  # dataclass equality: every field, frame bytes included
    m = read_manifest(tmp_path / "d")
    assert m["version"] == FORMAT_VERSION and m["episodes"] == 3
    assert m["steps"] == sum(len(e.steps) for e in recorded)
    assert m["splits"] == {"train": 2, "test": 1}
    assert m["tasks"]["contacts.favorite"] == 1
    # filters
    assert [e.task for e in read_demos(tmp_path / "d", split="test")] == ["contacts.favorite"]
    assert [e.task for e in read_demos(tmp_path / "d", tasks=["settings.search"],
                                       frames=False)] == ["settings.search"]


def test_steps_carry_what_each_policy_needs(recorded: list[DemoEpisode]) -> None:
    from PIL import Image

    for ep in recorded:
        for i, s in enumerate(ep.steps):
            assert s.frame is not None and s.frame[:2] == b"\xff\xd8"  # JPEG
            with Image.open(io.BytesIO(s.frame)) as im:
                assert im.size == s.screen_size
            # the raw observation re-encodes to exactly the stored UI-tree encoding
            obs = Observation(ep.instruction, s.elements, s.screen_size, i, ep.history(i),
                              None, ep.steps[i - 1].elements if i else None)
            ui = s.encodings["uitree"]
            assert encode_observation(obs, UITreeConfig()) == ui["obs"]
            assert ui["choice"]["index"] < len(ui["obs"]["c"])
            vlm = s.encodings["vlm"]
            assert vlm["obs"]["instruction"] == ep.instruction and vlm["obs"]["image"]
            assert json.loads(vlm["choice"]["text"])["action_type"]
    typed = [s.action for s in recorded[2].steps if s.action.kind == "type_text"]
    assert [a.text for a in typed] == [recorded[2].params["query"]]


def test_every_element_field_round_trips() -> None:
    e = UIElement(index=3, depth=2, parent=1, text="Wi‑Fi ✓", resource_id="a:id/b",
                  class_name="android.widget.Switch", package="a", content_desc="d",
                  bounds=Bounds(-1, 2, 300, 400), checkable=True, checked=True,
                  clickable=True, enabled=False, focusable=True, focused=True,
                  scrollable=True, long_clickable=True, password=True, selected=True,
                  extra={"hint": "x"})
    assert element_from_json(json.loads(json.dumps(element_to_json(e)))) == e
    plain = UIElement(index=0, depth=0, parent=None, text="", resource_id="", class_name="",
                      package="", content_desc="", bounds=Bounds(0, 0, 1, 1))
    assert element_from_json(element_to_json(plain)) == plain


def test_bad_datasets_are_refused(recorded: list[DemoEpisode], tmp_path: Path) -> None:
    d = tmp_path / "d"
    with DemoWriter(d) as w:
        w.write(recorded[0])
    with pytest.raises(ConfigError, match="already holds"):
        DemoWriter(d)
    with pytest.raises(ConfigError, match="not a demonstration dataset"):
        read_manifest(tmp_path)
    m = json.loads((d / "demos.json").read_text())
    (d / "demos.json").write_text(json.dumps({**m, "version": FORMAT_VERSION + 1}))
    with pytest.raises(ConfigError, match="newer"):
        list(read_demos(d))
    (d / "demos.json").write_text(json.dumps(m))
    # a recording cut mid-line keeps the finished episodes
    with (d / "episodes.jsonl").open("a") as f:
        f.write('{"id": "cut", "steps": [')
    assert [e.id for e in read_demos(d)] == [recorded[0].id]
    # frame paths never leave the dataset
    line = json.loads((d / "episodes.jsonl").read_text().splitlines()[0])
    line["steps"][0]["frame"] = "../../etc/passwd"
    (d / "episodes.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(ConfigError, match="leaves the dataset"):
        list(read_demos(d))

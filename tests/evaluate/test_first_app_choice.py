"""bench/first_app_choice.py: the first app a policy opens for training and held-out
phrasings, on the home screen the sim really draws, with the word to blame."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bench.first_app_choice import Start, analyse, main, starts
from distrl_sdk.actions import Key, OpenApp
from distrl_sdk.learn.demos import DemoEpisode, DemoStep, DemoWriter
from distrl_sdk.policies import save_policy
from distrl_sdk.policies.uitree import UITreeConfig, UITreePolicy
from distrl_sdk.task import Split, Task
from distrl_sdk.uitree import UIElement, parse_ui_dump
from farm.sim.faults import Faults
from farm.sim.spec import LogBuffer, PhoneSpec, ScreenSpec
from farm.sim.vfs import VirtualFS
from farm.sim.world import World


def home_screen() -> list[UIElement]:
    world = World(PhoneSpec(screen=ScreenSpec.preset("phone")), VirtualFS(),
                  Faults(clock=lambda: 0.0), LogBuffer(clock=lambda: 1.7e9),
                  random.Random(0), clock=lambda: 0.0)
    return parse_ui_dump(world.ui_xml())


def episode(task: str, first: Any, status: str = "success") -> DemoEpisode:
    step = DemoStep(0, first, home_screen(), (1080, 2400))
    return DemoEpisode(f"{task}-{status}", task, "…", {}, "train", status, 1.0, [step])


class ClockAlarm(Task):
    """Trained as "Clock alarm"; held out as "Contacts alarm", which names another app."""

    name: ClassVar[str] = "test.clock_alarm"
    template: ClassVar[str] = "{say}"

    @classmethod
    def generate_params(cls, rng: random.Random, split: Split = "train") -> dict[str, Any]:
        return {"say": "Clock alarm" if split == "train" else "Contacts alarm"}


def reading_policy() -> UITreePolicy:
    """Untrained, so only the reading prior speaks: it opens the app the instruction names."""
    return UITreePolicy(UITreeConfig(overlap_prior=8.0, seed=0))


def test_starts_keep_successful_episodes_that_open_an_app_first(tmp_path: Path) -> None:
    with DemoWriter(tmp_path / "d") as w:
        w.write(episode("test.clock_alarm", OpenApp("Clock")))
        w.write(episode("a.failed", OpenApp("Chrome"), status="failure"))
        w.write(episode("a.back_first", Key("back")))
    first = starts(tmp_path / "d")
    assert set(first) == {"test.clock_alarm"}
    assert first["test.clock_alarm"].app == "Clock"


def test_a_held_out_phrasing_naming_another_app_is_a_mistake_with_its_word_to_blame() -> None:
    start = {"test.clock_alarm": Start("Clock", episode("test.clock_alarm",
                                                        OpenApp("Clock")).steps[0])}
    r = analyse(reading_policy(), {"test.clock_alarm": ClockAlarm}, start, draws=3)
    assert r["train"]["accuracy"] == 1.0 and r["train"]["instructions"] == 1
    assert r["test"]["accuracy"] == 0.0
    (m,) = r["mistakes"]
    assert m["chose"] in ("open_app Contacts", "tap Contacts")
    assert m["blame"] == "Contacts" and m["p_app_without"] > m["p_app"]
    assert r["blamed_words"] == {"contacts": 1}


def test_cli_scores_a_saved_policy_on_a_sample_task_and_writes_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with DemoWriter(tmp_path / "d") as w:
        w.write(episode("settings.airplane_off", OpenApp("Settings")))
    save_policy(reading_policy(), tmp_path / "p")
    out = tmp_path / "r.json"
    assert main([str(tmp_path / "p"), "--demos", str(tmp_path / "d"), "--draws", "5",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())[str(tmp_path / "p")]
    # "Turn off airplane mode" names no app: the untrained policy does not know Settings
    assert r["train"]["tasks"] == r["test"]["tasks"] == 1
    assert r["test"]["instructions"] >= 1
    assert "first app right" in capsys.readouterr().out


def test_cli_usage_errors_exit_2_without_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with DemoWriter(tmp_path / "d") as w:
        w.write(episode("a.back_first", Key("back")))
    save_policy(reading_policy(), tmp_path / "p")
    assert main([str(tmp_path / "p"), "--demos", str(tmp_path / "d")]) == 2
    assert "opens an app first" in capsys.readouterr().err
    assert main([str(tmp_path / "p"), "--demos", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "p"), "--demos", str(tmp_path / "d"), "--draws", "0"])
    assert exc.value.code == 2

"""evaluator_from_config: nested configs, plugin types, and errors that name the key path."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import (
    EVALUATORS,
    ActivityIs,
    AllOf,
    AnyOf,
    FileContains,
    RewardEvaluator,
    SettingEquals,
    UIPredicate,
    Weighted,
    evaluator_from_config,
)
from distrl_sdk.evaluators import registry as registry_mod
from distrl_sdk.trajectory import Trajectory
from tests.sdk.sim_device import SimDevice

WIFI_OFF = {"type": "setting", "namespace": "global", "key": "wifi_on", "value": "0"}
IN_SETTINGS = {"type": "activity", "package": "com.android.settings"}


def test_every_builtin_builds_from_config() -> None:
    configs: dict[str, dict[str, Any]] = {
        "ui": {"text": "Wi-Fi", "checked": False, "count": {"min": 1, "max": 2}},
        "shell": {"command": "echo hi", "regex": "hi"},
        "setting": {"namespace": "global", "key": "wifi_on", "value": 0},
        "file": {"path": "/sdcard/a.json", "json_path": "a.b", "value": None},
        "activity": {"package": "com.android.settings", "activity": ".Settings"},
        "logcat": {"regex": "reward", "tag": "AndroidRLTask"},
        "answer": {"expected": ["1", 2], "mode": "number"},
        "answer_from_device": {"command": "getprop ro.build.version.release"},
    }
    assert set(configs) == set(EVALUATORS)
    for kind, cfg in configs.items():
        ev = evaluator_from_config({"type": kind, **cfg})
        assert isinstance(ev, EVALUATORS[kind]), kind
    ui = evaluator_from_config({"type": "ui", **configs["ui"]})
    assert isinstance(ui, UIPredicate) and ui.count.max == 2
    f = evaluator_from_config({"type": "file", **configs["file"]})
    assert isinstance(f, FileContains) and f.value is None  # JSON null, given explicitly


async def test_nested_config_scores_on_sim_state() -> None:
    ev = evaluator_from_config({"weighted": [
        {"weight": 0.7, "all": [IN_SETTINGS, {"type": "ui", "text": "{label}"}]},
        {"weight": 0.3, "any": [WIFI_OFF, {"type": "answer", "expected": "{label}"}]},
    ]})
    assert isinstance(ev, Weighted)
    assert isinstance(ev.parts[0][0], AllOf) and isinstance(ev.parts[1][0], AnyOf)
    dev, t = SimDevice(), Trajectory(task="t", instruction="i")
    params = {"label": "Battery"}
    assert await ev.evaluate(dev, t, params) == 0.0
    await dev.shell("am start -n com.android.settings/.Settings")
    assert await ev.evaluate(dev, t, params) == pytest.approx(0.7)
    await dev.shell("settings put global wifi_on 0")
    assert await ev.evaluate(dev, t, params) == pytest.approx(1.0)
    assert ev.describe().startswith("weighted(all(activity(com.android.settings), ui(text=")


def test_evaluator_instances_pass_through() -> None:
    ev = SettingEquals("global", "wifi_on", "0")
    built = evaluator_from_config({"all": [ev, IN_SETTINGS]})
    assert isinstance(built, AllOf) and built.parts[0] is ev
    assert isinstance(built.parts[1], ActivityIs)


@pytest.mark.parametrize(("config", "message"), [
    ({"all": [WIFI_OFF, {"type": "uii", "text": "x"}]},
     r"^success\.all\[1\]\.type: unknown evaluator 'uii' \(known: activity, all, answer, "
     r"answer_from_device, any, "
     r"file, judge, logcat, logcat_reward, setting, shell, ui, weighted\)$"),
    ({"type": "ui", "txt": "x"},
     r"^success\.txt: unknown key for evaluator 'ui' \(allowed: text, text_contains, "),
    ({"any": [{"all": [{"type": "ui", "text": "x", "count": {"min": "lots"}}]}]},
     r"^success\.any\[0\]\.all\[0\]\.count\.int: .*\nsuccess\.any\[0\]\.all\[0\]\.count\."
     r"CountRange\.min: Input should be a valid integer"),
    ({"type": "setting", "namespace": "global", "key": "wifi_on"},
     r"^success\.value: required by evaluator 'setting'$"),
    ({"type": "setting", "namespace": "local", "key": "k", "value": "1"},
     r"^success\.namespace: Input should be 'system', 'secure' or 'global'"),
    ({"type": "ui", "xpath": ".//node", "text": "x"},
     r"^success: ui: `xpath` cannot be combined with attribute selectors \(text\)"),
    ({"type": "shell", "command": "echo", "regex": "("},
     r"^success: shell\.regex '\(' does not compile"),
    ({"weighted": [{"weight": -1, **WIFI_OFF}]}, r"^success\.weighted\[0\]\.weight: must be"),
    ({"weighted": [WIFI_OFF]}, r"^success\.weighted\[0\]: each weighted part needs a `weight`"),
    ({"weighted": [{"weight": 0, **WIFI_OFF}]}, r"^success\.weighted: the weights are all 0"),
    ({"all": []}, r"^success\.all: must be a non-empty list"),
    ({"all": [WIFI_OFF], "type": "ui"}, r"^success: 'all' cannot be combined with other keys"),
    ({"text": "x"}, r"^success: needs a `type`"),
    ({"type": "all"}, r"^success\.type: 'all' is written as"),
    ({"type": 3}, r"^success\.type: must be a string"),
    ({"all": ["ui"]}, r"^success\.all\[0\]: an evaluator config must be a mapping"),
    ({"type": "judge", "backend": "openai"},
     r"^success: Value error, backend 'openai' needs `base_url` and `model`"),
    ({"type": "judge", "backend": "gemini"}, r"^success\.backend: Input should be 'openai'"),
    ({"type": "logcat_reward", "reward": ["no group"]},
     r"^success: logcat_reward\.reward: 'no group' needs a group"),
])
def test_config_errors_name_the_key_path(config: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskError, match=message):
        evaluator_from_config(config)


def test_path_prefix_is_the_callers() -> None:
    with pytest.raises(TaskError, match=r"^tasks\[3\]\.step_reward\.type: unknown evaluator"):
        evaluator_from_config({"type": "nope"}, path="tasks[3].step_reward")


def test_broken_plugin_is_a_task_error(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = importlib.metadata.EntryPoint(name="broken", value="no_such_module:Thing",
                                           group="distrl.evaluators")
    monkeypatch.setattr(registry_mod, "plugin_evaluators", lambda: {"broken": broken})
    monkeypatch.setattr(registry_mod, "_loaded", {})
    with pytest.raises(TaskError, match=r"^success\.type: evaluator 'broken' from plugin .* "
                                        r"failed to load: ModuleNotFoundError"):
        evaluator_from_config({"type": "broken"})


def test_plugin_factory_callables_and_bad_products(monkeypatch: pytest.MonkeyPatch) -> None:
    def factory(config: dict[str, Any]) -> Any:
        return SettingEquals("global", config["key"], "1") if config else "not an evaluator"

    ep = importlib.metadata.EntryPoint(name="fn", value="x:y", group="distrl.evaluators")
    monkeypatch.setattr(registry_mod, "plugin_evaluators", lambda: {"fn": ep})
    monkeypatch.setattr(registry_mod, "_loaded", {"fn": factory})
    assert isinstance(evaluator_from_config({"type": "fn", "key": "wifi_on"}), SettingEquals)
    with pytest.raises(TaskError, match=r"^success\.type: evaluator 'fn' built a str"):
        evaluator_from_config({"type": "fn"})


class _CountsPackage(RewardEvaluator):
    """An ordinary subclass, as the README's plugin example writes one."""

    name = "counts"

    def __init__(self, package: str, min_count: int = 1) -> None:
        self.package, self.min_count = package, min_count

    async def evaluate(self, device: Any, trajectory: Any, params: Any) -> float:
        return 1.0


def test_an_ordinary_subclass_takes_its_config_as_keywords(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """It used to get the config dict positionally (package = the whole dict), and
    `tasks validate` passed the file; the episode then failed at run time."""
    ep = importlib.metadata.EntryPoint(name="counts", value="x:y", group="distrl.evaluators")
    monkeypatch.setattr(registry_mod, "plugin_evaluators", lambda: {"counts": ep})
    monkeypatch.setattr(registry_mod, "_loaded", {"counts": _CountsPackage})
    ev = evaluator_from_config({"type": "counts", "package": "com.x", "min_count": 3})
    assert isinstance(ev, _CountsPackage) and (ev.package, ev.min_count) == ("com.x", 3)
    with pytest.raises(TaskError) as err:
        evaluator_from_config({"type": "counts", "pkg": "com.x"})
    assert str(err.value).splitlines() == [
        "success.pkg: unknown key for evaluator 'counts' (allowed: package, min_count)",
        "success.package: required by evaluator 'counts'"]
    pack = tmp_path / "mine.toml"
    pack.write_text('[[task]]\nname = "mine.t"\ntemplate = "Do it"\n'
                    '[task.success]\ntype = "counts"\npkg = "com.x"\n')
    from click.testing import CliRunner

    from farm.cli import cli

    res = CliRunner().invoke(cli, ["tasks", "validate", str(pack)])
    assert res.exit_code != 0 and "unknown key for evaluator 'counts'" in res.output

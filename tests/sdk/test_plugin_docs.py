"""docs/plugins.md runs as written: its plugin module and its tests on a sim phone, its
evaluator from a task file through the registry, its TOML pack through the loader."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.declarative import load_task_text
from distrl_sdk.evaluators import registry as registry_mod

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


@pytest.fixture
def my_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    module, _test = blocks("python")
    assert module.startswith("# my_pkg/__init__.py")
    (tmp_path / "my_pkg").mkdir()
    (tmp_path / "my_pkg" / "__init__.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("my_pkg", None)
    yield importlib.import_module("my_pkg")
    sys.modules.pop("my_pkg", None)


def test_the_documented_plugin_and_its_tests_run(my_pkg: Any, run_task: Any,
                                                 tmp_path: Path) -> None:
    module, test_code = blocks("python")
    deep = [n.module for n in ast.walk(ast.parse(module)) if isinstance(n, ast.ImportFrom)
            and n.module and n.module.startswith("distrl_sdk") and n.module.count(".") > 1]
    assert deep == []  # the public packages only, as a plugin author should write it
    scope: dict[str, Any] = {}
    exec(compile(test_code, "docs/plugins.md (test block)", "exec"), scope)
    tests = [f for n, f in scope.items() if n.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test(run_task)


def test_the_documented_evaluator_is_built_from_a_task_file(
        my_pkg: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = importlib.metadata.EntryPoint(name="volume_at_least", value="my_pkg:VolumeAtLeast",
                                       group="distrl.evaluators")
    monkeypatch.setattr(registry_mod, "plugin_evaluators", lambda: {"volume_at_least": ep})
    monkeypatch.setattr(registry_mod, "_loaded", {})
    ev = registry_mod.evaluator_from_config({"type": "volume_at_least", "stream": "ring",
                                             "level": "{lvl}"})
    assert isinstance(ev, my_pkg.VolumeAtLeast) and ev.stream == "ring"
    with pytest.raises(Exception, match="unknown key for evaluator 'volume_at_least'"):
        registry_mod.evaluator_from_config({"type": "volume_at_least", "lvl": 3})


def test_the_documented_toml_pack_loads_and_its_oracle_solves_it(run_task: Any) -> None:
    import random

    pack = next(b for b in blocks("toml") if "[[task]]" in b)
    (cls,) = load_task_text(pack, "docs/plugins.md")
    traj = run_task(cls.sample(random.Random(0), "test"))
    assert traj.reward == 1.0, traj.error

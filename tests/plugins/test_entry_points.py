"""Both first-party plugins are discovered through the ``distrl.evaluators`` entry points."""

from __future__ import annotations

import importlib.metadata

import pytest

from distrl_sdk.evaluators import ENTRY_POINT_GROUP, ModelJudge, plugin_evaluators
from distrl_sdk.evaluators.registry import evaluator_from_config


@pytest.mark.parametrize(("name", "dist", "target"), [
    ("judge", "distrl-judge", "distrl_judge:JudgeEvaluatorFactory"),
    ("logcat_reward", "distrl-logcat-reward", "distrl_logcat_reward:LogcatReward"),
])
def test_plugin_is_registered(name: str, dist: str, target: str) -> None:
    eps = plugin_evaluators()
    assert name in eps, f"{dist} is not installed: pip install -e plugins/{dist}"
    ep = eps[name]
    assert ep.group == ENTRY_POINT_GROUP and ep.value == target
    assert ep.dist is not None and ep.dist.name == dist
    requires = importlib.metadata.requires(dist) or []
    assert any(r.split(">")[0].split(";")[0].strip() == "distrl" for r in requires)
    loaded = ep.load()
    assert hasattr(loaded, "from_config") or hasattr(loaded, "config_model")


def test_plugins_build_through_the_registry() -> None:
    judge = evaluator_from_config({"type": "judge", "backend": "openai",
                                   "base_url": "http://127.0.0.1:1", "model": "m",
                                   "last_n_screens": 2})
    assert isinstance(judge, ModelJudge) and judge.last_n_screens == 2
    assert judge.describe() == "judge(openai:m, last 2 screen(s))"
    logcat = evaluator_from_config({"any": [{"type": "logcat_reward"}]}, path="x")
    assert logcat.describe().startswith("any(logcat_reward(AndroidRLTask")

"""Reward evaluators: the base classes, the shipped evaluators and the config registry.

See :mod:`distrl_sdk.evaluators.base` for composition (``&``, ``|``, ``Weighted``),
:mod:`distrl_sdk.evaluators.registry` for the config schema and plugins, and
:mod:`distrl_sdk.evaluators.outcome` for how runners call evaluators safely.
"""

from distrl_sdk.evaluators.activity import ActivityIs
from distrl_sdk.evaluators.answer import AnswerFromDevice, AnswerMatches
from distrl_sdk.evaluators.base import AllOf, AnyOf, RewardEvaluator, Weighted, fill
from distrl_sdk.evaluators.common import EvaluatorConfig, episode_state, fill_regex
from distrl_sdk.evaluators.files import FileContains
from distrl_sdk.evaluators.judge import DEFAULT_PROMPT as DEFAULT_JUDGE_PROMPT
from distrl_sdk.evaluators.judge import JudgeBackend, ModelJudge, parse_verdict
from distrl_sdk.evaluators.logcat import LogcatRegex, LogLine, parse_logcat, read_logcat
from distrl_sdk.evaluators.outcome import (
    EndsEpisode,
    EvalOutcome,
    safe_evaluate,
    safe_step_reward,
)
from distrl_sdk.evaluators.registry import (
    ENTRY_POINT_GROUP,
    EVALUATORS,
    evaluator_from_config,
    plugin_evaluators,
)
from distrl_sdk.evaluators.settings import SettingEquals
from distrl_sdk.evaluators.shell import ShellRegex
from distrl_sdk.evaluators.ui import CountRange, UIPredicate

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "ENTRY_POINT_GROUP",
    "EVALUATORS",
    "ActivityIs",
    "AllOf",
    "AnswerFromDevice",
    "AnswerMatches",
    "AnyOf",
    "CountRange",
    "EndsEpisode",
    "EvalOutcome",
    "EvaluatorConfig",
    "FileContains",
    "JudgeBackend",
    "LogLine",
    "LogcatRegex",
    "ModelJudge",
    "RewardEvaluator",
    "SettingEquals",
    "ShellRegex",
    "UIPredicate",
    "Weighted",
    "episode_state",
    "evaluator_from_config",
    "fill",
    "fill_regex",
    "parse_logcat",
    "parse_verdict",
    "plugin_evaluators",
    "read_logcat",
    "safe_evaluate",
    "safe_step_reward",
]

"""DistRL SDK: the library users import to write tasks, evaluators and policies.

The public API is what ``__all__`` lists here and in the subpackages
``distrl_sdk.actions`` (the action space and its formats) and
``distrl_sdk.evaluators`` (reward evaluators); everything else is private.
"""

from distrl_sdk.declarative import TaskFileError, load_task_file, load_task_text
from distrl_sdk.device import Device, ShellOutput
from distrl_sdk.errors import (
    AdbTimeout,
    ConfigError,
    DeployRefused,
    DeviceBusy,
    DeviceError,
    DeviceOffline,
    DistRLError,
    ProtocolError,
    TaskError,
)
from distrl_sdk.evaluators import RewardEvaluator, evaluator_from_config
from distrl_sdk.policy import Decision, Observation, OraclePolicy, Policy, RandomPolicy
from distrl_sdk.registry import TaskRegistry, load_task_path
from distrl_sdk.runner import run_episode
from distrl_sdk.task import Task
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory
from distrl_sdk.uitree import Bounds, UIElement, find_elements, parse_ui_dump

__version__ = "0.1.0"

__all__ = [
    "AdbTimeout",
    "Bounds",
    "ConfigError",
    "Decision",
    "DeployRefused",
    "Device",
    "DeviceBusy",
    "DeviceError",
    "DeviceOffline",
    "DistRLError",
    "EpisodeStatus",
    "Observation",
    "OraclePolicy",
    "Policy",
    "ProtocolError",
    "RandomPolicy",
    "RewardEvaluator",
    "ShellOutput",
    "Step",
    "Task",
    "TaskError",
    "TaskFileError",
    "TaskRegistry",
    "Trajectory",
    "UIElement",
    "__version__",
    "evaluator_from_config",
    "find_elements",
    "load_task_file",
    "load_task_path",
    "load_task_text",
    "parse_ui_dump",
    "run_episode",
]

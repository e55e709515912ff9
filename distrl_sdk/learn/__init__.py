"""Learning: the policy/trainer contracts, A-RIDE, the DigiRL-style baseline, replay.

Needs ``torch`` (the ``learn`` extra); the rest of the SDK does not. The contracts and
the replay buffer import without torch; the trainers, critics and checkpoint helpers
are loaded on first use (``from distrl_sdk.learn import ARIDETrainer`` imports torch)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from distrl_sdk.learn.api import (
    EpisodeRecord,
    PolicyAgent,
    PolicyOutput,
    StepRecord,
    TrainablePolicy,
    Trainer,
)
from distrl_sdk.learn.replay import PrioritizedReplay, ReplaySample, SumTree

if TYPE_CHECKING:
    from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer, retrace_targets
    from distrl_sdk.learn.critics import StepCritic, TrajectoryCritic
    from distrl_sdk.learn.digirl import DigiRLConfig, DigiRLTrainer
    from distrl_sdk.learn.state import load_trainer_state, save_trainer

__all__ = ["ARIDEConfig", "ARIDETrainer", "DigiRLConfig", "DigiRLTrainer", "EpisodeRecord",
           "PolicyAgent", "PolicyOutput", "PrioritizedReplay", "ReplaySample", "StepCritic",
           "StepRecord", "SumTree", "TrainablePolicy", "Trainer", "TrajectoryCritic",
           "load_trainer_state", "retrace_targets", "save_trainer"]

_LAZY = {"ARIDEConfig": "aride", "ARIDETrainer": "aride", "retrace_targets": "aride",
         "StepCritic": "critics", "TrajectoryCritic": "critics", "DigiRLConfig": "digirl",
         "DigiRLTrainer": "digirl", "load_trainer_state": "state", "save_trainer": "state"}


def __getattr__(name: str) -> Any:
    """Torch-backed names are imported on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'distrl_sdk.learn' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"distrl_sdk.learn.{module}"), name)

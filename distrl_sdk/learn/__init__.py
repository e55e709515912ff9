"""Learning: the policy/trainer contracts, A-RIDE, the DigiRL-style baseline, replay.

Needs ``torch`` (the ``learn`` extra); the rest of the SDK does not."""

from distrl_sdk.learn.api import (
    EpisodeRecord,
    PolicyAgent,
    PolicyOutput,
    StepRecord,
    TrainablePolicy,
    Trainer,
)

__all__ = ["EpisodeRecord", "PolicyAgent", "PolicyOutput", "StepRecord", "TrainablePolicy",
           "Trainer"]

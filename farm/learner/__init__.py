"""Learning inside the farm process (no broker): the demo's and the benchmark's learner."""

from farm.learner.local import (
    EvalPoint,
    LearningPoint,
    LearningProvider,
    LearningSink,
    LocalLearner,
    LocalLearnerConfig,
    Schedule,
)

__all__ = ["EvalPoint", "LearningPoint", "LearningProvider", "LearningSink", "LocalLearner",
           "LocalLearnerConfig", "Schedule"]

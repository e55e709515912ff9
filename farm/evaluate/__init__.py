"""Held-out evaluation: frozen policies on test instances, success with 95 % intervals.

``distrl eval`` (farm/cli/evaluate.py) runs one :class:`EvalRound`; ``farm up --policy
learned`` runs them periodically (:class:`PeriodicEval`) and ships the episodes marked
as evaluation, which the learner scores (:class:`EvalAggregator`) and never learns
from; :class:`~farm.learner.LocalLearner` runs them in-process.
"""

from farm.evaluate.aggregate import EvalAggregator
from farm.evaluate.periodic import PeriodicEval
from farm.evaluate.round import (
    EVAL_OWNER,
    AgentEval,
    EvalInstance,
    EvalPolicy,
    EvalReport,
    EvalRound,
    OracleEval,
    RandomEval,
    plan_instances,
)
from farm.evaluate.stats import Tally, TaskScore, suite_mean, wilson

__all__ = ["EVAL_OWNER", "AgentEval", "EvalAggregator", "EvalInstance", "EvalPolicy",
           "EvalReport", "EvalRound", "OracleEval", "PeriodicEval", "RandomEval", "Tally",
           "TaskScore",
           "plan_instances", "suite_mean", "wilson"]

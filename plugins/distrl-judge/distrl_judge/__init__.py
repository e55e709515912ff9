"""DistRL plugin: the model judge's backends and its ``judge`` evaluator type.

``JudgeEvaluatorFactory`` is registered in the ``distrl.evaluators`` entry-point group;
``distrl_sdk.evaluators.evaluator_from_config({"type": "judge", …})`` finds it there.
"""

from distrl_judge.factory import JudgeConfig, JudgeEvaluatorFactory
from distrl_judge.hf import TransformersJudge
from distrl_judge.openai_compat import OpenAICompatibleJudge

__all__ = ["JudgeConfig", "JudgeEvaluatorFactory", "OpenAICompatibleJudge", "TransformersJudge"]

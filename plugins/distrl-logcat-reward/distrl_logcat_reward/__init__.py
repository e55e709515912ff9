"""DistRL plugin: android_env-style logcat rewards (``logcat_reward`` evaluator type)."""

from distrl_logcat_reward.evaluator import LogcatReward, LogcatRewardConfig, RewardEvent, Tally

__all__ = ["LogcatReward", "LogcatRewardConfig", "RewardEvent", "Tally"]

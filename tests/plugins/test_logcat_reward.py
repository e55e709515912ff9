"""The distrl-logcat-reward plugin: android_env's logcat rewards on a sim phone."""

from __future__ import annotations

import pytest

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import EndsEpisode, evaluator_from_config, safe_step_reward
from distrl_sdk.trajectory import Trajectory
from tests.sdk.sim_device import SimDevice

plugin = pytest.importorskip("distrl_logcat_reward")
LogcatReward = plugin.LogcatReward


@pytest.fixture
async def dev() -> SimDevice:
    d = SimDevice()
    await d.shell("logcat -c")  # what a task's setup does, as android_env at reset
    return d


async def test_rewards_scores_events_and_termination(dev: SimDevice) -> None:
    ev = evaluator_from_config({
        "type": "logcat_reward",
        "reward_event": [{"event": "^coin collected$", "reward": 0.25}],
    })
    assert isinstance(ev, LogcatReward) and isinstance(ev, EndsEpisode)
    t = Trajectory(task="game", instruction="play")
    assert await ev.step_reward(dev, t, {}) == 0.0
    assert not await ev.episode_ended(dev, t, {})

    dev.log("AndroidRLTask", "reward: 0.5")
    dev.log("AndroidRLTask", "Reward: 0.25")
    dev.log("SomeOtherTag", "reward: 100")  # other tags never count
    dev.log("AndroidRLTask", "coin collected")
    assert await ev.step_reward(dev, t, {}) == pytest.approx(1.0)
    assert await ev.evaluate(dev, t, {}) == 1.0  # total 1.0 ≥ success_threshold

    dev.log("AndroidRLTask", "score: 3")  # cumulative score: the reward is its change
    assert await ev.step_reward(dev, t, {}) == pytest.approx(3.0)
    dev.log("AndroidRLTask", "score: 5")
    dev.log("AndroidRLTask", "reward: not-a-number")  # skipped, as android_env does
    assert await ev.step_reward(dev, t, {}) == pytest.approx(2.0)
    assert await ev.step_reward(dev, t, {}) == 0.0

    assert not await ev.episode_ended(dev, t, {})
    dev.log("AndroidRLTask", "Episode End")
    assert await ev.episode_ended(dev, t, {})
    out = await safe_step_reward(ev, dev, t, {})
    assert out.ok and out.score == 0.0
    assert ev.describe() == ("logcat_reward(AndroidRLTask: reward×1, score, events×1, "
                             "episode_end; total≥1)")


async def test_episode_score_modes(dev: SimDevice) -> None:
    t = Trajectory(task="game", instruction="play")
    scaled = LogcatReward(max_reward=4.0)
    needs_end = LogcatReward(require_episode_end=True)
    dev.log("AndroidRLTask", "reward: 1.0")
    assert await scaled.evaluate(dev, t, {}) == pytest.approx(0.25)
    assert await needs_end.evaluate(dev, t, {}) == 0.0
    dev.log("AndroidRLTask", "episode end")
    assert await needs_end.evaluate(dev, t, {}) == 1.0
    dev.log("AndroidRLTask", "reward: 10")
    assert await scaled.evaluate(dev, t, {}) == 1.0  # clipped to [0, 1]
    dev.log("AndroidRLTask", "reward: -20")
    assert await scaled.evaluate(dev, t, {}) == 0.0


async def test_custom_tags_and_regexes(dev: SimDevice) -> None:
    ev = LogcatReward(tags=["MyGame"], reward=[r"pts=(\d+)"], score=None,
                      episode_end=[r"GAME OVER"], success_threshold=10)
    t = Trajectory(task="game", instruction="play")
    dev.log("MyGame", "level 1 pts=4")
    dev.log("AndroidRLTask", "reward: 50")
    assert await ev.step_reward(dev, t, {}) == 4.0
    assert await ev.evaluate(dev, t, {}) == 0.0
    dev.log("MyGame", "pts=6 GAME OVER")
    assert await ev.step_reward(dev, t, {}) == 6.0
    assert await ev.episode_ended(dev, t, {})
    assert await ev.evaluate(dev, t, {}) == 1.0


def test_config_errors() -> None:
    with pytest.raises(TaskError, match=r"^success: logcat_reward\.score: .*needs a group"):
        evaluator_from_config({"type": "logcat_reward", "score": "no group"})
    with pytest.raises(TaskError, match=r"^success\.reward_event\[0\]\.reward: "):
        evaluator_from_config({"type": "logcat_reward",
                               "reward_event": [{"event": "x", "reward": "lots"}]})
    with pytest.raises(TaskError, match=r"^success\.max_reward: Input should be greater"):
        evaluator_from_config({"type": "logcat_reward", "max_reward": 0})
    with pytest.raises(TaskError, match="nothing could ever count"):
        LogcatReward(reward=[], score=None, episode_end=[])

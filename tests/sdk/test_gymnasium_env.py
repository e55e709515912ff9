"""distrl_sdk.gymnasium_env on a real sim phone over adb: Gymnasium's own checker, the
oracle solving an instance through the env API, a random agent's sparse reward, the
split, and the fixed-space TapEnv."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from distrl_sdk.actions import to_json  # noqa: E402
from distrl_sdk.gymnasium_env import PhoneEnv, TapEnv  # noqa: E402
from distrl_sdk.registry import TaskRegistry  # noqa: E402


@pytest.fixture
def wifi() -> Any:
    return TaskRegistry.discover().get("settings.wifi_off")


def test_gymnasiums_checker_passes(wifi: Any, sim_adb_device: Any) -> None:
    env = PhoneEnv(wifi, sim_adb_device)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_the_oracle_solves_an_instance_through_the_env(wifi: Any, sim_adb_device: Any) -> None:
    env = PhoneEnv(wifi, sim_adb_device, split="test")
    try:
        obs, info = env.reset(seed=1)
        assert obs["screen"].shape == (240, 108, 3) and obs["screen"].dtype == np.uint8
        assert obs["instruction"] == "Turn off Wi-Fi" and info["elements"]
        total, done, steps = 0.0, False, 0
        for action in env.oracle():
            # as another framework would send it: AndroidWorld JSON text
            obs, reward, done, truncated, info = env.step(to_json(action))
            total, steps = total + reward, steps + 1
            if done or truncated:
                break
        assert done and not truncated and total == 1.0, (total, info)
        assert info["status"] == "success" and info["score"] == 1.0
        # the same seed draws the same instance; setup puts Wi-Fi back on
        _, info2 = env.reset(seed=1)
        assert info2["params"] == info["params"]
        _, r, done, truncated, info = env.step("not an action at all")
        assert (r, done, truncated) == (0.0, False, False)  # invalid: nothing ran
    finally:
        env.close()


def test_the_step_budget_truncates_with_the_tasks_score(wifi: Any, sim_adb_device: Any) -> None:
    env = TapEnv(wifi, sim_adb_device, max_steps=3)
    try:
        screen, _ = env.reset(seed=0)
        assert env.observation_space.contains(screen)
        ends = []
        for _ in range(3):
            screen, reward, terminated, truncated, info = env.step(
                np.array([0.5, 0.02], np.float32))  # the status bar: does nothing
            ends.append((terminated, truncated))
        assert ends == [(False, False), (False, False), (False, True)]
        assert reward == 0.0 and info["status"] == "failure"
    finally:
        env.close()


def test_gymnasium_make_and_a_random_rollout(sim_adb_device: Any) -> None:
    env = gymnasium.make("distrl_sdk.gymnasium_env:distrl/Phone-v0",
                         task="settings.wifi_off", device=sim_adb_device, max_steps=4)
    try:
        obs, _ = env.reset(seed=3)
        env.action_space.seed(3)
        rewards, done = [], False
        while not done:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            rewards.append(reward)
            done = terminated or truncated
        assert len(rewards) == 4 and rewards[-1] == info["score"] == 0.0
        assert env.observation_space.contains(obs)
    finally:
        env.close()

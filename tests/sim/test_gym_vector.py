"""A vector env over sim phones: batched observations, an oracle-driven episode per
phone, and close() leaving no phone or adb server behind."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from distrl_sdk.actions import to_json
from farm.sim.gym import sim_vector_env


@pytest.mark.slow
def test_two_phones_step_together_and_close_cleanly() -> None:
    env = sim_vector_env("settings.wifi_off", 2, seed=5, split="test", max_steps=6)
    phones = [p.serial for p in env._phones.farm.phones]  # type: ignore[union-attr]
    try:
        obs, info = env.reset(seed=0)
        assert obs["screen"].shape == (2, 240, 108, 3) and obs["screen"].dtype == np.uint8
        assert list(obs["instruction"]) == ["Turn off Wi-Fi"] * 2
        # each phone's own oracle (it reads the live screen, so one action per step),
        # sent as a framework would: a batch of AndroidWorld JSON texts
        plans = [e.oracle() for e in env.envs]  # type: ignore[attr-defined]
        done = np.zeros(2, bool)
        total = np.zeros(2)
        for _ in range(6):
            acts = tuple('{"action_type": "wait"}' if done[k] else to_json(next(p))
                         for k, p in enumerate(plans))
            _, reward, term, trunc, info = env.step(acts)
            total += np.where(done, 0, reward)
            done |= term | trunc
            if done.all():
                break
        assert done.all() and (total == 1.0).all(), (total, info)
        random_acts = env.action_space.sample()  # a batch of texts: any reads as invalid
        env.step(random_acts)
    finally:
        env.close()
    for serial in phones:  # the phones' ports are free again
        with socket.socket() as s:
            s.bind(("127.0.0.1", int(serial.rsplit(":", 1)[1])))

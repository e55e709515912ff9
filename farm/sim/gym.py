"""A Gymnasium vector environment over simulated phones: one task, N sim phones behind
a private adb server, one :class:`~distrl_sdk.gymnasium_env.PhoneEnv` per phone.

    env = sim_vector_env("settings.wifi_off", 4, seed=0)
    obs, info = env.reset(seed=0)          # obs["screen"]: (4, 240, 108, 3) uint8
    obs, rew, term, trunc, info = env.step(env.action_space.sample())
    env.close()                            # the phones and the adb server stop too

Steps run one phone after another (Gymnasium's ``SyncVectorEnv``): the phones' own
latency, not Python, is what a real farm overlaps, and ``farm up`` does that."""

from __future__ import annotations

from typing import Any

from gymnasium.vector import SyncVectorEnv

from distrl_sdk.gymnasium_env import PhoneEnv
from distrl_sdk.task import Task
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm

__all__ = ["SimVectorEnv", "sim_vector_env"]


class SimVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` that owns its sim phones and adb server (stopped on close)."""

    def __init__(self, envs: list[PhoneEnv], phones: BackgroundFarm,
                 adb: PrivateAdbServer) -> None:
        self._phones, self._adb = phones, adb
        super().__init__([lambda e=e: e for e in envs])  # type: ignore[misc]

    def close_extras(self, **kwargs: Any) -> None:
        try:
            super().close_extras(**kwargs)
        finally:
            self._adb.stop()
            self._phones.stop()


def sim_vector_env(task: type[Task] | str, num_envs: int, *, seed: int = 0,
                   profile: str = "instant", env_cls: type[PhoneEnv] = PhoneEnv,
                   **env_kwargs: Any) -> SimVectorEnv:
    """``num_envs`` sim phones (``profile``: their latency) running ``task``;
    ``env_kwargs`` go to each ``env_cls`` (``split``, ``screen_shape``, ``max_steps`` …)."""
    from farm.device import AdbDevice

    if num_envs < 1:
        raise ValueError(f"num_envs must be ≥ 1, not {num_envs}")
    phones = BackgroundFarm(num_envs, seed=seed, profile=profile)
    farm = phones.start()
    adb = PrivateAdbServer()
    try:
        adb.start()
        envs = []
        for phone in farm.phones:
            adb.connect(phone.serial)
            envs.append(env_cls(task, AdbDevice(phone.serial, port=adb.port), **env_kwargs))
        return SimVectorEnv(envs, phones, adb)
    except BaseException:
        adb.stop()
        phones.stop()
        raise

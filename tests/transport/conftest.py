from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator

import pytest
from PIL import Image

from distrl_sdk.wire import StepMsg, TrajectoryMsg
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.transport import Backoff

BACKENDS = [
    pytest.param("mosquitto", marks=pytest.mark.skipif(
        find_mosquitto() is None, reason="no mosquitto binary")),
    "amqtt",
]


@pytest.fixture(params=BACKENDS)
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[EmbeddedBroker]:
    b = EmbeddedBroker(backend=request.param)
    async with b:
        yield b


def fast_backoff() -> Backoff:
    return Backoff(initial=0.05, maximum=0.5)


def png_frame(w: int = 108, h: int = 240, seed: int = 0) -> bytes:
    img = Image.frombytes("RGBA", (w, h), os.urandom(w * h * 4) if seed else bytes(w * h * 4))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def make_traj(farm: str = "farm1", device: str = "emu-1", steps: int = 3,
              task: str = "open_settings") -> TrajectoryMsg:
    return TrajectoryMsg(
        farm_id=farm, device_id=device, task=task, instruction="Open settings",
        status="success", reward=1.0,
        steps=[StepMsg(index=i, action={"type": "tap", "x": 0.5, "y": 0.5}, reward=0.0,
                       log_prob=-1.25, policy_version=3, ui_digest="a" * 40,
                       timings={"act": 0.01}) for i in range(steps)],
    )

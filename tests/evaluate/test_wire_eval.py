"""The ``eval`` field of the trajectory schema: v2 only when set, v1 still read."""

from __future__ import annotations

import json

import pytest

from distrl_sdk.learn.api import EpisodeRecord
from distrl_sdk.wire import (
    DecodedTrajectory,
    EvalInfo,
    Rejected,
    StepMsg,
    TrajectoryMsg,
    decode_trajectory,
    encode_trajectory,
)
from distrl_sdk.wire.codec import _U32, TRAJ_MAGIC

STEP = StepMsg(index=0, action={"action_type": "tap", "x": 0.5, "y": 0.5}, log_prob=-0.1,
               policy_version=3, obs={"v": 1}, choice={"index": 0})
INFO = EvalInfo(round="farm-r1-v3", policy_version=3, instance=4, planned=10)


def msg(**kw: object) -> TrajectoryMsg:
    return TrajectoryMsg(farm_id="f", device_id="d", task="settings.wifi_off",
                         status="success", reward=1.0, steps=[STEP], **kw)  # type: ignore[arg-type]


def header(payload: bytes) -> dict[str, object]:
    (n,) = _U32.unpack_from(payload, 4)
    out: dict[str, object] = json.loads(payload[8 : 8 + n])
    return out


def reframe(env: dict[str, object]) -> bytes:
    raw = json.dumps(env).encode()
    return TRAJ_MAGIC + _U32.pack(len(raw)) + raw


def test_training_trajectories_stay_v1_and_eval_ones_are_v2() -> None:
    plain = encode_trajectory(msg())
    assert header(plain)["version"] == 1 and "eval" not in header(plain)["body"]  # type: ignore[operator]
    marked = encode_trajectory(msg(eval=INFO))
    assert header(marked)["version"] == 2
    d = decode_trajectory(marked)
    assert isinstance(d, DecodedTrajectory) and d.msg.eval == INFO
    d1 = decode_trajectory(plain)
    assert isinstance(d1, DecodedTrajectory) and d1.msg.eval is None


def test_a_v1_message_of_an_older_farm_still_parses() -> None:
    env = header(encode_trajectory(msg()))
    body = env["body"]
    assert isinstance(body, dict)
    body.pop("eval", None)  # what a farm before this field sent
    d = decode_trajectory(reframe(env))
    assert isinstance(d, DecodedTrajectory) and d.msg.eval is None and d.msg.task


def test_eval_in_a_v1_envelope_and_unknown_versions_are_refused() -> None:
    env = header(encode_trajectory(msg(eval=INFO)))
    env["version"] = 1
    r = decode_trajectory(reframe(env))
    assert isinstance(r, Rejected) and "v2" in r.detail
    env["version"] = 3
    r = decode_trajectory(reframe(env))
    assert isinstance(r, Rejected) and r.reason.value == "wrong_schema"
    with pytest.raises(ValueError):
        EvalInfo(round="bad round id", instance=0, planned=1)


def test_an_eval_trajectory_is_never_an_episode_record() -> None:
    d = decode_trajectory(encode_trajectory(msg(eval=INFO)))
    assert isinstance(d, DecodedTrajectory)
    assert EpisodeRecord.from_wire(d) is None
    d1 = decode_trajectory(encode_trajectory(msg()))
    assert isinstance(d1, DecodedTrajectory) and EpisodeRecord.from_wire(d1) is not None

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from distrl_sdk.actions import Tap
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory
from distrl_sdk.wire import (
    MAX_CHUNK_BYTES,
    Chunk,
    Command,
    DecodedTrajectory,
    DeviceStatus,
    Envelope,
    FrameOptions,
    Message,
    PolicyPointer,
    Reassembler,
    Rejected,
    RejectReason,
    TrajectoryAck,
    decode_trajectory,
    encode_envelope,
    encode_trajectory,
    parse_chunk,
    parse_message,
    split_chunks,
    topics,
    trajectory_to_msg,
    ui_digest,
)
from tests.transport.conftest import make_traj, png_frame


def test_topics_tree_and_id_validation() -> None:
    assert topics.traj("f1", "abc") == "distrl/v1/f1/traj/abc"
    assert topics.ack("f1") == "distrl/v1/f1/ack"
    assert topics.status("f1", "emu-5554") == "distrl/v1/f1/status/emu-5554"
    assert topics.cmd("f1", "d") == "distrl/v1/f1/cmd/d"
    assert topics.cmd_result("f1") == "distrl/v1/f1/cmd_result"
    assert topics.policy_pointer() == "distrl/v1/policy/pointer"
    assert topics.traj_filter() == "distrl/v1/+/traj/+"
    for bad in ["a/b", "+", "#", "x#", "", "a b", "\x00", "é", "x" * 129]:
        with pytest.raises(topics.TopicError):
            topics.traj("f1", bad)
        with pytest.raises(topics.TopicError):
            topics.status(bad, "d")
    with pytest.raises(topics.TopicError):
        topics.ack("policy")  # reserved
    p = topics.parse_topic("distrl/v1/f1/status/d1")
    assert p == topics.ParsedTopic("status", "f1", "d1")
    assert topics.parse_topic("distrl/v1/policy/pointer") == topics.ParsedTopic("policy_pointer")
    # "¹" is a digit to str.isdigit() that int() refuses: a blob index must be decimal
    for bad in ["distrl/v1/f1/traj", "distrl/v2/f1/ack", "distrl/v1/f1/traj/a/b", "x",
                "distrl/v1/policy/blob/¹/0", "distrl/v1/policy/blob/3/²"]:
        assert topics.parse_topic(bad) is None


def test_control_envelopes_round_trip() -> None:
    bodies = [
        (topics.ack("f1"), TrajectoryAck(ids=["a", "b"])),
        (topics.status("f1", "d1"), DeviceStatus(device_id="d1", state="busy")),
        (topics.cmd("f1", "d1"), Command(device_id="d1", op="quarantine")),
        (topics.policy_pointer(),
         PolicyPointer(version=7, sha256="0" * 64, size=10, where="http://x/a.safetensors")),
    ]
    for topic, body in bodies:
        data = encode_envelope(body, farm_id=None if "policy" in topic else "f1")
        env = json.loads(data)
        assert {"schema", "version", "id", "sent_at", "codec", "body"} <= set(env)
        m = parse_message(topic, data)
        assert isinstance(m, Message), m
        assert m.body == body
    # right schema, wrong topic
    data = encode_envelope(DeviceStatus(device_id="d1", state="ready"), farm_id="f1")
    r = parse_message(topics.ack("f1"), data)
    assert isinstance(r, Rejected) and r.reason is RejectReason.WRONG_SCHEMA
    # unknown version
    env = json.loads(data)
    env["version"] = 9
    r = parse_message(topics.status("f1", "d1"), json.dumps(env).encode())
    assert isinstance(r, Rejected) and r.reason is RejectReason.UNKNOWN_SCHEMA
    # farm mismatch
    r = parse_message(topics.status("f2", "d1"), data)
    assert isinstance(r, Rejected) and r.reason is RejectReason.BAD_ENVELOPE
    assert Envelope.model_validate(json.loads(data)).schema_ == "device_status"


def test_trajectory_codec_frames_as_jpeg() -> None:
    msg = make_traj(steps=2)
    big = Image.frombytes("RGBA", (1080, 2400), os.urandom(1080 * 2400 * 4))
    frames = {0: png_frame(seed=1), 1: big}
    payload = encode_trajectory(msg, frames, frame_opts=FrameOptions(scale=0.5, quality=60))
    d = decode_trajectory(payload)
    assert isinstance(d, DecodedTrajectory)
    assert d.msg.id == msg.id and d.envelope.codec == "distrl-traj/1"
    assert [s.frame for s in d.msg.steps] == ["frame/0", "frame/1"]
    img = Image.open(io.BytesIO(d.attachments["frame/1"]))
    assert img.format == "JPEG" and img.size == (540, 1200)
    raw = encode_trajectory(msg, {0: png_frame()}, frame_opts=FrameOptions(jpeg=False))
    d2 = decode_trajectory(raw)
    assert isinstance(d2, DecodedTrajectory)
    assert d2.attachments["frame/0"] == png_frame()
    # a corrupted attachment is caught by its sha256
    bad = bytearray(payload)
    bad[-1] ^= 1
    r = decode_trajectory(bytes(bad))
    assert isinstance(r, Rejected) and r.reason is RejectReason.SHA_MISMATCH


def test_trajectory_from_sdk() -> None:
    t = Trajectory(task="t", instruction="do it", status=EpisodeStatus.SUCCESS, reward=1.0,
                   steps=[Step(0, Tap(x=0.1, y=0.2), info={"log_prob": -0.5,
                                                            "policy_version": 4,
                                                            "ui_dump": "<hierarchy/>"})])
    m = trajectory_to_msg(t, farm_id="f1", device_id="d1")
    s = m.steps[0]
    assert s.log_prob == -0.5 and s.policy_version == 4
    assert s.ui_digest == ui_digest("<hierarchy/>") == hashlib.sha1(b"<hierarchy/>").hexdigest()
    assert s.action is not None and m.status == "success"


def test_chunking_and_reassembly() -> None:
    payload = os.urandom(3_500_000)
    chunks = split_chunks("m1", payload)
    assert len(chunks) == 4 and all(len(c) <= MAX_CHUNK_BYTES for c in chunks)
    r = Reassembler()
    parsed = [parse_chunk(c) for c in chunks]
    assert all(isinstance(p, Chunk) for p in parsed)
    out = None
    for p in [parsed[2], parsed[0], parsed[2], parsed[3], parsed[1]]:  # any order, dupes
        assert isinstance(p, Chunk)
        out = r.feed(p)
    assert out == payload and r.pending_messages == 0 and r.pending_bytes == 0


def test_reassembler_bounds_and_timeouts() -> None:
    r = Reassembler(max_pending_messages=2, max_pending_bytes=3_000_000, timeout_s=5,
                    max_message_bytes=5_000_000)
    firsts = [parse_chunk(split_chunks(f"m{i}", os.urandom(2_500_000))[0]) for i in range(3)]
    assert isinstance(firsts[0], Chunk) and isinstance(firsts[1], Chunk)
    assert isinstance(firsts[2], Chunk)
    assert r.feed(firsts[0], now=0) is None
    assert r.feed(firsts[1], now=1) is None
    full = r.feed(firsts[2], now=2)
    assert isinstance(full, Rejected) and full.reason is RejectReason.PENDING_FULL
    assert r.feed(firsts[2], now=5.5) is None  # m0 timed out, room again
    assert r.expired == 1
    big = parse_chunk(split_chunks("huge", os.urandom(10))[0])
    assert isinstance(big, Chunk)
    liar = Chunk(big.msg_id, 0, 6, 6_000_000, big.sha256, big.data)
    r2 = r.feed(liar)
    assert isinstance(r2, Rejected) and r2.reason is RejectReason.TOO_LARGE
    flood = Chunk("tiny", 0, 4000, 4000, "0" * 64, b"x")  # 1-byte chunks
    r3 = r.feed(flood)
    assert isinstance(r3, Rejected) and r3.reason is RejectReason.CHUNK_MISMATCH
    c = split_chunks("m9", b"hello")
    bad = bytearray(c[0])
    bad[-1] ^= 1
    pc = parse_chunk(bytes(bad))
    assert isinstance(pc, Chunk)
    r4 = Reassembler().feed(pc)
    assert isinstance(r4, Rejected) and r4.reason is RejectReason.SHA_MISMATCH


def test_parse_message_rejections() -> None:
    t = topics.traj("f1", "x")
    cases = {
        ("nope/x", b"{}"): RejectReason.UNKNOWN_TOPIC,
        (t, b"{}"): RejectReason.BAD_CHUNK,
        (t, b"\x00" * (MAX_CHUNK_BYTES + 1)): RejectReason.TOO_LARGE,
        (topics.ack("f1"), b"\xff\xfe"): RejectReason.BAD_JSON,
        (topics.ack("f1"), b"[1]"): RejectReason.BAD_ENVELOPE,
        (topics.ack("f1"), b"[" * 100_000): RejectReason.BAD_JSON,
        (topics.ack("f1"), b"{}" * 200_000): RejectReason.TOO_LARGE,
        (topics.ack("f1"), json.dumps({"schema": "trajectory_ack", "version": 1,
                                       "body": {"ids": []}}).encode()): RejectReason.BAD_BODY,
    }
    for (topic, payload), reason in cases.items():
        r = parse_message(topic, payload)
        assert isinstance(r, Rejected) and r.reason is reason, (topic, payload[:20], r)


_topics = st.one_of(
    st.text(max_size=60),
    st.sampled_from([topics.traj("f", "a"), topics.ack("f"), topics.status("f", "d"),
                     topics.cmd("f", "d"), topics.cmd_result("f"), topics.metrics("f"),
                     topics.policy_pointer()]),
)
_json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.text(max_size=8), ch, max_size=4),
    max_leaves=20,
)
_payloads = st.one_of(
    st.binary(max_size=2000),
    _json_like.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"schema": st.sampled_from(["trajectory_ack", "device_status", "x"]),
                           "version": st.integers(-2, 3), "body": _json_like}
                          ).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=300).map(lambda b: b"DRK1" + b),
    st.binary(max_size=300).map(lambda b: b"DRT1" + b),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topic=_topics, payload=_payloads)
def test_parse_message_never_raises(topic: str, payload: bytes) -> None:
    out = parse_message(topic, payload)
    assert isinstance(out, Chunk | Message | Rejected)
    if isinstance(out, Chunk):
        res = Reassembler(max_pending_messages=4).feed(out)
        assert res is None or isinstance(res, bytes | Rejected)
        if isinstance(res, bytes):
            assert isinstance(decode_trajectory(res), DecodedTrajectory | Rejected)
    assert isinstance(decode_trajectory(payload), DecodedTrajectory | Rejected)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=200), flips=st.lists(st.integers(0, 10_000), max_size=5))
def test_corrupted_trajectory_payloads_never_raise(data: bytes, flips: list[int]) -> None:
    payload = bytearray(encode_trajectory(make_traj(steps=1),
                                          extra={"x": ("a/b", data)}))
    for f in flips:
        payload[f % len(payload)] ^= 0x5A
    assert isinstance(decode_trajectory(bytes(payload)), DecodedTrajectory | Rejected)

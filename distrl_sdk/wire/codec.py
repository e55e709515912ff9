"""Trajectory payloads (JSON header + binary attachments), ≤ 1 MB chunks, a bounded
:class:`Reassembler`, and :func:`parse_message`, which never raises on garbage."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from PIL import Image
from pydantic import BaseModel

from distrl_sdk.trajectory import Trajectory
from distrl_sdk.wire import topics
from distrl_sdk.wire.schemas import (
    SCHEMA_OF,
    SCHEMAS,
    TRAJECTORY_VERSIONS,
    AttachmentRef,
    DeviceFrame,
    Envelope,
    StepMsg,
    TrajectoryMsg,
)
from distrl_sdk.wire.signing import (
    SigningKey,
    TrustedKeys,
    Verdict,
    check_envelope,
    sign_envelope,
)

__all__ = [
    "CHUNK_MAGIC",
    "FRAME_MAGIC",
    "MAX_CHUNK_BYTES",
    "MAX_CONTROL_BYTES",
    "MAX_FRAME_BYTES",
    "TRAJ_CODEC",
    "TRAJ_MAGIC",
    "Chunk",
    "DecodedTrajectory",
    "FrameOptions",
    "Message",
    "Reassembler",
    "RejectReason",
    "Rejected",
    "check_trajectory",
    "decode_trajectory",
    "encode_envelope",
    "encode_frame",
    "encode_trajectory",
    "frame_to_jpeg",
    "parse_chunk",
    "parse_message",
    "split_chunks",
    "trajectory_to_msg",
    "ui_digest",
    "verify_payload",
]

TRAJ_MAGIC = b"DRT1"
CHUNK_MAGIC = b"DRK1"
FRAME_MAGIC = b"DRF1"
MAX_FRAME_BYTES = 2 * 1024 * 1024  # a thumbnail, not a screenshot archive
TRAJ_CODEC = "distrl-traj/1"
MAX_CHUNK_BYTES = 1_000_000  # whole MQTT payload of one chunk, header included (EMQX: 1 MiB)
MAX_CHUNK_HEADER = 512
MAX_CONTROL_BYTES = 256 * 1024  # non-trajectory envelopes
MAX_HEADER_BYTES = 16 * 1024 * 1024

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


class RejectReason(StrEnum):
    UNKNOWN_TOPIC = "unknown_topic"
    TOO_LARGE = "too_large"
    BAD_JSON = "bad_json"
    BAD_ENVELOPE = "bad_envelope"
    UNKNOWN_SCHEMA = "unknown_schema"
    WRONG_SCHEMA = "wrong_schema"  # a valid schema on the wrong topic
    BAD_BODY = "bad_body"
    BAD_CHUNK = "bad_chunk"
    CHUNK_MISMATCH = "chunk_mismatch"  # index/count/size disagree with earlier chunks
    PENDING_FULL = "pending_full"  # reassembly bounds reached
    TIMEOUT = "timeout"
    SHA_MISMATCH = "sha_mismatch"
    BAD_PAYLOAD = "bad_payload"  # reassembled bytes are not a valid trajectory payload
    DUPLICATE = "duplicate"  # counted by subscribers, not a parse failure
    TOO_OLD = "too_old"  # ended before what a subscriber's dedupe still remembers


@dataclass(frozen=True)
class Rejected:
    reason: RejectReason
    detail: str = ""


# ---------------------------------------------------------------- frames


@dataclass(frozen=True)
class FrameOptions:
    scale: float = 1.0  # 0 < scale ≤ 1
    quality: int = 80  # JPEG quality 1..95
    jpeg: bool = True  # False: ship the frame bytes as given


def frame_to_jpeg(frame: bytes | Image.Image, opts: FrameOptions = FrameOptions()) -> bytes:
    """PNG/RGBA (bytes or a PIL image) → JPEG bytes at ``opts.scale``/``opts.quality``."""
    img = frame if isinstance(frame, Image.Image) else Image.open(io.BytesIO(frame))
    if 0 < opts.scale < 1:
        w, h = img.size
        factor = 1 / opts.scale
        if abs(factor - round(factor)) < 1e-6:  # 1/2, 1/3 …: box-reduce, much faster
            img = img.reduce(round(factor))
        else:
            img = img.resize((max(1, round(w * opts.scale)), max(1, round(h * opts.scale))),
                             Image.Resampling.BILINEAR)
    if img.mode != "RGB":
        img = img.convert("RGB")
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=max(1, min(95, opts.quality)))
    return out.getvalue()


def ui_digest(dump: str | bytes) -> str:
    """sha1 of a UI dump, as carried by :class:`StepMsg`."""
    data = dump.encode() if isinstance(dump, str) else dump
    return hashlib.sha1(data).hexdigest()


# ---------------------------------------------------------------- SDK → wire


def trajectory_to_msg(traj: Trajectory, *, farm_id: str, device_id: str,
                      traj_id: str | None = None) -> TrajectoryMsg:
    """Build a :class:`TrajectoryMsg` from an SDK trajectory. Per-step extras are read from
    ``step.info``: ``log_prob``, ``policy_version``, ``ui_dump`` (or ``ui_digest``),
    ``timings``."""
    from distrl_sdk.actions import InvalidAction, to_json

    steps: list[StepMsg] = []
    for s in traj.steps:
        info = s.info
        action: dict[str, Any] | None = None
        raw: str | None = None
        if isinstance(s.action, InvalidAction):
            raw = str(getattr(s.action, "raw", "") or s.action.reason)
        elif s.action is not None:
            action = json.loads(to_json(s.action))
        dump = info.get("ui_dump")
        digest = ui_digest(dump) if isinstance(dump, str | bytes) else info.get("ui_digest")
        lp = info.get("log_prob")
        pv = info.get("policy_version")
        timings = info.get("timings") or {}
        steps.append(StepMsg(
            index=s.index, action=action, action_raw=raw, reward=s.reward,
            log_prob=float(lp) if lp is not None else None,
            policy_version=int(pv) if pv is not None else None,
            ui_digest=digest, activity=s.activity,
            timings={str(k): float(v) for k, v in dict(timings).items()},
            obs=info.get("policy_obs"), choice=info.get("policy_choice"),
        ))
    kw: dict[str, Any] = {"id": traj_id} if traj_id else {}
    return TrajectoryMsg(farm_id=farm_id, device_id=device_id, task=traj.task,
                         instruction=traj.instruction, params=dict(traj.params),
                         status=traj.status.value, reward=traj.reward, answer=traj.answer,
                         error=traj.error, steps=steps, **kw)


# ---------------------------------------------------------------- payloads


def encode_envelope(body: BaseModel, *, farm_id: str | None = None, msg_id: str | None = None,
                    codec: str = "json", signer: SigningKey | None = None) -> bytes:
    """A control message (ack, status, command, pointer, metrics) as JSON bytes, signed
    with ``signer``'s key when given (distrl_sdk.wire.signing)."""
    name = SCHEMA_OF[type(body)]
    kw: dict[str, Any] = {"id": msg_id} if msg_id else {}
    env = Envelope(schema=name, version=1, codec=codec, farm_id=farm_id,
                   body=body.model_dump(mode="json"), **kw)
    if signer is None:
        return env.model_dump_json(by_alias=True).encode()
    signed = sign_envelope(env.model_dump(mode="json", by_alias=True), signer)
    return json.dumps(signed, separators=(",", ":"), ensure_ascii=False).encode()


def encode_trajectory(msg: TrajectoryMsg, frames: Mapping[int, bytes | Image.Image] | None = None,
                      *, frame_opts: FrameOptions = FrameOptions(),
                      extra: Mapping[str, tuple[str, bytes]] | None = None,
                      signer: SigningKey | None = None) -> bytes:
    """``TRAJ_MAGIC | u32 header length | Envelope JSON | attachment bytes``.

    ``signer`` signs the header envelope; it names every attachment's sha256, so the
    signature covers the frames too (:func:`check_trajectory` verifies it).

    ``frames`` maps step index → PNG bytes/PIL image; each is converted to JPEG (or
    shipped as is with ``frame_opts.jpeg=False``) and referenced from its step.
    ``extra`` adds named attachments ``name → (content_type, bytes)``."""
    blobs: list[bytes] = []
    refs: list[AttachmentRef] = []
    offset = 0

    def add(name: str, ctype: str, data: bytes) -> None:
        nonlocal offset
        refs.append(AttachmentRef(name=name, content_type=ctype, offset=offset, size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest()))
        blobs.append(data)
        offset += len(data)

    steps = [s.model_copy() for s in msg.steps]
    by_index = {s.index: s for s in steps}
    for idx, frame in sorted((frames or {}).items()):
        if frame_opts.jpeg:
            data, ctype = frame_to_jpeg(frame, frame_opts), "image/jpeg"
        else:
            if isinstance(frame, Image.Image):
                buf = io.BytesIO()
                frame.save(buf, format="PNG")
                frame = buf.getvalue()
            data, ctype = frame, "image/png"
        name = f"frame/{idx}"
        add(name, ctype, data)
        if idx in by_index:
            by_index[idx].frame = name
    for name, (ctype, data) in (extra or {}).items():
        add(name, ctype, data)
    body = msg.model_copy(update={"steps": steps, "attachments": refs})
    # v2 only where its field is used: a learner that predates evaluation refuses an eval
    # trajectory (wrong schema) instead of learning from it, and still takes the others
    version = 2 if msg.eval is not None else 1
    env = Envelope(schema="trajectory", version=version, id=msg.id, codec=TRAJ_CODEC,
                   farm_id=msg.farm_id,
                   body=body.model_dump(mode="json", exclude={"eval"} if version == 1 else None))
    if signer is None:
        header = env.model_dump_json(by_alias=True).encode()
    else:
        signed = sign_envelope(env.model_dump(mode="json", by_alias=True), signer)
        header = json.dumps(signed, separators=(",", ":"), ensure_ascii=False).encode()
    return b"".join([TRAJ_MAGIC, _U32.pack(len(header)), header, *blobs])


def check_trajectory(payload: bytes | bytearray | memoryview, trusted: TrustedKeys
                     ) -> tuple[Verdict, str]:
    """The signature verdict on a whole trajectory payload's header. Never raises. The
    caller must also check the attachments against their sha256 in that header
    (``decode_trajectory(verify_attachments=True)``) for the frames to be covered."""
    data = memoryview(payload)
    if bytes(data[:4]) != TRAJ_MAGIC or len(data) < 8:
        return Verdict.UNSIGNED, "not a trajectory payload"
    (hlen,) = _U32.unpack_from(data, 4)
    if hlen > min(MAX_HEADER_BYTES, len(data) - 8):
        return Verdict.UNSIGNED, "header length out of range"
    return check_envelope(data[8 : 8 + hlen], trusted)


@dataclass
class DecodedTrajectory:
    envelope: Envelope
    msg: TrajectoryMsg
    attachments: dict[str, bytes]


def _framed_envelope(data: bytes, magic: bytes, max_header: int, schema: str,
                     versions: frozenset[int] = frozenset({1})
                     ) -> tuple[Envelope, int] | Rejected:
    """``magic | u32 header length | Envelope JSON | …``: the envelope (of ``schema``, one
    of ``versions``) and the header length, or why not."""
    if data[:4] != magic or len(data) < 8:
        return Rejected(RejectReason.BAD_PAYLOAD, f"no {schema} magic")
    (hlen,) = _U32.unpack_from(data, 4)
    if hlen > min(max_header, len(data) - 8):
        return Rejected(RejectReason.BAD_PAYLOAD, f"header length {hlen} out of range")
    try:
        raw = json.loads(data[8 : 8 + hlen])
    except (ValueError, RecursionError) as e:
        return Rejected(RejectReason.BAD_JSON, str(e)[:200])
    env = _envelope(raw)
    if isinstance(env, Rejected):
        return env
    if env.schema_ != schema or env.version not in versions:
        return Rejected(RejectReason.WRONG_SCHEMA, f"{env.schema_} v{env.version}, "
                                                   f"expected {schema}")
    return env, hlen


def decode_trajectory(payload: bytes, *, verify_attachments: bool = True
                      ) -> DecodedTrajectory | Rejected:
    """Inverse of :func:`encode_trajectory`; never raises. ``verify_attachments=False``
    skips the per-attachment sha256 (when the whole payload's hash was checked already)."""
    try:
        head = _framed_envelope(payload, TRAJ_MAGIC, MAX_HEADER_BYTES, "trajectory",
                                TRAJECTORY_VERSIONS)
        if isinstance(head, Rejected):
            return head
        env, hlen = head
        if env.version < 2 and env.body.get("eval") is not None:  # v1 had no such field
            return Rejected(RejectReason.BAD_BODY, "eval needs trajectory v2")
        try:
            msg = TrajectoryMsg.model_validate(env.body)
        except ValueError as e:
            return Rejected(RejectReason.BAD_BODY, str(e)[:200])
        if msg.id != env.id:
            return Rejected(RejectReason.BAD_BODY, "envelope id ≠ trajectory id")
        blob = memoryview(payload)[8 + hlen :]
        atts: dict[str, bytes] = {}
        for ref in msg.attachments:
            if ref.offset + ref.size > len(blob):
                return Rejected(RejectReason.BAD_PAYLOAD, f"attachment {ref.name} out of range")
            data = bytes(blob[ref.offset : ref.offset + ref.size])
            if verify_attachments and hashlib.sha256(data).hexdigest() != ref.sha256:
                return Rejected(RejectReason.SHA_MISMATCH, f"attachment {ref.name}")
            atts[ref.name] = data
        return DecodedTrajectory(env, msg, atts)
    except Exception as e:  # never raise on hostile input
        return Rejected(RejectReason.BAD_PAYLOAD, f"{type(e).__name__}: {e}"[:200])


def _envelope(raw: object) -> Envelope | Rejected:
    if not isinstance(raw, dict):
        return Rejected(RejectReason.BAD_ENVELOPE, "not an object")
    try:
        return Envelope.model_validate(raw)
    except ValueError as e:
        return Rejected(RejectReason.BAD_ENVELOPE, str(e)[:200])


# ---------------------------------------------------------------- chunks


@dataclass(frozen=True)
class Chunk:
    msg_id: str
    index: int
    count: int
    total: int  # size of the whole reassembled payload
    sha256: str  # of the whole payload
    data: bytes


def split_chunks(msg_id: str, payload: bytes, *, max_bytes: int = MAX_CHUNK_BYTES,
                 sha256: str | None = None) -> list[bytes]:
    """Split a payload into MQTT payloads of ≤ ``max_bytes`` each (header included).
    ``sha256``: the payload's hex digest, if already known."""
    topics.check_id(msg_id, "message id")
    per = max_bytes - MAX_CHUNK_HEADER
    if per <= 0:
        raise ValueError("max_bytes too small")
    digest = sha256 or hashlib.sha256(payload).hexdigest()
    count = max(1, -(-len(payload) // per))
    out: list[bytes] = []
    for i in range(count):
        header = json.dumps({"m": msg_id, "i": i, "n": count, "t": len(payload), "h": digest},
                            separators=(",", ":")).encode()
        out.append(b"".join([CHUNK_MAGIC, _U16.pack(len(header)), header,
                             payload[i * per : (i + 1) * per]]))
    return out


def parse_chunk(payload: bytes, *, max_bytes: int = MAX_CHUNK_BYTES) -> Chunk | Rejected:
    try:
        if len(payload) > max_bytes:
            return Rejected(RejectReason.TOO_LARGE, f"chunk of {len(payload)} B")
        if payload[:4] != CHUNK_MAGIC or len(payload) < 6:
            return Rejected(RejectReason.BAD_CHUNK, "no chunk magic")
        (hlen,) = _U16.unpack_from(payload, 4)
        if hlen > MAX_CHUNK_HEADER or 6 + hlen > len(payload):
            return Rejected(RejectReason.BAD_CHUNK, "header length out of range")
        try:
            h = json.loads(payload[6 : 6 + hlen])
        except (ValueError, RecursionError):
            return Rejected(RejectReason.BAD_CHUNK, "header is not JSON")
        if not isinstance(h, dict):
            return Rejected(RejectReason.BAD_CHUNK, "header is not an object")
        m, i, n, t, d = h.get("m"), h.get("i"), h.get("n"), h.get("t"), h.get("h")
        if not (isinstance(m, str) and type(i) is int and type(n) is int and type(t) is int
                and isinstance(d, str) and len(d) == 64):
            return Rejected(RejectReason.BAD_CHUNK, "header fields")
        try:
            topics.check_id(m)
        except topics.TopicError:
            return Rejected(RejectReason.BAD_CHUNK, "bad message id")
        if not (0 <= i < n) or t < 0:
            return Rejected(RejectReason.BAD_CHUNK, f"index {i} of {n}, total {t}")
        return Chunk(m, i, n, t, d, bytes(payload[6 + hlen :]))
    except Exception as e:
        return Rejected(RejectReason.BAD_CHUNK, f"{type(e).__name__}"[:200])


@dataclass
class _Pending:
    count: int
    total: int
    sha256: str
    started: float
    parts: dict[int, bytes] = field(default_factory=dict)
    size: int = 0


class Reassembler:
    """Collects chunks into payloads, within bounds.

    * ``max_message_bytes``: a payload announcing more is rejected (``too_large``);
    * ``max_pending_bytes`` / ``max_pending_messages``: a new message that would exceed
      them is rejected (``pending_full``); partial messages older than ``timeout_s`` are
      dropped first (each counted as ``timeout`` in :attr:`expired`).
    A chunk that disagrees with its message's earlier chunks discards the message."""

    def __init__(self, *, max_message_bytes: int = 64 * 1024 * 1024,
                 max_pending_bytes: int = 256 * 1024 * 1024, max_pending_messages: int = 256,
                 timeout_s: float = 120.0, max_chunk_bytes: int = MAX_CHUNK_BYTES,
                 verify: bool = True) -> None:
        self.max_message_bytes = max_message_bytes
        self.max_pending_bytes = max_pending_bytes
        self.max_pending_messages = max_pending_messages
        self.timeout_s = timeout_s
        self.max_chunk_bytes = max_chunk_bytes
        self.verify = verify  # False: the caller checks sha256 (see :func:`verify_payload`)
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._bytes = 0
        self.expired = 0

    @property
    def pending_bytes(self) -> int:
        return self._bytes

    @property
    def pending_messages(self) -> int:
        return len(self._pending)

    def _drop(self, msg_id: str) -> None:
        p = self._pending.pop(msg_id, None)
        if p is not None:
            self._bytes -= p.size

    def expire(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        old = [k for k, p in self._pending.items() if now - p.started > self.timeout_s]
        for k in old:
            self._drop(k)
        self.expired += len(old)
        return len(old)

    def feed(self, chunk: Chunk, now: float | None = None) -> bytes | Rejected | None:
        """A complete payload, a rejection, or ``None`` while the message is incomplete."""
        now = time.monotonic() if now is None else now
        per = self.max_chunk_bytes - MAX_CHUNK_HEADER
        if chunk.total > self.max_message_bytes:
            self._drop(chunk.msg_id)
            return Rejected(RejectReason.TOO_LARGE, f"message of {chunk.total} B")
        # as few chunks as the size needs, at most one per KiB (no floods of tiny chunks)
        if not (-(-chunk.total // per) <= chunk.count <= max(1, -(-chunk.total // 1024))):
            return Rejected(RejectReason.CHUNK_MISMATCH,
                            f"{chunk.count} chunks for {chunk.total} B")
        p = self._pending.get(chunk.msg_id)
        if p is None:
            if chunk.count == 1:
                return self._finish(chunk.total, chunk.sha256, {0: chunk.data}, self.verify)
            self.expire(now)
            if (len(self._pending) >= self.max_pending_messages
                    or self._bytes + len(chunk.data) > self.max_pending_bytes):
                return Rejected(RejectReason.PENDING_FULL,
                                f"{len(self._pending)} messages, {self._bytes} B pending")
            p = _Pending(chunk.count, chunk.total, chunk.sha256, now)
            self._pending[chunk.msg_id] = p
        if (p.count, p.total, p.sha256) != (chunk.count, chunk.total, chunk.sha256):
            self._drop(chunk.msg_id)
            return Rejected(RejectReason.CHUNK_MISMATCH, "count/total/sha differ between chunks")
        if chunk.index in p.parts:
            return None  # redelivered chunk
        if p.size + len(chunk.data) > p.total or self._bytes + len(chunk.data) > \
                self.max_pending_bytes:
            self._drop(chunk.msg_id)
            why = RejectReason.CHUNK_MISMATCH if p.size + len(chunk.data) > p.total \
                else RejectReason.PENDING_FULL
            return Rejected(why, "chunk data exceeds bounds")
        p.parts[chunk.index] = chunk.data
        p.size += len(chunk.data)
        self._bytes += len(chunk.data)
        if len(p.parts) < p.count:
            return None
        self._drop(chunk.msg_id)
        return self._finish(p.total, p.sha256, p.parts, self.verify)

    @staticmethod
    def _finish(total: int, sha: str, parts: dict[int, bytes], verify: bool) -> bytes | Rejected:
        data = parts[0] if len(parts) == 1 else b"".join(parts[i] for i in sorted(parts))
        if len(data) != total:
            return Rejected(RejectReason.CHUNK_MISMATCH, f"{len(data)} B, announced {total}")
        if verify:
            return verify_payload(data, sha)
        return data


def verify_payload(data: bytes, sha256: str) -> bytes | Rejected:
    """``data`` if its sha256 is ``sha256``, else a rejection (releases the GIL: fine to
    run in a thread)."""
    if hashlib.sha256(data).hexdigest() != sha256:
        return Rejected(RejectReason.SHA_MISMATCH, "payload sha256")
    return data


# ---------------------------------------------------------------- parse


@dataclass(frozen=True)
class Message:
    topic: topics.ParsedTopic
    envelope: Envelope
    body: BaseModel
    data: bytes | None = None  # the image of a device_frame message


def encode_frame(frame: DeviceFrame, image: bytes, *, farm_id: str | None = None) -> bytes:
    """``FRAME_MAGIC | u32 header length | Envelope JSON | image bytes`` (topic ``frame``)."""
    env = Envelope(schema="device_frame", version=1, codec="frame", farm_id=farm_id,
                   body=frame.model_dump(mode="json"))
    header = env.model_dump_json(by_alias=True).encode()
    return b"".join([FRAME_MAGIC, _U32.pack(len(header)), header, image])


def _parse_frame(data: bytes, t: topics.ParsedTopic) -> Message | Rejected:
    if len(data) > MAX_FRAME_BYTES:
        return Rejected(RejectReason.TOO_LARGE, f"frame of {len(data)} B")
    head = _framed_envelope(data, FRAME_MAGIC, MAX_CONTROL_BYTES, "device_frame")
    if isinstance(head, Rejected):
        return head
    env, hlen = head
    try:
        body = DeviceFrame.model_validate(env.body)
    except ValueError as e:
        return Rejected(RejectReason.BAD_BODY, str(e)[:200])
    if t.item_id is not None and body.device_id != t.item_id:
        return Rejected(RejectReason.BAD_BODY, "device id differs from topic")
    if t.farm_id is not None and env.farm_id not in (None, t.farm_id):
        return Rejected(RejectReason.BAD_ENVELOPE, "farm id differs from topic")
    return Message(t, env, body, bytes(data[8 + hlen :]))


_KIND_SCHEMA = {
    "ack": "trajectory_ack",
    "status": "device_status",
    "cmd": "command",
    "cmd_result": "command_result",
    "metrics": "metrics",
    "policy_pointer": "policy_pointer",
    "learner_metrics": "metrics",
}


def parse_message(topic: str, payload: bytes | bytearray | memoryview | str | Any,
                  *, max_chunk_bytes: int = MAX_CHUNK_BYTES) -> Chunk | Message | Rejected:
    """Classify and validate one MQTT message. Trajectory topics yield a :class:`Chunk`
    (feed it to a :class:`Reassembler`); the others a validated :class:`Message`.
    Never raises."""
    try:
        t = topics.parse_topic(topic)
        if t is None:
            return Rejected(RejectReason.UNKNOWN_TOPIC, str(topic)[:200])
        if isinstance(payload, str):
            payload = payload.encode("utf-8", "surrogatepass")
        if not isinstance(payload, bytes | bytearray | memoryview):
            return Rejected(RejectReason.BAD_PAYLOAD, f"payload type {type(payload).__name__}")
        data = bytes(payload)
        if t.kind in ("traj", "policy_blob"):
            return parse_chunk(data, max_bytes=max_chunk_bytes)
        if t.kind == "frame":
            return _parse_frame(data, t)
        if len(data) > MAX_CONTROL_BYTES:
            return Rejected(RejectReason.TOO_LARGE, f"{len(data)} B on {t.kind}")
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError) as e:
            return Rejected(RejectReason.BAD_JSON, str(e)[:200])
        env = _envelope(raw)
        if isinstance(env, Rejected):
            return env
        model = SCHEMAS.get((env.schema_, env.version))
        if model is None:
            return Rejected(RejectReason.UNKNOWN_SCHEMA, f"{env.schema_} v{env.version}"[:200])
        if env.schema_ != _KIND_SCHEMA[t.kind]:
            return Rejected(RejectReason.WRONG_SCHEMA, f"{env.schema_} on {t.kind}")
        try:
            body = model.model_validate(env.body)
        except ValueError as e:
            return Rejected(RejectReason.BAD_BODY, str(e)[:200])
        if t.farm_id is not None and env.farm_id not in (None, t.farm_id):
            return Rejected(RejectReason.BAD_ENVELOPE, "farm id differs from topic")
        return Message(t, env, body)
    except Exception as e:
        return Rejected(RejectReason.BAD_PAYLOAD, f"{type(e).__name__}"[:200])


def frames_of(decoded: DecodedTrajectory) -> Sequence[tuple[int, bytes]]:
    """(step index, frame bytes) pairs of a decoded trajectory."""
    out: list[tuple[int, bytes]] = []
    for s in decoded.msg.steps:
        if s.frame and s.frame in decoded.attachments:
            out.append((s.index, decoded.attachments[s.frame]))
    return out

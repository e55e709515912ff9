"""Versioned wire schemas (pydantic v2). Every payload is an :class:`Envelope` whose
``body`` validates against the model registered for ``(schema, version)``."""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FARM_STATUS_ID",
    "SCHEMAS",
    "TRAJECTORY_VERSIONS",
    "AttachmentRef",
    "Command",
    "CommandResult",
    "DeviceFrame",
    "DeviceStatus",
    "Envelope",
    "EvalInfo",
    "Metrics",
    "PolicyPointer",
    "StepMsg",
    "TrajectoryAck",
    "TrajectoryMsg",
    "new_id",
]

_ID_PATTERN = r"^[A-Za-z0-9._:@=-]{1,128}$"


def new_id() -> str:
    """A fresh message/trajectory id (uuid4 hex: topic-safe)."""
    return uuid.uuid4().hex


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Envelope(_Model):
    """The outer frame of every payload (docs/design.md §3)."""

    schema_: str = Field(alias="schema", min_length=1, max_length=64)
    version: int = Field(ge=1, le=1000)
    id: str = Field(default_factory=new_id, pattern=_ID_PATTERN)
    sent_at: float = Field(default_factory=time.time)
    codec: str = Field(default="json", max_length=32)
    farm_id: str | None = Field(default=None, pattern=_ID_PATTERN)
    body: dict[str, Any] = Field(default_factory=dict)
    # Ed25519 over the rest of the envelope (distrl_sdk.wire.signing): the key id, the sig
    signer: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    sig: str | None = Field(default=None, max_length=128)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AttachmentRef(_Model):
    """A binary part of a trajectory payload: ``size`` bytes at ``offset`` after the header."""

    name: str = Field(max_length=128)
    content_type: str = Field(max_length=64)  # image/jpeg, image/png, application/octet-stream
    offset: int = Field(ge=0)
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class StepMsg(_Model):
    index: int = Field(ge=0)
    action: dict[str, Any] | None = None  # distrl_sdk.actions.to_json, parsed back to a dict
    action_raw: str | None = None  # an InvalidAction's raw text, if any
    reward: float = 0.0
    log_prob: float | None = None  # behaviour log μ(a|s)
    policy_version: int | None = Field(default=None, ge=0)
    ui_digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")  # sha1 of the UI dump
    activity: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)  # seconds: observe/act/execute/...
    frame: str | None = None  # name of an AttachmentRef
    # the policy's own JSON encodings of what it saw and chose (distrl_sdk.policy.Decision):
    # the learner recomputes log π(a|s) from them; absent for scripted/random policies
    obs: dict[str, Any] | None = None
    choice: dict[str, Any] | None = None


class EvalInfo(_Model):
    """Marks a held-out evaluation episode (trajectory schema v2): a frozen policy played a
    test instance; the learner scores it and never learns from it. A round is complete when
    every one of its ``planned`` instances has a ``final`` trajectory."""

    round: str = Field(pattern=_ID_PATTERN)  # unique per farm and round
    policy_version: int | None = Field(default=None, ge=0)  # the frozen version played
    instance: int = Field(ge=0)  # this instance's index in the round
    planned: int = Field(ge=1, le=1_000_000)  # instances in the round
    final: bool = True  # False: an aborted attempt the farm plays again (not scored)
    split: Literal["train", "test"] = "test"
    greedy: bool = True


class TrajectoryMsg(_Model):
    id: str = Field(default_factory=new_id, pattern=_ID_PATTERN)
    farm_id: str = Field(pattern=_ID_PATTERN)
    device_id: str = Field(pattern=_ID_PATTERN)
    task: str = Field(max_length=256)
    instruction: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    status: Literal["running", "success", "failure", "aborted", "errored"] = "running"
    reward: float = 0.0
    answer: str | None = None
    error: str | None = None
    steps: list[StepMsg] = Field(default_factory=list)
    attachments: list[AttachmentRef] = Field(default_factory=list)
    started_at: float | None = None
    ended_at: float | None = None
    # v2: set on evaluation episodes only (a training trajectory is still encoded as v1, so
    # learners that predate evaluation keep learning from it, and refuse eval ones)
    eval: EvalInfo | None = None


class TrajectoryAck(_Model):
    ids: list[str] = Field(min_length=1, max_length=10_000)
    learner_id: str | None = None


#: the device id under which a farm publishes its own retained status (last will: offline)
FARM_STATUS_ID = "controller"


class DeviceStatus(_Model):
    """Retained per device. Paused/offline/quarantined/preparing changes go out at once;
    busy ↔ ready and per-step progress are coalesced to the farm's ``status_hz``."""

    device_id: str = Field(pattern=_ID_PATTERN)
    state: Literal["preparing", "ready", "busy", "offline", "quarantined", "paused"]
    detail: str | None = None
    policy_version: int | None = None
    episodes: int = 0
    task: str | None = Field(default=None, max_length=256)  # while busy
    instruction: str | None = Field(default=None, max_length=1024)
    step: int | None = Field(default=None, ge=0)
    episode_return: float | None = None
    last_action: dict[str, Any] | None = None  # distrl_sdk.actions JSON of the newest action
    battery: int | None = Field(default=None, ge=0, le=100)  # percent
    temperature_c: float | None = None
    kind: str | None = Field(default=None, max_length=32)  # usb | tcp | emulator | sim
    # host:port of the adb server the farm reaches the device through (what `distrl
    # deploy --adb-port` needs on the farm's host)
    adb_server: str | None = Field(default=None, max_length=262)
    # the running episode's ordinal on this device (1, 2, …) and its steps since the
    # previous status ({"step": k, "action": AndroidWorld JSON}): statuses are coalesced
    # to ≤ status_hz, so each one carries every step taken since the last
    episode: int | None = Field(default=None, ge=1)
    steps: list[dict[str, Any]] = Field(default_factory=list, max_length=64)
    # the newest finished episode: {"episode": N, "outcome": success | failure | aborted |
    # errored, "return": float, "steps": n}
    last_episode: dict[str, Any] | None = None
    # on the farm's own (controller) status only: the task names it takes for run_task
    tasks: list[Annotated[str, Field(max_length=256)]] = Field(default_factory=list,
                                                               max_length=1024)
    updated_at: float = Field(default_factory=time.time)


class DeviceFrame(_Model):
    """A live screen thumbnail (topic ``…/frame/<device>``); the image is the attachment
    of :func:`distrl_sdk.wire.encode_frame`. ``actions``: the newest actions (pixels) for
    drawing on it. ``elements``: the interesting UI elements of the newest observation
    (:func:`distrl_sdk.wire.compact_elements`: ``text``, ``id``, ``desc``, ``cls``, ``bounds``
    [l,t,r,b] in device pixels, ``click``, ``checked``), empty when the farm has none."""

    device_id: str = Field(pattern=_ID_PATTERN)
    width: int = Field(ge=1, le=10_000)  # of the thumbnail
    height: int = Field(ge=1, le=10_000)
    screen_width: int = Field(ge=1, le=100_000)  # of the device, for scaling actions
    screen_height: int = Field(ge=1, le=100_000)
    step: int | None = Field(default=None, ge=0)
    content_type: Literal["image/jpeg", "image/png"] = "image/jpeg"
    actions: list[dict[str, Any]] = Field(default_factory=list, max_length=16)
    elements: list[dict[str, Any]] = Field(default_factory=list, max_length=64)
    captured_at: float = Field(default_factory=time.time)


class PolicyPointer(_Model):
    """Retained on ``distrl/v1/policy/pointer``. ``where``: ``mqtt:<blob topic>`` (the blob
    in chunks on that topic, retained), a ``file://`` path or an ``http(s)://`` URL."""

    version: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)
    where: str = Field(min_length=1, max_length=2048)
    kind: str = Field(default="uitree", max_length=64)  # which policy class loads the weights
    config: dict[str, Any] = Field(default_factory=dict)  # that class's architecture config
    format: Literal["safetensors"] = "safetensors"
    published_at: float = Field(default_factory=time.time)


class Command(_Model):
    id: str = Field(default_factory=new_id, pattern=_ID_PATTERN)
    device_id: str = Field(pattern=_ID_PATTERN)
    op: Literal["pause", "resume", "reconnect", "quarantine", "release", "run_task"]
    args: dict[str, Any] = Field(default_factory=dict)
    expires_at: float | None = None


class CommandResult(_Model):
    command_id: str = Field(pattern=_ID_PATTERN)
    device_id: str = Field(pattern=_ID_PATTERN)
    ok: bool
    detail: str | None = None
    result: dict[str, Any] = Field(default_factory=dict)


class Metrics(_Model):
    source: str = Field(max_length=128)
    step: int | None = None
    scalars: dict[str, float] = Field(default_factory=dict)


#: (schema name, version) → body model
SCHEMAS: dict[tuple[str, int], type[BaseModel]] = {
    ("trajectory", 1): TrajectoryMsg,
    ("trajectory", 2): TrajectoryMsg,  # + ``eval``
    ("trajectory_ack", 1): TrajectoryAck,
    ("device_status", 1): DeviceStatus,
    ("policy_pointer", 1): PolicyPointer,
    ("command", 1): Command,
    ("command_result", 1): CommandResult,
    ("device_frame", 1): DeviceFrame,
    ("metrics", 1): Metrics,
}
SCHEMA_OF: dict[type[BaseModel], str] = {cls: name for (name, _v), cls in SCHEMAS.items()}
#: trajectory envelope versions this code reads (v1: no ``eval`` field)
TRAJECTORY_VERSIONS = frozenset({1, 2})

"""The MQTT topic tree, ``distrl/v1/...`` (docs/design.md §3), and validation of ids used in it."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "PREFIX",
    "ParsedTopic",
    "TopicError",
    "ack",
    "check_id",
    "cmd",
    "cmd_result",
    "frame",
    "learner_metrics",
    "metrics",
    "parse_topic",
    "policy_blob",
    "policy_blob_chunk",
    "policy_pointer",
    "status",
    "traj",
    "traj_filter",
]

PREFIX = "distrl/v1"
_ID = re.compile(r"^[A-Za-z0-9._:@=-]{1,128}$")
_RESERVED = {"policy", "learner"}  # farm ids that would collide with fixed topics


class TopicError(ValueError):
    """An id or topic that cannot be used in the topic tree."""


def check_id(value: str, what: str = "id") -> str:
    """Return ``value`` if it is safe as one topic level (no ``/ + #``, no NUL, ≤ 128 chars)."""
    if not isinstance(value, str) or not _ID.match(value):
        raise TopicError(f"bad {what} for a topic level: {value!r}")
    return value


def _farm(farm_id: str) -> str:
    check_id(farm_id, "farm id")
    if farm_id in _RESERVED:
        raise TopicError(f"farm id {farm_id!r} is reserved")
    return farm_id


def traj(farm_id: str, traj_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/traj/{check_id(traj_id, 'trajectory id')}"


def traj_filter(farm_id: str = "+") -> str:
    farm = farm_id if farm_id == "+" else _farm(farm_id)
    return f"{PREFIX}/{farm}/traj/+"


def ack(farm_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/ack"


def status(farm_id: str, device_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/status/{check_id(device_id, 'device id')}"


def cmd(farm_id: str, device_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/cmd/{check_id(device_id, 'device id')}"


def cmd_result(farm_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/cmd_result"


def metrics(farm_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/metrics"


def frame(farm_id: str, device_id: str) -> str:
    return f"{PREFIX}/{_farm(farm_id)}/frame/{check_id(device_id, 'device id')}"


def policy_pointer() -> str:
    return f"{PREFIX}/policy/pointer"


def policy_blob(version: int) -> str:
    """Chunks of one policy version's safetensors blob (split_chunks format, retained)."""
    if not isinstance(version, int) or version < 0:
        raise TopicError(f"bad policy version {version!r}")
    return f"{PREFIX}/policy/blob/{version}"


def policy_blob_chunk(version: int, index: int) -> str:
    """Where chunk ``index`` of a version's blob is retained (a retained topic keeps only
    its last message, so each chunk has its own)."""
    if not isinstance(index, int) or index < 0:
        raise TopicError(f"bad chunk index {index!r}")
    return f"{policy_blob(version)}/{index}"


def learner_metrics() -> str:
    return f"{PREFIX}/learner/metrics"


@dataclass(frozen=True)
class ParsedTopic:
    # traj ack status frame cmd cmd_result metrics policy_pointer policy_blob learner_metrics
    kind: str
    farm_id: str | None = None
    item_id: str | None = None  # trajectory id, device id or policy version


def parse_topic(topic: str) -> ParsedTopic | None:
    """Classify a concrete topic; ``None`` for anything outside the tree or malformed."""
    if not isinstance(topic, str) or not topic.startswith(PREFIX + "/"):
        return None
    parts = topic[len(PREFIX) + 1 :].split("/")
    if parts == ["policy", "pointer"]:
        return ParsedTopic("policy_pointer")
    if len(parts) in (3, 4) and parts[:2] == ["policy", "blob"] \
            and all(p.isdecimal() and len(p) <= 12 for p in parts[2:]):
        return ParsedTopic("policy_blob", None, parts[2])
    if parts == ["learner", "metrics"]:
        return ParsedTopic("learner_metrics")
    if not parts or not _ID.match(parts[0]) or parts[0] in _RESERVED:
        return None
    farm, rest = parts[0], parts[1:]
    if len(rest) == 1 and rest[0] in ("ack", "cmd_result", "metrics"):
        return ParsedTopic(rest[0], farm)
    if len(rest) == 2 and rest[0] in ("traj", "status", "frame", "cmd") and _ID.match(rest[1]):
        return ParsedTopic(rest[0], farm, rest[1])
    return None

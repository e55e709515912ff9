"""Where finished episodes go: a ``TrajectorySink`` takes each trajectory exactly once.

The collector calls ``await sink.put(trajectory, meta)`` once per episode, whatever
its outcome (aborted and errored episodes too: the learner filters, the operator
counts). Sinks here: :class:`MemorySink` (tests, notebooks) and :class:`JsonlSink`
(one JSON object a line on disk). The MQTT publisher implements the same protocol.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from distrl_sdk.trajectory import Trajectory

__all__ = ["EpisodeMeta", "JsonlSink", "MemorySink", "TrajectorySink", "to_jsonable"]


@dataclass
class EpisodeMeta:
    """What the farm knows about an episode besides the trajectory itself."""

    episode_id: str  # unique per episode: the learner dedupes by it
    serial: str
    worker: str
    mode: str  # "async" | "sync"
    policy: str  # the policy's name
    policy_version: int | str | None
    started_at: float  # time.time()
    wall_s: float  # lease held → episode over (setup … teardown)
    round: int | None = None  # sync mode: the round (barrier) it belonged to
    abort_reason: str | None = None  # lease lost / timeout / stopped / device error
    decisions: int = 0  # policy calls: env steps taken, even when a cancel lost the steps
    # milliseconds spent per phase, summed over the episode
    timings: dict[str, float] = field(default_factory=dict)
    # a held-out evaluation episode: the fields of distrl_sdk.wire.EvalInfo (never learned
    # from); None for a training episode
    eval: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@runtime_checkable
class TrajectorySink(Protocol):
    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None: ...


class MemorySink:
    """Keeps everything in a list of ``(trajectory, meta)``."""

    def __init__(self) -> None:
        self.items: list[tuple[Trajectory, EpisodeMeta]] = []

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        self.items.append((trajectory, meta))

    def __len__(self) -> int:
        return len(self.items)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses (actions, UI elements, steps), enums, bytes → plain JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        out.setdefault("type", type(obj).__name__)
        return out
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return {"bytes": len(obj)}  # frames travel as attachments, not in JSONL
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return repr(obj)


class JsonlSink:
    """Appends ``{"meta": …, "trajectory": …}`` lines to a file (flushed per episode).

    ``with_screens=False`` drops the per-step UI trees, which dominate the size.
    """

    def __init__(self, path: str | Path, *, with_screens: bool = False) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.with_screens = with_screens
        self._lock = asyncio.Lock()
        self.count = 0

    def _line(self, trajectory: Trajectory, meta: EpisodeMeta) -> str:
        traj = to_jsonable(trajectory)
        if not self.with_screens:
            for step in traj["steps"]:
                step["screen"] = None
        return json.dumps({"meta": meta.as_dict(), "trajectory": traj},
                          ensure_ascii=False, separators=(",", ":"))

    async def put(self, trajectory: Trajectory, meta: EpisodeMeta) -> None:
        line = self._line(trajectory, meta) + "\n"
        async with self._lock:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
            self.count += 1

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

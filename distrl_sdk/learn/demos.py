"""Demonstration datasets: what ``distrl demos record`` writes and ``distrl sft`` reads.

A dataset is a directory (format ``distrl-demos``, version :data:`FORMAT_VERSION`; the
full description is ``docs/demos.md``)::

    DIR/demos.json                 {"format", "version", "created", "policy", "episodes",
                                    "steps", "tasks", "splits", "uitree_config", …}
    DIR/episodes.jsonl             one JSON object per episode (its steps inside)
    DIR/frames/<episode>/<i>.jpg   the screen each step's action was chosen on

Everything is plain JSON and JPEG: no pickle, readable from any language. A step keeps
the raw observation (UI elements, screen size, frame, the actions before it) and the SDK
action as its AndroidWorld-style JSON (``distrl_sdk.actions.to_dict``), so any policy
can re-encode it; it also keeps each policy's own encoding at recording time
(``encodings["uitree"] = {"obs", "choice"}``, ``encodings["vlm"] = {"obs", "choice"}``),
which is what the learner would have received from the farm.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distrl_sdk.actions import action_from_dict, to_dict
from distrl_sdk.errors import ConfigError
from distrl_sdk.uitree import Bounds, UIElement

__all__ = ["FORMAT", "FORMAT_VERSION", "DemoEpisode", "DemoStep", "DemoWriter", "action_json",
           "action_of", "element_from_json", "element_to_json", "read_demos", "read_manifest"]

FORMAT = "distrl-demos"
FORMAT_VERSION = 1
_BOOLS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused",
          "scrollable", "long_clickable", "password", "selected")


def element_to_json(e: UIElement) -> dict[str, Any]:
    """A UI element as JSON (bounds as ``[l, t, r, b]`` pixels; false flags left out)."""
    d: dict[str, Any] = {"index": e.index, "depth": e.depth, "parent": e.parent,
                         "text": e.text, "resource_id": e.resource_id,
                         "class_name": e.class_name, "package": e.package,
                         "content_desc": e.content_desc,
                         "bounds": [e.bounds.left, e.bounds.top, e.bounds.right,
                                    e.bounds.bottom]}
    for k in _BOOLS:
        v = getattr(e, k)
        if v != (k == "enabled"):  # enabled defaults to True, the others to False
            d[k] = v
    if e.extra:
        d["extra"] = dict(e.extra)
    return d


def element_from_json(d: Mapping[str, Any]) -> UIElement:
    left, top, right, bottom = (int(v) for v in d["bounds"])
    return UIElement(
        index=int(d["index"]), depth=int(d["depth"]),
        parent=None if d.get("parent") is None else int(d["parent"]),
        text=str(d.get("text", "")), resource_id=str(d.get("resource_id", "")),
        class_name=str(d.get("class_name", "")), package=str(d.get("package", "")),
        content_desc=str(d.get("content_desc", "")), bounds=Bounds(left, top, right, bottom),
        extra={str(k): str(v) for k, v in d.get("extra", {}).items()},
        **{k: bool(d.get(k, k == "enabled")) for k in _BOOLS})


@dataclass
class DemoStep:
    """One decision of a demonstration."""

    index: int
    action: Any  # the SDK action that was executed
    elements: list[UIElement]
    screen_size: tuple[int, int]
    frame: bytes | None = None  # JPEG of the screen it was chosen on
    source_action: Any = None  # what the demonstrator chose, when another action ran
    encodings: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class DemoEpisode:
    id: str
    task: str
    instruction: str
    params: dict[str, Any]
    split: str
    status: str  # success | failure | aborted | errored (EpisodeStatus)
    reward: float
    steps: list[DemoStep]
    policy: str = "oracle"
    seed: int | None = None
    device: str = ""
    answer: str | None = None
    error: str | None = None

    @property
    def success(self) -> bool:
        return self.status == "success"

    def history(self, i: int) -> list[Any]:
        """The actions executed before step ``i`` (what an Observation's history holds)."""
        return [s.action for s in self.steps[:i]]


def action_json(action: Any) -> dict[str, Any]:
    """An action as the dataset stores it (the SDK's action dict)."""
    return dict(to_dict(action))


def action_of(d: Mapping[str, Any], where: str) -> Any:
    """The action a stored dict stands for; ``ConfigError`` naming ``where`` if none."""
    from distrl_sdk.actions import InvalidAction

    a = action_from_dict(dict(d))
    if isinstance(a, InvalidAction):
        raise ConfigError(f"{where}: not an action: {a.reason}")
    return a


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


class DemoWriter:
    """Append episodes to a dataset directory; ``close()`` writes the manifest.

    Episodes are appended (and flushed) one line at a time, so an interrupted recording
    keeps every finished episode; the manifest counts what ``episodes.jsonl`` holds."""

    def __init__(self, directory: str | Path, *, policy: str = "oracle",
                 meta: Mapping[str, Any] | None = None, append: bool = False) -> None:
        self.dir = Path(directory)
        self.policy = policy
        self.meta = dict(meta or {})
        if (self.dir / "episodes.jsonl").exists() and not append:
            raise ConfigError(f"{self.dir} already holds a demonstration dataset "
                              "(choose another --out, or delete it)")
        (self.dir / "frames").mkdir(parents=True, exist_ok=True)
        self._f = (self.dir / "episodes.jsonl").open("a", encoding="utf-8")
        self.episodes = 0
        self.steps = 0
        self._tasks: dict[str, int] = {}
        self._splits: dict[str, int] = {}

    def write(self, ep: DemoEpisode) -> None:
        fdir = self.dir / "frames" / ep.id
        steps: list[dict[str, Any]] = []
        for s in ep.steps:
            d: dict[str, Any] = {"index": s.index, "action": action_json(s.action),
                                 "screen_size": [int(s.screen_size[0]), int(s.screen_size[1])],
                                 "elements": [element_to_json(e) for e in s.elements],
                                 "frame": None, "encodings": s.encodings}
            if s.source_action is not None:
                d["source_action"] = action_json(s.source_action)
            if s.frame is not None:
                fdir.mkdir(parents=True, exist_ok=True)
                rel = f"frames/{ep.id}/{s.index:03d}.jpg"
                _atomic_write(self.dir / rel, s.frame)
                d["frame"] = rel
            steps.append(d)
        line = {"id": ep.id, "task": ep.task, "instruction": ep.instruction,
                "params": ep.params, "split": ep.split, "status": ep.status,
                "reward": ep.reward, "policy": ep.policy, "seed": ep.seed,
                "device": ep.device, "answer": ep.answer, "error": ep.error, "steps": steps}
        self._f.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        self._f.flush()
        self.episodes += 1
        self.steps += len(ep.steps)
        self._tasks[ep.task] = self._tasks.get(ep.task, 0) + 1
        self._splits[ep.split] = self._splits.get(ep.split, 0) + 1

    def close(self) -> Path:
        self._f.close()
        eps, steps, tasks, splits = 0, 0, dict[str, int](), dict[str, int]()
        for ep in read_demos(self.dir, frames=False, check_manifest=False):
            eps += 1
            steps += len(ep.steps)
            tasks[ep.task] = tasks.get(ep.task, 0) + 1
            splits[ep.split] = splits.get(ep.split, 0) + 1
        manifest = {"format": FORMAT, "version": FORMAT_VERSION,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "policy": self.policy, "episodes": eps, "steps": steps,
                    "tasks": dict(sorted(tasks.items())), "splits": splits, **self.meta}
        path = self.dir / "demos.json"
        _atomic_write(path, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
        return path

    def __enter__(self) -> DemoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """``demos.json``, checked: a clear error for anything that is not a dataset we read."""
    d = Path(directory)
    path = d / "demos.json"
    if not path.is_file() or not (d / "episodes.jsonl").is_file():
        raise ConfigError(f"{d} is not a demonstration dataset (needs demos.json and "
                          "episodes.jsonl; `distrl demos record` writes them)")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ConfigError(f"{path}: not a {FORMAT} manifest")
    if not isinstance(m.get("version"), int) or m["version"] > FORMAT_VERSION:
        raise ConfigError(f"{path}: format version {m.get('version')!r} is newer than this "
                          f"DistRL reads ({FORMAT_VERSION}); upgrade DistRL")
    return m


def read_demos(directory: str | Path, *, frames: bool = True, split: str | None = None,
               tasks: Sequence[str] | None = None, successful_only: bool = False,
               check_manifest: bool = True) -> Iterator[DemoEpisode]:
    """The dataset's episodes in recording order (``frames=False`` skips reading JPEGs)."""
    d = Path(directory)
    if check_manifest:
        read_manifest(d)
    want = set(tasks) if tasks is not None else None
    with (d / "episodes.jsonl").open(encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{d / 'episodes.jsonl'}:{no}"
            try:
                raw = json.loads(line)
            except ValueError as exc:
                if not line.endswith("\n"):
                    break  # a recording cut mid-line: the finished episodes stand
                raise ConfigError(f"{where}: not JSON ({exc})") from None
            if split is not None and raw.get("split") != split:
                continue
            if want is not None and raw.get("task") not in want:
                continue
            if successful_only and raw.get("status") != "success":
                continue
            try:
                yield _episode(raw, d, frames, where)
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(f"{where}: malformed episode ({exc!r})") from None


def _episode(raw: Mapping[str, Any], d: Path, frames: bool, where: str) -> DemoEpisode:
    steps: list[DemoStep] = []
    for s in raw["steps"]:
        frame = None
        if frames and s.get("frame"):
            rel = str(s["frame"])
            if os.path.isabs(rel) or ".." in Path(rel).parts:
                raise ValueError(f"frame path {rel!r} leaves the dataset")
            frame = (d / rel).read_bytes()
        w, h = s["screen_size"]
        steps.append(DemoStep(
            index=int(s["index"]), action=action_of(s["action"], where),
            elements=[element_from_json(e) for e in s["elements"]],
            screen_size=(int(w), int(h)), frame=frame,
            source_action=(action_of(s["source_action"], where)
                           if s.get("source_action") else None),
            encodings=dict(s.get("encodings") or {})))
    return DemoEpisode(
        id=str(raw["id"]), task=str(raw["task"]), instruction=str(raw["instruction"]),
        params=dict(raw.get("params") or {}), split=str(raw.get("split", "train")),
        status=str(raw["status"]), reward=float(raw["reward"]), steps=steps,
        policy=str(raw.get("policy", "oracle")), seed=raw.get("seed"),
        device=str(raw.get("device", "")), answer=raw.get("answer"), error=raw.get("error"))

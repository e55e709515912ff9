"""Demonstrations as a Hugging Face ``datasets`` dataset, and back.

One row per step, as AitW-style datasets are laid out: the episode's fields repeated on
each of its rows (``episode_id``, ``task``, ``instruction``, ``params`` …), the step's
``image`` as an image feature (the JPEG the action was chosen on), its ``action`` as
AndroidWorld JSON, ``elements`` and ``encodings`` as JSON text. An episode without steps
is one row with ``step = -1``. :func:`from_hf` writes a ``distrl-demos`` directory that
``distrl sft`` and ``learner --demos`` read; a round trip keeps every field.

Needs the ``datasets`` package (the ``hf`` extra: ``pip install "distrl[hf]"``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.demos import (
    DemoEpisode,
    DemoStep,
    DemoWriter,
    action_json,
    action_of,
    element_from_json,
    element_to_json,
    read_demos,
    read_manifest,
)

__all__ = ["FEATURES", "from_hf", "load_export", "require_datasets", "to_hf"]

#: column → ``datasets`` feature type (see :func:`features`)
FEATURES: dict[str, str] = {
    "episode_id": "string", "task": "string", "instruction": "string", "params": "json",
    "split": "string", "status": "string", "reward": "float32", "policy": "string",
    "seed": "int64", "device": "string", "answer": "string", "error": "string",
    "step": "int32", "num_steps": "int32", "image": "image", "action": "json",
    "source_action": "json", "screen_width": "int32", "screen_height": "int32",
    "elements": "json", "encodings": "json",
}


def require_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError("the Hugging Face export needs the `datasets` package: "
                          'pip install "distrl[hf]"') from None
    return datasets


def load_export(data: Any, columns: Iterable[str], what: str) -> Any:
    """``data`` as a ``datasets.Dataset`` (loaded from a ``save_to_disk`` directory if a
    path) that has every one of ``columns``; ConfigError naming what is wrong."""
    ds = require_datasets()
    if isinstance(data, str | Path):
        try:
            data = ds.load_from_disk(str(data))
        except (FileNotFoundError, ValueError) as exc:
            raise ConfigError(f"{data}: not a saved Hugging Face dataset ({exc})") from None
    missing = set(columns) - set(data.column_names)
    if missing:
        raise ConfigError(f"not a DistRL {what} export: no column(s) "
                          f"{', '.join(sorted(missing))}")
    return data


def features() -> Any:
    ds = require_datasets()
    kinds = {"string": ds.Value("string"), "json": ds.Value("string"),
             "float32": ds.Value("float32"), "int32": ds.Value("int32"),
             "int64": ds.Value("int64"), "image": ds.Image()}
    return ds.Features({k: kinds[v] for k, v in FEATURES.items()})


def _rows(directory: Path) -> Iterator[dict[str, Any]]:
    for ep in read_demos(directory, frames=True):
        head = {"episode_id": ep.id, "task": ep.task, "instruction": ep.instruction,
                "params": json.dumps(ep.params, ensure_ascii=False, default=str),
                "split": ep.split, "status": ep.status, "reward": ep.reward,
                "policy": ep.policy, "seed": ep.seed, "device": ep.device,
                "answer": ep.answer, "error": ep.error, "num_steps": len(ep.steps)}
        if not ep.steps:
            yield {**head, "step": -1, "image": None, "action": None, "source_action": None,
                   "screen_width": None, "screen_height": None, "elements": None,
                   "encodings": None}
        for s in ep.steps:
            yield {**head, "step": s.index,
                   "image": None if s.frame is None else {"bytes": s.frame, "path": None},
                   "action": json.dumps(action_json(s.action)),
                   "source_action": None if s.source_action is None
                   else json.dumps(action_json(s.source_action)),
                   "screen_width": s.screen_size[0], "screen_height": s.screen_size[1],
                   "elements": json.dumps([element_to_json(e) for e in s.elements],
                                          ensure_ascii=False),
                   "encodings": json.dumps(s.encodings, ensure_ascii=False, default=str)}


def to_hf(directory: str | Path) -> Any:
    """The ``distrl-demos`` dataset at ``directory`` as a ``datasets.Dataset`` (images
    stay the recorded JPEG bytes); ``.save_to_disk`` / ``.push_to_hub`` it as you like."""
    d = Path(directory)
    manifest = read_manifest(d)
    ds = require_datasets()
    rows = list(_rows(d))
    data = ds.Dataset.from_list(rows, features=features()) if rows else \
        ds.Dataset.from_dict({k: [] for k in FEATURES}, features=features())
    info = {k: manifest[k] for k in ("format", "version", "policy", "seed", "uitree_config")
            if k in manifest}
    data.info.description = json.dumps({"distrl": info}, default=str)
    return data


def from_hf(data: Any, out: str | Path, *, append: bool = False) -> Path:
    """Write a dataset made by :func:`to_hf` (a ``datasets.Dataset``, or the directory
    ``save_to_disk`` wrote) as a ``distrl-demos`` directory; returns its manifest."""
    ds = require_datasets()
    data = load_export(data, FEATURES, "demonstration")
    meta: dict[str, Any] = {}
    with contextlib.suppress(ValueError, AttributeError):  # no DistRL description: defaults
        meta = dict(json.loads(data.info.description or "{}").get("distrl", {}))
    extra = {k: v for k, v in meta.items() if k in ("seed", "uitree_config")}
    images = data.cast_column("image", ds.Image(decode=False))  # the JPEG bytes as stored
    episodes: dict[str, DemoEpisode] = {}
    for no, row in enumerate(images):
        where = f"row {no}"
        try:
            ep = episodes.get(row["episode_id"])
            if ep is None:
                ep = episodes[row["episode_id"]] = DemoEpisode(
                    id=row["episode_id"], task=row["task"], instruction=row["instruction"],
                    params=json.loads(row["params"] or "{}"), split=row["split"],
                    status=row["status"], reward=float(row["reward"]), steps=[],
                    policy=row["policy"], seed=row["seed"], device=row["device"] or "",
                    answer=row["answer"], error=row["error"])
            if row["step"] < 0:
                continue
            image = row["image"]
            ep.steps.append(DemoStep(
                index=int(row["step"]), action=action_of(json.loads(row["action"]), where),
                elements=[element_from_json(e) for e in json.loads(row["elements"])],
                screen_size=(int(row["screen_width"]), int(row["screen_height"])),
                frame=None if image is None else image["bytes"],
                source_action=None if row["source_action"] is None
                else action_of(json.loads(row["source_action"]), where),
                encodings=json.loads(row["encodings"] or "{}")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: malformed ({exc!r})") from None
    with DemoWriter(out, policy=str(meta.get("policy", "oracle")), meta=extra,
                    append=append) as writer:
        for ep in episodes.values():
            ep.steps.sort(key=lambda s: s.index)
            writer.write(ep)
    return Path(out) / "demos.json"

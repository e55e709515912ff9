"""Learned trajectories (the learner's replay) as a Hugging Face ``datasets`` dataset, and
back.

One row per step, episode fields repeated on each (``episode_id``, ``farm_id``,
``device_id``, ``task``, ``instruction``, ``success``, ``episode_reward``, ``num_steps``),
then the step's: ``step``, the policy's own ``obs`` and ``choice`` encodings (JSON text:
what the learner re-evaluates log π on), the behaviour ``log_mu``, the step ``reward``,
the ``policy_version`` that acted, ``invalid``, and ``image`` (an image feature: the
screen the step was chosen on, for image policies; empty for the UI-tree policy, which
never ships frames). ``meta`` (the farm's episode metadata) is JSON on every row.
:func:`from_hf` gives back the same :class:`~distrl_sdk.learn.api.EpisodeRecord`\\ s.

Needs the ``datasets`` package (the ``hf`` extra: ``pip install "distrl[hf]"``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from distrl_sdk.errors import ConfigError
from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.learn.demos_hf import load_export, require_datasets

__all__ = ["FEATURES", "from_hf", "to_hf"]

FEATURES: dict[str, str] = {
    "episode_id": "string", "farm_id": "string", "device_id": "string", "task": "string",
    "instruction": "string", "success": "bool", "episode_reward": "float64",
    "num_steps": "int32", "meta": "json", "step": "int32", "obs": "json", "choice": "json",
    "log_mu": "float64", "reward": "float64", "policy_version": "int64", "invalid": "bool",
    "image": "image",
}


def features() -> Any:
    ds = require_datasets()
    kinds = {"string": ds.Value("string"), "json": ds.Value("string"),
             "bool": ds.Value("bool"), "float64": ds.Value("float64"),
             "int32": ds.Value("int32"), "int64": ds.Value("int64"), "image": ds.Image()}
    return ds.Features({k: kinds[v] for k, v in FEATURES.items()})


def _rows(episodes: Iterable[EpisodeRecord]) -> Iterator[dict[str, Any]]:
    for ep in episodes:
        head = {"episode_id": ep.id, "farm_id": ep.farm_id, "device_id": ep.device_id,
                "task": ep.task, "instruction": ep.instruction, "success": ep.success,
                "episode_reward": ep.reward, "num_steps": len(ep.steps),
                "meta": json.dumps(ep.meta, ensure_ascii=False, default=str)}
        for i, s in enumerate(ep.steps):
            yield {**head, "step": i, "obs": json.dumps(s.obs, ensure_ascii=False),
                   "choice": json.dumps(s.choice, ensure_ascii=False), "log_mu": s.log_mu,
                   "reward": s.reward, "policy_version": s.policy_version,
                   "invalid": s.invalid,
                   "image": None if s.frame is None else {"bytes": s.frame, "path": None}}


def to_hf(episodes: Iterable[EpisodeRecord]) -> Any:
    """``episodes`` as a ``datasets.Dataset`` (frames stay their recorded bytes)."""
    ds = require_datasets()
    rows = list(_rows(episodes))
    data = ds.Dataset.from_list(rows, features=features()) if rows else \
        ds.Dataset.from_dict({k: [] for k in FEATURES}, features=features())
    data.info.description = json.dumps({"distrl": {"format": "distrl-trajectories",
                                                   "version": 1}})
    return data


def from_hf(data: Any) -> list[EpisodeRecord]:
    """The episodes of a dataset made by :func:`to_hf` (a ``datasets.Dataset`` or the
    directory ``save_to_disk`` wrote), in row order."""
    ds = require_datasets()
    data = load_export(data, FEATURES, "trajectory")
    out: dict[str, EpisodeRecord] = {}
    for no, row in enumerate(data.cast_column("image", ds.Image(decode=False))):
        try:
            ep = out.get(row["episode_id"])
            if ep is None:
                ep = out[row["episode_id"]] = EpisodeRecord(
                    id=row["episode_id"], task=row["task"], instruction=row["instruction"],
                    steps=[], success=bool(row["success"]),
                    reward=float(row["episode_reward"]), farm_id=row["farm_id"] or "",
                    device_id=row["device_id"] or "", meta=json.loads(row["meta"] or "{}"))
            image = row["image"]
            ep.steps.append(StepRecord(
                obs=json.loads(row["obs"]), choice=json.loads(row["choice"]),
                log_mu=float(row["log_mu"]), reward=float(row["reward"]),
                policy_version=int(row["policy_version"]), invalid=bool(row["invalid"]),
                frame=None if image is None else image["bytes"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"row {no}: malformed ({exc!r})") from None
    return list(out.values())

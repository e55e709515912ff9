"""Learning policies behind one interface (:class:`distrl_sdk.learn.TrainablePolicy`).

``uitree``: a small torch model over UI elements + instruction (CPU, trains in minutes).
``vlm``: any transformers image-text-to-text model + PEFT LoRA emitting JSON actions.

A policy checkpoint is a directory: ``policy.json`` (``{"kind", "config", "version"}``)
and ``policy.safetensors`` (its ``weights()``) — no pickle anywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distrl_sdk.errors import ConfigError

if TYPE_CHECKING:
    from distrl_sdk.learn.api import TrainablePolicy

__all__ = ["build_policy", "check_config", "load_policy", "save_policy"]


def check_config(kind: str, config: dict[str, Any]) -> None:
    """Raise ``ConfigError`` unless ``config`` is a valid architecture of ``kind`` within
    the sizes a farm builds from a policy pointer. Cheap (nothing is built): a farm checks
    a pointer with it before fetching the blob. Local builds are not bounded."""
    try:
        if kind == "uitree":
            from distrl_sdk.policies.uitree import UITreeConfig

            UITreeConfig.from_dict(config).check_bounds()
            return
        if kind == "vlm":
            from distrl_sdk.policies.vlm import VLMConfig

            cfg = VLMConfig.from_dict(config)
            if cfg.tiny is not None:
                from distrl_sdk.policies.tiny import TinyVLMConfig

                TinyVLMConfig.from_dict(dict(cfg.tiny)).check_bounds()
            return
    except (TypeError, ValueError) as exc:  # the UI-tree config says ValueError
        raise ConfigError(str(exc)) from None
    raise ConfigError(f"unknown policy kind {kind!r} (uitree | vlm)")


def build_policy(kind: str, config: dict[str, Any]) -> TrainablePolicy:
    """A fresh policy of ``kind`` from its architecture config."""
    if kind == "uitree":
        from distrl_sdk.policies.uitree import UITreePolicy

        return UITreePolicy.from_config(config)
    if kind == "vlm":
        from distrl_sdk.policies.vlm import VLMPolicy

        return VLMPolicy.from_config(config)
    raise ConfigError(f"unknown policy kind {kind!r} (uitree | vlm)")


def save_policy(policy: TrainablePolicy, directory: str | Path, version: int = 0) -> Path:
    """Write ``policy.json`` + ``policy.safetensors`` into ``directory`` (atomically each)."""
    from safetensors.torch import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / "policy.safetensors.tmp"
    save_file({k: v.detach().contiguous().cpu() for k, v in policy.weights().items()}, str(tmp))
    tmp.replace(d / "policy.safetensors")
    meta = {"kind": policy.kind, "config": policy.config_dict(), "version": version}
    (d / "policy.json.tmp").write_text(json.dumps(meta, indent=2))
    (d / "policy.json.tmp").replace(d / "policy.json")
    return d


def load_policy(directory: str | Path) -> tuple[TrainablePolicy, int]:
    """Rebuild a saved policy; returns it and its version. Errors name what is wrong."""
    from safetensors.torch import load_file

    d = Path(directory)
    meta_path, weights_path = d / "policy.json", d / "policy.safetensors"
    if not meta_path.is_file() or not weights_path.is_file():
        raise ConfigError(f"{d} is not a policy checkpoint (needs policy.json and "
                          "policy.safetensors; `distrl learner` writes them)")
    try:
        meta = json.loads(meta_path.read_text())
        kind, config, version = meta["kind"], meta["config"], int(meta.get("version", 0))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{meta_path}: not a policy description ({exc})") from exc
    if kind == "uitree" and isinstance(config, dict):
        from distrl_sdk.policies.uitree import UITreeConfig

        try:  # a switch the checkpoint predates stays off, as it was trained
            config = UITreeConfig.from_saved(config).as_dict()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{meta_path}: not a uitree config ({exc})") from None
    policy = build_policy(kind, config)
    try:
        policy.load_weights(load_file(str(weights_path)))
    except Exception as exc:
        raise ConfigError(f"{weights_path}: weights do not fit a {kind} policy ({exc})") from exc
    return policy, version

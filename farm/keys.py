"""Where DistRL keeps its Ed25519 identities, and the defaults that make them invisible
on one host: a learner signs its policy pointers and trajectory acks with
``learner.key``, the TUI its commands with ``operator.key``, a farm its trajectories
with ``farm.key``; each side accepts only what the keys it trusts (by default these
local ones, else the ``.pub`` files it is given) signed. Every side creates a missing
local key, so the demo and ``farm up`` + ``learner`` + ``tui`` on one machine need no
set-up; across hosts, copy ``learner.pub`` / ``operator.pub`` to the farm's host and
name them with ``--learner-key`` / ``--operator-key``, and each farm's ``farm.pub`` to
the learner's (``--farm-key``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from distrl_sdk.wire.signing import SigningKey, TrustedKeys, VerifyKey

__all__ = ["FARM", "LEARNER", "OPERATOR", "default_keys_dir", "farm_signing_key",
           "learner_signing_key", "local_key_path", "operator_signing_key",
           "trusted_learners", "trusted_operators"]

LEARNER = "learner"
OPERATOR = "operator"  # the TUI's commands; a farm runs only what a trusted operator signed
FARM = "farm"  # trajectories; the learner learns only what a trusted farm signed


def default_keys_dir() -> Path:
    """``$DISTRL_KEYS``, else ``$XDG_STATE_HOME/distrl/keys`` (``~/.local/state/…``)."""
    if os.environ.get("DISTRL_KEYS"):
        return Path(os.environ["DISTRL_KEYS"]).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "distrl" / "keys"


def local_key_path(role: str) -> Path:
    return default_keys_dir() / f"{role}.key"


def _signing_key(role: str, path: Path | None) -> SigningKey:
    if path is not None:
        return SigningKey.load(path)
    return SigningKey.load_or_create(local_key_path(role))


def _trusted(role: str, paths: Sequence[Path]) -> TrustedKeys:
    if paths:
        return TrustedKeys.of(VerifyKey.load(p) for p in paths)
    return TrustedKeys.of([_signing_key(role, None)])


def learner_signing_key(path: Path | None = None) -> SigningKey:
    """The learner's key: ``path``, else the local learner key (created if missing)."""
    return _signing_key(LEARNER, path)


def trusted_learners(paths: Sequence[Path] = ()) -> TrustedKeys:
    """The learner keys a farm accepts: ``paths`` (``.pub`` or ``.key`` files), else the
    local learner key (created if missing)."""
    return _trusted(LEARNER, paths)


def operator_signing_key(path: Path | None = None) -> SigningKey:
    """An operator's key (the TUI signs its commands): ``path``, else the local one."""
    return _signing_key(OPERATOR, path)


def trusted_operators(paths: Sequence[Path] = ()) -> TrustedKeys:
    """The operator keys whose commands a farm runs: ``paths``, else the local one."""
    return _trusted(OPERATOR, paths)


def farm_signing_key(path: Path | None = None) -> SigningKey:
    """A farm's key (it signs every trajectory): ``path``, else the local farm key."""
    return _signing_key(FARM, path)


def trusted_farms(paths: Sequence[Path] = ()) -> TrustedKeys:
    """The farm keys whose command results an operator believes: ``paths``, else the
    local farm key (created if missing)."""
    return _trusted(FARM, paths)

"""Where DistRL keeps its Ed25519 identities, and the defaults that make them invisible
on one host: a learner signs its policy pointers and trajectory acks with
``learner.key``; a farm accepts only what that key (or the ``.pub`` files it is given)
signed. Both create the local learner key if it does not exist yet, so the demo and
``farm up`` + ``learner`` on one machine need no set-up; across hosts, copy the
learner's ``learner.pub`` to the farm's host and name it with ``--learner-key``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from distrl_sdk.wire.signing import SigningKey, TrustedKeys, VerifyKey

__all__ = ["LEARNER", "default_keys_dir", "learner_signing_key", "trusted_learners"]

LEARNER = "learner"


def default_keys_dir() -> Path:
    """``$DISTRL_KEYS``, else ``$XDG_STATE_HOME/distrl/keys`` (``~/.local/state/…``)."""
    if os.environ.get("DISTRL_KEYS"):
        return Path(os.environ["DISTRL_KEYS"]).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "distrl" / "keys"


def learner_signing_key(path: Path | None = None) -> SigningKey:
    """The learner's key: ``path``, else the local learner key (created if missing)."""
    if path is not None:
        return SigningKey.load(path)
    return SigningKey.load_or_create(default_keys_dir() / f"{LEARNER}.key")


def trusted_learners(paths: Sequence[Path] = ()) -> TrustedKeys:
    """The learner keys a farm accepts: ``paths`` (``.pub`` or ``.key`` files), else the
    local learner key (created if missing)."""
    if paths:
        return TrustedKeys.of(VerifyKey.load(p) for p in paths)
    return TrustedKeys.of([learner_signing_key()])

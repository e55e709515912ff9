"""Where a learner's run directory keeps its policies, for commands that take "the newest
policy of that run" (`deploy`, `eval`, `learner --init`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CHECKPOINTS", "CKPT_PREFIX", "policy_dir"]

CHECKPOINTS = "checkpoints"  # <run dir>/checkpoints/ckpt-000042/policy
CKPT_PREFIX = "ckpt-"


def policy_dir(path: Path) -> Path:
    """``path`` itself when it is a policy checkpoint (policy.json inside); else the
    newest ``ckpt-*/policy`` under ``path/checkpoints`` or ``path`` (a learner's run dir,
    or its checkpoints dir); else ``path`` unchanged, for the loader to say what is
    missing."""
    if (path / "policy.json").is_file():
        return path
    for where in (path / CHECKPOINTS, path):
        found = sorted(p / "policy" for p in where.glob(f"{CKPT_PREFIX}*")
                       if (p / "policy" / "policy.json").is_file())
        if found:
            return found[-1]
    return path

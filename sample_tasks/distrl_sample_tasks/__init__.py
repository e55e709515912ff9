"""DistRL's sample task suite, registered under the ``distrl.tasks`` entry point.

Declarative packs live in ``packs/*.toml``; tasks that need code live in modules here.
Tasks target real Android packages (Settings, Chrome, Clock, Contacts) wherever a real
counterpart exists, so they run on real phones as well as on sim phones.
"""

from __future__ import annotations

from pathlib import Path

from distrl_sdk.registry import load_task_path
from distrl_sdk.task import Task

PACKS = Path(__file__).parent / "packs"


def tasks() -> list[type[Task]]:
    return load_task_path(PACKS)

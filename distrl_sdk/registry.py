"""Finding tasks: entry points (``distrl.tasks``), task-pack paths and ``$DISTRL_TASK_PATH``.

An entry point may name a ``Task`` subclass, an iterable of them, a callable returning
them, or a directory/file of TOML task packs. A broken plugin never breaks discovery:
its error is kept in ``problems`` and shown by ``distrl tasks list``.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from distrl_sdk.declarative import TaskFileError, load_task_file
from distrl_sdk.errors import TaskError
from distrl_sdk.task import Task

__all__ = ["TASKS_GROUP", "TaskRegistry", "load_task_path", "tasks_from_object"]

TASKS_GROUP = "distrl.tasks"
TASK_PATH_ENV = "DISTRL_TASK_PATH"


@dataclass(frozen=True)
class Registered:
    task: type[Task]
    source: str  # "entry point distrl_sample_tasks:tasks", "path sample.toml" …


def load_task_path(path: str | Path) -> list[type[Task]]:
    """Every task in a ``.toml`` file, or in all ``*.toml`` below a directory."""
    p = Path(path)
    if p.is_dir():
        out: list[type[Task]] = []
        problems: list[str] = []
        for f in sorted(p.rglob("*.toml")):
            if f.name == "pyproject.toml":
                continue
            try:
                out += load_task_file(f)
            except TaskFileError as exc:
                problems += exc.problems
        if problems:
            raise TaskFileError(problems)
        return out
    if p.suffix == ".toml":
        return load_task_file(p)
    raise TaskError(f"{p}: not a task pack (a .toml file or a directory of them)")


def tasks_from_object(obj: Any) -> list[type[Task]]:
    if inspect.isclass(obj) and issubclass(obj, Task):
        return [obj]
    if isinstance(obj, (str, Path)):
        return load_task_path(obj)
    if callable(obj) and not inspect.isclass(obj):
        return tasks_from_object(obj())
    if isinstance(obj, Iterable):
        out: list[type[Task]] = []
        for item in obj:
            out += tasks_from_object(item)
        return out
    raise TaskError(f"{obj!r} is not a Task class, an iterable of them, a callable "
                    "returning them, or a path to a task pack")


class TaskRegistry:
    def __init__(self) -> None:
        self._tasks: dict[str, Registered] = {}
        self.problems: list[str] = []

    @classmethod
    def discover(cls, paths: Sequence[str | Path] = (), *, use_entry_points: bool = True,
                 use_env: bool = True) -> TaskRegistry:
        reg = cls()
        if use_entry_points:
            for ep in sorted(entry_points(group=TASKS_GROUP), key=lambda e: e.name):
                try:
                    found = tasks_from_object(ep.load())
                except TaskFileError as exc:
                    reg.problems += exc.problems
                    continue
                except Exception as exc:  # a broken plugin must not hide the others
                    reg.problems.append(f"plugin {ep.name} ({ep.value}): "
                                        f"{type(exc).__name__}: {exc}")
                    continue
                for t in found:
                    reg.add(t, f"plugin {ep.name}")
        extra = list(paths)
        if use_env and os.environ.get(TASK_PATH_ENV):
            extra += [p for p in os.environ[TASK_PATH_ENV].split(os.pathsep) if p]
        for path in extra:
            try:
                for t in load_task_path(path):
                    reg.add(t, f"path {path}")
            except TaskFileError as exc:
                reg.problems += exc.problems
            except TaskError as exc:
                reg.problems.append(str(exc))
        return reg

    def add(self, task: type[Task], source: str) -> None:
        if not task.name:
            self.problems.append(f"{source}: task class {task.__qualname__} has no name")
            return
        if task.name in self._tasks:
            self.problems.append(f"{source}: task {task.name} already comes from "
                                 f"{self._tasks[task.name].source}; keeping that one")
            return
        self._tasks[task.name] = Registered(task, source)

    def get(self, name: str) -> type[Task]:
        try:
            return self._tasks[name].task
        except KeyError:
            close = difflib.get_close_matches(name, self._tasks, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else \
                "; `distrl tasks list` shows them"
            raise TaskError(f"no task named {name!r}{hint}") from None

    def source(self, name: str) -> str:
        return self._tasks[name].source

    def names(self) -> list[str]:
        return sorted(self._tasks)

    def __iter__(self) -> Iterator[type[Task]]:
        return (self._tasks[n].task for n in self.names())

    def __len__(self) -> int:
        return len(self._tasks)

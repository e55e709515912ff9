"""Tasks and back stacks, the part of the activity manager that is pure bookkeeping.

Tasks are kept in z-order (last = front). The home task (the launcher) is always
present; HOME brings it to the front without destroying other tasks, BACK pops the top
activity of the front task, and a task whose last activity is popped disappears.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from farm.sim.spec import ActivityRecord
from farm.sim.world.apps.base import Activity


@dataclass(eq=False)
class Record:
    activity: Activity
    task_id: int
    token: int


@dataclass(eq=False)
class Task:
    task_id: int
    affinity: str  # package whose launch created it
    records: list[Record] = field(default_factory=list)  # bottom → top

    @property
    def top(self) -> Record | None:
        return self.records[-1] if self.records else None

    @property
    def root(self) -> Record | None:
        return self.records[0] if self.records else None


class TaskStack:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.tasks: list[Task] = []  # z-order, front last
        self._next_task_id = 1

    def _token(self) -> int:
        # 7 hex digits, like the identity hashes dumpsys prints
        return self.rng.randrange(0x1000000, 0xFFFFFFF)

    def new_task(self, affinity: str, activity: Activity) -> Task:
        task = Task(self._next_task_id, affinity)
        self._next_task_id += 1
        self.tasks.append(task)
        self.push(task, activity)
        return task

    def push(self, task: Task, activity: Activity) -> Record:
        rec = Record(activity, task.task_id, self._token())
        task.records.append(rec)
        return rec

    def front(self) -> Task | None:
        return self.tasks[-1] if self.tasks else None

    def top(self) -> Record | None:
        task = self.front()
        return task.top if task else None

    def to_front(self, task: Task) -> None:
        self.tasks.remove(task)
        self.tasks.append(task)

    def task_for(self, affinity: str) -> Task | None:
        for task in reversed(self.tasks):
            if task.affinity == affinity:
                return task
        return None

    def remove(self, task: Task) -> None:
        if task in self.tasks:
            self.tasks.remove(task)

    def remove_activity(self, activity: Activity) -> None:
        for task in list(self.tasks):
            task.records = [r for r in task.records if r.activity is not activity]
            if not task.records:
                self.tasks.remove(task)

    def remove_package(self, package: str) -> bool:
        """Drop every activity of ``package`` (force-stop); True if any was running."""
        found = False
        for task in list(self.tasks):
            kept = [r for r in task.records if r.activity.package != package]
            if len(kept) != len(task.records):
                found = True
                task.records = kept
            if not task.records:
                self.tasks.remove(task)
        return found

    def records(self) -> list[ActivityRecord]:
        """Every activity, top first (front task's top activity first)."""
        out = []
        for task in reversed(self.tasks):
            for r in reversed(task.records):
                out.append(ActivityRecord(r.activity.package, r.activity.name, r.task_id,
                                          r.token))
        return out

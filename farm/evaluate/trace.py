"""What an evaluation episode did, as one JSON-able record: the instance, the outcome and
each action with what it touched (``tap (0.50, 0.41) → 'Eiffel Tower - Wikipedia'``,
not only the point), so a failed held-out episode can be read without replaying it. A
learned policy's steps add the probability it gave its action (``p``) and, when it was
asked for them, the candidates it weighed most (``alternatives``).

    record = episode_record(trajectory, final=True)   # → one line of --episodes-out
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from distrl_sdk.actions import LongPress, Tap, TypeText
from distrl_sdk.actions.formats import to_dict
from distrl_sdk.trajectory import Step, Trajectory
from distrl_sdk.uitree import UIElement
from farm.deploy.guard import describe_action, element_under

__all__ = ["SCHEMA", "episode_record", "step_record", "touched_label"]

#: the ``schema`` field of every record (bumped when a field changes meaning)
SCHEMA = "distrl-eval-episode/1"


def _screen_size(elements: Sequence[UIElement]) -> tuple[int, int] | None:
    if not elements:
        return None
    right = max(e.bounds.right for e in elements)
    bottom = max(e.bounds.bottom for e in elements)
    return (right, bottom) if right > 0 and bottom > 0 else None


def touched_label(elements: Sequence[UIElement], x: float, y: float) -> str | None:
    """The label of what a touch at normalised (x, y) lands on: the innermost clickable
    element's own label, else the first text inside it (Android rows keep their text in
    child views); ``None`` when the screen is unknown or nothing with a label is there."""
    size = _screen_size(elements)
    if size is None:
        return None
    hit = element_under(elements, x * size[0], y * size[1])
    for e in hit:
        if e.text or e.content_desc:
            return e.label
    return hit[0].label if hit and hit[0].label else None


def step_record(step: Step) -> dict[str, Any]:
    """One step: the action (AndroidWorld JSON), a readable description, and for a
    touch what it landed on."""
    action = step.action
    out: dict[str, Any] = {"index": step.index, "describe": describe_action(action)}
    try:
        out["action"] = to_dict(action)
    except Exception:  # an invalid action has no JSON form: its description says why
        out["action"] = None
    x = y = None
    if isinstance(action, Tap | LongPress | TypeText):  # a typed text may name its field
        x, y = action.x, action.y
    if x is not None and y is not None and step.screen:
        label = touched_label(step.screen, x, y)
        if label:
            out["target"] = label
            out["describe"] = f"{out['describe']} → {label!r}"
    if step.activity:
        out["activity"] = step.activity
    log_prob = step.info.get("log_prob")
    if isinstance(log_prob, int | float):
        out["p"] = round(math.exp(log_prob), 4)  # the policy's probability of this action
    if step.info.get("alternatives"):  # `eval --alternatives N`: what else it weighed
        out["alternatives"] = step.info["alternatives"]
    return out


def episode_record(trajectory: Trajectory, *, final: bool = True,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The episode as one JSON object (``schema`` :data:`SCHEMA`). ``final``: False for
    an aborted attempt that is played again (not scored)."""
    return {"schema": SCHEMA, **(extra or {}), "task": trajectory.task,
            "instruction": trajectory.instruction, "params": trajectory.params,
            "status": trajectory.status.value,
            "scored": final and trajectory.status.value in ("success", "failure"),
            "reward": trajectory.reward, "answer": trajectory.answer,
            "error": trajectory.error,
            "steps": [step_record(s) for s in trajectory.steps]}

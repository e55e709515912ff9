"""Helpers shared by the shipped evaluators (and usable by plugin evaluators).

* :class:`EvaluatorConfig` — the pydantic base of evaluator configs (unknown keys refused);
* :func:`fill_regex` — fill ``{param}`` fields of a regex with *escaped* values;
* :func:`episode_state` — per-episode scratch state for evaluators, which are shared
  between episodes (a task's ``success`` is a class attribute) and so must keep none.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from distrl_sdk.errors import DeviceError, TaskError
from distrl_sdk.trajectory import Trajectory

__all__ = [
    "EvaluatorConfig",
    "compile_regex",
    "episode_state",
    "fill_regex",
    "is_fault",
    "short",
]

_FIELD = re.compile(r"\{([A-Za-z_]\w*)(?::([^{}]*))?\}")


class EvaluatorConfig(BaseModel):
    """Base of evaluator config models: strict keys, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def fill_regex(pattern: str, params: Mapping[str, Any]) -> str:
    """Fill ``{name}`` / ``{name:spec}`` fields naming a param, with the value regex-escaped.

    Anything else in braces (``\\d{2}``, ``{2,3}``, unknown names) is left alone, so a
    pattern is a regex first and a template second. Params are data: ``{query}`` with
    ``query="1+1"`` matches the literal text ``1+1``.
    """

    def one(m: re.Match[str]) -> str:
        name, spec = m.group(1), m.group(2)
        if name not in params:
            return m.group(0)
        try:
            text = format(params[name], spec or "")
        except (ValueError, TypeError):
            return m.group(0)
        return re.escape(text)

    return _FIELD.sub(one, pattern)


def compile_regex(pattern: str, params: Mapping[str, Any], *, flags: int = 0,
                  what: str = "regex") -> re.Pattern[str]:
    """:func:`fill_regex` then compile; a bad pattern is a :class:`TaskError`."""
    filled = fill_regex(pattern, params)
    try:
        return re.compile(filled, flags)
    except re.error as exc:
        raise TaskError(f"{what} {filled!r} does not compile: {exc}") from None


def check_regex(pattern: str, what: str = "regex") -> None:
    """Fail early (at config time) on a pattern that cannot compile whatever the params."""
    probe = _FIELD.sub("x", pattern)
    try:
        re.compile(probe)
    except re.error as exc:
        raise TaskError(f"{what} {pattern!r} does not compile: {exc}") from None


_STATE: dict[tuple[int, int], dict[str, Any]] = {}


def episode_state(owner: object, trajectory: Trajectory) -> dict[str, Any]:
    """A dict private to (``owner``, ``trajectory``); freed when the trajectory is.

    Evaluators use it to remember what they saw at the previous step (e.g. how many
    logcat lines matched) without keeping state on themselves.
    """
    key = (id(owner), id(trajectory))
    state = _STATE.get(key)
    if state is None:
        state = _STATE[key] = {}
        weakref.finalize(trajectory, _STATE.pop, key, None)
    return state


def is_fault(exc: BaseException) -> bool:
    """A device fault (offline, timeout, busy) rather than a plain "no such file" error."""
    return isinstance(exc, DeviceError) and type(exc) is not DeviceError


def short(value: object, limit: int = 40) -> str:
    """``repr`` cut to ``limit`` characters, for ``describe()``."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

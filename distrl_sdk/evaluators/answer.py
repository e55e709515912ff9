"""``AnswerMatches``: the agent's answer (``trajectory.answer``) against the expected one."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig, check_regex, compile_regex, short
from distrl_sdk.trajectory import Trajectory

__all__ = ["AnswerFromDevice", "AnswerMatches", "extract_numbers"]

Mode = Literal["exact", "contains", "regex", "number"]
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")


def extract_numbers(text: str) -> list[float]:
    """Every number in ``text``; ``1,234.5`` is one number."""
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def _norm(text: str, ci: bool) -> str:
    text = " ".join(text.split())
    return text.casefold() if ci else text


class AnswerConfig(EvaluatorConfig):
    expected: str | float | list[str | float]
    mode: Mode = "exact"
    case_insensitive: bool = True
    tolerance: float = 1e-6


class AnswerMatches(RewardEvaluator):
    """1.0 when the answer matches any of ``expected`` under ``mode``.

    * ``exact``: equal after trimming and collapsing whitespace;
    * ``contains``: the expected text occurs in the answer;
    * ``regex``: ``re.search`` of the expected pattern;
    * ``number``: some number in the answer is within ``tolerance`` (absolute, or
      relative for large values) of the expected number.

    ``case_insensitive`` applies to the text modes. No answer scores 0.0.
    """

    name = "answer"
    config_model = AnswerConfig

    def __init__(self, expected: str | float | Sequence[str | float], mode: Mode = "exact",
                 *, case_insensitive: bool = True, tolerance: float = 1e-6) -> None:
        if mode not in ("exact", "contains", "regex", "number"):
            raise TaskError(f"answer: mode must be exact, contains, regex or number, "
                            f"not {mode!r}")
        items = [expected] if isinstance(expected, str | int | float) else list(expected)
        if not items:
            raise TaskError("answer: `expected` is empty")
        if mode == "regex":
            for e in items:
                check_regex(str(e), "answer.expected")
        self.expected: list[str | float] = items
        self.mode, self.case_insensitive, self.tolerance = mode, case_insensitive, tolerance

    def matches(self, answer: str, params: Mapping[str, Any]) -> bool:
        ci = self.case_insensitive
        for e in self.expected:
            if self.mode == "number":
                try:
                    want = float(fill(e, params)) if isinstance(e, str) else float(e)
                except ValueError:
                    raise TaskError(f"answer: expected {e!r} is not a number") from None
                tol = max(self.tolerance, abs(want) * 1e-9)
                if any(math.isclose(x, want, abs_tol=tol) for x in extract_numbers(answer)):
                    return True
            elif self.mode == "regex":
                rx = compile_regex(str(e), params, flags=re.IGNORECASE if ci else 0,
                                   what="answer.expected")
                if rx.search(answer):
                    return True
            else:
                want_s = _norm(fill(str(e), params), ci)
                got = _norm(answer, ci)
                if (got == want_s) if self.mode == "exact" else (want_s in got):
                    return True
        return False

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        if trajectory.answer is None:
            return 0.0
        return 1.0 if self.matches(trajectory.answer, params) else 0.0

    def describe(self) -> str:
        exp = self.expected[0] if len(self.expected) == 1 else self.expected
        return f"answer({self.mode} {short(exp)})"


class AnswerFromDeviceConfig(EvaluatorConfig):
    command: str
    regex: str | None = None
    mode: Mode = "contains"
    case_insensitive: bool = True


class AnswerFromDevice(RewardEvaluator):
    """The answer must match a value read from the device at evaluation time.

    For questions whose right answer differs between phones ("Which Android version
    is this?"): ``command``'s stdout (or ``regex``'s first group in it) is the expected
    answer, matched with ``mode`` as in :class:`AnswerMatches`.
    """

    name = "answer_from_device"
    config_model = AnswerFromDeviceConfig

    def __init__(self, command: str, regex: str | None = None, mode: Mode = "contains",
                 case_insensitive: bool = True) -> None:
        if regex is not None:
            check_regex(regex, "answer_from_device.regex")
        self.command, self.regex, self.mode = command, regex, mode
        self.case_insensitive = case_insensitive

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        if trajectory.answer is None:
            return 0.0
        out = (await device.shell(fill(self.command, params))).stdout.strip()
        if self.regex is not None:
            m = compile_regex(self.regex, params, what="answer_from_device.regex").search(out)
            if m is None:
                raise TaskError(f"answer_from_device: {self.regex!r} not found in the output "
                                f"of `{self.command}`: {short(out)}")
            out = m.group(1) if m.groups() else m.group(0)
        if not out:
            raise TaskError(f"answer_from_device: `{self.command}` printed nothing")
        judge = AnswerMatches(out, self.mode, case_insensitive=self.case_insensitive)
        return 1.0 if judge.matches(trajectory.answer, {}) else 0.0

    def describe(self) -> str:
        return f"answer({self.mode} output of `{self.command}`)"

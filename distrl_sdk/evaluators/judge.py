"""A model judge of the final screen(s), as DigiRL/DistRL score episodes.

    judge = ModelJudge(backend, last_n_screens=2)
    score = await judge.evaluate(device, trajectory, params)  # 1.0 "success" / 0.0

The judge sends the last ``last_n_screens`` screenshots (earlier ones from
``trajectory.steps[i].info["screenshot_png"]``, the last one taken from the device at
evaluation time) and a prompt naming the task to a :class:`JudgeBackend`, then
parses the reply for a verdict (``Status: success|failure``, ``yes``/``no``, …).

The SDK holds only this backend-agnostic part. Backends (a local Hugging Face model,
an OpenAI-compatible server) live in the ``distrl-judge`` plugin, which brings their
heavy dependencies (transformers, torch, httpx) with it.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from typing import Any, Literal

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.trajectory import Trajectory

__all__ = ["DEFAULT_PROMPT", "JudgeBackend", "ModelJudge", "parse_verdict"]

#: DigiRL's evaluator framing (arXiv 2406.11896), zero-shot. Fields: ``{task}``,
#: ``{answer}``, ``{n_screens}`` and the episode's params.
DEFAULT_PROMPT = (
    "You're an expert in evaluating whether the Screenshot successfully completes the Task.\n"
    "{n_screens} screenshot(s) are attached in order; the last one is the final screen.\n"
    "Task: {task}\n"
    "Agent's answer: {answer}\n"
    "Q: What should I expect to see on the screenshot if I've completed the task? "
    "Compare it with what the screenshot shows.\n"
    "Reply with one or two sentences of reasoning, then a last line that is exactly "
    "`Status: success` or `Status: failure`."
)


class JudgeBackend(abc.ABC):
    """Something that answers a prompt about images: a VLM, local or behind an API."""

    #: a short name for describe() and logs
    name: str = ""

    @abc.abstractmethod
    async def judge(self, images: list[bytes], prompt: str) -> str:
        """The model's reply to ``prompt`` about ``images`` (PNG bytes, in order)."""

    def describe(self) -> str:
        return self.name or type(self).__name__


_STATUS = re.compile(
    r"status\W{0,4}(not\s+|un)?(success(?:ful(?:ly)?)?|succeeded|fail(?:ure|ed)?|complete[d]?|"
    r"incomplete|yes|no|true|false|done)\b", re.IGNORECASE)
_LABELLED = re.compile(
    r"(?:verdict|answer|final answer|result|judg(?:e)?ment|decision)\W{0,4}"
    r"(yes|no|success|failure|true|false|pass|fail)\b", re.IGNORECASE)
_POSITIVE = {"success", "successful", "successfully", "succeeded", "complete", "completed",
             "yes", "true", "done", "pass"}
_NEGATIVE = {"failure", "fail", "failed", "incomplete", "no", "false"}
_LEADING = re.compile(r"^\W*(yes|no|success|failure|true|false)\b", re.IGNORECASE)


def _word(word: str, negated: bool = False) -> bool | None:
    w = word.lower()
    if w in _POSITIVE:
        return not negated
    if w in _NEGATIVE:
        return negated and w != "no"  # "not no" is not a verdict anyone writes
    return None


def parse_verdict(reply: str) -> bool | None:
    """True (success), False (failure) or None when the reply holds no verdict.

    In order of trust: the last ``Status: …`` line (DigiRL's format; ``**Status:**
    Success``, ``status - failed``, ``Status: not successful`` all count), else the
    last ``Verdict/Answer/Result: yes|no``, else a reply that starts with yes/no.
    """
    matches = list(_STATUS.finditer(reply))
    if matches:
        m = matches[-1]
        return _word(m.group(2), negated=bool(m.group(1)))
    labelled = list(_LABELLED.finditer(reply))
    if labelled:
        return _word(labelled[-1].group(1))
    lead = _LEADING.match(reply)
    if lead:
        return _word(lead.group(1))
    return None


class ModelJudge(RewardEvaluator):
    """1.0 when the backend judges the final screen(s) a success, else 0.0.

    ``on_unparsed``: what a reply without a verdict scores — ``"failure"`` (0.0, as
    DigiRL does) or ``"error"`` (raise ``TaskError``; the episode is ERRORED).
    ``last_verdict`` and ``last_reply`` keep the latest exchange for logs only.
    """

    name = "judge"

    def __init__(self, backend: JudgeBackend, *, last_n_screens: int = 1,
                 prompt_template: str = DEFAULT_PROMPT,
                 on_unparsed: Literal["failure", "error"] = "failure") -> None:
        if last_n_screens < 1:
            raise TaskError("judge: last_n_screens must be ≥ 1")
        if on_unparsed not in ("failure", "error"):
            raise TaskError(f"judge: on_unparsed must be failure or error, not {on_unparsed!r}")
        self.backend = backend
        self.last_n_screens = last_n_screens
        self.prompt_template = prompt_template
        self.on_unparsed = on_unparsed
        self.last_reply: str | None = None
        self.last_verdict: bool | None = None

    async def screens(self, device: Device, trajectory: Trajectory) -> list[bytes]:
        """The earlier screens recorded in the steps, then the device's current one."""
        earlier: list[bytes] = []
        if self.last_n_screens > 1:
            for step in trajectory.steps:
                png = step.info.get("screenshot_png")
                if isinstance(png, bytes | bytearray):
                    earlier.append(bytes(png))
            earlier = earlier[-(self.last_n_screens - 1):]
        return [*earlier, await device.screenshot_png()]

    def prompt(self, trajectory: Trajectory, params: Mapping[str, Any], n_screens: int) -> str:
        fields = {**params, "task": trajectory.instruction or trajectory.task,
                  "answer": trajectory.answer if trajectory.answer is not None else "(none)",
                  "n_screens": n_screens}
        return fill(self.prompt_template, fields)

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        images = await self.screens(device, trajectory)
        reply = await self.backend.judge(images, self.prompt(trajectory, params, len(images)))
        if not isinstance(reply, str):
            raise TaskError(f"judge backend {self.backend.describe()} returned "
                            f"{type(reply).__name__}, not text")
        verdict = parse_verdict(reply)
        self.last_reply, self.last_verdict = reply, verdict
        if verdict is None and self.on_unparsed == "error":
            raise TaskError(f"judge backend {self.backend.describe()} gave no verdict: "
                            f"{reply[:200]!r}")
        return 1.0 if verdict else 0.0

    def describe(self) -> str:
        return f"judge({self.backend.describe()}, last {self.last_n_screens} screen(s))"

"""``ShellRegex``: run a shell command on the device and check its output and exit status."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.evaluators.common import EvaluatorConfig, check_regex, compile_regex, short
from distrl_sdk.trajectory import Trajectory

__all__ = ["ShellRegex"]


class ShellConfig(EvaluatorConfig):
    command: str
    regex: str | None = None
    expect_exit: int | None = 0
    stream: Literal["stdout", "stderr", "both"] = "stdout"
    timeout: float = 30.0


class ShellRegex(RewardEvaluator):
    """1.0 when ``command`` exits with ``expect_exit`` and ``regex`` is found in its output.

    ``regex`` (``re.search``, multiline) is optional: without it only the exit status
    counts; ``expect_exit=None`` ignores the exit status. ``stream`` picks what is
    searched: ``stdout`` (default), ``stderr`` or ``both``. Params fill ``{name}`` in
    the command as-is and in the regex escaped.
    """

    name = "shell"
    config_model = ShellConfig

    def __init__(self, command: str, regex: str | None = None, *, expect_exit: int | None = 0,
                 stream: Literal["stdout", "stderr", "both"] = "stdout",
                 timeout: float = 30.0) -> None:
        if not command.strip():
            raise TaskError("shell: `command` is empty")
        if regex is None and expect_exit is None:
            raise TaskError("shell: give `regex`, `expect_exit` or both; with neither "
                            "every run would pass")
        if regex is not None:
            check_regex(regex, "shell.regex")
        self.command, self.regex, self.expect_exit = command, regex, expect_exit
        self.stream, self.timeout = stream, timeout

    async def evaluate(self, device: Device, trajectory: Trajectory,
                       params: Mapping[str, Any]) -> float:
        out = await device.shell(fill(self.command, params), timeout=self.timeout)
        if self.expect_exit is not None and out.exit_code != self.expect_exit:
            return 0.0
        if self.regex is None:
            return 1.0
        text = {"stdout": out.stdout, "stderr": out.stderr,
                "both": out.stdout + out.stderr}[self.stream]
        rx = compile_regex(self.regex, params, flags=re.MULTILINE, what="shell.regex")
        return 1.0 if rx.search(text) else 0.0

    def describe(self) -> str:
        bits = [f"`{short(self.command, 50)[1:-1]}`"]
        if self.regex is not None:
            bits.append(f"{self.stream}~/{self.regex}/")
        if self.expect_exit is not None:
            bits.append(f"exit={self.expect_exit}")
        return "shell(" + ", ".join(bits) + ")"

"""What tasks, evaluators and policies may ask of a device.

Implemented by the farm's ADB backend for phones, emulators and sim phones alike, so
a task written against this protocol runs unchanged on all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from distrl_sdk.uitree import UIElement

__all__ = ["Device", "ShellOutput"]


@dataclass(frozen=True, slots=True)
class ShellOutput:
    """One shell command's result; ``exit_code`` is real (shell v2)."""

    stdout: str
    stderr: str
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


@runtime_checkable
class Device(Protocol):
    """An Android device reached over ADB."""

    @property
    def serial(self) -> str: ...

    async def shell(
        self, command: str, *, timeout: float = 30.0
    ) -> ShellOutput:
        """Run a shell command line (``sh -c`` semantics) and wait for it."""
        ...

    async def push(self, data: bytes, remote_path: str) -> None:
        """Write ``data`` to a file on the device, creating parent directories."""
        ...

    async def pull(self, remote_path: str) -> bytes:
        """Read a file from the device; raises ``DeviceError`` if it is missing."""
        ...

    async def screenshot_png(self) -> bytes:
        """The current screen as PNG bytes (never a silent black frame)."""
        ...

    async def ui_elements(self) -> list[UIElement]:
        """The current UI tree (``uiautomator dump``), flattened in document order."""
        ...

    async def screen_size(self) -> tuple[int, int]:
        """(width, height) in physical pixels."""
        ...

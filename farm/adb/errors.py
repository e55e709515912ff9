"""Errors of the adb client (a module of its own so the frame reader can share them)."""

from __future__ import annotations

__all__ = ["AdbServerError", "FrameError"]


class AdbServerError(Exception):
    """The adb server answered FAIL, or the connection broke."""


class FrameError(AdbServerError):
    """A ``screencap`` stream that is not one whole raw frame: it ended early, ran on
    past the frame, or was not a frame at all (an error message, an unknown format).
    The device may be fine; the capture failed."""

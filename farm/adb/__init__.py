"""Talking to adb servers and devices."""

from farm.adb.client import AdbServerClient, ShellV2Result
from farm.adb.errors import AdbServerError, FrameError
from farm.adb.frames import RawFrame, looks_blank

__all__ = ["AdbServerClient", "AdbServerError", "FrameError", "RawFrame", "ShellV2Result",
           "looks_blank"]

"""Talking to adb servers and devices."""

from farm.adb.client import AdbServerClient, AdbServerError, ShellV2Result

__all__ = ["AdbServerClient", "AdbServerError", "ShellV2Result"]

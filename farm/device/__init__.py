"""Devices the farm drives: phones, emulators and sim phones, all over ADB."""

from farm.device.adb_device import AdbDevice

__all__ = ["AdbDevice"]

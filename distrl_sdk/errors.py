"""The one exception tree of DistRL; every error a user can meet derives from it.

    DistRLError
    ├── ConfigError            bad configuration, flags or input files
    ├── DeviceError            anything a phone, emulator or sim phone did wrong
    │   ├── DeviceOffline      the adb server lists it offline or not at all
    │   ├── AdbTimeout         a call to the device ran past its deadline
    │   └── DeviceBusy         leased to another episode
    ├── ProtocolError          a peer spoke the wire protocol (ADB, MQTT payloads) wrongly
    ├── TaskError              a task or evaluator plugin failed or is invalid
    └── DeployRefused          the deploy safety guard refused an action

Messages say what happened and what to do next; they are shown to people as-is.
"""

from __future__ import annotations

__all__ = [
    "AdbTimeout",
    "ConfigError",
    "DeployRefused",
    "DeviceBusy",
    "DeviceError",
    "DeviceOffline",
    "DistRLError",
    "ProtocolError",
    "TaskError",
]


class DistRLError(Exception):
    """Root of every error DistRL raises on purpose."""


class ConfigError(DistRLError):
    """Configuration, command-line flags or an input file are wrong."""


class DeviceError(DistRLError):
    """A device (phone, emulator or sim phone) failed."""

    def __init__(self, message: str, *, serial: str | None = None) -> None:
        super().__init__(f"{serial}: {message}" if serial else message)
        self.serial = serial


class DeviceOffline(DeviceError):
    """The device is not reachable through the adb server."""


class AdbTimeout(DeviceError):
    """A device call exceeded its deadline."""


class DeviceBusy(DeviceError):
    """The device is leased to another episode."""


class ProtocolError(DistRLError):
    """A peer broke the wire protocol."""


class TaskError(DistRLError):
    """A task or reward evaluator failed or is invalid."""


class DeployRefused(DistRLError):
    """The deploy safety guard refused an action."""

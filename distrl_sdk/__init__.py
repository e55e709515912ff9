"""DistRL SDK: the library users import to write tasks, evaluators and policies.

The public API is what ``__all__`` lists; everything else is private.
"""

from distrl_sdk.device import Device, ShellOutput
from distrl_sdk.errors import (
    AdbTimeout,
    ConfigError,
    DeployRefused,
    DeviceBusy,
    DeviceError,
    DeviceOffline,
    DistRLError,
    ProtocolError,
    TaskError,
)

__version__ = "0.1.0"

__all__ = [
    "AdbTimeout",
    "ConfigError",
    "DeployRefused",
    "Device",
    "DeviceBusy",
    "DeviceError",
    "DeviceOffline",
    "DistRLError",
    "ProtocolError",
    "ShellOutput",
    "TaskError",
    "__version__",
]

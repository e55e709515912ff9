"""The simulated adbd: the device side of the ADB wire protocol over TCP.

    server = AdbdServer(phone)            # phone implements spec.AdbdBackend
    await server.start()                  # adb connect 127.0.0.1:{server.port}
    ...
    await server.stop()
"""

from __future__ import annotations

from farm.sim.adbd.banner import FEATURES, device_banner
from farm.sim.adbd.server import AdbdServer

__all__ = ["FEATURES", "AdbdServer", "device_banner"]

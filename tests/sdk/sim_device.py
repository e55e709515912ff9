"""A ``distrl_sdk.Device`` straight over an in-process ``SimPhone`` (no adb server).

A test double behind the real seam: shell, files, screen and UI come from the sim
phone's own shell, file system and world, exactly as adbd would serve them.
"""

from __future__ import annotations

import asyncio

from distrl_sdk.device import ShellOutput
from distrl_sdk.errors import AdbTimeout, DeviceError
from distrl_sdk.uitree import UIElement, parse_ui_dump
from farm.sim.phone import SimPhone


class SimDevice:
    """Device protocol over ``phone``; ``with_ui_xml=False`` hides ``ui_xml()``."""

    def __init__(self, phone: SimPhone | None = None) -> None:
        self.phone = phone or SimPhone()

    @property
    def serial(self) -> str:
        return "sim-inproc"

    async def shell(self, command: str, *, timeout: float = 30.0) -> ShellOutput:
        try:
            res = await asyncio.wait_for(self.phone.run_shell(command), timeout)
        except TimeoutError:
            raise AdbTimeout(f"`{command}` took longer than {timeout:g} s",
                             serial=self.serial) from None
        return ShellOutput(res.stdout_bytes.decode(errors="replace"),
                           res.stderr_bytes.decode(errors="replace"), res.exit_code)

    async def push(self, data: bytes, remote_path: str) -> None:
        self.phone.vfs.write(remote_path, data, make_parents=True)

    async def pull(self, remote_path: str) -> bytes:
        try:
            return self.phone.vfs.read(remote_path)
        except OSError as exc:
            raise DeviceError(f"pull {remote_path}: {exc.strerror}", serial=self.serial) from None

    async def screenshot_png(self) -> bytes:
        return self.phone.world.frame_png()

    async def ui_xml(self) -> str:
        return self.phone.world.ui_xml()

    async def ui_elements(self) -> list[UIElement]:
        return parse_ui_dump(await self.ui_xml())

    async def screen_size(self) -> tuple[int, int]:
        return self.phone.world.width, self.phone.world.height

    def log(self, tag: str, message: str, priority: str = "I") -> None:
        """What an app's ``Log.i(tag, message)`` does (the sim shell has no ``log``)."""
        self.phone.logcat.log(priority, tag, message)


class SimDeviceNoXml(SimDevice):
    """Like :class:`SimDevice` but without ``ui_xml``: XPath must dump via the shell."""

    ui_xml = None  # type: ignore[assignment]

    async def ui_elements(self) -> list[UIElement]:
        return parse_ui_dump((await self.shell("uiautomator dump /dev/tty")).stdout)

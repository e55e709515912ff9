"""``distrl_sdk.Device`` over an adb server, with the lean asyncio client.

One class serves USB phones, ``adb connect`` targets, emulators and sim phones: they
differ only in how the adb server reaches them. Screens are captured raw and encoded
on the host (``screencap -p`` costs 0.5–2 s on real phones, docs/design.md §4).
"""

from __future__ import annotations

import asyncio
import re

from distrl_sdk.device import ShellOutput
from distrl_sdk.errors import AdbTimeout, DeviceError, DeviceOffline, ProtocolError
from distrl_sdk.uitree import UIElement, parse_ui_dump
from farm.adb.client import AdbServerClient, AdbServerError
from farm.adb.errors import FrameError
from farm.device.observe import Frame

_SIZE = re.compile(r"(Physical|Override) size:\s*(\d+)x(\d+)")


class AdbDevice:
    """A device by serial on an adb server (default: the user's, on :5037)."""

    def __init__(self, serial: str, *, host: str = "127.0.0.1", port: int = 5037,
                 timeout: float = 30.0) -> None:
        self._serial = serial
        self.timeout = timeout
        self.client = AdbServerClient(host, port, timeout=timeout)
        self._size: tuple[int, int] | None = None

    @property
    def serial(self) -> str:
        return self._serial

    def _error(self, exc: AdbServerError, what: str) -> DeviceError:
        msg = str(exc)
        if "not found" in msg or "offline" in msg or "closed" in msg:
            return DeviceOffline(f"{what}: {msg}", serial=self._serial)
        return DeviceError(f"{what}: {msg}", serial=self._serial)

    async def shell(self, command: str, *, timeout: float = 30.0) -> ShellOutput:
        try:
            res = await asyncio.wait_for(self.client.shell_v2(self._serial, command), timeout)
        except TimeoutError:
            raise AdbTimeout(f"`{command}` took longer than {timeout:g} s",
                             serial=self._serial) from None
        except AdbServerError as exc:
            raise self._error(exc, f"shell `{command}`") from None
        return ShellOutput(res.stdout.decode(errors="replace"),
                           res.stderr.decode(errors="replace"), res.exit_code)

    async def exec_out(self, command: str, *, timeout: float | None = None) -> bytes:
        try:
            return await asyncio.wait_for(self.client.exec_out(self._serial, command),
                                          timeout or self.timeout)
        except TimeoutError:
            raise AdbTimeout(f"`{command}` took longer than {timeout or self.timeout:g} s",
                             serial=self._serial) from None
        except AdbServerError as exc:
            raise self._error(exc, f"exec `{command}`") from None

    async def push(self, data: bytes, remote_path: str) -> None:
        try:
            await asyncio.wait_for(self.client.push(self._serial, data, remote_path),
                                   self.timeout)
        except TimeoutError:
            raise AdbTimeout(f"push {remote_path} timed out", serial=self._serial) from None
        except AdbServerError as exc:
            raise self._error(exc, "push") from None

    async def pull(self, remote_path: str) -> bytes:
        try:
            return await asyncio.wait_for(self.client.pull(self._serial, remote_path),
                                          self.timeout)
        except TimeoutError:
            raise AdbTimeout(f"pull {remote_path} timed out", serial=self._serial) from None
        except AdbServerError as exc:
            raise self._error(exc, "pull") from None

    async def screen_size(self) -> tuple[int, int]:
        if self._size is None:
            out = (await self.shell("wm size")).stdout
            sizes = {kind: (int(w), int(h)) for kind, w, h in _SIZE.findall(out)}
            size = sizes.get("Override") or sizes.get("Physical")
            if size is None:
                raise ProtocolError(f"{self._serial}: cannot read the screen size from "
                                    f"`wm size`: {out.strip()!r}")
            self._size = size
        return self._size

    async def screenshot_rgba(self) -> tuple[int, int, memoryview]:
        """Raw RGBA pixels from ``screencap`` (12- or 16-byte header, by Android version):
        a read-only view of the one buffer the frame was received into (no copies)."""
        try:
            frame = await asyncio.wait_for(self.client.raw_frame(self._serial), self.timeout)
        except TimeoutError:
            raise AdbTimeout(f"`screencap` took longer than {self.timeout:g} s",
                             serial=self._serial) from None
        except FrameError as exc:  # the capture failed; the device may well be fine
            raise DeviceError(str(exc), serial=self._serial) from None
        except AdbServerError as exc:
            raise self._error(exc, "exec `screencap`") from None
        return frame.width, frame.height, frame.pixels

    async def screenshot_png(self) -> bytes:
        width, height, rgba = await self.screenshot_rgba()
        return Frame(width, height, rgba).to_png(compress_level=1)

    async def ui_xml(self) -> str:
        out = (await self.exec_out("uiautomator dump /dev/tty")).decode(errors="replace")
        if "<hierarchy" not in out:
            # some builds refuse /dev/tty: dump to a file and read it back
            path = "/data/local/tmp/distrl_uidump.xml"
            res = await self.shell(f"uiautomator dump {path}")
            if "ERROR" in res.stdout + res.stderr:
                raise DeviceError(f"uiautomator dump failed: {(res.stdout + res.stderr).strip()}",
                                  serial=self._serial)
            out = (await self.pull(path)).decode(errors="replace")
        return out

    async def ui_elements(self) -> list[UIElement]:
        return parse_ui_dump(await self.ui_xml())

    def __repr__(self) -> str:
        return f"AdbDevice({self._serial!r}, adb server :{self.client.port})"

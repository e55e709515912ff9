"""What the screens and the command palette need from the app, as a Protocol.

Screens reach the app through ``self.app``; typing that as
:class:`~tui.app.DistrlTui` would make every screen module import the app module that
imports them (a cycle, even under TYPE_CHECKING). They depend on this interface
instead, which :class:`~tui.app.DistrlTui` implements."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tui.decoder import DeviceKey, FrameDecoder
from tui.model import FleetModel
from tui.source import DataSource

__all__ = ["PaletteEntry", "TuiHost"]

#: a palette line: (text, help, what selecting it does)
PaletteEntry = tuple[str, str, Callable[[], Any]]


class TuiHost(Protocol):
    model: FleetModel
    decoder: FrameDecoder
    source: DataSource
    readonly: bool
    image: str  # "halfblock" | "native"
    fleet_view: str  # "wall" | "list"
    thumb_rows: int
    thumb_cols: int

    def request(self, name: str, key: DeviceKey | None) -> None:
        """A device action by name (pause, run_task, deploy …) on ``key``."""

    def open_device(self, key: DeviceKey) -> None:
        """Show the device screen of ``key``."""

    def palette_commands(self, current_only: bool = False) -> list[PaletteEntry]:
        """The command palette's entries (only the current device's with
        ``current_only``)."""

"""What the screens share: typed access to the app, and the device actions (pause,
resume, reconnect, quarantine, release, run task, deploy) bound to the same keys on
every screen that has a current device."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import events
from textual.binding import Binding, BindingType
from textual.screen import Screen

if TYPE_CHECKING:
    from tui.decoder import DeviceKey
    from tui.host import TuiHost

__all__ = ["MUTATIONS", "AppScreen", "DeviceActionsScreen"]

#: action name → (key, footer label, command op); every mutation the TUI can send
MUTATIONS: dict[str, tuple[str, str, str]] = {
    "pause": ("p", "Pause", "pause"),
    "resume": ("u", "Resume", "resume"),
    "reconnect": ("r", "Reconnect", "reconnect"),
    "quarantine": ("x", "Quarantine", "quarantine"),
    "release": ("e", "Release", "release"),
    "run_task": ("t", "Run task", "run_task"),
    "deploy": ("d", "Deploy", ""),  # a `distrl deploy` command line, not a farm command
}
_KEY_TO_ACTION = {key: name for name, (key, _l, _o) in MUTATIONS.items()}


class AppScreen(Screen[None]):
    """A screen of :class:`~tui.app.DistrlTui` that redraws from the model on its tick."""

    @property
    def tui(self) -> TuiHost:
        return cast("TuiHost", self.app)

    def refresh_from_model(self) -> None:
        """Bring the widgets up to date with ``self.tui.model`` (called on each tick
        while this screen is the active one)."""

    def on_screen_resume(self) -> None:
        self.refresh_from_model()


class DeviceActionsScreen(AppScreen):
    """A screen with a current device and the keys that act on it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, f"device('{name}')", label, tooltip=f"{label} the selected device"
                if name not in ("run_task", "deploy") else
                ("Run a task (by name) on the selected device" if name == "run_task" else
                 "Deploy hint: the `distrl deploy` command line for this device"))
        for name, (key, label, _op) in MUTATIONS.items()
    ]

    def current_device(self) -> DeviceKey | None:
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # read-only: the mutation keys disappear from the footer (on_key explains why)
        return not (action == "device" and self.tui.readonly)

    def action_device(self, name: str) -> None:
        self.tui.request(name, self.current_device())

    def on_key(self, event: events.Key) -> None:
        if self.tui.readonly and event.character in _KEY_TO_ACTION:
            name = _KEY_TO_ACTION[event.character]
            self.notify(f"read-only mode: {MUTATIONS[name][1].lower()} is disabled",
                        severity="warning")
            event.stop()

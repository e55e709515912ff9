"""The Device screen (``enter`` on a row, ``esc`` back): one step's truth — the screen a
step's action was chosen on, large, in half-block cells with that action drawn on it
(red rings: taps, yellow arrows: swipes), that observation's UI elements (the one under
the tap highlighted) — the current instruction, the action history (every step, an
opening line per episode and its outcome at its end; scrollable) and the device's log.

With ``--image native`` (auto-detected by ``distrl tui``) the picture is the real frame
drawn through the terminal's graphics (Kitty, Sixel, iTerm2) by textual-image; half-block
is the default because it works in every terminal, in tmux and in SVG snapshots."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Footer, Static

from tui.base import DeviceActionsScreen
from tui.decoder import DeviceKey
from tui.fleet import STATE_STYLE
from tui.model import DeviceView
from tui.ui_elements import elements_text

__all__ = ["DeviceScreen"]


class DeviceScreen(DeviceActionsScreen):
    DEFAULT_CSS = """
    DeviceScreen #title { height: 1; background: $primary; padding: 0 1; }
    DeviceScreen #body { height: 1fr; }
    DeviceScreen #screen { width: auto; min-width: 20; height: 1fr; padding: 0 1; }
    DeviceScreen #native { width: 40%; height: 1fr; }
    DeviceScreen #side { width: 3fr; }
    DeviceScreen #elements { width: 2fr; height: 1fr; border: round $secondary;
                             padding: 0 1; }
    DeviceScreen #info { height: auto; border: round $primary; padding: 0 1; }
    DeviceScreen #history { height: 1fr; border: round $secondary; padding: 0 1; }
    DeviceScreen #devlog { height: 1fr; border: round $secondary; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", tooltip="Back to the fleet")]

    def __init__(self, key: DeviceKey) -> None:
        super().__init__()
        self.key = key
        self._rev = -1
        self._box = (0, 0)

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        with Horizontal(id="body"):
            native = _native_image() if self.tui.image == "native" else None
            if native is not None:
                yield native
            yield Static(id="screen")
            with Vertical(id="side"):
                yield Static(id="info")
                with VerticalScroll(id="history"):  # every step: scrollable
                    yield Static(id="history-text")
                with VerticalScroll(id="devlog"):  # the whole kept log, newest last
                    yield Static(id="devlog-text")
            with VerticalScroll(id="elements"):  # a full-height column: a screen has many
                yield Static(id="elements-text")
        yield Footer()

    def current_device(self) -> DeviceKey | None:
        return self.key

    def action_back(self) -> None:
        self.dismiss()

    def _want_box(self) -> tuple[int, int]:
        w, h = self.app.size
        return max(10, min(80, (w - 4) // 2)), max(4, h - 4)

    def on_mount(self) -> None:
        self._box = self._want_box()
        self.tui.decoder.set_focus(self.key, *self._box)
        self.refresh_from_model()

    def on_resize(self) -> None:
        box = self._want_box()
        if box != self._box:
            self._box = box
            self.tui.decoder.set_focus(self.key, *box)

    def on_unmount(self) -> None:
        self.tui.decoder.set_focus(None)

    def refresh_from_model(self) -> None:
        if not self.is_mounted:
            return
        dev = self.tui.model.devices.get(self.key)
        if dev is None or dev.rev == self._rev:
            return
        self._rev = dev.rev
        self.query_one("#title", Static).update(
            f"[b]{dev.label}[/b] · [{STATE_STYLE.get(dev.state, '')}]{dev.state}[/] · "
            "esc: back to the fleet")
        screen = self.query_one("#screen", Static)
        native = self.query("#native")
        if native and dev.picture is not None:
            native.first().image = dev.picture  # type: ignore[attr-defined]
            screen.display = False
        elif dev.big is not None:
            screen.update(dev.big)
        elif dev.frame_error:
            screen.update(Text(f"bad frame:\n{dev.frame_error}", style="red"))
        else:
            screen.update(Text("waiting for a frame…", style="dim"))
        self.query_one("#info", Static).update(self._info(dev))
        self.query_one("#elements-text", Static).update(elements_text(dev.frame))
        hist = Text("actions", style="bold")
        hist.append(" (every step, newest last)\n", style="dim")
        hist.append("\n".join(dev.actions) if dev.actions else "none yet",
                    style="" if dev.actions else "dim")
        self._update_following("history", hist)
        lines = [f"{datetime.fromtimestamp(ln.at, UTC):%H:%M:%S} {ln.text}" for ln in dev.log]
        log = Text("device log\n", style="bold")
        log.append("\n".join(lines) if lines else "empty", style="" if lines else "dim")
        self._update_following("devlog", log)

    def _update_following(self, box_id: str, content: Text) -> None:
        """New lines come last: a list scrolled to its end stays at the end, one the user
        scrolled up stays where they put it."""
        box = self.query_one(f"#{box_id}", VerticalScroll)
        following = box.scroll_y >= box.max_scroll_y
        self.query_one(f"#{box_id}-text", Static).update(content)
        if following:
            box.scroll_end(animate=False)

    def _info(self, dev: DeviceView) -> Text:
        s = dev.status
        t = Text()

        def row(name: str, value: str, style: str = "") -> None:
            t.append(f"{name:<12}", style="dim")
            t.append(value + "\n", style=style)

        row("state", dev.state, STATE_STYLE.get(dev.state, ""))
        if s is not None:
            row("detail", s.detail or "-")
            row("task", s.task or "-")
            row("instruction", s.instruction or "-", "italic")
            row("step", "-" if s.step is None else str(s.step))
            row("return", "-" if s.episode_return is None else f"{s.episode_return:.3f}")
            row("episodes", str(s.episodes))
            row("policy", "-" if s.policy_version is None else f"v{s.policy_version}")
            row("battery", "-" if s.battery is None else f"{s.battery}%")
            row("temperature", "-" if s.temperature_c is None else f"{s.temperature_c:.1f} °C")
            row("kind", s.kind or "-")
        f = dev.frame
        if f is not None:
            # the picture, its elements and the action drawn on it are one step, which
            # can trail the status's step above while the next frame is on its way
            row("picture", "-" if f.step is None else f"step {f.step} (its elements, its "
                "action)")
            row("screen", f"{f.screen_width}x{f.screen_height} (frame {f.width}x{f.height})")
        t.rstrip()
        return t


def _native_image() -> Widget | None:
    """textual-image's widget, which picks Kitty graphics or Sixel for this terminal
    (None where the library cannot load: the half-block picture stays)."""
    try:
        from textual_image.widget import Image as NativeImage
    except Exception:
        return None
    return NativeImage(id="native")

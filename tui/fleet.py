"""The Fleet screen: a wall of phone tiles (:mod:`tui.wall`) or one table row per
device with its live thumbnail (``w`` toggles), a ``/`` filter, sort keys and the fleet
totals in a status bar.

Updates are cheap on purpose: a row is redrawn only when its
device changed (:class:`~tui.fleet_table.FleetTable` repaints just that row), the rows
are replaced only when the visible set or its order changes, and the bars above and
below are redrawn without a layout pass."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Input, Static

from tui.base import DeviceActionsScreen
from tui.decoder import DeviceKey
from tui.fleet_table import FleetTable
from tui.model import SORT_KEYS, DeviceView
from tui.wall import PhoneWall, Tile, WallBox

__all__ = ["STATE_STYLE", "FleetScreen"]

STATE_STYLE = {"busy": "bold green", "ready": "cyan", "preparing": "blue",
               "paused": "yellow", "quarantined": "bold magenta", "offline": "bold red",
               "unknown": "dim"}
#: (column key, title, width); the thumbnail's width comes from the app
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("device", "device", 22), ("state", "state", 12), ("task", "task / instruction", 30),
    ("step", "step", 5), ("return", "return", 7), ("episodes", "episodes", 8),
    ("battery", "batt", 5),
    ("temp", "temp", 6), ("policy", "policy", 6), ("updated", "updated", 9),
)


def _fmt_num(v: float | int | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


class FleetScreen(DeviceActionsScreen):
    DEFAULT_CSS = """
    FleetScreen #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    FleetScreen #header { height: 1; background: $panel; padding: 0 0 0 0; }
    FleetScreen #fleet { height: 1fr; }
    FleetScreen #wallbox { height: 1fr; display: none; }
    FleetScreen.-wall #wallbox { display: block; }
    FleetScreen.-wall #fleet { display: none; }
    FleetScreen.-wall #header { display: none; }
    FleetScreen #filter { display: none; height: 3; }
    FleetScreen #filter.-shown { display: block; }
    FleetScreen #statusbar { height: 1; background: $panel; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", tooltip="Show the selected device"),
        Binding("slash", "filter", "Filter", tooltip="Filter devices (words; !word excludes)",
                key_display="/"),
        Binding("s", "sort", "Sort", tooltip="Cycle the sort column"),
        Binding("S", "reverse", "Reverse", tooltip="Reverse the sort order"),
        Binding("w", "toggle_view", "Wall/list", show=False,  # shown by the view itself
                tooltip="Switch between the wall of phones and the list"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.query_text = ""
        self.sort_key = "device"
        self.reverse = False
        self._order: list[DeviceKey] = []
        self._shown_rev: dict[DeviceKey, int] = {}
        self._membership_rev = -1
        self._status_line = ""
        self.view = self.tui.fleet_view
        self.set_class(self.view == "wall", "-wall")

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(id="header")
        yield FleetTable([("thumb", "scr", self.tui.thumb_cols), *COLUMNS],
                         self.tui.thumb_rows, id="fleet")
        yield WallBox(native=self.tui.image == "native", id="wallbox")
        yield Input(placeholder="filter: words must all match, !word excludes (esc clears)",
                    id="filter")
        yield Static(id="statusbar")
        yield Footer()

    @property
    def table(self) -> FleetTable:
        return self.query_one("#fleet", FleetTable)

    @property
    def wall(self) -> PhoneWall:
        return self.query_one("#wall", PhoneWall)

    @property
    def active_view(self) -> FleetTable | PhoneWall:
        return self.wall if self.view == "wall" else self.table

    def on_mount(self) -> None:
        self.query_one("#header", Static).update(self.table.header())
        self.active_view.focus()
        self.refresh_from_model()

    # ------------------------------------------------------------ actions
    def current_device(self) -> DeviceKey | None:
        key = self.active_view.current_key
        return key if isinstance(key, tuple) else None

    def move_to(self, key: DeviceKey) -> None:
        """Put the cursor on ``key`` in both views."""
        self.table.move_to(key)
        self.wall.move_to(key)

    def action_toggle_view(self) -> None:
        current = self.current_device()
        self.view = "list" if self.view == "wall" else "wall"
        self.set_class(self.view == "wall", "-wall")
        self._order = []  # the view now shown is rebuilt from the model
        self.refresh_from_model()
        if current is not None:
            self.active_view.move_to(current)
        self.active_view.focus()
        self.notify(f"{self.view} view (w switches)", timeout=2)

    def on_phone_wall_selected(self, event: PhoneWall.Selected) -> None:
        self.action_open()

    def on_phone_wall_resized(self, event: PhoneWall.Resized) -> None:
        lay = event.grid
        if self.view == "wall":  # the phones on screen at the new size, before re-rendering
            self.tui.decoder.set_visible(self._on_screen())
        self.tui.decoder.set_tile(lay.screen_cols, lay.screen_rows)

    def action_open(self) -> None:
        key = self.current_device()
        if key is None:
            self.notify("no device selected", severity="warning")
            return
        self.tui.open_device(key)

    def on_fleet_table_selected(self, event: FleetTable.Selected) -> None:
        self.action_open()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-shown")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-shown")
        self.query_text = ""
        self.active_view.focus()
        self.refresh_from_model()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.query_text = event.value
            self.refresh_from_model()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value.strip():
                event.input.remove_class("-shown")
            self.active_view.focus()

    def action_sort(self) -> None:
        self.sort_key = SORT_KEYS[(SORT_KEYS.index(self.sort_key) + 1) % len(SORT_KEYS)]
        self.notify(f"sorted by {self.sort_key}", timeout=2)
        self.refresh_from_model()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.refresh_from_model()

    # ------------------------------------------------------------ drawing
    def _row(self, dev: DeviceView) -> dict[str, Any]:
        s = dev.status
        rows = self.tui.thumb_rows
        if dev.thumb is not None:
            thumb: Any = dev.thumb
        elif dev.frame_error:
            thumb = Text("bad\nframe", style="red")
        else:
            thumb = Text("\n".join(["·" * self.tui.thumb_cols] * rows), style="dim")
        dev_cell = Text(dev.key[1], style="bold", no_wrap=True, overflow="ellipsis")
        dev_cell.append(f"\n{dev.key[0]}", style="dim")
        if s is not None and s.kind:
            dev_cell.append(f" · {s.kind}", style="dim")
        state = Text(dev.state, style=STATE_STYLE.get(dev.state, ""), no_wrap=True,
                     overflow="ellipsis")
        if s is not None and s.detail:
            state.append(f"\n{s.detail}", style="dim")
        task = Text(s.task or "-" if s else "-", no_wrap=True, overflow="ellipsis")
        if s is not None and s.instruction:
            task.append(f"\n{s.instruction[:60]}", style="italic dim")
        return {
            "thumb": thumb, "device": dev_cell, "state": state, "task": task,
            "step": _fmt_num(s.step if s else None, "d"),
            "return": _fmt_num(s.episode_return if s else None, ".2f"),
            "episodes": _fmt_num(s.episodes if s else None, "d"),
            "battery": "-" if s is None or s.battery is None else f"{s.battery}%",
            "temp": "-" if s is None or s.temperature_c is None else f"{s.temperature_c:.0f}°C",
            "policy": "-" if s is None or s.policy_version is None else f"v{s.policy_version}",
            "updated": "-" if s is None else
            f"{datetime.fromtimestamp(s.updated_at, UTC):%H:%M:%S}",
        }

    def _tile(self, dev: DeviceView) -> Tile:
        s = dev.status
        state = Text(dev.state, style=STATE_STYLE.get(dev.state, ""), no_wrap=True)
        if s is not None and s.step is not None:
            state.append(f" s{s.step}")
        if s is not None and s.episode_return is not None:
            state.append(f" {s.episode_return:+.2f}")
        task = "-" if s is None else (s.task or s.instruction or s.detail or "-")
        return Tile(serial=dev.key[1], state=state, task=task, picture=dev.tile,
                    placeholder="bad frame" if dev.frame_error else "no frame yet",
                    image=dev.tile_picture)

    def _on_screen(self) -> list[DeviceKey]:
        """The devices whose tiles the wall shows now."""
        return [k for k in self.wall.visible_keys() if isinstance(k, tuple)]

    def _refresh_wall(self, order: list[DeviceKey]) -> None:
        model, w = self.tui.model, self.wall
        on_screen = self._on_screen()
        self.tui.decoder.set_visible(on_screen)  # off-screen phones' frames wait
        if order != self._order:
            tiles = {}
            for key in order:
                dev = model.devices[key]
                tiles[key] = self._tile(dev)
                self._shown_rev[key] = dev.rev
            w.set_tiles(order, tiles)
            self._order = order
            return
        for key in on_screen:  # the others are brought up to date when they scroll in
            dev = model.devices[key]
            if self._shown_rev.get(key) != dev.rev:
                self._shown_rev[key] = dev.rev
                w.update_tile(key, self._tile(dev))

    def refresh_from_model(self) -> None:
        if not self.is_mounted:
            return
        model = self.tui.model
        t = self.table
        order = model.visible(self.query_text, self.sort_key, self.reverse)
        if self.view == "wall":
            self._refresh_wall(order)
            self._draw_bars(len(order))
            return
        self.tui.decoder.set_visible(None)  # the list: every row's thumbnail
        if order != self._order:
            cells = {}
            for key in order:
                dev = model.devices[key]
                cells[key] = self._row(dev)
                self._shown_rev[key] = dev.rev
            t.set_rows(order, cells)
            self._order = order
        else:
            for key in order:
                dev = model.devices[key]
                if self._shown_rev.get(key) != dev.rev:
                    self._shown_rev[key] = dev.rev
                    t.update_row(key, self._row(dev))
        self._draw_bars(len(order))

    def _learner_part(self) -> str:
        """The learner's headline (held-out success, else the training window's; policy
        version) once it reports. It leads the bar so that 80 columns still show it."""
        m = self.tui.model
        head, ver = m.headline(), m.learner_latest("version")
        if head is None and ver is None:
            return ""
        parts = []
        if head is not None:
            parts.append(f"{head[0]} [b]{escape(head[1])}[/]")
        if ver is not None:
            parts.append(f"policy v{ver:.0f}")
        return " · ".join(parts) + " │ "

    def _draw_bars(self, shown: int) -> None:
        tui = self.tui
        tot = tui.model.totals()
        why = tui.model.link_detail
        link = "[green]● connected[/]" if tui.model.connected else (
            "[red]● disconnected[/]" + (f" [red]({escape(why[-80:])})[/]" if why else ""))
        farms = "".join(f" · farm {escape(f)} "
                        + ("[green]● up[/]" if up else "[red]● offline[/]")
                        for f, up in tui.model.farm_links())
        # READ-ONLY before the link: a long disconnect reason must not push it off screen
        title = (f"[b]DistRL[/b] fleet · {tui.source.description} · "
                 + ("[yellow]READ-ONLY[/] · " if tui.readonly else "") + f"{link}{farms}")
        bad = sum(tui.model.garbage.values())
        hidden = f" (shown {shown})" if shown != tot.total else ""
        line = (f"{self._learner_part()}devices {tot.total}{hidden} │ "
                f"[green]online {tot.online}[/] │ "
                f"busy {tot.busy} │ paused {tot.paused} │ "
                f"[magenta]quarantined {tot.quarantined}[/] │ [red]error {tot.error}[/] │ "
                + (f"[dim]ended {tot.ended} (farm stopped)[/] │ " if tot.ended else "")
                + f"[b]episodes {tot.episodes}[/] │ "
                f"sort {self.sort_key}{' ↓' if self.reverse else ''}"
                + (f" │ filter '{self.query_text}'" if self.query_text else "")
                + (f" │ [red]rejected {bad}[/]" if bad else "")
                + f" │ {datetime.fromtimestamp(tui.model.clock(), UTC):%H:%M:%S}Z")
        if line + title != self._status_line:
            self._status_line = line + title
            # fixed-height bars: no layout pass (that would repaint the whole screen)
            self.query_one("#statusbar", Static).update(line, layout=False)
            self.query_one("#title", Static).update(title, layout=False)

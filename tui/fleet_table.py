"""A table of fixed-height rows for the fleet, drawn with Textual's Line API.

Why not ``DataTable``: every ``update_cell`` bumps one counter that is part of all its
render-cache keys, so one changed cell re-renders every visible row (measured: ~80 % of
the TUI's CPU at 64 devices). Here a row's lines are built only when that row changed
and is on screen, and only its region of the screen is repainted."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

__all__ = ["Column", "FleetTable"]

Column = tuple[str, str, int]  # key, title, width in cells
_GAP = 2


class FleetTable(ScrollView, can_focus=True):
    """Rows of ``row_height`` lines; ``cursor`` is the highlighted row."""

    DEFAULT_CSS = """
    FleetTable { background: $surface; }
    FleetTable > .fleet-table--cursor { background: $primary 30%; }
    FleetTable:focus > .fleet-table--cursor { background: $primary 60%; }
    FleetTable > .fleet-table--odd { background: $surface-lighten-1; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"fleet-table--cursor", "fleet-table--odd"}
    BINDINGS: ClassVar[list[BindingType]] = [
        # the fleet screen's view switch, first in the footer (the focused widget's keys
        # lead it), so that it is seen at 80 columns
        Binding("w", "screen.toggle_view", "Wall", tooltip="Show the fleet as a wall of "
                "phones"),
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    class Selected(Message):
        """``enter`` or a double click on a row."""

        def __init__(self, key: Hashable) -> None:
            super().__init__()
            self.key = key

    def __init__(self, columns: Sequence[Column], row_height: int, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = list(columns)
        self.row_height = max(1, row_height)
        self.keys: list[Hashable] = []
        self.cells: dict[Hashable, Mapping[str, RenderableType]] = {}
        self.cursor = 0
        self._strips: dict[tuple[Hashable, bool], list[Strip]] = {}
        self.total_width = sum(w for _k, _t, w in self.columns) + _GAP * len(self.columns)
        self.rows_built = 0  # rows turned into lines so far (the benchmark reads it)

    # ------------------------------------------------------------ data
    def header(self) -> Text:
        """The column titles, aligned with the rows (shown by the screen above us)."""
        t = Text(no_wrap=True, overflow="crop", style="bold")
        for _key, title, width in self.columns:
            t.append(title[:width].ljust(width) + " " * _GAP)
        return t

    def set_rows(self, keys: Sequence[Hashable],
                 cells: Mapping[Any, Mapping[str, RenderableType]]) -> None:
        """Replace every row (new order, filter or members); keeps the cursor's row."""
        current = self.current_key
        self.keys = list(keys)
        self.cells = {k: cells[k] for k in self.keys}
        self._strips.clear()
        if current in self.cells:
            self.cursor = self.keys.index(current)
        self.cursor = max(0, min(self.cursor, len(self.keys) - 1))
        self.virtual_size = Size(self.total_width, len(self.keys) * self.row_height)
        self.refresh()

    def update_row(self, key: Hashable, cells: Mapping[str, RenderableType]) -> None:
        """New cells for one row; only that row's screen region is repainted."""
        if key not in self.cells:
            return
        self.cells[key] = cells
        self._strips.pop((key, False), None)
        self._strips.pop((key, True), None)
        self._refresh_row(self.keys.index(key))

    @property
    def current_key(self) -> Hashable | None:
        if 0 <= self.cursor < len(self.keys):
            return self.keys[self.cursor]
        return None

    # ------------------------------------------------------------ drawing
    def _refresh_row(self, index: int) -> None:
        y = index * self.row_height - int(self.scroll_y)
        if y + self.row_height > 0 and y < self.size.height:
            self.refresh(Region(0, y, self.size.width, self.row_height))

    def _row_strips(self, index: int) -> list[Strip]:
        key = self.keys[index]
        cur = index == self.cursor
        got = self._strips.get((key, cur))
        if got is not None:
            return got
        self.rows_built += 1
        if cur:
            base = self.get_component_rich_style("fleet-table--cursor")
        elif index % 2:
            base = self.get_component_rich_style("fleet-table--odd")
        else:
            base = self.rich_style
        console = self.app.console
        lines: list[list[Segment]] = [[] for _ in range(self.row_height)]
        cells = self.cells[key]
        gap = Segment(" " * _GAP)
        for col, _title, width in self.columns:
            value = cells.get(col, "")
            opts = console.options.update(width=width, height=self.row_height,
                                          no_wrap=True, overflow="ellipsis")
            rendered = console.render_lines(value, opts, pad=True)
            for i in range(self.row_height):
                row = rendered[i] if i < len(rendered) else [Segment(" " * width)]
                lines[i].extend(row)
                lines[i].append(gap)
        strips = [Strip(Segment.apply_style(line, style=base), self.total_width)
                  .simplify() for line in lines]
        self._strips[(key, cur)] = strips
        return strips

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index, line = divmod(y + scroll_y, self.row_height)
        width = self.size.width
        if index >= len(self.keys):
            return Strip.blank(width, self.rich_style)
        strip = self._row_strips(index)[line]
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)

    def on_resize(self) -> None:
        self._strips.clear()

    # ------------------------------------------------------------ cursor
    def _set_cursor(self, index: int) -> None:
        if not self.keys:
            return
        index = max(0, min(index, len(self.keys) - 1))
        old, self.cursor = self.cursor, index
        if old != index:
            self._refresh_row(old)
            self._refresh_row(index)
        self.scroll_to_region(Region(0, index * self.row_height, 1, self.row_height),
                              animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        self._set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        per_page = max(1, self.size.height // self.row_height)
        self._set_cursor(self.cursor + direction * per_page)

    def action_jump(self, index: int) -> None:
        self._set_cursor(index if index >= 0 else len(self.keys) - 1)

    def action_select(self) -> None:
        key = self.current_key
        if key is not None:
            self.post_message(self.Selected(key))

    def move_to(self, key: Hashable) -> None:
        if key in self.cells:
            self._set_cursor(self.keys.index(key))

    def on_click(self, event: events.Click) -> None:
        index = (event.y + int(self.scroll_y)) // self.row_height
        if index < len(self.keys):
            self._set_cursor(index)
            if event.chain >= 2:
                self.action_select()

"""The fleet as a wall of phones: a grid of tiles (the live screen, then serial, state,
step, return and task), sized to the terminal, drawn with Textual's Line API.

Layout (:func:`wall_layout`): tile rows are about :data:`TARGET_SCREEN_ROWS` half-block
rows of screen high (20 rows = 40 pixels: launcher, Settings and a form are told apart
at a glance; tests/tui/test_picture.py measures it), as many columns as the width
holds, whole tiles only: scrolling moves by tile rows, so nothing is cut in half.

Where the terminal draws images (``--image native``: Kitty graphics, Sixel) a
:class:`WallBox` lays textual-image widgets over the visible tiles' picture boxes and the
wall leaves those boxes blank; everywhere else the picture is half-block cells.

Cheap like :class:`~tui.fleet_table.FleetTable`: a tile's lines are built only when it
changed, and only its region of the screen is repainted."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.imaging import HalfBlock, fit_cells

if TYPE_CHECKING:
    from PIL import Image
    from textual.widget import Widget

__all__ = ["TEXT_LINES", "PhoneWall", "Tile", "WallBox", "WallLayout", "wall_layout"]

TEXT_LINES = 3  # serial; state · step · return; task
TARGET_SCREEN_ROWS = 20
MIN_SCREEN_ROWS = 6
MIN_TEXT_COLS = 16  # "quarantined s12" and a serial's head fit
GAP = 2
PHONE_ASPECT = 1080 / 2400  # width / height of the usual phone (the frames' own is kept)


@dataclass(frozen=True)
class WallLayout:
    columns: int  # tiles per row
    rows: int  # tile rows that fit the height
    tile_w: int  # cells, gap included
    tile_h: int
    screen_cols: int  # the picture's box inside a tile
    screen_rows: int


def wall_layout(width: int, height: int, aspect: float = PHONE_ASPECT) -> WallLayout:
    """Tiles for a ``width``×``height`` wall: the tile height splits the height evenly
    into rows of about ``TARGET_SCREEN_ROWS`` screen rows (at least one row, however
    small), the width then takes as many tiles as fit."""
    per_col = max(1, height // (TARGET_SCREEN_ROWS + TEXT_LINES))
    tile_h = max(MIN_SCREEN_ROWS + TEXT_LINES, height // per_col)
    screen_rows = tile_h - TEXT_LINES
    screen_cols = max(4, math.ceil(screen_rows * 2 * aspect))
    tile_w = max(screen_cols, MIN_TEXT_COLS) + GAP
    return WallLayout(columns=max(1, width // tile_w), rows=max(1, height // tile_h),
                      tile_w=tile_w, tile_h=tile_h, screen_cols=screen_cols,
                      screen_rows=screen_rows)


@dataclass(frozen=True)
class Tile:
    """What one tile shows; the screen builds it from a device view."""

    serial: str
    state: Text  # styled state (+ step, return)
    task: str
    picture: HalfBlock | None
    placeholder: str = "no frame yet"
    image: Image.Image | None = None  # the frame itself, for terminal graphics (native)


class PhoneWall(ScrollView, can_focus=True):
    """Tiles in reading order; ``cursor`` is the highlighted tile's index."""

    DEFAULT_CSS = """
    PhoneWall { background: $surface; scrollbar-size-vertical: 1; }
    PhoneWall > .phone-wall--cursor { background: $primary 60%; text-style: bold; }
    PhoneWall > .phone-wall--text { background: $panel; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"phone-wall--cursor", "phone-wall--text"}
    BINDINGS: ClassVar[list[BindingType]] = [
        # first in the footer (the focused widget's keys lead it): seen at 80 columns
        Binding("w", "screen.toggle_view", "List", tooltip="Show the fleet as a list"),
        Binding("left,h", "move(-1, 0)", "Left", show=False, tooltip="Previous phone"),
        Binding("right,l", "move(1, 0)", "Right", show=False, tooltip="Next phone"),
        Binding("up,k", "move(0, -1)", "Up", show=False, tooltip="Phone above"),
        Binding("down,j", "move(0, 1)", "Down", show=False, tooltip="Phone below"),
        Binding("pageup", "page(-1)", "Page up", show=False, tooltip="A screenful up"),
        Binding("pagedown", "page(1)", "Page down", show=False,
                tooltip="A screenful down"),
        Binding("home", "jump(0)", "First", show=False, tooltip="First phone"),
        Binding("end", "jump(-1)", "Last", show=False, tooltip="Last phone"),
        Binding("enter", "select", "Open", show=False),
    ]

    class Selected(Message):
        """``enter`` or a double click on a tile."""

        def __init__(self, key: Hashable) -> None:
            super().__init__()
            self.key = key

    class Moved(Message):
        """Tiles, their content or the scroll position changed (once per refresh):
        a :class:`WallBox` moves its native pictures."""

    class Resized(Message):
        """The tile size changed: the screen asks the decoder for pictures of it."""

        def __init__(self, layout: WallLayout) -> None:
            super().__init__()
            self.grid = layout

    def __init__(self, *, id: str | None = None, native: bool = False) -> None:
        super().__init__(id=id)
        self.native = native  # tiles with an image leave their picture box blank
        self._moved = False
        self.keys: list[Hashable] = []
        self.tiles: dict[Hashable, Tile] = {}
        self.cursor = 0
        self.grid = wall_layout(80, 21)
        self._announced: WallLayout | None = None  # the layout the screen was told of
        self._top = 0  # first visible tile row
        self._strips: dict[tuple[Hashable, bool], list[Strip]] = {}
        self.tiles_built = 0  # tiles turned into lines so far (the benchmark reads it)

    # ------------------------------------------------------------ data
    def set_tiles(self, keys: Sequence[Hashable], tiles: Mapping[Any, Tile]) -> None:
        """Replace every tile (new order, filter or members); keeps the cursor's tile."""
        current = self.current_key
        self.keys = list(keys)
        self.tiles = {k: tiles[k] for k in self.keys}
        self._strips.clear()
        if current in self.tiles:
            self.cursor = self.keys.index(current)
        self.cursor = max(0, min(self.cursor, len(self.keys) - 1))
        self._resize_virtual()
        self.refresh()
        self._announce_move()

    def update_tile(self, key: Hashable, tile: Tile) -> None:
        """New content for one tile; only its screen region is repainted."""
        if key not in self.tiles:
            return
        self.tiles[key] = tile
        self._strips.pop((key, False), None)
        self._strips.pop((key, True), None)
        self._refresh_tile(self.keys.index(key))
        if self.native:
            self._announce_move()

    @property
    def current_key(self) -> Hashable | None:
        if 0 <= self.cursor < len(self.keys):
            return self.keys[self.cursor]
        return None

    def visible_keys(self) -> list[Hashable]:
        """The tiles on screen now (whole tiles only)."""
        lay = self.grid
        first = self._top * lay.columns
        return self.keys[first:first + lay.rows * lay.columns]

    # ------------------------------------------------------------ geometry
    def _tile_rows(self) -> int:
        return math.ceil(len(self.keys) / self.grid.columns) if self.keys else 0

    def _resize_virtual(self) -> None:
        lay = self.grid
        # room below the last row so that it can be the top one: scrolling by whole rows
        spare = max(0, self.size.height - lay.rows * lay.tile_h)
        self.virtual_size = Size(lay.columns * lay.tile_w,
                                 self._tile_rows() * lay.tile_h + spare)

    def on_resize(self, event: events.Resize) -> None:
        lay = wall_layout(self.size.width, self.size.height)
        changed = lay != self._announced
        self.grid = self._announced = lay
        self._strips.clear()
        self._resize_virtual()
        self._scroll_cursor()
        if changed:
            self.post_message(self.Resized(lay))
        self._announce_move()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self._announce_move()

    def _announce_move(self) -> None:
        """One :class:`Moved` per batch of changes (a tick updates many tiles)."""
        if self.native and not self._moved:
            self._moved = True
            self.call_after_refresh(self._post_moved)

    def _post_moved(self) -> None:
        self._moved = False
        self.post_message(self.Moved())

    def picture_boxes(self) -> dict[Hashable, Region]:
        """Where each wholly visible tile's image goes, in the wall's own coordinates
        (tiles without an image are left out): centred on the tile, sitting on its
        text, the aspect of the frame kept as the half-block picture keeps it."""
        lay = self.grid
        inner = lay.tile_w - GAP
        out: dict[Hashable, Region] = {}
        first = max(0, int(self.scroll_y) // lay.tile_h) * lay.columns
        for i in range(first, min(len(self.keys), first + (lay.rows + 1) * lay.columns)):
            img = self.tiles[self.keys[i]].image
            if img is None:
                continue
            cols, rows = fit_cells(img.width, img.height, lay.screen_cols, lay.screen_rows)
            row, col = divmod(i, lay.columns)
            y = row * lay.tile_h - int(self.scroll_y) + lay.screen_rows - rows
            if y < 0 or y + rows > self.size.height:
                continue
            out[self.keys[i]] = Region(col * lay.tile_w + (inner - cols) // 2, y, cols, rows)
        return out

    def _refresh_tile(self, index: int) -> None:
        lay = self.grid
        row, col = divmod(index, lay.columns)
        y = row * lay.tile_h - int(self.scroll_y)
        if y + lay.tile_h > 0 and y < self.size.height:
            self.refresh(Region(col * lay.tile_w, y, lay.tile_w, lay.tile_h))

    # ------------------------------------------------------------ drawing
    def _tile_strips(self, index: int) -> list[Strip]:
        key = self.keys[index]
        cur = index == self.cursor
        got = self._strips.get((key, cur))
        if got is not None:
            return got
        self.tiles_built += 1
        lay = self.grid
        tile = self.tiles[key]
        inner = lay.tile_w - GAP
        base = self.rich_style
        text_style = self.get_component_rich_style(
            "phone-wall--cursor" if cur else "phone-wall--text")
        lines: list[list[Segment]] = []
        pic = tile.picture
        if self.native and tile.image is not None:  # a WallBox draws it over this box
            lines += [[Segment(" " * inner, base)] for _ in range(lay.screen_rows)]
        elif pic is not None and pic.rows <= lay.screen_rows and pic.cols <= inner:
            left = (inner - pic.cols) // 2
            pad_l, pad_r = Segment(" " * left, base), Segment(" " * (inner - pic.cols - left),
                                                              base)
            top = lay.screen_rows - pic.rows  # pictures sit on their text
            lines += [[Segment(" " * inner, base)] for _ in range(top)]
            lines += [[pad_l, *line, pad_r] for line in pic.lines]
        else:  # no frame yet, or one from before a resize (the new size is on its way)
            dim = Style(dim=True)
            msg = (tile.placeholder if pic is None else "…")[:inner].center(inner)
            for i in range(lay.screen_rows):
                txt = msg if i == lay.screen_rows // 2 else "·".center(inner)
                lines.append([Segment(txt, base + dim)])
        console = self.app.console
        opts = console.options.update(width=inner, height=1, no_wrap=True,
                                      overflow="ellipsis")
        serial = Text(tile.serial, style="bold", no_wrap=True, overflow="ellipsis")
        task = Text(tile.task, style="italic", no_wrap=True, overflow="ellipsis")
        for text in (serial, tile.state, task):
            segs = console.render_lines(text, opts, pad=True)[0]
            lines.append(list(Segment.apply_style(segs, style=text_style)))
        gap = Segment(" " * GAP, base)
        strips = [Strip([*line, gap], lay.tile_w).simplify() for line in lines]
        self._strips[(key, cur)] = strips
        return strips

    def render_line(self, y: int) -> Strip:
        lay = self.grid
        width = self.size.width
        row, line = divmod(y + int(self.scroll_y), lay.tile_h)
        first = row * lay.columns
        if line >= lay.screen_rows + TEXT_LINES or first >= len(self.keys):
            return Strip.blank(width, self.rich_style)
        parts = [self._tile_strips(i)[line]
                 for i in range(first, min(first + lay.columns, len(self.keys)))]
        return Strip.join(parts).crop_extend(0, width, self.rich_style)

    # ------------------------------------------------------------ cursor
    def _scroll_cursor(self) -> None:
        lay = self.grid
        row = self.cursor // lay.columns
        if row < self._top:
            self._top = row
        elif row >= self._top + lay.rows:
            self._top = row - lay.rows + 1
        self._top = max(0, min(self._top, max(0, self._tile_rows() - 1)))
        self.scroll_to(y=self._top * lay.tile_h, animate=False, immediate=True)

    def _set_cursor(self, index: int) -> None:
        if not self.keys:
            return
        index = max(0, min(index, len(self.keys) - 1))
        old, self.cursor = self.cursor, index
        if old != index:
            self._refresh_tile(old)
            self._refresh_tile(index)
        self._scroll_cursor()

    def action_move(self, dx: int, dy: int) -> None:
        self._set_cursor(self.cursor + dx + dy * self.grid.columns)

    def action_page(self, direction: int) -> None:
        lay = self.grid
        self._set_cursor(self.cursor + direction * lay.rows * lay.columns)

    def action_jump(self, index: int) -> None:
        self._set_cursor(index if index >= 0 else len(self.keys) - 1)

    def action_select(self) -> None:
        key = self.current_key
        if key is not None:
            self.post_message(self.Selected(key))

    def move_to(self, key: Hashable) -> None:
        if key in self.tiles:
            self._set_cursor(self.keys.index(key))

    def on_click(self, event: events.Click) -> None:
        self.click_at(event.x, event.y, event.chain)

    def click_at(self, x: int, y: int, chain: int = 1) -> None:
        """A click at (x, y) of the wall: its tile gets the cursor, a double click opens."""
        lay = self.grid
        col = x // lay.tile_w
        index = ((y + int(self.scroll_y)) // lay.tile_h) * lay.columns + col
        if col < lay.columns and index < len(self.keys):
            self._set_cursor(index)
            if chain >= 2:
                self.action_select()


class WallBox(Container):
    """The wall, with terminal-graphics pictures laid over its visible tiles: one
    textual-image widget per tile on screen, moved and refilled as the wall reports
    changes (a widget per phone would be 64 images for 20 visible tiles). Without a
    terminal that draws images (or without textual-image) it is just the wall."""

    DEFAULT_CSS = """
    WallBox { layers: wall pictures; height: 1fr; }
    WallBox > PhoneWall { layer: wall; height: 1fr; }
    WallBox > .tile-picture { layer: pictures; position: absolute; }
    """

    def __init__(self, *, native: bool, id: str | None = None,
                 wall_id: str = "wall") -> None:
        super().__init__(id=id)
        self._image_cls = _native_image_class() if native else None
        self.wall = PhoneWall(id=wall_id, native=self._image_cls is not None)
        self.pictures: dict[Hashable, Widget] = {}  # tile key → its image widget now
        self._spare: list[Widget] = []  # hidden, for the next tile that scrolls in

    def compose(self) -> ComposeResult:
        yield self.wall

    def on_phone_wall_moved(self, event: PhoneWall.Moved) -> None:
        event.stop()
        self.sync()

    def sync(self) -> None:
        """Images for the tiles on screen, at their boxes; the others' widgets reused."""
        if self._image_cls is None:
            return
        boxes = self.wall.picture_boxes()
        spare = self._spare + [w for k, w in self.pictures.items() if k not in boxes]
        placed: dict[Hashable, Widget] = {}
        for key, box in boxes.items():
            widget = self.pictures.get(key) or (spare.pop() if spare else None)
            if widget is None:
                widget = self._image_cls(classes="tile-picture")
                self.mount(widget)
            image = self.wall.tiles[key].image
            if widget.image is not image:  # type: ignore[attr-defined]
                widget.image = image  # type: ignore[attr-defined]
            widget.styles.offset = (box.x, box.y)
            widget.styles.width, widget.styles.height = box.width, box.height
            widget.display = True
            placed[key] = widget
        for widget in spare:
            widget.display = False
        self.pictures, self._spare = placed, spare

    def on_click(self, event: events.Click) -> None:
        """A click on a picture is a click on its tile."""
        if event.widget is not self.wall:
            event.stop()
            self.wall.click_at(event.screen_x - self.wall.region.x,
                               event.screen_y - self.wall.region.y, event.chain)


def _native_image_class() -> type[Widget] | None:
    """textual-image's widget class for this terminal (Kitty graphics or Sixel), or None
    where the library cannot load (the half-block pictures stay)."""
    try:
        from textual_image.widget import Image as NativeImage
    except Exception:
        return None
    return NativeImage

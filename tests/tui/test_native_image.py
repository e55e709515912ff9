"""Real pictures where the terminal can draw them (textual-image: Kitty graphics,
Sixel), half-block cells elsewhere; never native inside tmux or screen."""

from __future__ import annotations

from collections.abc import Callable

from PIL import Image
from textual.geometry import Region
from textual.widgets import Static

from tests.tui.conftest import feed_fleet, fixed_clock, fleet_on_screen
from tui.app import DistrlTui
from tui.device import DeviceScreen
from tui.fleet import FleetScreen
from tui.source import FakeSource
from tui.terminal import detect_image
from tui.wall import GAP, WallBox

App = Callable[..., DistrlTui]


def test_detect_image_never_goes_native_through_a_multiplexer() -> None:
    assert detect_image({"TMUX": "/tmp/tmux-0/default,1,0", "TERM": "xterm-kitty"}) \
        == "halfblock"
    assert detect_image({"TERM": "screen-256color"}) == "halfblock"
    assert detect_image({"TERM_PROGRAM": "iTerm.app", "TERM": "xterm-256color"}) == "native"
    # no terminal to ask (pytest's stdin): half-block, never an exception
    assert detect_image({"TERM": "xterm-256color"}) == "halfblock"


async def test_native_mode_hands_the_device_screen_the_real_picture(
        make_app: App, source: FakeSource) -> None:
    app = make_app(image="native")
    async with app.run_test(size=(150, 45)) as pilot:
        feed_fleet(source, 1)
        await app.settle()
        await pilot.press("enter")
        await app.settle()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DeviceScreen)
        native = screen.query_one("#native")
        dev = app.model.devices[screen.key]
        assert isinstance(dev.picture, Image.Image)  # the frame itself, not cells
        assert dev.picture.size[1] > 2 * dev.thumb.rows  # type: ignore[union-attr]
        assert native.image is dev.picture  # type: ignore[attr-defined]
        assert not screen.query_one("#screen", Static).display  # no half-block copy


async def test_native_wall_lays_real_pictures_over_the_visible_tiles() -> None:
    """With terminal graphics every tile on screen gets its frame as a textual-image
    widget over its picture box (which the wall leaves blank); scrolling moves the
    widgets to the tiles that came into view (reused, never one per phone), and a click
    on a picture selects its tile."""
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock, image="native")
    async with app.run_test(size=(200, 50)) as pilot:
        feed_fleet(src, 64)
        for _ in range(3):
            await app.settle()
            await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        box = screen.query_one("#wallbox", WallBox)
        wall = box.wall
        assert wall.native
        g = wall.grid

        def check(first: int) -> None:
            shown = wall.keys[first:first + g.columns * g.rows]
            assert wall.visible_keys() == shown
            assert set(box.pictures) == set(shown)
            for key, widget in box.pictures.items():
                dev = app.model.devices[key]  # type: ignore[index]
                assert isinstance(dev.tile_picture, Image.Image)
                assert widget.image is dev.tile_picture  # type: ignore[attr-defined]
                # the real pixels, far more than the half-block tile's 1×2 per cell
                assert dev.tile_picture.width >= 5 * dev.tile.cols  # type: ignore[union-attr]
                i = wall.keys.index(key) - first
                row, col = divmod(i, g.columns)
                r = widget.region.translate((-wall.region.x, -wall.region.y))
                tile = Region(col * g.tile_w, row * g.tile_h, g.tile_w - GAP, g.screen_rows)
                assert tile.contains_region(r) and r.height >= g.screen_rows - 1, (r, tile)
                # the wall's own cells under it are blank (no half-block copy beneath)
                line = wall.render_line(r.y).crop(r.x, r.right)
                assert line.text.strip() == ""

        check(0)
        await pilot.press("pagedown")
        for _ in range(3):
            await app.settle()
            await pilot.pause()
        check(g.columns)  # the cursor's row came into view at the bottom
        n_widgets = len(box.query(".tile-picture"))
        assert n_widgets <= g.columns * g.rows + g.columns  # reused, not one per phone
        key = wall.keys[g.columns * g.rows + 1]
        target = box.pictures[key].region
        await pilot.click(offset=(target.x + 1, target.y + 1))
        await pilot.pause()
        assert wall.current_key == key


async def test_halfblock_wall_has_no_picture_widgets() -> None:
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await fleet_on_screen(app, src, pilot, 8)
        box = app.screen.query_one("#wallbox", WallBox)
        assert not box.wall.native and not box.query(".tile-picture")
        assert all(app.model.devices[k].tile_picture is None  # type: ignore[index]
                   for k in box.wall.keys)

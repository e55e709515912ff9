"""Legibility, measured: the wall and the device screen are rasterised from the app's
own screen buffer (tests/tui/raster.py) and the tiles of three real sim-phone screens
(launcher, Settings, a form; tests/tui/sim_screens.py) must differ clearly, so that
the thumbnails cannot silently shrink back to colour swatches. The list view's 4-row
thumbnails are measured the same way as a control: they must miss the bar (that is
what the bar is for). ``DISTRL_PICTURES=DIR`` keeps the PNGs for a look."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from textual.geometry import Region

from tests.tui.conftest import FARM, fixed_clock
from tests.tui.raster import crop, raster
from tests.tui.sim_screens import APPS, app_screens
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.device import DeviceScreen
from tui.fleet import FleetScreen
from tui.source import FakeSource
from tui.wall import GAP

#: a pixel "differs clearly" past this RGB distance (a grey step is ~14, blue vs white ~250)
CLEAR = 60.0
#: pixels that must differ clearly between any two apps' tiles: Settings and a form are
#: both white lists, so this is about their icons and lines, not the background
MIN_CLEAR_PIXELS = 48


def distances(pics: dict[str, np.ndarray]) -> dict[tuple[str, str], tuple[float, int]]:
    """(mean RGB distance, pixels past CLEAR) for every pair of same-sized pictures."""
    out = {}
    for a, b in itertools.combinations(sorted(pics), 2):
        d = np.sqrt(((pics[a].astype(float) - pics[b].astype(float)) ** 2).sum(-1))
        out[(a, b)] = (float(d.mean()), int((d > CLEAR).sum()))
    return out


def keep(name: str, picture: np.ndarray, tmp: Path) -> None:
    where = Path(os.environ.get("DISTRL_PICTURES", tmp))
    where.mkdir(parents=True, exist_ok=True)
    Image.fromarray(picture).save(where / f"{name}.png")


@pytest.fixture(scope="module")
def screens() -> dict[str, tuple[bytes, int, int]]:
    return app_screens()


async def test_wall_tiles_and_device_screens_tell_apps_apart(
        screens: dict[str, tuple[bytes, int, int]], tmp_path: Path) -> None:
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(200, 50)) as pilot:
        for i, name in enumerate(APPS):  # device order = app order (natural sort)
            jpeg, w, h = screens[name]
            src.push(*ff.status(FARM, f"phone-{i}", "busy", task=name, step=1))
            src.push(*ff.frame(FARM, f"phone-{i}", step=1, image=jpeg, size=(w, h),
                               elements=[]))
        # until every device's tile is rendered at the wall's tile size (the first frames
        # decode before the wall has laid out; a fixed two passes were not always enough
        # under load, and the tiles were then still blank)
        tile_size = None
        for _ in range(100):
            await app.settle()
            await pilot.pause()
            ready = all(d.tile is not None for d in app.model.devices.values())
            if ready and len(app.model.devices) == len(APPS) and app.decoder.idle \
                    and app.decoder.tile is not None and app.decoder.tile == tile_size:
                break
            tile_size = app.decoder.tile
        await app.settle()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        wall = screen.wall
        g = wall.grid
        shot = raster(app)
        keep("wall", shot, tmp_path)
        tiles = {}
        for i, name in enumerate(APPS):
            region = Region(wall.region.x + i * g.tile_w, wall.region.y, g.tile_w - GAP,
                            g.screen_rows)
            tiles[name] = crop(shot, region)
            keep(f"tile-{name}", tiles[name], tmp_path)
        assert tiles["launcher"].shape[:2] == (2 * g.screen_rows, g.tile_w - GAP)
        wall_d = distances(tiles)
        for pair, (mean, clear) in wall_d.items():
            assert clear >= MIN_CLEAR_PIXELS and mean >= 12, (pair, wall_d)

        # the device screen: bigger still
        big = {}
        for i, name in enumerate(APPS):
            wall.move_to((FARM, f"phone-{i}"))
            await pilot.press("enter")
            await app.settle()
            await pilot.pause()
            dev = app.screen
            assert isinstance(dev, DeviceScreen)
            pic = crop(raster(app), dev.query_one("#screen").content_region)
            keep(f"device-{name}", pic, tmp_path)
            big[name] = pic
            await pilot.press("escape")
        big_d = distances(big)
        for pair, (mean, clear) in big_d.items():
            assert clear >= 4 * MIN_CLEAR_PIXELS and mean >= 12, (pair, big_d)

        # the control: the list's 4-row thumbnails (the old fleet) miss the bar
        await pilot.press("w")
        await app.settle()
        await pilot.pause()
        table = screen.table
        shot = raster(app)
        thumbs = {name: crop(shot, Region(table.region.x, table.region.y + i * table.row_height,
                                          app.thumb_cols, table.row_height))
                  for i, name in enumerate(APPS)}
        small_d = distances(thumbs)
        assert min(c for _m, c in small_d.values()) < MIN_CLEAR_PIXELS, small_d
        print("wall", wall_d, "device", big_d, "list", small_d)

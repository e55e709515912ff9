"""The renderer's fast paths (colour fills by paste, text and sprites blended once over a
plain background and copied in) give exactly the pixels of blending every time: every
app's first screen, light and dark, a dialog's scrim, the keyboard, the shade, recents,
a scrolled list — each frame rendered both ways and compared byte for byte."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import farm.sim.world.render as render
from farm.sim.phone import SimPhone

APPS = ["com.android.settings", "com.android.chrome", "com.google.android.contacts",
        "com.google.android.deskclock", "com.google.android.dialer", "org.distrl.shop"]
STEPS = [
    *(f"monkey -p {pkg} -c android.intent.category.LAUNCHER 1" for pkg in APPS),
    "input keyevent KEYCODE_HOME",
    "input swipe 540 1800 540 400",  # the app drawer
    "input keyevent KEYCODE_HOME",
    "cmd statusbar expand-notifications",
    "cmd statusbar collapse",
    "input keyevent KEYCODE_APP_SWITCH",
    "input keyevent KEYCODE_HOME",
    "am start -n com.android.settings/.Settings",
    "input swipe 540 1800 540 600",  # a list scrolled part way: clipped rows
    "am start -a android.settings.WIFI_SETTINGS",
    "am start -n com.google.android.contacts/.MainActivity",
    "input tap 960 2200",  # add contact: a form, focused field, keyboard
    "input text Ada",
    "settings put system user_rotation 1",
    "settings put system user_rotation 0",
]


def _blend_always(img: Any, color: Any, pos: Any, mask: Any, key: Any) -> None:
    img.paste(color, pos, mask)


def _composite_always(img: Any, sprite: Any, pos: Any) -> None:
    img.alpha_composite(sprite, pos)


def _frames(phone: SimPhone, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes, bytes]:
    """The current screen rendered fast (tiles cold or warm), then by blending — at one
    instant: the clock and the battery level would change the pixels of a render that
    straddles a minute (the status bar's and the shade's clock did, once)."""
    world = phone.world
    wall, mono = world.wall_time(), world.clock()
    out = []
    for slow in (False, True, False):
        with monkeypatch.context() as m:
            m.setattr(world, "_wall", lambda: wall)
            m.setattr(world, "clock", lambda: mono)
            if slow:
                m.setattr(render, "_ink", _blend_always)
                m.setattr(render, "_over", _composite_always)
            world._frame = None  # render again, not the cached frame
            out.append(bytes(world.frame_rgba()))
    return out[0], out[1], out[2]


@pytest.mark.parametrize("dark", [False, True])
def test_fast_paths_draw_the_same_pixels(monkeypatch: pytest.MonkeyPatch, dark: bool) -> None:
    async def walk() -> list[str]:
        phone = SimPhone()
        await phone.run_shell(f"settings put secure ui_night_mode {2 if dark else 1}")
        differing = []
        for step in STEPS:
            await phone.run_shell(step)
            fast, slow, warm = _frames(phone, monkeypatch)
            if not (fast == slow == warm):
                differing.append(step)
        return differing

    assert asyncio.run(walk()) == []


def test_the_tile_cache_is_bounded() -> None:
    from PIL import Image

    tiles = render._Tiles(budget=10 * 10 * 4 * 3)
    for i in range(10):
        tiles.put(("k", i), Image.new("RGBA", (10, 10)))
    assert len(tiles.store) == 3 and tiles.used <= tiles.budget
    assert tiles.get(("k", 0)) is None and tiles.get(("k", 9)) is not None


def test_plain_detects_one_colour_only() -> None:
    from PIL import Image

    img = Image.new("RGBA", (50, 20), (1, 2, 3, 255))
    assert render._plain(img, (0, 0, 50, 20)) == (1, 2, 3, 255)
    img.putpixel((49, 19), (1, 2, 4, 255))
    assert render._plain(img, (0, 0, 50, 20)) is None
    assert render._plain(img, (0, 0, 49, 19)) == (1, 2, 3, 255)
    assert render._plain(img, (-1, 0, 10, 10)) is None  # off the image: blend

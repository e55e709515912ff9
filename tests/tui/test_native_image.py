"""Real pictures where the terminal can draw them (textual-image: Kitty graphics,
Sixel), half-block cells elsewhere; never native inside tmux or screen."""

from __future__ import annotations

from collections.abc import Callable

from PIL import Image
from textual.widgets import Static

from tests.tui.conftest import feed_fleet
from tui.app import DistrlTui
from tui.device import DeviceScreen
from tui.source import FakeSource
from tui.terminal import detect_image

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

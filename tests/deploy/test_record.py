"""Annotated frames, GIF and MP4 (no device needed)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from distrl_sdk.actions import Key, Scroll, Tap
from farm.deploy.record import COLORS, Recorder, _action_px, annotate, device_id_for


def screen(color: tuple[int, int, int] = (250, 250, 250)) -> Image.Image:
    return Image.new("RGBA", (1080, 2400), (*color, 255))


def near(a: tuple[int, ...], b: tuple[int, ...], tol: int = 40) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b, strict=False))


def test_tap_ring_in_the_verdict_colour_at_the_scaled_point() -> None:
    img = annotate(screen(), Tap(0.5, 0.5), outcome="refused", caption="1. tap")
    assert img.size == (324, 720) and img.mode == "RGB"
    r = max(8, 324 // 22)
    ring = [img.getpixel((162 + dx, 360)) for dx in range(r - 3, r + 3)]
    assert any(near(p, COLORS["refused"]) for p in ring), ring  # type: ignore[arg-type]
    assert near(img.getpixel((5, 5)), COLORS["refused"])  # type: ignore[arg-type]  # caption bar
    assert near(img.getpixel((162, 600)), (250, 250, 250))  # type: ignore[arg-type]


def test_scroll_draws_an_arrow_and_keys_only_a_caption() -> None:
    scrolled = annotate(screen(), Scroll("down"), outcome="allowed", caption="scroll")
    column = [scrolled.getpixel((162, y)) for y in range(200, 540)]
    assert sum(near(p, COLORS["allowed"]) for p in column) > 200  # type: ignore[arg-type]
    key = annotate(screen(), Key("back"), outcome="allowed", caption="back")
    body = [key.getpixel((x, y)) for x in range(0, 324, 20) for y in range(100, 720, 40)]
    assert all(near(p, (250, 250, 250)) for p in body)  # type: ignore[arg-type]


def test_recorder_writes_gif_and_mp4_with_every_frame(tmp_path: Path) -> None:
    import cv2

    rec = Recorder(tmp_path / "out", seconds_per_frame=0.5)
    for i, c in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        rec.add(screen(c), Tap(0.2, 0.2), outcome="allowed", caption=f"{i}")
    files = rec.save()
    gif = Image.open(files["gif"])
    assert gif.n_frames == 3 and gif.size == (324, 720)
    gif.seek(1)
    assert near(gif.convert("RGB").getpixel((300, 700)), (0, 255, 0))  # type: ignore[arg-type]
    from tests.farm.test_video import codec_and_frames

    # H.264, as browsers play it; 10 fps, 0.5 s a frame
    assert codec_and_frames(files["mp4"]) == ("h264", "yuv420p", 3 * 5)
    cap = cv2.VideoCapture(str(files["mp4"]))
    ok, first = cap.read()
    assert ok and first.shape == (720, 324, 3)
    assert near(tuple(int(v) for v in first[700, 300]), (0, 0, 255))  # BGR of red
    assert Recorder(tmp_path / "empty").save() == {}


def test_live_helpers() -> None:
    assert device_id_for("127.0.0.1:5555") == "127.0.0.1:5555"
    assert device_id_for("usb serial/1") == "usb_serial_1"
    d = _action_px(Tap(0.5, 0.25), (1080, 2400))
    assert d is not None and d["x_px"] == 540 and d["y_px"] == 600

"""H.264 MP4s (deploy recordings, the sim's screenrecord): what phones write and
browsers play, read back with an independent decoder (OpenCV's FFmpeg)."""

from __future__ import annotations

from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from farm.video import H264Writer


def codec_and_frames(path: Path) -> tuple[str, str, int]:
    with av.open(str(path)) as f:
        s = f.streams.video[0]
        return s.codec_context.name, s.codec_context.pix_fmt or "", sum(
            1 for _ in f.decode(s))


def test_rgb_and_rgba_frames_become_h264_that_opencv_decodes(tmp_path: Path) -> None:
    red = np.zeros((100, 60, 3), np.uint8)
    red[..., 0] = 255
    blue = np.zeros((200, 120, 4), np.uint8)  # another size: scaled to the video's
    blue[..., 2] = blue[..., 3] = 255
    path = tmp_path / "v.mp4"
    with H264Writer(path, (60, 100), fps=10) as video:
        video.add(red, repeat=12)  # more than the encoder's look-ahead holds
        video.add(blue, repeat=2)
    assert video.frames == 14
    assert codec_and_frames(path) == ("h264", "yuv420p", 14)
    cap = cv2.VideoCapture(str(path))
    got = []
    while (r := cap.read())[0]:
        got.append(r[1])
    assert len(got) == 14 and got[0].shape == (100, 60, 3)
    b, g, r = (int(v) for v in got[0][50, 30])
    assert r > 200 and b < 50 and g < 50  # red (BGR), codec loss only
    b, g, r = (int(v) for v in got[-1][50, 30])
    assert b > 200 and r < 50


def test_bad_sizes_and_shapes_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="even sizes"):
        H264Writer(tmp_path / "odd.mp4", (61, 100), fps=5)
    with H264Writer(tmp_path / "v.mp4", (60, 100), fps=5) as video, \
            pytest.raises(ValueError, match="RGB or RGBA"):
        video.add(np.zeros((100, 60), np.uint8))

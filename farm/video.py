"""H.264 in an MP4 container, as a phone's ``screenrecord`` writes and as browsers play
(OpenCV's wheels only write MPEG-4 part 2, ``mp4v``, which browsers refuse). PyAV's
wheels carry FFmpeg with libx264."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

__all__ = ["H264Writer"]


class H264Writer:
    """Frames (``uint8`` RGB or RGBA arrays, any size: scaled to ``size``) in, an
    ``.mp4`` out. ``preset``: x264's speed/size trade-off (``ultrafast`` for live
    recording on a busy host)."""

    def __init__(self, path: str | Path, size: tuple[int, int], fps: int, *,
                 bit_rate: int | None = None, preset: str = "veryfast") -> None:
        import av

        w, h = size
        if w < 2 or h < 2 or w % 2 or h % 2:
            raise ValueError(f"H.264 with yuv420p needs even sizes ≥ 2, not {w}×{h}")
        self.size, self.fps, self.frames = (w, h), fps, 0
        self._out: Any = av.open(str(path), "w")
        self._stream: Any = self._out.add_stream("libx264", rate=fps)
        self._stream.width, self._stream.height = w, h
        self._stream.pix_fmt = "yuv420p"  # what every player decodes
        # frames are stamped in 1/fps; the muxer picks its own stream time base (e.g.
        # 1/10240 for MP4) once it writes the header, so never stamp frames with that
        self._tb = Fraction(1, fps)
        self._stream.time_base = self._tb
        self._stream.options = {"preset": preset}
        if bit_rate is not None:
            self._stream.bit_rate = bit_rate
        self._closed = False

    def add(self, image: np.ndarray[Any, Any], repeat: int = 1) -> None:
        """One picture, shown for ``repeat`` frames."""
        import av

        fmt = {3: "rgb24", 4: "rgba"}.get(image.shape[2] if image.ndim == 3 else 0)
        if fmt is None:
            raise ValueError(f"frames are RGB or RGBA arrays, not shape {image.shape}")
        pixels = np.ascontiguousarray(image)
        if (pixels.shape[1], pixels.shape[0]) != self.size:  # scaled once, not per repeat
            pixels = av.VideoFrame.from_ndarray(pixels, format=fmt).reformat(
                width=self.size[0], height=self.size[1]).to_ndarray()
        for _ in range(repeat):
            # a frame object per picture shown: the encoder keeps frames it has been
            # given (look-ahead), so one object re-stamped would repeat its timestamps
            frame = av.VideoFrame.from_ndarray(pixels, format=fmt)
            frame.pts = self.frames
            frame.time_base = self._tb
            self._out.mux(self._stream.encode(frame))
            self.frames += 1

    def close(self) -> None:
        """Flush the encoder and finish the file (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._out.mux(self._stream.encode(None))
        finally:
            self._out.close()

    def __enter__(self) -> H264Writer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

"""Where a deploy goes besides the phone: annotated frames → GIF + MP4, and the live feed.

Each step's frame is the screen the action was chosen on, with the action drawn on it
(a ring for a tap, two for a long press, an arrow for a swipe or scroll, a caption for
everything) in the colour of the guard's verdict: green executed, red refused, amber
dry run, grey nothing to run. A last frame shows the screen after the episode.

:class:`LiveFeed` publishes :class:`~distrl_sdk.wire.DeviceStatus` (retained, last
will "offline") and :class:`~distrl_sdk.wire.DeviceFrame` thumbnails under farm id
``deploy`` so ``distrl tui`` shows the deploy like any farm device.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import re
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from distrl_sdk.actions import LongPress, Scroll, Swipe, Tap, TypeText, scroll_gesture, to_json
from distrl_sdk.errors import DistRLError
from distrl_sdk.wire import DeviceFrame, DeviceStatus, encode_envelope, encode_frame, topics

__all__ = ["COLORS", "LiveFeed", "Recorder", "annotate", "device_id_for"]

log = logging.getLogger(__name__)

COLORS: dict[str, tuple[int, int, int]] = {
    "allowed": (30, 170, 90),
    "refused": (220, 50, 40),
    "declined": (230, 120, 20),
    "dry-run": (230, 170, 0),
    "invalid": (120, 120, 120),
    "end": (40, 90, 200),
}


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except (OSError, ImportError):  # Pillow without FreeType: the small bitmap font
        return ImageFont.load_default()


def _arrow(draw: ImageDraw.ImageDraw, p1: tuple[float, float], p2: tuple[float, float],
           color: tuple[int, int, int], width: int) -> None:
    draw.line([p1, p2], fill=color, width=width)
    ang = math.atan2(p2[1] - p1[1], p2[0] - p1[0])
    head = width * 4
    for da in (2.6, -2.6):
        draw.line([p2, (p2[0] + head * math.cos(ang + da), p2[1] + head * math.sin(ang + da))],
                  fill=color, width=width)


def annotate(image: Image.Image, action: Any, *, outcome: str, caption: str,
             max_side: int = 720) -> Image.Image:
    """An RGB copy of ``image`` (a device screen) scaled to ``max_side`` with ``action``
    drawn on it in the colour of ``outcome`` and ``caption`` in a bar at the top."""
    img = image.convert("RGB")
    if max(img.size) > max_side:
        img.thumbnail((max_side, max_side), Image.Resampling.BILINEAR)
    w, h = img.size
    color = COLORS.get(outcome, COLORS["invalid"])
    draw = ImageDraw.Draw(img)
    line = max(2, w // 120)
    r = max(8, w // 22)

    def ring(x: float, y: float, radius: int) -> None:
        cx, cy = x * w, y * h
        halo = radius + 1  # a white halo keeps the ring visible on any background
        draw.ellipse((cx - halo, cy - halo, cx + halo, cy + halo), outline=(255, 255, 255),
                     width=line + 2)
        draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), outline=color,
                     width=line)
        draw.ellipse((cx - line, cy - line, cx + line, cy + line), fill=color)

    if isinstance(action, Tap | LongPress):
        ring(action.x, action.y, r)
        if isinstance(action, LongPress):
            ring(action.x, action.y, r + line * 3)
    elif isinstance(action, TypeText) and action.x is not None and action.y is not None:
        ring(action.x, action.y, r)
    elif isinstance(action, Swipe | Scroll):
        g = scroll_gesture(action.direction) if isinstance(action, Scroll) else action
        _arrow(draw, (g.x1 * w, g.y1 * h), (g.x2 * w, g.y2 * h), color, line)
    font = _font(max(11, w // 30))
    bar = max(18, w // 14)
    draw.rectangle((0, 0, w, bar), fill=color)
    draw.text((line * 2, bar // 2), caption, fill=(255, 255, 255), font=font, anchor="lm")
    if outcome in ("refused", "declined"):
        draw.rectangle((line // 2, line // 2, w - line, h - line), outline=color, width=line)
    return img


class Recorder:
    """Collects annotated frames; :meth:`save` writes ``episode.gif`` and ``episode.mp4``."""

    def __init__(self, out_dir: Path, *, max_side: int = 720, seconds_per_frame: float = 1.0
                 ) -> None:
        self.out_dir = out_dir
        self.max_side = max_side
        self.seconds_per_frame = seconds_per_frame
        self.frames: list[Image.Image] = []

    def add(self, image: Image.Image, action: Any, *, outcome: str, caption: str) -> Image.Image:
        frame = annotate(image, action, outcome=outcome, caption=caption,
                         max_side=self.max_side)
        self.frames.append(frame)
        return frame

    def save(self) -> dict[str, Path]:
        """Write what was recorded; returns ``{"gif": path, "mp4": path}`` for each written."""
        if not self.frames:
            return {}
        self.out_dir.mkdir(parents=True, exist_ok=True)
        out: dict[str, Path] = {}
        size = self.frames[0].size
        frames = [f if f.size == size else f.resize(size) for f in self.frames]
        gif = self.out_dir / "episode.gif"
        ms = round(self.seconds_per_frame * 1000)
        frames[0].save(gif, save_all=True, append_images=frames[1:], duration=ms, loop=0,
                       optimize=False)
        out["gif"] = gif
        out["mp4"] = self._mp4(frames)
        return out

    def _mp4(self, frames: list[Image.Image]) -> Path:
        """H.264 at 10 fps, each decision's picture held for ``seconds_per_frame``."""
        import numpy as np

        from farm.video import H264Writer

        w, h = frames[0].size
        w, h = w - w % 2, h - h % 2  # yuv420p wants even sizes
        path = self.out_dir / "episode.mp4"
        fps = 10
        repeat = max(1, round(self.seconds_per_frame * fps))
        with H264Writer(path, (w, h), fps) as video:
            for f in frames:
                video.add(np.asarray(f.convert("RGB").crop((0, 0, w, h))), repeat)
        return path


def device_id_for(serial: str) -> str:
    """A topic-safe device id for a serial (``127.0.0.1:5555`` is already one)."""
    clean = re.sub(r"[^A-Za-z0-9._:@=-]", "_", serial)[:128]
    return clean or "device"


def _action_px(action: Any, screen: tuple[int, int]) -> dict[str, Any] | None:
    """The action as the TUI draws it: its JSON, with pixel coordinates added."""
    try:
        import json

        d: dict[str, Any] = json.loads(to_json(action))
    except Exception:  # an invalid action is drawn as nothing
        return None
    w, h = screen
    for k, v in list(d.items()):
        if k in ("x", "x1", "x2") and isinstance(v, float):
            d[f"{k}_px"] = round(v * w)
        elif k in ("y", "y1", "y2") and isinstance(v, float):
            d[f"{k}_px"] = round(v * h)
    return d


class LiveFeed:
    """Publishes the deploy's device status and screen to an MQTT broker."""

    def __init__(self, url: str, serial: str, *, farm_id: str = "deploy",
                 thumb_side: int = 480) -> None:
        from distrl_sdk.wire.broker_url import parse_broker_url

        try:
            self.address = parse_broker_url(url)
        except ValueError as exc:
            raise DistRLError(f"--broker: {exc}") from None
        self.farm_id = farm_id
        self.device_id = device_id_for(serial)
        self.thumb_side = thumb_side
        self._client: Any = None
        self._actions: list[dict[str, Any]] = []

    async def start(self, timeout: float = 5.0) -> None:
        import aiomqtt

        offline = encode_envelope(DeviceStatus(device_id=self.device_id, state="offline"),
                                  farm_id=self.farm_id)
        will = aiomqtt.Will(topics.status(self.farm_id, self.device_id), offline, qos=1,
                            retain=True)
        client = aiomqtt.Client(**self.address.client_kwargs(), will=will, keepalive=15,
                                identifier=f"distrl-deploy-{self.device_id}"[:64], timeout=timeout)
        try:
            await client.__aenter__()
        except aiomqtt.MqttError as exc:
            from farm.broker_acl import connect_failure

            raise DistRLError(connect_failure(self.address, exc)) from None
        self._client = client

    async def status(self, status: DeviceStatus) -> None:
        if self._client is None:
            return
        import aiomqtt

        with contextlib.suppress(aiomqtt.MqttError):
            await self._client.publish(topics.status(self.farm_id, self.device_id),
                                       encode_envelope(status, farm_id=self.farm_id), qos=1,
                                       retain=True)

    async def frame(self, image: Image.Image, step: int | None, action: Any,
                    screen: tuple[int, int]) -> None:
        if self._client is None:
            return
        import aiomqtt

        d = _action_px(action, screen) if action is not None else None
        if d is not None:
            self._actions = [*self._actions, d][-16:]
        thumb = image.convert("RGB")
        thumb.thumbnail((self.thumb_side, self.thumb_side), Image.Resampling.BILINEAR)
        buf = io.BytesIO()
        thumb.save(buf, "JPEG", quality=75)
        body = DeviceFrame(device_id=self.device_id, width=thumb.width, height=thumb.height,
                           screen_width=screen[0], screen_height=screen[1], step=step,
                           actions=self._actions)
        with contextlib.suppress(aiomqtt.MqttError):
            await self._client.publish(topics.frame(self.farm_id, self.device_id),
                                       encode_frame(body, buf.getvalue(), farm_id=self.farm_id),
                                       qos=0)

    async def stop(self, final: DeviceStatus | None = None) -> None:
        if self._client is None:
            return
        if final is not None:
            await self.status(final)
        client, self._client = self._client, None
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)

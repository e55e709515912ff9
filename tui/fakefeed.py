"""Deterministic wire traffic for tests, snapshots and the benchmark: device statuses,
frames (a synthetic phone screen as JPEG), learner metrics and command results, each
encoded exactly as a farm would publish it (``(topic, payload)`` pairs)."""

from __future__ import annotations

import io
import math
from typing import Any

from PIL import Image, ImageDraw

from distrl_sdk.wire import (
    Command,
    CommandResult,
    DeviceFrame,
    DeviceStatus,
    Message,
    Metrics,
    PolicyPointer,
    encode_envelope,
    encode_frame,
    parse_message,
    topics,
)

__all__ = [
    "command_result_for",
    "frame",
    "metrics",
    "pointer",
    "screen_elements",
    "screen_jpeg",
    "status",
]

Wire = tuple[str, bytes]
_PALETTE = [(33, 150, 243), (76, 175, 80), (244, 67, 54), (255, 193, 7), (156, 39, 176),
            (0, 150, 136), (255, 87, 34), (96, 125, 139)]


def screen_jpeg(seed: int, step: int = 0, size: tuple[int, int] = (108, 240),
                quality: int = 70) -> bytes:
    """A phone-like picture: status bar, a coloured app bar, list rows and a moving
    highlight, all a function of ``seed`` and ``step`` (same bytes every run)."""
    w, h = size
    img = Image.new("RGB", size, (250, 250, 250))
    d = ImageDraw.Draw(img)
    col = _PALETTE[seed % len(_PALETTE)]
    d.rectangle([0, 0, w, h // 30 + 1], fill=(20, 20, 20))
    d.rectangle([0, h // 30 + 1, w, h // 8], fill=col)
    rows = 8
    for i in range(rows):
        y0 = h // 8 + 4 + i * (h - h // 8) // (rows + 1)
        shade = (230, 230, 230) if i != step % rows else (255, 235, 150)
        d.rectangle([4, y0, w - 4, y0 + (h // (rows + 3)) - 4], fill=shade)
        d.ellipse([8, y0 + 2, 8 + h // 30, y0 + 2 + h // 30], fill=col)
    x = int((w - 20) * (0.5 + 0.5 * math.sin(step / 3 + seed)))
    d.rectangle([x, h - h // 12, x + 20, h - 4], fill=col)
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality)
    return out.getvalue()


def screen_elements(seed: int, step: int = 0, screen: tuple[int, int] = (1080, 2400)
                    ) -> list[dict[str, Any]]:
    """The UI elements of :func:`screen_jpeg`'s picture (``DeviceFrame.elements``, device
    pixels): the app bar's title, four list rows (clickable; the highlighted one is the
    step's), a Wi-Fi switch that flips every step and the bottom button."""
    w, h = screen
    bar = h // 8
    row_h = (h - bar) // 9
    els: list[dict[str, Any]] = [
        {"text": f"App {seed}", "id": "fake:id/title", "desc": "", "cls": "TextView",
         "bounds": [w // 20, h // 30, w // 2, bar], "click": False, "checked": None}]
    for i in range(4):
        top = bar + 40 + i * row_h
        els.append({"text": f"Row {i}" + (" (current)" if i == step % 8 else ""),
                    "id": f"fake:id/row{i}", "desc": "", "cls": "LinearLayout",
                    "bounds": [40, top, w - 40, top + row_h - 40], "click": True,
                    "checked": None})
    els.append({"text": "", "id": "fake:id/wifi", "desc": "Wi-Fi", "cls": "Switch",
                "bounds": [w - 200, bar + 40 + 4 * row_h, w - 40, bar + 4 * row_h + 140],
                "click": True, "checked": step % 2 == 0})
    els.append({"text": "", "id": "fake:id/next", "desc": "", "cls": "ImageButton",
                "bounds": [0, h - h // 12, w // 5, h], "click": True, "checked": None})
    return els


def status(farm: str, device: str, state: str = "busy", *, at: float = 1_700_000_000.0,
           **kw: Any) -> Wire:
    body = DeviceStatus(device_id=device, state=state,  # type: ignore[arg-type]
                        updated_at=at, **kw)
    return topics.status(farm, device), encode_envelope(body, farm_id=farm,
                                                        msg_id=f"st-{device}-{state}")


def frame(farm: str, device: str, step: int = 0, *, seed: int = 0,
          actions: list[dict[str, Any]] | None = None, at: float = 1_700_000_000.0,
          size: tuple[int, int] = (108, 240), image: bytes | None = None,
          elements: list[dict[str, Any]] | None = None) -> Wire:
    """A thumbnail; ``elements`` default to :func:`screen_elements` (``[]``: none)."""
    body = DeviceFrame(device_id=device, width=size[0], height=size[1], screen_width=1080,
                       screen_height=2400, step=step, actions=actions or [], captured_at=at,
                       elements=screen_elements(seed, step) if elements is None else elements)
    data = image if image is not None else screen_jpeg(seed, step, size)
    return topics.frame(farm, device), encode_frame(body, data, farm_id=farm)


def metrics(step: int, scalars: dict[str, float], *, farm: str | None = None) -> Wire:
    body = Metrics(source="learner" if farm is None else f"farm:{farm}", step=step,
                   scalars=scalars)
    topic = topics.learner_metrics() if farm is None else topics.metrics(farm)
    return topic, encode_envelope(body, msg_id=f"m-{step}")


def pointer(version: int, where: str | None = None) -> Wire:
    body = PolicyPointer(version=version, sha256="0" * 64, size=1234,
                         where=where or f"mqtt:{topics.policy_blob(version)}",
                         published_at=0.0)
    return topics.policy_pointer(), encode_envelope(body, msg_id=f"p-{version}")


def command_result_for(topic: str, payload: bytes, ok: bool = True,
                       detail: str | None = None) -> list[Wire]:
    """What a farm answers to a command (``FakeSource.responder``)."""
    msg = parse_message(topic, payload)
    if not isinstance(msg, Message) or not isinstance(msg.body, Command) \
            or msg.topic.farm_id is None:
        return []
    body, farm = msg.body, msg.topic.farm_id
    res = CommandResult(command_id=body.id, device_id=body.device_id, ok=ok, detail=detail)
    return [(topics.cmd_result(farm), encode_envelope(res, farm_id=farm,
                                                      msg_id=f"r-{body.id}"))]

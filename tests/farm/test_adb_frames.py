"""Raw frames: read into one exact-size buffer, handed on as a view, never silently wrong.

The frames come from sim phones through a real (private) adb server and are compared
with what the phone rendered and with what the ``adb`` CLI reads. Malformed streams come
from the phone's own shell (``screencap | head -c N``) and, for the cases a shell cannot
produce (older Android's 12-byte header, a stream cut mid-frame, a stall), from a tiny
server speaking the adb server's smart-socket protocol over a real TCP socket.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from distrl_sdk import AdbTimeout, DeviceError, DeviceOffline
from farm.adb import AdbServerClient, FrameError, looks_blank
from farm.device import AdbDevice
from farm.device.observe import observe
from farm.sim.adbhost import PrivateAdbServer
from farm.sim.background import BackgroundFarm


def _rendered(bg: BackgroundFarm, serial: str) -> bytes:
    """What the phone's world renders now (read on the phones' own loop)."""
    assert bg.farm is not None
    phone = bg.farm.phone(serial)

    async def render() -> bytes:
        return bytes(phone.world.frame_rgba())

    return bg.call(render())


@pytest.mark.sim(count=1)
async def test_frames_are_the_rendered_pixels_in_an_exact_buffer(
        sim_background: BackgroundFarm, private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial = sim_background.farm.serials[0]
    private_adb.connect(serial)
    client = AdbServerClient(port=private_adb.port, timeout=30)
    dev = AdbDevice(serial, port=private_adb.port, timeout=30)
    for screen in ("am start -n com.android.settings/.Settings",
                   "settings put secure ui_night_mode 2"):  # a full re-render
        await dev.shell(screen)
        frame = await client.raw_frame(serial)
        want = _rendered(sim_background, serial)
        assert (frame.width, frame.height, frame.format, frame.header) == (1080, 2400, 1, 16)
        assert frame.pixels == want  # byte for byte
        # the view is read-only and its buffer is the frame plus the 4-byte dataspace
        # word: allocated once at its exact size (no doubling, no copy)
        assert frame.pixels.readonly and frame.pixels.contiguous
        assert isinstance(frame.pixels.obj, bytearray)
        assert len(frame.pixels.obj) == len(want) + 4
        assert sys.getsizeof(frame.pixels.obj) < len(want) + 4 + 4096
        w, h, rgba = await dev.screenshot_rgba()
        assert (w, h) == (1080, 2400) and isinstance(rgba, memoryview) and rgba == want
        assert not looks_blank(rgba)
        # the same bytes the adb CLI reads
        cli = private_adb.run("-s", serial, "exec-out", "screencap", text=False, timeout=60)
        assert cli.returncode == 0 and len(cli.stdout) == 16 + len(want)
        assert cli.stdout[16:] == rgba and cli.stdout[:8] == struct.pack("<II", 1080, 2400)
    obs = await observe(dev)
    assert obs.frame.rgba == _rendered(sim_background, serial)
    # a PIL image over the same bytes
    assert obs.frame.image().tobytes() == obs.frame.rgba


@pytest.mark.sim(count=1)
async def test_malformed_screencap_output_is_a_clear_error(
        sim_background: BackgroundFarm, private_adb: PrivateAdbServer) -> None:
    assert sim_background.farm is not None
    serial = sim_background.farm.serials[0]
    private_adb.connect(serial)
    client = AdbServerClient(port=private_adb.port, timeout=30)
    with pytest.raises(FrameError, match=r"ended after 5000 of 10368016 bytes of a "
                                         r"1080x2400 frame: the frame is incomplete"):
        await client.raw_frame(serial, "screencap | head -c 5000")
    with pytest.raises(FrameError, match="returned 7 bytes, not a raw frame"):
        await client.raw_frame(serial, "screencap | head -c 7")
    with pytest.raises(FrameError, match="returned 0 bytes"):
        await client.raw_frame(serial, "true")
    with pytest.raises(FrameError, match="did not return a raw frame: "
                                         "'/system/bin/sh: screencapx: not found'"):
        await client.raw_frame(serial, "screencapx")
    with pytest.raises(FrameError, match="more than one 1080x2400 frame"):
        await client.raw_frame(serial, "screencap; echo trailing")
    with pytest.raises(DeviceOffline):  # no such device: that is not a capture failure
        await AdbDevice("127.0.0.1:1", port=private_adb.port).screenshot_rgba()


# -- a scripted adb server on a real socket ------------------------------------------------
@dataclass
class _Script:
    chunks: list[bytes] = field(default_factory=list)
    stall: bool = False  # keep the stream open after the chunks
    requests: list[str] = field(default_factory=list)


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[_Script, int]]:
    script = _Script()
    stalled: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):  # host:transport:SERIAL, then exec:COMMAND
            length = int(await reader.readexactly(4), 16)
            script.requests.append((await reader.readexactly(length)).decode())
            writer.write(b"OKAY")
        for chunk in script.chunks:
            writer.write(chunk)
            await writer.drain()
        if script.stall:
            stalled.append(writer)
            return
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield script, port
    finally:
        for w in stalled:
            w.close()
        server.close()
        await server.wait_closed()


def _frame(w: int, h: int, header: int = 16, fmt: int = 1) -> tuple[bytes, bytes]:
    pixels = os.urandom(w * h * 4)
    head = struct.pack("<III", w, h, fmt) + (struct.pack("<I", 1) if header == 16 else b"")
    return head, pixels


async def test_headers_of_12_and_16_bytes_and_chunked_streams(
        scripted: tuple[_Script, int]) -> None:
    script, port = scripted
    client = AdbServerClient(port=port)
    for header in (16, 12):
        head, pixels = _frame(64, 48, header)
        data = head + pixels
        script.chunks = [data[i : i + 1000] for i in range(0, len(data), 1000)]
        frame = await client.raw_frame("emu-1")
        assert (frame.width, frame.height, frame.header) == (64, 48, header)
        assert frame.pixels == pixels and len(frame.pixels) == 64 * 48 * 4
    assert script.requests[-2:] == ["host:transport:emu-1", "exec:screencap"]


async def test_streams_cut_short_or_stalled(scripted: tuple[_Script, int]) -> None:
    script, port = scripted
    client = AdbServerClient(port=port, timeout=30)
    head, pixels = _frame(100, 100)
    script.chunks = [head, pixels[:12_345]]  # the device went away mid-frame
    with pytest.raises(FrameError, match=r"ended after 12361 of 40016 bytes of a 100x100"):
        await client.raw_frame("emu-1")
    # through the device: a failed capture (DeviceError, so the stale-frame policy may
    # stand in for it), not a gone device (DeviceOffline, which it never covers)
    dev = AdbDevice("emu-1", port=port, timeout=30)
    with pytest.raises(DeviceError, match="the frame is incomplete") as info:
        await dev.screenshot_rgba()
    assert not isinstance(info.value, DeviceOffline)
    script.chunks = [head, pixels[:-1]]  # one byte short
    with pytest.raises(FrameError, match=r"ended after 40015 of 40016 bytes"):
        await client.raw_frame("emu-1")
    script.chunks = [head[:10]]
    with pytest.raises(FrameError, match="returned 10 bytes, not a raw frame"):
        await client.raw_frame("emu-1")
    script.chunks = [struct.pack("<III", 100, 100, 4), pixels]  # RGB_565: 2 bytes a pixel
    with pytest.raises(FrameError, match="pixel format 4"):
        await client.raw_frame("emu-1")
    script.chunks, script.stall = [head, pixels[:999]], True  # the phone hangs mid-frame
    with pytest.raises(AdbTimeout, match="screencap"):
        await AdbDevice("emu-1", port=port, timeout=1.0).screenshot_rgba()


def test_looks_blank_samples_every_channel() -> None:
    n = 1080 * 2400
    assert looks_blank(bytes(n * 4)) and looks_blank(b"")
    assert not looks_blank(b"\0\0\0\xff" * n)  # opaque black: a real (dark) screen
    for channel in range(4):  # any one channel set everywhere is seen
        px = bytearray(4)
        px[channel] = 1
        assert not looks_blank(memoryview(bytes(px) * n))
    # content in one band of rows (the rest zero) is still seen
    band = bytearray(n * 4)
    band[1000 * 4320 : 1100 * 4320] = b"\x10\x20\x30\xff" * (100 * 1080)
    assert not looks_blank(band)

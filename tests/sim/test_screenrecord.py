"""``screenrecord`` on a sim phone: a real MP4 of what the screen shows, Android's option
errors and exit codes, and a recording the caller hangs up on is still written."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from farm.sim.phone import SimPhone
from farm.sim.shell.commands.screenrecord import FPS, Options, parse
from farm.sim.spec import PhoneSpec


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="rec", seed=3))


def _frames(data: bytes, tmp: Path) -> list[np.ndarray]:
    path = tmp / "v.mp4"
    path.write_bytes(data)
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame)
    cap.release()
    return frames


async def test_a_recording_is_an_mp4_of_the_screen(phone: SimPhone, tmp_path: Path) -> None:
    r = await phone.run_shell("screenrecord --size 540x1200 --bit-rate 4M --time-limit=1 "
                              "/sdcard/v.mp4")
    assert (r.exit_code, r.stdout_bytes, r.stderr_bytes) == (0, b"", b"")
    data = phone.vfs.read("/sdcard/v.mp4")
    assert data[4:8] == b"ftyp"
    frames = _frames(data, tmp_path)
    from tests.farm.test_video import codec_and_frames

    # H.264 (video/avc), as a phone writes it
    assert codec_and_frames(tmp_path / "v.mp4") == ("h264", "yuv420p", FPS)
    assert len(frames) == FPS  # one second, at the sampling rate
    assert frames[0].shape == (1200, 540, 3)
    # what it shows is the phone's screen: compare with a screencap, scaled the same way
    world = phone.world
    shot = np.frombuffer(world.frame_rgba(), np.uint8).reshape(world.height, world.width, 4)
    want = cv2.resize(cv2.cvtColor(shot, cv2.COLOR_RGBA2BGR), (540, 1200),
                      interpolation=cv2.INTER_AREA)
    err = np.abs(frames[-1].astype(int) - want.astype(int)).mean()
    assert err < 8, err  # codec loss only; another screen differs by far more


async def test_verbose_says_what_it_records(phone: SimPhone) -> None:
    r = await phone.run_shell("screenrecord --verbose --time-limit 1 /sdcard/v.mp4")
    text = r.stdout_bytes.decode()
    assert r.exit_code == 0
    assert f"Main display is {phone.world.width}x{phone.world.height} @60.00fps" in text
    assert f"recorded {FPS} frames in 1 seconds" in text


@pytest.mark.parametrize(("line", "code", "message"), [
    ("screenrecord", 2, "Must specify output file (see --help).\n"),
    ("screenrecord a.mp4 b.mp4", 2, "Must specify output file (see --help).\n"),
    ("screenrecord --size 12 /sdcard/v.mp4", 2, "Invalid size '12', must be width x height\n"),
    ("screenrecord --size 0x10 /sdcard/v.mp4", 2,
     "Invalid size 0x10, width and height may not be zero\n"),
    ("screenrecord --time-limit 0 /sdcard/v.mp4", 2,
     "Time limit 0s outside acceptable range [1,180]\n"),
    ("screenrecord --time-limit=181 /sdcard/v.mp4", 2,
     "Time limit 181s outside acceptable range [1,180]\n"),
    ("screenrecord --bit-rate 1k /sdcard/v.mp4", 2,
     "Bit rate 1000bps outside acceptable range [100000,200000000]\n"),
    ("screenrecord --bit-rate fast /sdcard/v.mp4", 2, "Invalid bit rate 'fast'\n"),
    ("screenrecord --frobnicate /sdcard/v.mp4", 2,
     "screenrecord: unrecognized option '--frobnicate'\n"),
    ("screenrecord --time-limit", 2, "screenrecord: option '--time-limit' requires an argument\n"),
    ("screenrecord --time-limit 1 /nope/v.mp4", 1,
     "Unable to open '/nope/v.mp4': No such file or directory\n"),
])
async def test_bad_command_lines_are_refused_as_on_a_phone(phone: SimPhone, line: str,
                                                           code: int, message: str) -> None:
    r = await phone.run_shell(line)
    assert (r.exit_code, r.stderr_bytes.decode()) == (code, message)
    assert not phone.vfs.exists("/sdcard/v.mp4")


async def test_help_is_the_usage(phone: SimPhone) -> None:
    r = await phone.run_shell("screenrecord --help")
    assert r.exit_code == 0 and r.stderr_bytes.startswith(b"Usage: screenrecord [options]")


async def test_a_caller_hanging_up_still_gets_its_file(phone: SimPhone, tmp_path: Path) -> None:
    """Ctrl-C on `adb shell screenrecord` closes the stream, which cancels the command:
    the real tool finishes the file on SIGINT, so does the sim."""
    task = asyncio.create_task(phone.run_shell("screenrecord /sdcard/c.mp4"))
    await asyncio.sleep(1.2)
    assert not task.done()  # it records on (up to 180 s) until told to stop
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    data = phone.vfs.read("/sdcard/c.mp4")
    assert data[4:8] == b"ftyp"
    assert FPS <= len(_frames(data, tmp_path)) <= 2 * FPS


TOKENS = st.sampled_from(["--size", "--bit-rate", "--time-limit", "--verbose", "--help",
                          "--bugreport", "-v", "x", "1", "0", "4M", "1x1", "--time-limit=3",
                          "--size=", "=", "-", "--", "-z"])


@given(st.lists(TOKENS | st.text(max_size=10), max_size=8))
def test_parse_never_raises(args: list[str]) -> None:
    assert isinstance(parse(args), Options | str)


async def test_hanging_up_mid_frame_waits_for_that_frame(
        phone: SimPhone, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancel that lands while a frame is being encoded on the worker thread: the file
    is finished only after that frame (the codec context is not thread-safe; flushing it
    from the loop thread meanwhile raced the worker and could hang a phone's teardown),
    and the host temp file is removed."""
    import os
    import tempfile
    import threading

    from farm.video import H264Writer

    encoding = threading.Event()
    overlaps: list[str] = []
    temp_files: list[str] = []
    real_add, real_close, real_mkstemp = H264Writer.add, H264Writer.close, tempfile.mkstemp

    def slow_add(self: H264Writer, *args: object, **kw: object) -> None:
        encoding.set()
        threading.Event().wait(0.4)  # a frame that takes long on a loaded host
        real_add(self, *args, **kw)  # type: ignore[arg-type]
        encoding.clear()

    def checked_close(self: H264Writer) -> None:
        if encoding.is_set():
            overlaps.append(threading.current_thread().name)
        real_close(self)

    def recorded_mkstemp(*args: object, **kw: object) -> tuple[int, str]:
        fd, path = real_mkstemp(*args, **kw)  # type: ignore[call-overload]
        temp_files.append(path)
        return fd, path

    monkeypatch.setattr(H264Writer, "add", slow_add)
    monkeypatch.setattr(H264Writer, "close", checked_close)
    monkeypatch.setattr(tempfile, "mkstemp", recorded_mkstemp)
    task = asyncio.create_task(phone.run_shell("screenrecord /sdcard/m.mp4"))
    await asyncio.to_thread(encoding.wait, 10)  # a frame is on the worker now
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert overlaps == []
    assert phone.vfs.read("/sdcard/m.mp4")[4:8] == b"ftyp"
    assert len(_frames(phone.vfs.read("/sdcard/m.mp4"), tmp_path)) >= 1
    assert temp_files and not any(map(os.path.exists, temp_files))

"""Rotation on a sim phone: the frame, the UI dump, dumpsys and taps agree on one
orientation, set through the settings a phone uses (or `wm user-rotation`)."""

from __future__ import annotations

import re
import struct

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec

BOUNDS = re.compile(r'bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"')


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="rot", seed=1))


async def sh(phone: SimPhone, line: str) -> bytes:
    r = await phone.run_shell(line)
    assert r.exit_code == 0, r.stderr_bytes
    return r.stdout_bytes


async def frame_size(phone: SimPhone) -> tuple[int, int]:
    w, h, _fmt, _space = struct.unpack("<4I", (await sh(phone, "screencap"))[:16])
    return w, h


@pytest.mark.parametrize("turn", ["settings put system user_rotation 1",
                                  "wm user-rotation lock 3"])
async def test_a_quarter_turn_is_landscape_everywhere(phone: SimPhone, turn: str) -> None:
    await sh(phone, "am start -n com.android.settings/.Settings")
    assert await frame_size(phone) == (1080, 2400)
    await sh(phone, turn)
    rotation = int(turn[-1])
    assert await frame_size(phone) == (2400, 1080)
    xml = phone.world.ui_xml()
    assert f'<hierarchy rotation="{rotation}">' in xml
    boxes = [tuple(map(int, b)) for b in BOUNDS.findall(xml)]
    assert max(b[2] for b in boxes) == 2400 and max(b[3] for b in boxes) == 1080
    window = (await sh(phone, "dumpsys window")).decode()
    assert f"mCurrentRotation=ROTATION_{rotation * 90}" in window
    assert (await sh(phone, "wm size")) == b"Physical size: 1080x2400\n"  # the panel's
    # a tap at an element's landscape bounds reaches it
    m = re.search(r'text="Network &amp; internet"[^>]*' + BOUNDS.pattern, xml)
    assert m is not None
    x1, y1, x2, y2 = map(int, m.groups())
    await sh(phone, f"input tap {(x1 + x2) // 2} {(y1 + y2) // 2}")
    assert "Airplane mode" in phone.world.ui_xml()


async def test_auto_rotate_holds_the_phone_upright_and_lock_reads_back(phone: SimPhone) -> None:
    await sh(phone, "settings put system user_rotation 1")
    assert await sh(phone, "wm user-rotation") == b"lock 1\n"
    await sh(phone, "wm user-rotation free")
    assert await sh(phone, "wm user-rotation") == b"free\n"
    assert await frame_size(phone) == (1080, 2400)
    await sh(phone, "settings put system accelerometer_rotation 0")
    assert await frame_size(phone) == (2400, 1080)  # back to the locked quarter turn
    await sh(phone, "settings put system user_rotation 2")  # upside down: portrait size
    assert await frame_size(phone) == (1080, 2400)
    r = await phone.run_shell("wm user-rotation lock 7")
    assert (r.exit_code, r.stderr_bytes) == (255, b"Error: Unknown rotation: 7\n")

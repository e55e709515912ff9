"""The Phone app on a sim phone: CALL and DIAL intents, the line's state while a call
lasts, and the call log entry it leaves."""

from __future__ import annotations

import re

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec

BOUNDS = r'bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"'


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="dial", seed=4))


async def sh(phone: SimPhone, line: str) -> str:
    r = await phone.run_shell(line)
    assert r.exit_code == 0, r.stderr_bytes
    return r.stdout_bytes.decode()


async def focus(phone: SimPhone) -> str:
    return (await sh(phone, "dumpsys window | grep mCurrentFocus")).splitlines()[0]


async def tap(phone: SimPhone, rid: str) -> None:
    m = re.search(rf'resource-id="com.google.android.dialer:id/{rid}"[^>]*{BOUNDS}',
                  phone.world.ui_xml())
    assert m is not None, rid
    x1, y1, x2, y2 = map(int, m.groups())
    await sh(phone, f"input tap {(x1 + x2) // 2} {(y1 + y2) // 2}")


async def test_a_call_is_off_hook_until_it_ends_and_is_logged(phone: SimPhone) -> None:
    assert "mCallState=0" in await sh(phone, "dumpsys telephony.registry")
    out = await sh(phone, "am start -a android.intent.action.CALL -d tel:+14155550103")
    assert out == "Starting: Intent { act=android.intent.action.CALL dat=tel:xxxxxxxxxxxx }\n"
    assert "com.android.incallui.InCallActivity" in await focus(phone)
    xml = phone.world.ui_xml()
    assert 'text="Carol Martinez"' in xml and 'text="Dialing"' in xml  # a contact's number
    assert "mCallState=2" in await sh(phone, "dumpsys telephony.registry")
    await tap(phone, "incall_end_call_button")
    assert "mCallState=0" in await sh(phone, "dumpsys telephony.registry")
    assert "InCallActivity" not in await focus(phone)
    calls = await sh(phone, "content query --uri content://call_log/calls "
                            "--projection number:type:name --where type=2")
    assert "number=+14155550103, type=2, name=Carol Martinez" in calls


async def test_dial_opens_the_dialpad_and_its_call_button_calls(phone: SimPhone) -> None:
    await sh(phone, "am start -a android.intent.action.DIAL -d tel:555")
    assert "GoogleDialtactsActivity" in await focus(phone)
    await tap(phone, "dialpad_key_7")
    assert 'text="5557"' in phone.world.ui_xml()
    await tap(phone, "dialpad_voice_call_button")
    assert "mCallState=2" in await sh(phone, "dumpsys telephony.registry")
    await sh(phone, "input keyevent 6")  # KEYCODE_ENDCALL
    assert "mCallState=0" in await sh(phone, "dumpsys telephony.registry")
    assert "number=5557" in await sh(phone, "content query --uri content://call_log/calls")


async def test_view_of_a_tel_uri_opens_the_dialpad_with_the_number(phone: SimPhone) -> None:
    await sh(phone, "am start -a android.intent.action.VIEW -d tel:0123456")
    assert "GoogleDialtactsActivity" in await focus(phone)
    assert 'text="0123456"' in phone.world.ui_xml()
    assert "mCallState=0" in await sh(phone, "dumpsys telephony.registry")  # not called


async def test_the_phone_app_is_on_the_launcher(phone: SimPhone) -> None:
    await sh(phone, "input keyevent 3")
    assert 'content-desc="Phone"' in phone.world.ui_xml() or 'text="Phone"' in \
        phone.world.ui_xml()

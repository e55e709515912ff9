"""``content://settings/…`` on a sim phone, as android_world reads and writes settings:
query, insert, update and delete through the provider change what ``settings get``
reads and what the phone does (Wi-Fi off turns Wi-Fi off)."""

from __future__ import annotations

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.test_ime import sh


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="settings", seed=2))


async def test_query_insert_update_delete(phone: SimPhone) -> None:
    code, out, _ = await sh(phone, "content query --uri content://settings/global "
                                   "--projection name:value --where \"name='wifi_on'\"")
    assert (code, out) == (0, "Row: 0 name=wifi_on, value=1\n")
    # one row by its URI
    code, out, _ = await sh(phone, "content query --uri content://settings/global/wifi_on")
    assert code == 0 and out.startswith("Row: 0 _id=") and out.endswith(
        "name=wifi_on, value=1\n")
    # insert prints nothing and is what `settings get` reads
    assert await sh(phone, "content insert --uri content://settings/secure "
                           "--bind name:s:new_setting --bind value:s:a:b") == (0, "", "")
    assert (await sh(phone, "settings get secure new_setting"))[1] == "a:b\n"
    # update the matching rows; the phone reacts as to `settings put`
    assert await sh(phone, "content update --uri content://settings/global "
                           "--bind value:i:0 --where \"name='wifi_on'\"") == (0, "", "")
    assert (await sh(phone, "settings get global wifi_on"))[1] == "0\n"
    assert (await sh(phone, "cmd wifi status"))[1] == "Wifi is disabled\n"
    assert await sh(phone, "content delete --uri content://settings/secure "
                           "--where \"name='new_setting'\"") == (0, "", "")
    assert (await sh(phone, "settings get secure new_setting"))[1] == "null\n"


async def test_refusals_read_like_the_real_tool(phone: SimPhone) -> None:
    code, _, err = await sh(phone, "content insert --uri content://settings/secure "
                                   "--bind name:x:1")
    assert code == 1 and "Invalid binding type: x" in err
    code, _, err = await sh(phone, "content insert --uri content://settings/secure")
    assert code == 1 and "Bindings not specified" in err
    code, _, err = await sh(phone, "content insert --uri content://settings/nope "
                                   "--bind name:s:a")
    assert code == 1 and "Error while accessing provider:settings" in err
    code, _, err = await sh(phone, "content update --uri content://settings/global "
                                   "--bind name:s:renamed --where \"name='wifi_on'\"")
    assert code == 1 and "cannot update column name" in err
    code, _, err = await sh(phone, "content insert --uri content://call_log/calls "
                                   "--bind number:s:5")
    assert code == 1 and "insert is not supported" in err

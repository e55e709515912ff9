"""A long press on a launcher icon opens its popup (Launcher3's deep shortcuts): the
app's shortcuts, then App info; a shortcut starts its screen, a tap outside or BACK
closes the popup, and a plain tap still launches the app."""

from __future__ import annotations

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.test_ime import sh
from tests.sim.test_shade import center

POPUP = "com.google.android.apps.nexuslauncher:id/deep_shortcuts_container"


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="popup", seed=1))


async def long_press(phone: SimPhone, desc: str) -> None:
    x, y = center(phone.world.ui_xml(), "content-desc", desc)
    await sh(phone, f"input swipe {x} {y} {x} {y} 1000")


async def test_long_press_shows_shortcuts_and_one_opens_its_page(phone: SimPhone) -> None:
    await long_press(phone, "Settings")
    xml = phone.world.ui_xml()
    assert POPUP in xml and 'text="Battery"' in xml and 'text="App info"' in xml
    x, y = center(xml, "text", "Battery")
    await sh(phone, f"input tap {x} {y}")
    assert phone.world.current_focus() == ("com.android.settings",
                                           "com.android.settings.SubSettings")
    assert 'text="Battery"' in phone.world.ui_xml() and POPUP not in phone.world.ui_xml()


async def test_app_info_and_closing_the_popup(phone: SimPhone) -> None:
    await long_press(phone, "Chrome")
    xml = phone.world.ui_xml()
    assert POPUP in xml and 'text="Battery"' not in xml  # Chrome has no such shortcut
    await sh(phone, "input keyevent BACK")
    assert POPUP not in phone.world.ui_xml()
    await long_press(phone, "Chrome")
    await sh(phone, "input tap 540 2000")  # outside the popup
    assert POPUP not in phone.world.ui_xml()
    assert phone.world.current_focus()[0] != "com.android.chrome"  # type: ignore[index]
    await long_press(phone, "Chrome")
    x, y = center(phone.world.ui_xml(), "text", "App info")
    await sh(phone, f"input tap {x} {y}")
    xml = phone.world.ui_xml()
    assert phone.world.current_focus()[0] == "com.android.settings"  # type: ignore[index]
    assert 'text="App info"' in xml and 'text="Chrome"' in xml
    await sh(phone, "input keyevent HOME")
    x, y = center(phone.world.ui_xml(), "content-desc", "Chrome")
    await sh(phone, f"input tap {x} {y}")  # a plain tap still launches
    assert phone.world.current_focus()[0] == "com.android.chrome"  # type: ignore[index]

"""Overview (recents): KEYCODE_APP_SWITCH or the nav bar's Overview button shows the
tasks as cards, most recent first; a tap brings one back, a swipe up dismisses it (it
leaves `dumpsys activity recents` too), sideways moves between cards, APP_SWITCH again
switches to the previous app, "Clear all" empties it and goes home."""

from __future__ import annotations

import re

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.test_ime import sh
from tests.sim.test_shade import center

PANEL = "com.google.android.apps.nexuslauncher:id/overview_panel"


@pytest.fixture
async def phone() -> SimPhone:
    p = SimPhone(PhoneSpec(name="overview", seed=3))
    for comp in ("com.android.settings/.Settings", "com.android.chrome/com.google.android.apps."
                 "chrome.Main", "org.distrl.shop/.MainActivity"):
        await sh(p, f"monkey -p {comp.split('/')[0]} 1")
    return p


def front(phone: SimPhone) -> str:
    focus = phone.world.current_focus()
    assert focus is not None
    return focus[0]


async def recents(phone: SimPhone) -> list[str]:
    out = (await sh(phone, "dumpsys activity recents"))[1]
    return re.findall(r"Recent #\d+: Task\{\w+ #\d+ type=standard A=\d+:(\S+) ", out)


async def test_app_switch_shows_cards_and_a_tap_brings_one_back(phone: SimPhone) -> None:
    assert front(phone) == "org.distrl.shop"
    await sh(phone, "input keyevent KEYCODE_APP_SWITCH")
    xml = phone.world.ui_xml()
    assert PANEL in xml and front(phone) == "com.google.android.apps.nexuslauncher"
    # the previous app's card is in the middle, the current one peeks at its side
    x, y = center(xml, "content-desc", "Chrome")
    assert abs(x - phone.world.width // 2) < 10
    assert 'content-desc="Shop"' in xml
    await sh(phone, f"input tap {x} {y}")
    assert PANEL not in phone.world.ui_xml() and front(phone) == "com.android.chrome"


async def test_app_switch_twice_is_the_quick_switch(phone: SimPhone) -> None:
    await sh(phone, "input keyevent 187")
    await sh(phone, "input keyevent 187")
    assert PANEL not in phone.world.ui_xml() and front(phone) == "com.android.chrome"
    await sh(phone, "input keyevent 187")
    await sh(phone, "input keyevent 187")
    assert front(phone) == "org.distrl.shop"


async def test_swipe_up_dismisses_a_task_and_clear_all_goes_home(phone: SimPhone) -> None:
    assert await recents(phone) == ["org.distrl.shop", "com.android.chrome",
                                    "com.android.settings"]
    await sh(phone, "input keyevent KEYCODE_APP_SWITCH")
    x, y = center(phone.world.ui_xml(), "content-desc", "Chrome")
    await sh(phone, f"input swipe {x} {y} {x} {y - 900} 200")  # fling the card away
    assert "com.android.chrome" not in await recents(phone)
    xml = phone.world.ui_xml()
    assert PANEL in xml and 'content-desc="Chrome"' not in xml
    await sh(phone, f"input swipe 900 {y} 100 {y} 200")  # sideways: the next card
    x, y = center(phone.world.ui_xml(), "content-desc", "Settings")
    assert abs(x - phone.world.width // 2) < 10
    x, y = center(phone.world.ui_xml(), "text", "Clear all")
    await sh(phone, f"input tap {x} {y}")
    assert await recents(phone) == [] and front(phone) == "com.google.android.apps.nexuslauncher"
    await sh(phone, "input keyevent KEYCODE_APP_SWITCH")
    assert 'text="No recent items"' in phone.world.ui_xml()
    await sh(phone, "input keyevent BACK")
    assert PANEL not in phone.world.ui_xml()


async def test_the_nav_bar_button_and_home_key(phone: SimPhone) -> None:
    x, y = center(phone.world.ui_xml(), "content-desc", "Overview")
    await sh(phone, f"input tap {x} {y}")
    assert PANEL in phone.world.ui_xml()
    await sh(phone, "input keyevent HOME")
    assert PANEL not in phone.world.ui_xml()
    assert front(phone) == "com.google.android.apps.nexuslauncher"

"""The notification shade: pulled down from the status bar (or `cmd statusbar`), Quick
Settings tiles that flip the same settings the Settings app does, notifications that
apps and `cmd notification post` put there, `dumpsys notification` and the window
focus agreeing with the screen."""

from __future__ import annotations

import html
import re

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from farm.sim.world.apps.shop import PKG as SHOP
from farm.sim.world.apps.shop import PRODUCTS
from tests.sim.test_ime import sh


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="shade", seed=7))


def center(xml: str, attr: str, value: str) -> tuple[int, int]:
    m = re.search(rf'{attr}="{re.escape(html.escape(value))}"[^>]*'
                  r'bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"', xml)
    assert m, f"no {attr}={value!r} on screen"
    x1, y1, x2, y2 = map(int, m.groups())
    return (x1 + x2) // 2, (y1 + y2) // 2


async def focus(phone: SimPhone) -> str:
    out = (await sh(phone, "dumpsys window windows"))[1]
    return re.search(r"mCurrentFocus=(.*)", out).group(1)  # type: ignore[union-attr]


async def test_a_swipe_from_the_status_bar_pulls_the_shade_and_back_closes_it(
        phone: SimPhone) -> None:
    assert (await sh(phone, "cmd notification post -t 'Build done' build42 "
                            "'All 12 tests passed'"))[0] == 0
    assert "notification_panel" not in phone.world.ui_xml()
    await sh(phone, "input swipe 540 20 540 1400 250")  # from the status bar, down
    xml = phone.world.ui_xml()
    assert 'resource-id="com.android.systemui:id/notification_panel"' in xml
    assert 'text="Build done"' in xml and 'text="All 12 tests passed"' in xml
    assert 'content-desc="Internet"' in xml and "NotificationShade" in await focus(phone)
    await sh(phone, "input keyevent BACK")
    assert "notification_panel" not in phone.world.ui_xml()
    assert "NotificationShade" not in await focus(phone)
    await sh(phone, "input swipe 540 1400 540 1500 250")  # not from the status bar
    assert "notification_panel" not in phone.world.ui_xml()
    await sh(phone, "cmd statusbar expand-settings")
    assert "notification_panel" in phone.world.ui_xml()
    await sh(phone, "input swipe 540 1500 540 300 250")  # pushed up
    assert "notification_panel" not in phone.world.ui_xml()
    await sh(phone, "cmd statusbar expand-notifications")
    await sh(phone, "cmd statusbar collapse")
    assert "notification_panel" not in phone.world.ui_xml()


async def test_quick_settings_tiles_flip_the_settings_the_app_reads(phone: SimPhone) -> None:
    await sh(phone, "cmd statusbar expand-settings")
    before = (await sh(phone, "settings get global bluetooth_on"))[1].strip()
    x, y = center(phone.world.ui_xml(), "content-desc", "Bluetooth")
    await sh(phone, f"input tap {x} {y}")
    after = (await sh(phone, "settings get global bluetooth_on"))[1].strip()
    assert {before, after} == {"0", "1"}
    xml = phone.world.ui_xml()
    tile = re.search(r'<node [^>]*checked="(true|false)"[^>]*content-desc="Bluetooth"', xml) \
        or re.search(r'<node [^>]*content-desc="Bluetooth"[^>]*checked="(true|false)"', xml)
    assert tile is not None and tile.group(1) == ("true" if after == "1" else "false")
    x, y = center(xml, "content-desc", "Dark theme")
    await sh(phone, f"input tap {x} {y}")
    assert (await sh(phone, "settings get secure ui_night_mode"))[1].strip() == "2"


async def test_tapping_a_notification_opens_its_app_and_clear_all_empties(
        phone: SimPhone) -> None:
    shop = phone.world.app(SHOP)
    assert shop is not None
    shop.add(PRODUCTS[0].id)  # type: ignore[attr-defined]
    order = shop.checkout()  # type: ignore[attr-defined]
    await sh(phone, "cmd notification post other 'Something else'")
    redacted = (await sh(phone, "dumpsys notification"))[1]
    assert f"pkg={SHOP}" in redacted and "tag=other" in redacted
    assert "android.title=String [length=12]" in redacted  # "Order placed", redacted
    plain = (await sh(phone, "dumpsys notification --noredact"))[1]
    assert "android.title=String (Order placed)" in plain and order in plain
    await sh(phone, "cmd statusbar expand-notifications")
    x, y = center(phone.world.ui_xml(), "text", "Order placed")
    await sh(phone, f"input tap {x} {y}")
    assert phone.world.current_focus()[0] == SHOP  # type: ignore[index]
    assert "notification_panel" not in phone.world.ui_xml()
    assert "Order placed" not in (await sh(phone, "dumpsys notification --noredact"))[1]
    await sh(phone, "cmd statusbar expand-notifications")
    x, y = center(phone.world.ui_xml(), "text", "Clear all")
    await sh(phone, f"input tap {x} {y}")
    assert "mNotificationList=0" in (await sh(phone, "dumpsys notification"))[1]
    await sh(phone, "cmd statusbar expand-notifications")
    assert 'text="No notifications"' in phone.world.ui_xml()


async def test_post_without_text_is_a_usage_error(phone: SimPhone) -> None:
    code, _out, err = await sh(phone, "cmd notification post onlytag")
    assert code == 255 and "usage: cmd notification post" in err

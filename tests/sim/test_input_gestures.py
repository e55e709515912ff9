"""``input keycombination`` and ``input motionevent`` as agents send them: Ctrl+A then
DEL clears a field (Mobile-Agent, android_world's clear_text), and a DOWN … UP sequence
is the tap, long press or swipe its distance and duration make it."""

from __future__ import annotations

import asyncio

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from tests.sim.test_ime import focus_omnibox, omnibox_text, sh
from tests.sim.test_shade import center


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="gestures", seed=5))


async def test_ctrl_a_then_del_clears_the_field(phone: SimPhone) -> None:
    await focus_omnibox(phone)
    await sh(phone, "input text wikipedia")
    assert omnibox_text(phone) == "wikipedia"
    assert (await sh(phone, "input keycombination 113 29"))[0] == 0  # Ctrl+A
    assert omnibox_text(phone) == "wikipedia"  # selecting changes nothing yet
    await sh(phone, "input keyevent DEL")
    assert omnibox_text(phone) == "Search or type web address"  # empty: its hint shows
    await sh(phone, "input text news")  # a selection is replaced by what is typed
    await sh(phone, "input keycombination KEYCODE_CTRL_LEFT KEYCODE_A")
    await sh(phone, "input text weather")
    assert omnibox_text(phone) == "weather"
    await sh(phone, "input keyevent DEL")  # no selection left: one character
    assert omnibox_text(phone) == "weathe"
    assert (await sh(phone, "input keycombination 113"))[0] == 1  # one key is no combination


async def test_motion_events_make_a_tap_and_a_swipe(phone: SimPhone) -> None:
    await sh(phone, "am start -n com.android.settings/.Settings")
    x, y = center(phone.world.ui_xml(), "text", "Network & internet")
    for action in ("DOWN", "UP"):
        assert (await sh(phone, f"input motionevent {action} {x} {y}"))[0] == 0
    assert 'text="Internet"' in phone.world.ui_xml()  # the row was tapped
    await sh(phone, "input keyevent BACK")
    before = phone.world.ui_xml()
    await sh(phone, "input motionevent DOWN 540 2000")
    await sh(phone, "input motionevent MOVE 540 1200")
    await asyncio.sleep(0.05)
    await sh(phone, "input motionevent UP 540 400")
    assert phone.world.ui_xml() != before  # the list scrolled
    assert 'text="Internet"' not in phone.world.ui_xml()  # and nothing was tapped
    await sh(phone, "input motionevent UP 540 400")  # an UP without DOWN: nothing
    code, _, err = await sh(phone, "input motionevent WIGGLE 1 2")
    assert code == 1 and "Invalid arguments for command: motionevent" in err

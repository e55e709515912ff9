"""Clock: alarms created with the dial and with typing, checked via ``content query``."""

from __future__ import annotations

from tests.sim.apps_driver import Droid

PKG = "com.google.android.deskclock"
R = f"{PKG}:id/"
URI = "content://com.android.deskclock/alarms"
TEXT_MODE = "Switch to text input mode for the time input."


def row(i: int, aid: int, hour: int, minutes: int, enabled: int = 1, label: str = "",
        days: int = 0, vibrate: int = 1) -> str:
    return (f"Row: {i} _id={aid}, hour={hour}, minutes={minutes}, daysofweek={days}, "
            f"enabled={enabled}, vibrate={vibrate}, label={label}, "
            "ringtone=content://settings/system/alarm_alert, delete_after_use=0\n")


async def test_create_alarm_0730_with_taps() -> None:
    d = Droid()
    await d.tap(text="Clock", content_desc="Clock")
    assert d.focus() == (PKG, "com.android.deskclock.DeskClock")
    assert await d.sh(f"content query --uri {URI}") == "No result found.\n"
    await d.tap(resource_id=f"{R}fab")
    assert d.get(resource_id="android:id/alertTitle").text == "Select time"
    await d.tap(content_desc="7")  # a number on the dial: the hour, then it shows minutes
    assert d.get(resource_id="android:id/hours").text == "7"
    await d.tap(text="30")
    await d.tap(resource_id="android:id/am_label")
    assert d.get(resource_id="android:id/minutes").text == "30"
    await d.tap(resource_id="android:id/button1")
    assert await d.sh(f"content query --uri {URI}") == row(0, 1, 7, 30)
    assert d.texts(f"{R}digital_clock") == ["7:30 AM"]
    assert d.get(resource_id=f"{R}onoff").checked
    # label, switch, repeat days, through the expanded card
    await d.tap(resource_id=f"{R}edit_label")
    await d.type("Wake up")
    await d.tap(resource_id="android:id/button1")
    await d.tap(resource_id=f"{R}onoff")
    await d.tap(content_desc="Saturday")
    await d.tap(content_desc="Sunday")
    assert await d.sh(f"content query --uri {URI}") == row(0, 1, 7, 30, enabled=0,
                                                              label="Wake up", days=0x60)
    assert d.get(resource_id=f"{R}days_of_week").text == "Sat, Sun"
    out = await d.sh(f"content query --uri {URI} --projection hour:minutes:label "
                     "--where \"label='Wake up'\"")
    assert out == "Row: 0 hour=7, minutes=30, label=Wake up\n"
    await d.tap(resource_id=f"{R}delete")
    assert await d.sh(f"content query --uri {URI}") == "No result found.\n"


async def test_text_input_mode_pm_and_edit_time() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(content_desc="Add alarm")
    await d.tap(content_desc=TEXT_MODE)
    assert d.get(resource_id="android:id/input_hour").focused
    await d.type("6")  # the field's text is selected: typing replaces it
    await d.key("KEYCODE_ENTER")  # next field
    assert d.get(resource_id="android:id/input_minute").focused
    await d.type("45")
    await d.tap(resource_id="android:id/pm_label")
    await d.tap(resource_id="android:id/button1")
    assert await d.sh(f"content query --uri {URI}") == row(0, 1, 18, 45)
    assert d.texts(f"{R}digital_clock") == ["6:45 PM"]
    # an invalid typed time keeps the dialog open
    await d.tap(content_desc="Add alarm")
    await d.tap(content_desc=TEXT_MODE)
    await d.type("13")
    await d.tap(resource_id="android:id/button1")
    assert d.get(resource_id="android:id/label_error").text == "Enter a valid time"
    await d.tap(resource_id="android:id/button2")
    # tapping the time edits it
    await d.tap(resource_id=f"{R}digital_clock")
    assert d.find(text="05") is None  # the dial shows hours first
    await d.tap(resource_id="android:id/minutes")
    await d.tap(text="05")
    await d.tap(resource_id="android:id/button1")
    assert await d.sh(f"content query --uri {URI} --projection hour:minutes") == \
        "Row: 0 hour=18, minutes=5\n"


async def test_24_hour_dial_and_pm_clear() -> None:
    d = Droid("small")
    await d.sh("settings put system time_12_24 24")
    await d.launch(PKG)
    await d.tap(content_desc="Add alarm")
    assert d.find(resource_id="android:id/am_label") is None
    await d.tap(text="19")
    await d.tap(text="00")
    await d.tap(text="OK")
    await d.tap(content_desc="Add alarm")
    await d.tap(text="Cancel")
    assert await d.sh(f"content query --uri {URI}") == row(0, 1, 19, 0)
    assert d.texts(f"{R}digital_clock") == ["19:00"]
    await d.sh(f"am force-stop {PKG}")
    assert await d.sh(f"content query --uri {URI}/1 --projection _id") == "Row: 0 _id=1\n"
    assert await d.sh(f"pm clear {PKG}") == "Success\n"
    assert await d.sh(f"content query --uri {URI}") == "No result found.\n"


async def test_tabs() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(content_desc="Clock", resource_id=f"{R}tab_menu_clock")
    assert d.get(resource_id=f"{R}action_bar_title").text == "Clock"
    assert d.find(resource_id=f"{R}fab") is None
    await d.tap(content_desc="Alarm")
    assert d.get(resource_id=f"{R}alarms_empty_view").text == "No alarms"

"""``ime``, the ADBKeyboard broadcasts and Clipper's on a sim phone: input methods come
from installed packages, the keyboard's broadcasts type only while it is selected, and
Clipper answers with result -1 and its data once installed."""

from __future__ import annotations

import base64
import re

import pytest

from farm.sim.phone import SimPhone
from farm.sim.shell.apk import build_test_apk
from farm.sim.shell.commands.ime import ADB_IME_ID
from farm.sim.spec import PhoneSpec
from farm.sim.world.settings_store import IME_ID

BOUNDS = re.compile(r'text="Search or type web address"[^>]*'
                    r'bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"')


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="ime", seed=5))


async def sh(phone: SimPhone, line: str) -> tuple[int, str, str]:
    r = await phone.run_shell(line)
    return r.exit_code, r.stdout_bytes.decode(), r.stderr_bytes.decode()


async def install_adb_keyboard(phone: SimPhone) -> None:
    apk = build_test_apk("com.android.adbkeyboard", "ADB Keyboard")
    phone.vfs.write("/data/local/tmp/k.apk", apk)
    code, out, err = await sh(phone, "pm install /data/local/tmp/k.apk")
    assert code == 0, out + err


async def focus_omnibox(phone: SimPhone) -> None:
    await sh(phone, "am start -n com.android.chrome/com.google.android.apps.chrome.Main")
    m = BOUNDS.search(phone.world.ui_xml())
    assert m, "no omnibox"
    x1, y1, x2, y2 = map(int, m.groups())
    await sh(phone, f"input tap {(x1 + x2) // 2} {(y1 + y2) // 2}")


def omnibox_text(phone: SimPhone) -> str:
    m = re.search(r'text="([^"]*)" resource-id="com.android.chrome:id/url_bar"',
                  phone.world.ui_xml())
    assert m, phone.world.ui_xml()[:400]
    return m.group(1)


async def test_only_installed_input_methods_exist(phone: SimPhone) -> None:
    assert await sh(phone, "ime list -s") == (0, f"{IME_ID}\n", "")
    assert await sh(phone, f"ime enable {ADB_IME_ID}") == (
        0, "", f"Unknown input method {ADB_IME_ID} cannot be enabled for user #0\n")
    await install_adb_keyboard(phone)
    assert await sh(phone, "ime list -a -s") == (0, f"{IME_ID}\n{ADB_IME_ID}\n", "")
    assert await sh(phone, "ime list -s") == (0, f"{IME_ID}\n", "")  # installed, not enabled
    assert await sh(phone, f"ime set {ADB_IME_ID}") == (
        0, "", f"Unknown input method {ADB_IME_ID} cannot be selected for user #0\n")


async def test_enable_set_disable_reset(phone: SimPhone) -> None:
    await install_adb_keyboard(phone)
    assert await sh(phone, f"ime enable {ADB_IME_ID}") == (
        0, f"Input method {ADB_IME_ID}: now enabled for user #0\n", "")
    assert (await sh(phone, f"ime enable {ADB_IME_ID}"))[1] == (
        f"Input method {ADB_IME_ID}: already enabled for user #0\n")
    assert await sh(phone, f"ime set {ADB_IME_ID}") == (
        0, f"Input method {ADB_IME_ID} selected for user #0\n", "")
    assert (await sh(phone, "settings get secure default_input_method"))[1] == ADB_IME_ID + "\n"
    assert f"mCurMethodId={ADB_IME_ID}" in (await sh(phone, "dumpsys input_method"))[1]
    assert (await sh(phone, f"ime disable {ADB_IME_ID}"))[1] == (
        f"Input method {ADB_IME_ID}: now disabled for user #0\n")
    # disabling the current one falls back to the system keyboard
    assert (await sh(phone, "settings get secure default_input_method"))[1] == IME_ID + "\n"
    await sh(phone, f"ime enable {ADB_IME_ID}")
    code, out, _ = await sh(phone, "ime reset")
    assert code == 0 and f"Selected: {IME_ID}" in out
    assert (await sh(phone, "ime list -s"))[1] == IME_ID + "\n"


async def test_adb_keyboard_types_any_text_while_selected(phone: SimPhone) -> None:
    await install_adb_keyboard(phone)
    await focus_omnibox(phone)
    # not the current keyboard yet: the broadcast goes out, nobody receives it
    code, out, _ = await sh(phone, "am broadcast -a ADB_INPUT_TEXT --es msg 'x'")
    assert code == 0 and out == ("Broadcasting: Intent { act=ADB_INPUT_TEXT flg=0x400000 "
                                 "(has extras) }\nBroadcast completed: result=0\n")
    assert omnibox_text(phone) == "Search or type web address"
    await sh(phone, f"ime enable {ADB_IME_ID}; ime set {ADB_IME_ID}")
    await sh(phone, "am broadcast -a ADB_INPUT_TEXT --es msg 'café 北京 '")
    b64 = base64.b64encode("😀 ok".encode()).decode()
    await sh(phone, f"am broadcast -a ADB_INPUT_B64 --es msg {b64}")
    await sh(phone, "am broadcast -a ADB_INPUT_CHARS --eia chars 33,8364")
    assert omnibox_text(phone) == "café 北京 😀 ok!€"
    await sh(phone, "am broadcast -a ADB_INPUT_CODE --ei code 67")  # DEL
    assert omnibox_text(phone) == "café 北京 😀 ok!"
    await sh(phone, "am broadcast -a ADB_INPUT_B64 --es msg '%%%'")  # dropped, no crash
    await sh(phone, "am broadcast -a ADB_CLEAR_TEXT")
    assert omnibox_text(phone) == "Search or type web address"  # empty: the hint shows


async def test_clipper_sets_and_reads_the_clipboard_once_installed(phone: SimPhone) -> None:
    get = "am broadcast -a clipper.get"
    assert (await sh(phone, get))[1].endswith("Broadcast completed: result=0\n")  # no app
    phone.vfs.write("/data/local/tmp/c.apk", build_test_apk("ca.zgrs.clipper", "Clipper"))
    assert (await sh(phone, "pm install /data/local/tmp/c.apk"))[0] == 0
    code, out, _ = await sh(phone, "am broadcast -a clipper.set -e text 'ünïcode ok'")
    assert (code, out.splitlines()[-1]) == (
        0, 'Broadcast completed: result=-1, data="Text is copied into clipboard."')
    assert (await sh(phone, get))[1].splitlines()[-1] == (
        'Broadcast completed: result=-1, data="ünïcode ok"')

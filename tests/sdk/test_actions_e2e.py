"""Actions executed on a simulated phone over a real adb server."""

from __future__ import annotations

from typing import Any

from distrl_sdk.actions import Key, OpenApp, Tap, TypeText, execute, parse_action
from distrl_sdk.uitree import find_elements
from farm.device import AdbDevice

SETTINGS = "com.android.settings"
SEARCH_BAR = f"{SETTINGS}:id/search_action_bar"
SEARCH_FIELD = "android:id/search_src_text"
TRICKY = ("it's \"quoted\" $HOME `ls` a;b|c&d<e>f(g)h#i\\j*k?[l]~m{n}!o "
          "%s 100% done %%s  two  spaces x=1,y=2")


def _device(sim_farm: Any, private_adb: Any) -> AdbDevice:
    serial = sim_farm.phones[0].serial
    private_adb.connect(serial)
    return AdbDevice(serial, port=private_adb.port)


async def _focus(device: AdbDevice) -> str:
    return (await device.shell("dumpsys window | grep mCurrentFocus")).stdout


async def _open_settings_search(device: AdbDevice) -> None:
    await execute(device, Key("home"))
    assert "nexuslauncher" in await _focus(device)
    await execute(device, OpenApp("Settings"))
    assert f"{SETTINGS}/" in await _focus(device)


async def test_home_open_app_tap_and_type(sim_farm: Any, private_adb: Any) -> None:
    device = _device(sim_farm, private_adb)
    await _open_settings_search(device)
    elements = await device.ui_elements()
    (bar,) = find_elements(elements, resource_id=SEARCH_BAR)
    w, h = await device.screen_size()
    cx, cy = bar.bounds.center
    await execute(device, Tap(cx / w, cy / h))
    assert "SearchActivity" in await _focus(device)

    await execute(device, TypeText("wifi calling & more"))
    (field,) = find_elements(await device.ui_elements(), resource_id=SEARCH_FIELD)
    assert field.text == "wifi calling & more"
    xml = (await device.shell("uiautomator dump /dev/tty")).stdout
    assert 'text="wifi calling &amp; more"' in xml


async def test_model_output_by_index_and_tricky_text(sim_farm: Any, private_adb: Any) -> None:
    device = _device(sim_farm, private_adb)
    await _open_settings_search(device)
    elements = await device.ui_elements()
    (bar,) = find_elements(elements, resource_id=SEARCH_BAR)
    action = parse_action(f'Tapping search.\n```json\n{{"action_type": "click", '
                          f'"index": {bar.index}}}\n```', elements=elements)
    assert isinstance(action, Tap)
    await execute(device, action)
    assert "SearchActivity" in await _focus(device)
    await execute(device, TypeText(TRICKY))
    (field,) = find_elements(await device.ui_elements(), resource_id=SEARCH_FIELD)
    assert field.text == TRICKY

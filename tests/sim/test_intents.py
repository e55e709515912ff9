"""Implicit intents: ``am start -a …`` resolved by the package manager, with the
output formats of ``am``, ``cmd package resolve-activity`` and ``dumpsys activity``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from distrl_sdk.uitree import parse_ui_dump
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.background import BackgroundFarm
from farm.sim.intents import IntentFilter, IntentQuery
from farm.sim.phone import SimPhone
from farm.sim.shell.commands.am import safe_uri
from farm.sim.spec import PhoneSpec

VIEW = "android.intent.action.VIEW"
ARTICLE = "https://en.wikipedia.org/wiki/Eiffel_Tower"


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="intents"))


async def sh(phone: SimPhone, command: str) -> tuple[int, str, str]:
    r = await phone.run_shell(command)
    return r.exit_code, r.stdout_bytes.decode(), r.stderr_bytes.decode()


async def texts(phone: SimPhone) -> list[str]:
    _, xml, _ = await sh(phone, "uiautomator dump /dev/tty")
    return [e.text for e in parse_ui_dump(xml) if e.text]


async def top(phone: SimPhone) -> str:
    _, out, _ = await sh(phone, "dumpsys activity top")
    m = re.search(r"^  ACTIVITY (\S+) ", out, re.M)
    assert m, out
    return m.group(1)


# -- resolution ------------------------------------------------------------------------

async def test_view_https_opens_chrome_on_the_url(phone: SimPhone) -> None:
    code, out, err = await sh(phone, f"am start -a {VIEW} -d '{ARTICLE}?utm=1#top'")
    assert (code, err) == (0, "")
    # Intent.toString prints Uri.toSafeString: the host only
    assert out == f"Starting: Intent {{ act={VIEW} dat=https://en.wikipedia.org/... }}\n"
    assert await top(phone) == "com.android.chrome/com.google.android.apps.chrome.Main"
    assert "Eiffel Tower" in await texts(phone)
    # again while Chrome is on top: delivered to it, and it navigates
    code, out, _ = await sh(phone, f"am start -a {VIEW} -d https://www.google.com/search?q=lyon")
    assert out.splitlines()[1] == ("Warning: Activity not started, intent has been delivered to "
                                   "currently running top-most instance.")
    assert any("lyon" in t for t in await texts(phone))


@pytest.mark.parametrize(("action", "activity", "title"), [
    ("android.settings.WIFI_SETTINGS", ".Settings$WifiSettingsActivity", "Internet"),
    ("android.settings.DISPLAY_SETTINGS", ".Settings$DisplaySettingsActivity", "Display"),
    ("android.settings.BLUETOOTH_SETTINGS", ".Settings$BluetoothSettingsActivity",
     "Connected devices"),
    ("android.settings.SOUND_SETTINGS", ".Settings$SoundSettingsActivity", "Sound & vibration"),
    ("android.settings.LOCATION_SOURCE_SETTINGS", ".Settings$LocationSettingsActivity",
     "Location"),
    ("android.settings.DEVICE_INFO_SETTINGS", ".Settings$MyDeviceInfoActivity", "About phone"),
    ("android.settings.SETTINGS", ".Settings", "Settings"),
])
async def test_settings_actions_open_their_pages(phone: SimPhone, action: str, activity: str,
                                                 title: str) -> None:
    code, out, err = await sh(phone, f"am start -a {action}")
    assert (code, out, err) == (0, f"Starting: Intent {{ act={action} }}\n", "")
    assert await top(phone) == f"com.android.settings/{activity}"
    assert title in await texts(phone)


async def test_app_details_settings_shows_the_package(phone: SimPhone) -> None:
    code, _, _ = await sh(phone, "am start -a android.settings.APPLICATION_DETAILS_SETTINGS "
                                 "-d package:com.android.chrome")
    assert code == 0
    shown = await texts(phone)
    assert "App info" in shown and "Chrome" in shown


async def test_home_intent_goes_home(phone: SimPhone) -> None:
    await sh(phone, "am start -n com.android.settings/.Settings")
    home = "-a android.intent.action.MAIN -c android.intent.category.HOME"
    code, out, _ = await sh(phone, f"am start {home}")
    assert (code, out) == (0, "Starting: Intent { act=android.intent.action.MAIN "
                              "cat=[android.intent.category.HOME] }\n")
    assert await top(phone) == ("com.google.android.apps.nexuslauncher/"
                                ".NexusLauncherActivity")


@pytest.mark.parametrize(("args", "shown"), [
    (f"-a {VIEW} -d market://details?id=com.nope",
     f"act={VIEW} dat=market://details?id=com.nope"),
    ("-a android.intent.action.SENDTO -d smsto:+1-555-0100",  # no messaging app
     "act=android.intent.action.SENDTO dat=smsto:xx-xxx-xxxx"),
    ("-a android.settings.NOPE_SETTINGS", "act=android.settings.NOPE_SETTINGS"),
])
async def test_nothing_resolves_real_error_text(phone: SimPhone, args: str, shown: str) -> None:
    code, out, err = await sh(phone, f"am start {args}")
    assert code == 1
    assert out == f"Starting: Intent {{ {shown} }}\n"
    assert err == (f"Error: Activity not started, unable to resolve Intent {{ {shown} "
                   "flg=0x10000000 }\n")


async def test_contacts_intents(phone: SimPhone) -> None:
    code, _, _ = await sh(phone, "am start -a android.intent.action.INSERT "
                                 "-t vnd.android.cursor.dir/contact")
    assert code == 0
    assert await top(phone) == ("com.google.android.contacts/"
                                "com.android.contacts.activities.ContactEditorActivity")


# -- resolve-activity -------------------------------------------------------------------

async def test_resolve_activity_formats(phone: SimPhone) -> None:
    _, out, _ = await sh(phone, f"cmd package resolve-activity --brief -a {VIEW} -d https://a.b/")
    assert out == ("priority=0 preferredOrder=0 match=0x208000 specificIndex=-1 isDefault=true\n"
                   "com.android.chrome/com.google.android.apps.chrome.Main\n")
    _, out, _ = await sh(phone, "cmd package resolve-activity --brief "
                                "-a android.intent.action.MAIN -c android.intent.category.HOME")
    assert out.splitlines() == [
        "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=true",
        "com.google.android.apps.nexuslauncher/.NexusLauncherActivity"]
    _, out, _ = await sh(phone, "pm resolve-activity --components -a android.settings.SETTINGS")
    assert out == "com.android.settings/.Settings\n"
    _, out, _ = await sh(phone, f"cmd package resolve-activity -a {VIEW} -d https://a.b/")
    assert out.splitlines()[1:3] == ["ActivityInfo:", "  name=com.google.android.apps.chrome.Main"]
    _, out, _ = await sh(phone, f"cmd package resolve-activity --brief -a {VIEW} -d geo:0,0")
    assert out == "No activity found\n"


# -- dumpsys activity -----------------------------------------------------------------

async def test_dumpsys_activity_recents_lists_tasks_but_home(phone: SimPhone) -> None:
    await sh(phone, "am start -n com.android.settings/.Settings")
    await sh(phone, f"am start -a {VIEW} -d {ARTICLE}")
    _, out, _ = await sh(phone, "dumpsys activity recents")
    recents = re.findall(r"^  \* Recent #(\d+): Task\{\w+ #(\d+) type=standard A=\d+:(\S+) ",
                         out, re.M)
    assert [(i, pkg) for i, _, pkg in recents] == [("0", "com.android.chrome"),
                                                   ("1", "com.android.settings")]
    assert "mRecentsComponent=ComponentInfo{com.google.android.apps.nexuslauncher/" in out
    assert "realActivity=com.android.chrome/com.google.android.apps.chrome.Main" in out


# -- pieces ---------------------------------------------------------------------------

def test_safe_uri_matches_uri_to_safe_string() -> None:
    assert safe_uri("https://x.org:8080/a?b#c") == "https://x.org:8080/..."
    assert safe_uri("mailto:a.b@c.d") == "mailto:x.x@x.x"
    assert safe_uri("content://contacts/people/1#x") == "content://contacts/people/1"
    assert safe_uri("no-scheme") == "no-scheme"


def test_filter_matching_rules() -> None:
    f = IntentFilter("A", (VIEW,), schemes=("http", "https"))
    assert f.match(IntentQuery(VIEW, data="HTTPS://x"))
    assert not f.match(IntentQuery(VIEW, data="ftp://x"))
    assert not f.match(IntentQuery(VIEW))  # data required
    assert not f.match(IntentQuery(VIEW, ("android.intent.category.BROWSABLE",), "https://x"))
    g = IntentFilter("B", ("X",))
    assert g.match(IntentQuery("X")) and not g.match(IntentQuery("X", data="https://x"))


# -- through adbutils --------------------------------------------------------------------

@pytest.fixture(scope="module")
def device() -> Iterator[object]:
    with BackgroundFarm(1, seed=2) as farm, PrivateAdbServer(bundled_adb()) as adb:
        adb.connect(farm.phones[0].serial)
        yield adb.client().device(farm.phones[0].serial)


def test_adbutils_open_browser_opens_chrome_on_the_url(device: object) -> None:
    dev = device
    dev.open_browser(ARTICLE)  # type: ignore[attr-defined]
    assert dev.app_current().package == "com.android.chrome"  # type: ignore[attr-defined]
    els = parse_ui_dump(dev.dump_hierarchy())  # type: ignore[attr-defined]
    assert "Eiffel Tower" in [e.text for e in els]

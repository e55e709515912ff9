"""The deploy guard's rules, on hand-built screens (no device needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distrl_sdk.actions import (
    Complete,
    InvalidAction,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Tap,
    TypeText,
    Wait,
)
from distrl_sdk.errors import ConfigError, DeployRefused
from distrl_sdk.uitree import Bounds, UIElement
from farm.deploy.guard import (
    Guard,
    GuardConfig,
    GuardContext,
    card_number_in,
    element_under,
    load_guard_config,
)

SIZE = (1000, 2000)


def el(index: int, parent: int | None, bounds: tuple[int, int, int, int], text: str = "", *,
       depth: int = 0, clickable: bool = False, desc: str = "", pkg: str = "") -> UIElement:
    return UIElement(index=index, depth=depth, parent=parent, text=text, resource_id="",
                     class_name="android.widget.TextView", package=pkg, content_desc=desc,
                     bounds=Bounds(*bounds), clickable=clickable)


def settings_screen(label: str, pkg: str = "com.android.settings") -> list[UIElement]:
    """A root, a clickable row (no text of its own) holding a title and a summary."""
    return [
        el(0, None, (0, 0, 1000, 2000), depth=0, pkg=pkg),
        el(1, 0, (0, 400, 1000, 600), depth=1, clickable=True, pkg=pkg),
        el(2, 1, (200, 420, 900, 500), label, depth=2, pkg=pkg),
        el(3, 1, (200, 500, 900, 580), "Erases everything on the phone", depth=2, pkg=pkg),
        el(4, 0, (0, 800, 1000, 1000), depth=1, clickable=True, pkg=pkg),
        el(5, 4, (200, 820, 900, 900), "Display", depth=2, pkg=pkg),
    ]


def ctx(elements: list[UIElement], pkg: str = "com.android.settings",
        activity: str = "com.android.settings.SubSettings") -> GuardContext:
    return GuardContext(pkg, activity, elements, SIZE)


def test_a_tap_on_a_row_is_judged_by_the_texts_inside_it() -> None:
    g = Guard()
    screen = settings_screen("Erase all data (factory reset)")
    v = g.check(Tap(0.1, 0.25), ctx(screen))  # on the row's padding, left of the title
    assert not v.allowed and v.rule == "text:factory-reset"
    assert "factory reset" in v.message and "tap (0.10, 0.25)" in v.message
    assert isinstance(v.error(), DeployRefused) and str(v.error()) == v.message
    assert g.check(Tap(0.5, 0.45), ctx(screen)).allowed  # the Display row
    assert g.check(LongPress(0.5, 0.23), ctx(screen)).rule == "text:factory-reset"
    assert g.check(Tap(0.5, 0.9), ctx(screen)).allowed  # nothing there


@pytest.mark.parametrize(("label", "rule"), [
    ("Uninstall", "text:uninstall"), ("Buy now", "text:payment"), ("Pay $4.99", "text:payment"),
    ("Developer options", "text:developer-options"), ("Build number", "text:developer-options"),
    ("Reset options", "text:reset"), ("Clear storage", "text:clear-data"),
])
def test_dangerous_labels_are_refused(label: str, rule: str) -> None:
    v = Guard().check(Tap(0.5, 0.23), ctx(settings_screen(label)))
    assert not v.allowed and v.rule == rule and f'"{label}"' in v.message


def test_call_and_send_only_count_in_phone_and_sms_apps() -> None:
    g = Guard()
    contacts = "com.google.android.contacts"
    call = settings_screen("Call mobile", contacts)
    assert g.check(Tap(0.5, 0.23), ctx(call, contacts, ".QuickContactActivity")).rule \
        == "text:phone-call"
    # the same words elsewhere (a browser page about calls) are fine; a web "Call …"
    # link is not
    chrome = "com.android.chrome"
    assert g.check(Tap(0.5, 0.23), ctx(settings_screen("Calls and SMS explained", chrome),
                                       chrome, ".Main")).allowed
    assert g.check(Tap(0.5, 0.23), ctx(settings_screen("Call mobile", chrome), chrome,
                                       ".Main")).rule == "text:phone-call"
    assert g.check(Tap(0.5, 0.23), ctx(settings_screen("Call mobile", "org.distrl.shop"),
                                       "org.distrl.shop", ".Main")).allowed


def test_inside_a_denied_app_only_escapes_run() -> None:
    g = Guard()
    dialer = "com.google.android.dialer"
    c = ctx(settings_screen("7", dialer), dialer, ".DialtactsActivity")
    v = g.check(Tap(0.5, 0.23), c)
    assert not v.allowed and v.rule == "package" and dialer in v.message
    assert g.check(Key("enter"), c).rule == "package"  # could place the call
    for escape in (Key("back"), Key("home"), Wait(1.0), Complete()):
        assert g.check(escape, c).allowed, escape


def test_denied_screens_by_activity() -> None:
    g = Guard()
    c = GuardContext("com.android.settings", "com.android.settings.Settings$MainClearActivity",
                     settings_screen("Next"), SIZE)
    v = g.check(Tap(0.5, 0.23), c)
    assert not v.allowed and v.rule == "activity" and "MainClear" in v.message
    dev = GuardContext("com.android.settings", ".DevelopmentSettingsDashboardActivity", [], SIZE)
    assert g.check(Scroll("down"), dev).rule == "activity"
    assert g.check(Key("back"), dev).allowed


@pytest.mark.parametrize(("app", "rule"), [
    ("Phone", "package"), ("Messages", "package"), ("com.android.packageinstaller", "package"),
    ("tel:5551234", "uri"), ("sms:5551234", "uri"),
    ("android.intent.action.CALL", "intent"), ("com.google.android.apps.walletnfcrel", "package"),
])
def test_open_app_targets(app: str, rule: str) -> None:
    v = Guard().check(OpenApp(app), ctx([]))
    assert not v.allowed and v.rule == rule, v


def test_open_harmless_apps_and_unknown_names_pass() -> None:
    g = Guard()
    assert g.check(OpenApp("Settings"), ctx([])).allowed
    assert g.check(OpenApp("no such app at all"), ctx([])).allowed  # execution rejects it


def test_typed_text() -> None:
    g = Guard()
    screen = settings_screen("Display")
    assert card_number_in("my card 4111 1111 1111 1111 thanks") == "4111 … 1111"
    assert card_number_in("4111 1111 1111 1112") is None  # fails the Luhn check
    assert card_number_in("call me at 5551234") is None
    v = g.check(TypeText("4111-1111-1111-1111"), ctx([]))  # refused even on no screen
    assert not v.allowed and v.rule == "card-number" and "4111 … 1111" in v.message
    assert "4111-1111" not in v.message + v.action  # the number is masked
    assert g.check(TypeText("*#06#"), ctx(screen)).rule == "typed:ussd-code"
    assert g.check(TypeText("weather in Paris"), ctx(screen)).allowed
    assert g.check(TypeText("weather in Paris"), ctx([])).rule == "unknown-screen"
    # typing with a tap first is also judged by what is under the tap
    assert g.check(TypeText("hi", 0.5, 0.23), ctx(settings_screen("Uninstall"))).rule \
        == "text:uninstall"


def test_command_layer_catches_what_the_friendly_rules_miss() -> None:
    cfg = GuardConfig(denied_packages=(), denied_commands=(r"\bmonkey -p org\.distrl\.shop\b",))
    v = Guard(cfg).check(OpenApp("Shop"), ctx([]))
    assert not v.allowed and v.rule == "command" and "monkey -p org.distrl.shop" in v.message
    prefix = GuardConfig(denied_packages=("org.distrl.*",))
    assert Guard(prefix).check(OpenApp("org.distrl.shop"), ctx([])).rule == "package"


def test_invalid_actions_pass_because_nothing_runs() -> None:
    assert Guard().check(InvalidAction("no json", "blah"), ctx([])).allowed


def test_limits() -> None:
    g = Guard(GuardConfig(max_steps=3, max_seconds=10))
    assert g.check_limits(2, 9.0) is None
    s = g.check_limits(3, 0.0)
    assert s is not None and s.rule == "step-limit" and "3" in s.message
    t = g.check_limits(0, 10.5)
    assert t is not None and t.rule == "time-limit"


def test_element_under_prefers_the_innermost_clickable() -> None:
    screen = settings_screen("Uninstall")
    hit = element_under(screen, 500, 450)
    assert [e.index for e in hit] == [1, 2, 3]
    assert [e.index for e in element_under(screen, 500, 1500)] == [0]


def test_toml_overrides_and_extends(tmp_path: Path) -> None:
    f = tmp_path / "guard.toml"
    f.write_text('max_steps = 7\nextra_denied_packages = ["com.example.bank"]\n'
                 '[[extra_denied_texts]]\npattern = "\\\\bdelete\\\\b"\n'
                 'reason = "deleting is denied here"\nname = "delete"\n')
    cfg = load_guard_config(f, max_seconds=30.0, max_steps=None)
    assert cfg.max_steps == 7 and cfg.max_seconds == 30.0
    assert "com.example.bank" in cfg.denied_packages
    assert "com.google.android.dialer" in cfg.denied_packages  # defaults kept
    v = Guard(cfg).check(Tap(0.5, 0.23), ctx(settings_screen("Delete photo")))
    assert v.rule == "text:delete" and "deleting is denied here" in v.message
    assert load_guard_config(f, max_steps=3).max_steps == 3  # the flag wins


def test_toml_replacing_a_list_and_a_guard_table(tmp_path: Path) -> None:
    f = tmp_path / "g.toml"
    f.write_text('[guard]\ndenied_packages = []\n')
    cfg = load_guard_config(f)
    assert cfg.denied_packages == () and Guard(cfg).check(OpenApp("Phone"), ctx([])).allowed


@pytest.mark.parametrize(("text", "needle"), [
    ("max_step = 3\n", "max_step: Extra inputs are not permitted"),
    ("max_steps = 0\n", "max_steps: Input should be greater than or equal to 1"),
    ("denied_commands = ['(']\n", "not a regular expression"),
    ("extra_max_steps = [1]\n", "extra_max_steps: there is no list field"),
    ("max_steps = \n", "not valid TOML"),
])
def test_toml_mistakes_name_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_guard_config(f)
    assert needle in str(info.value) and "bad.toml" in str(info.value)


def test_missing_guard_file() -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_guard_config("/nonexistent/guard.toml")

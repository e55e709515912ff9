"""Actions as adb shell commands: pixels, keys, apps, and text escaping."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_sdk.actions import (
    KNOWN_APPS,
    Action,
    Answer,
    Complete,
    Impossible,
    Key,
    LongPress,
    OpenApp,
    Scroll,
    Swipe,
    Tap,
    TypeText,
    Wait,
    execute,
    resolve_app,
    text_commands,
    to_adb_commands,
)
from distrl_sdk.device import Device, ShellOutput
from distrl_sdk.errors import DeviceError
from distrl_sdk.uitree import UIElement
from farm.sim.shell.commands.input import decode_text

SCREEN = (1080, 2400)


@pytest.mark.parametrize(("action", "commands"), [
    (Tap(0.5, 0.5), ["input tap 540 1200"]),
    (Tap(0.0, 0.0), ["input tap 0 0"]),
    (Tap(1.0, 1.0), ["input tap 1079 2399"]),
    (LongPress(0.25, 0.75), ["input swipe 270 1800 270 1800 1000"]),
    (Swipe(0.5, 0.9, 0.5, 0.1, 450), ["input swipe 540 2160 540 240 450"]),
    (Scroll("down"), ["input swipe 540 1800 540 600 500"]),  # finger moves up
    (Scroll("up"), ["input swipe 540 600 540 1800 500"]),
    (Scroll("right"), ["input swipe 864 1200 216 1200 500"]),  # finger moves left
    (Scroll("left"), ["input swipe 216 1200 864 1200 500"]),
    (Key("home"), ["input keyevent KEYCODE_HOME"]),
    (Key("back"), ["input keyevent KEYCODE_BACK"]),
    (Key("enter"), ["input keyevent KEYCODE_ENTER"]),
    (TypeText("hi", 0.5, 0.1), ["input tap 540 240", "input text hi"]),
    (OpenApp("Settings"),
     ["monkey -p com.android.settings -c android.intent.category.LAUNCHER 1"]),
    (OpenApp("com.example.notes"),
     ["monkey -p com.example.notes -c android.intent.category.LAUNCHER 1"]),
    (Wait(), []), (Complete(), []), (Impossible(), []), (Answer("42"), []),
])
def test_commands(action: Action, commands: list[str]) -> None:
    assert to_adb_commands(action, SCREEN) == commands


def test_element_centre_round_trips_to_its_pixel() -> None:
    for cx, cy in [(540, 409), (1, 1), (1079, 2399), (333, 1777)]:
        assert to_adb_commands(Tap(cx / 1080, cy / 2400), SCREEN) == [f"input tap {cx} {cy}"]


@pytest.mark.parametrize(("name", "package"), [
    ("Settings", "com.android.settings"), ("SETTINGS", "com.android.settings"),
    ("the Settings app", "com.android.settings"), ("Chrome", "com.android.chrome"),
    ("browser", "com.android.chrome"), ("Clock", "com.google.android.deskclock"),
    ("Contacts", "com.google.android.contacts"), ("Shop", "org.distrl.shop"),
    ("  play   store ", "com.android.vending"), ("org.distrl.shop", "org.distrl.shop"),
])
def test_resolve_app(name: str, package: str) -> None:
    assert resolve_app(name) == package


def test_unknown_app_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown app 'Flappy Bird'.*known apps: .*settings"):
        to_adb_commands(OpenApp("Flappy Bird"), SCREEN)
    assert all(k == k.lower() for k in KNOWN_APPS)


# ── text escaping ───────────────────────────────────────────────────────────────────


def android_input_text(arg: str) -> str:
    """What ``input text ARG`` types: the sim's port of InputShellCommand's ``%s`` scan."""
    return decode_text(arg)


def typed(commands: list[str]) -> str:
    out = []
    for cmd in commands:
        argv = shlex.split(cmd)
        if argv[:2] == ["input", "text"]:
            assert len(argv) == 3, cmd  # one argument: Android 14 types only the first
            out.append(android_input_text(argv[2]))
        elif argv == ["input", "keyevent", "KEYCODE_ENTER"]:
            out.append("\n")
        elif argv == ["input", "keyevent", "KEYCODE_TAB"]:
            out.append("\t")
        else:
            raise AssertionError(f"unexpected command {cmd!r}")
    return "".join(out)


TRICKY = [
    "wifi calling & more", "it's", 'say "hi"', "a;b|c&d", "$HOME ${PATH} $(reboot)",
    "`rm -rf /`", "<tag attr='v'>", "(paren) #hash", "back\\slash \\n", "*.txt ? [ab] ~root",
    "{a,b} !bang", "100%", "%s", "100%sure", "%%s", "a%", "%", "s%s%s", "50% sale",
    "  leading", "trailing  ", "two  spaces", " ", "line1\nline2", "tab\there",
    "crlf\r\nend", "-n", "--help", "=", "'", '"', "\\", "'\"'\"'", "a b c d e f",
]


@pytest.mark.parametrize("text", TRICKY)
def test_typed_text_decodes_back(text: str) -> None:
    cmds = text_commands(text)
    assert typed(cmds) == text.replace("\r\n", "\n")
    for cmd in cmds:  # word by word: no input text carries more than one word
        if cmd.startswith("input text "):
            word = android_input_text(shlex.split(cmd)[2]).strip(" ")
            assert " " not in word


def test_quoting_survives_a_real_posix_shell() -> None:
    """Run every ``input text`` line through /bin/sh with ``input`` replaced by printf."""
    script = []
    expected = []
    for text in TRICKY:
        for cmd in text_commands(text):
            if cmd.startswith("input text "):
                script.append("printf '%s\\0' " + cmd.removeprefix("input text "))
                expected.append(shlex.split(cmd)[2])
    out = subprocess.run(["sh", "-c", "\n".join(script)], capture_output=True, text=True,
                         check=True, cwd="/").stdout
    assert out.split("\0")[:-1] == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from(
    ["\n", "\t", "%s", "%", "s", " "]), min_size=1, max_size=40).map("".join))
def test_any_ascii_text_decodes_back(text: str) -> None:
    assert typed(text_commands(text)) == text


def test_literal_percent_s_is_split_between_commands() -> None:
    assert text_commands("100%sure") == ["input text 100%", "input text sure"]
    assert text_commands("wifi calling") == ["input text wifi%s", "input text calling"]


def test_non_ascii_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"'é' \(U\+00E9\).*'日' \(U\+65E5\).*adbkeyboard"):
        text_commands("café 日本")
    with pytest.raises(ValueError, match=r"U\+0007"):
        text_commands("bell\a")


def test_adbkeyboard_broadcast() -> None:
    for text in ["café 日本", "it's \"x\" $y", "a\nb"]:
        (cmd,) = text_commands(text, ime="adbkeyboard")
        argv = shlex.split(cmd)
        assert argv[:6] == ["am", "broadcast", "-a", "ADB_INPUT_TEXT", "--es", "msg"]
        assert argv[6:] == [text]
    assert to_adb_commands(TypeText("日本"), SCREEN, ime="adbkeyboard")[0].startswith(
        "am broadcast -a ADB_INPUT_TEXT --es msg ")
    with pytest.raises(ValueError, match="unknown ime 'gboard'"):
        text_commands("x", ime="gboard")


# ── execute, against a recording device ─────────────────────────────────────────────


class FakeDevice:
    def __init__(self, fail: str | None = None, stdout: str = "") -> None:
        self.commands: list[str] = []
        self.size_calls = 0
        self.fail = fail
        self.stdout = stdout

    @property
    def serial(self) -> str:
        return "fake-1"

    async def shell(self, command: str, *, timeout: float = 30.0) -> ShellOutput:
        self.commands.append(command)
        if self.fail and self.fail in command:
            return ShellOutput("", "Error: Unknown command: boom\n", 1)
        return ShellOutput(self.stdout, "", 0)

    async def push(self, data: bytes, remote_path: str) -> None:
        raise NotImplementedError

    async def pull(self, remote_path: str) -> bytes:
        raise NotImplementedError

    async def screenshot_png(self) -> bytes:
        raise NotImplementedError

    async def ui_elements(self) -> list[UIElement]:
        return []

    async def screen_size(self) -> tuple[int, int]:
        self.size_calls += 1
        return SCREEN


async def test_execute_runs_commands_in_order() -> None:
    dev = FakeDevice()
    assert isinstance(dev, Device)
    await execute(dev, TypeText("a b", 0.5, 0.5))
    assert dev.commands == ["input tap 540 1200", "input text a%s", "input text b"]
    assert dev.size_calls == 1
    await execute(dev, Key("back"))
    await execute(dev, Complete())
    assert dev.commands[-1] == "input keyevent KEYCODE_BACK" and dev.size_calls == 1


async def test_execute_wait_sleeps() -> None:
    dev = FakeDevice()
    t = time.monotonic()
    await execute(dev, Wait(0.05))
    assert time.monotonic() - t >= 0.04 and dev.commands == []


async def test_execute_failures() -> None:
    dev = FakeDevice(fail="input tap")
    with pytest.raises(DeviceError, match=r"fake-1: `input tap 540 1200` failed \(exit 1\)"):
        await execute(dev, Tap(0.5, 0.5))
    aborted = FakeDevice(stdout="** No activities found to run, monkey aborted.\n")
    with pytest.raises(DeviceError, match="launched nothing"):
        await execute(aborted, OpenApp("Settings"))
    dev = FakeDevice()
    with pytest.raises(ValueError, match="printable ASCII only"):
        await execute(dev, TypeText("ok then é"))
    assert dev.commands == []  # nothing half-typed


def test_execute_is_a_coroutine_function() -> None:
    assert asyncio.iscoroutinefunction(execute)

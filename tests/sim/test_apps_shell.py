"""``content query`` (projection/where/sort/errors), ``run-as``, and the new apps' basics."""

from __future__ import annotations

import random

import pytest

from distrl_sdk.uitree import parse_ui_dump
from farm.sim.faults import Faults
from farm.sim.shell.commands.sqlwhere import Row, SqlError, compile_where, sort_rows
from farm.sim.spec import LogBuffer, PhoneSpec, ScreenSpec
from farm.sim.vfs import VirtualFS
from farm.sim.world import World
from tests.sim.apps_driver import Droid
from tests.sim.shell_fixtures import make_rig

DATA = "content://com.android.contacts/data"
APPS = {"Chrome": "com.android.chrome", "Clock": "com.google.android.deskclock",
        "Contacts": "com.google.android.contacts", "Shop": "org.distrl.shop"}

ROWS: list[Row] = [{"_id": 1, "name": "Alice", "n": 7, "x": None},
        {"_id": 2, "name": "bob", "n": 30, "x": "y"},
        {"_id": 3, "name": "Carol's", "n": 7, "x": None}]
COLS = ["_id", "name", "n", "x"]


def ids(where: str) -> list[object]:
    keep = compile_where(where, COLS)
    return [r["_id"] for r in ROWS if keep(r)]


def test_where_clause_subset() -> None:
    assert ids("") == [1, 2, 3]
    assert ids("n=7") == [1, 3]
    assert ids("n = '7'") == [1, 3]  # SQLite compares a numeric string as a number
    assert ids("n >= 8 OR name = 'Alice'") == [1, 2]
    assert ids("name LIKE 'b%'") == [2]  # LIKE is case-insensitive
    assert ids("name NOT LIKE '%o%'") == [1]
    assert ids("name = 'Carol''s'") == [3]
    assert ids("x IS NULL AND NOT (_id = 1)") == [3]
    assert ids("x IS NOT NULL") == [2]
    assert ids("_id IN (1, 3) AND n != 30") == [1, 3]
    assert ids('"name" <> "n"') == [1, 2, 3]  # double quotes name columns
    with pytest.raises(SqlError, match="no such column: nope"):
        compile_where("nope = 1", COLS)
    with pytest.raises(SqlError, match="syntax error"):
        compile_where("n = = 1", COLS)


def test_sort() -> None:
    assert [r["_id"] for r in sort_rows(ROWS, "n DESC, name", COLS)] == [2, 1, 3]
    assert [r["_id"] for r in sort_rows(ROWS, "x", COLS)] == [1, 3, 2]  # NULLs first


async def test_content_errors_and_usage() -> None:
    d = Droid()
    assert (await d.sh("content")).startswith("usage: adb shell content")
    code, out, err = await d.sh_err("content query --uri content://nope.provider/x")
    assert code == 1 and out == ""
    assert err.startswith("Error while accessing provider:nope.provider\n"
                          "java.lang.IllegalStateException: Could not find provider: "
                          "nope.provider\n")
    code, _, err = await d.sh_err(f"content query --uri {DATA} --projection nope")
    assert code == 1 and "SQLiteException: no such column: nope" in err
    code, _, err = await d.sh_err("content query --uri content://com.android.contacts/bogus")
    assert "IllegalArgumentException: Unknown URL content://com.android.contacts/bogus" in err
    code, _, err = await d.sh_err("content query")
    assert code == 1 and "URI not specified" in err
    out = await d.sh(f"content query --uri {DATA}/emails --projection data1 --sort 'data1 DESC'"
                     " --where 'contact_id < 3'")
    assert out == ("Row: 0 data1=bob.smith@example.com\n"
                   "Row: 1 data1=alice.johnson@example.com\n")


async def test_content_on_a_world_without_providers() -> None:
    rig = make_rig("fake")
    r = await rig.run("content query --uri content://com.android.contacts/contacts")
    assert r.exit_code == 1 and b"Could not find provider" in r.stderr_bytes


async def test_run_as_pipes_and_stdin_script() -> None:
    d = Droid()
    out = await d.sh("run-as org.distrl.shop cat files/cart.json | grep -c item_count")
    assert out == "1\n"
    r = await d.phone.run_shell("run-as org.distrl.shop", b"cd files; ls\n")
    assert r.stdout_bytes == b"cart.json\norders.json\n"
    code, _, err = await d.sh_err("run-as")
    assert code == 1 and err.startswith("usage: run-as")


async def test_launcher_shows_the_apps_and_they_start() -> None:
    for preset in ("phone", "small"):
        d = Droid(preset)
        for label, pkg in APPS.items():
            await d.sh("input keyevent KEYCODE_HOME")
            await d.tap(text=label, content_desc=label)
            focus = d.focus()
            assert focus is not None and focus[0] == pkg
        listed = await d.sh("pm list packages")
        for pkg in [*APPS.values(), "com.android.providers.contacts"]:
            assert f"package:{pkg}\n" in listed


def world(preset: str) -> World:
    """A world with fixed clocks (the status-bar time is drawn too)."""
    return World(PhoneSpec(screen=ScreenSpec.preset(preset), seed=3), VirtualFS(),
                 Faults(clock=lambda: 100.0), LogBuffer(clock=lambda: 1_700_000_000.0),
                 random.Random(3), clock=lambda: 100.0)


@pytest.mark.parametrize("preset", ["phone", "small"])
def test_every_screen_fits_and_is_deterministic(preset: str) -> None:
    """Two phones with one seed draw identical frames; nodes stay on screen, light and dark."""
    frames: list[list[bytes]] = []
    for _ in range(2):
        w = world(preset)
        got: list[bytes] = []
        for dark in ("1", "2"):
            w.settings.put("secure", "ui_night_mode", dark)
            for pkg in APPS.values():
                assert w.launch_package(pkg)
                got.append(w.frame_png())
                for e in parse_ui_dump(w.ui_xml()):
                    b = e.bounds
                    assert 0 <= b.left <= b.right <= w.width, e
                    assert 0 <= b.top <= b.bottom <= w.height, e
        frames.append(got)
    assert frames[0] == frames[1]

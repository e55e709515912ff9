"""What the logs and bars say must be true and human: no invented detail on a state
change, no internal worker ids, publications not flooding the log, the reason a link
is down, and the farm's own tasks in the run-task dialog."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.record_tui_feed import DEFAULT_OUT, load, while_running
from tests.tui.conftest import FARM, fixed_clock
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.modals import PromptScreen
from tui.model import FleetModel, human_detail
from tui.source import FakeSource

T = [1_700_000_000.0]


def model() -> FleetModel:
    return FleetModel(lambda: T[0])


def test_a_late_status_does_not_invent_a_reason_for_its_transition() -> None:
    m = model()
    m.ingest(*ff.status(FARM, "a", "ready"))
    m.ingest(*ff.status(FARM, "a", "busy", detail="episode over", step=2))
    m.ingest(*ff.status(FARM, "a", "ready", detail="released: demo/w5"))
    lines = [ln.text for ln in m.logs]
    assert f"{FARM}/a: ready → busy" in lines, lines
    assert f"{FARM}/a: busy → ready (released)" in lines, lines
    assert not any("episode over" in t or "/w5" in t for t in lines), lines


def test_worker_ids_are_stripped_but_other_details_kept() -> None:
    assert human_detail("released: rec/w12") == "released"
    assert human_detail("error: adb: device offline") == "error: adb: device offline"


def test_policy_publications_do_not_flood_the_log() -> None:
    m = model()
    for v in range(1, 40):
        m.ingest(*ff.pointer(v))
        T[0] += 1.0  # a version a second for 39 s
    lines = [ln.text for ln in m.logs if "published" in ln.text]
    assert len(lines) == 2 and "v31 published" in lines[1] and "v1 before" in lines[1], lines
    assert m.pointer is not None and m.pointer.version == 39  # the state is still exact


def test_the_recorded_feed_logs_are_readable() -> None:
    m = model()
    for t, p in load(DEFAULT_OUT):
        m.ingest(t, p)
    texts = [ln.text for ln in m.logs]
    assert not any("/w" in t.split(": ", 1)[-1] and "released" in t for t in texts), texts
    assert sum("published" in t for t in texts) <= 3, texts  # 73 pointers in the recording


async def test_disconnect_reason_and_the_farms_tasks_are_shown() -> None:
    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(160, 40)) as pilot:
        src.push(*ff.status(FARM, "a", "busy", task="clock.alarm"))
        src.push(*ff.status(FARM, "b", "busy", task="settings.wifi_off"))
        src.push(*ff.status("other", "c", "busy", task="elsewhere.only"))
        from tui.source import ConnectionChanged
        src.push_event(ConnectionChanged(False, "broker mqtt://x:1: Connection refused"))
        await app.settle()
        await pilot.pause()
        title = str(app.screen.query_one("#title").render())
        assert "disconnected (broker mqtt://x:1: Connection refused)" in title, title
        app.request("run_task", (FARM, "a"))
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        shown = str(app.screen.query_one("Label").render()) if app.screen.query("Label") \
            else ""
        assert "clock.alarm, settings.wifi_off" in shown and "elsewhere" not in shown, shown


def saved(app: DistrlTui) -> list[str]:
    """The screenshot notices shown (Textual's, once its thread has written the file)."""
    return [str(n.message) for n in app._notifications if "screenshot" in str(n.message)]


async def test_screenshot_without_a_downloads_folder_lands_in_the_working_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    app = DistrlTui(FakeSource(), clock=fixed_clock)
    async with app.run_test(size=(100, 30)) as pilot:
        app.action_screenshot()
        for _ in range(100):  # the delivery runs in a worker thread: said when done
            if saved(app):
                break
            await pilot.pause(0.05)
        shots = list(work.glob("*.svg"))
        assert len(shots) == 1 and saved(app) == [
            f"Saved screenshot to [$text-success]{str(shots[0])!r}"]
    assert not (home / "Downloads").exists()


def test_a_stopped_farm_leaves_no_devices_and_no_errors() -> None:
    """The recording ends with the real farm's clean stop: its devices went offline and
    their retained statuses were cleared, and the farm says it stopped. An ended run,
    not a fleet of faults, and nothing left for the next TUI to show."""
    feed = load(DEFAULT_OUT)
    m = model()
    for t, p in while_running(feed):
        m.ingest(t, p)
    running = set(m.devices)
    assert running
    for t, p in feed[len(while_running(feed)):]:
        m.ingest(t, p)
    assert m.devices == {} and set(m.removed) == running, (m.devices, m.removed)
    assert m.totals().error == 0 and not m.garbage, m.garbage
    assert {f: st.detail for f, st in m.farms.items()} == {f: "stopped" for f in m.farms}
    # a farm that crashed leaves its devices' retained statuses: ended, not errors …
    m.ingest(*ff.status(FARM, "controller", "offline"))
    m.ingest(*ff.status(FARM, "a", "offline"))
    assert (m.totals().ended, m.totals().error) == (1, 0)
    m.ingest(*ff.status(FARM, "controller", "ready"))  # … while one lost by a running
    assert m.totals().error == 1  # farm is a fault


async def test_the_logs_screen_follows_new_lines() -> None:
    from textual.widgets import RichLog

    src = FakeSource()
    app = DistrlTui(src, clock=fixed_clock)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("3")
        for batch in range(3):
            for i in range(80):
                src.push(*ff.status(FARM, f"d{batch}-{i}", "busy"))
            await app.settle()
            log = app.screen.query_one("#log", RichLog)
            # RichLog scrolls to the end *after* the next refresh (call_after_refresh):
            # wait for that refresh to have happened, not for a fixed time
            for _ in range(100):
                await pilot.pause()
                if log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y:
                    break
            assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y, (
                batch, log.scroll_y, log.max_scroll_y)

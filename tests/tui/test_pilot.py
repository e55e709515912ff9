"""Every screen and every action, driven with Textual's Pilot against the fake source;
assertions are on the commands the app published (parsed back like a farm would) and
on what the screens show."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.command import CommandPalette
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Input, RichLog, Sparkline, Static

from distrl_sdk.wire import topics
from tests.tui.conftest import FARM, feed_fleet, sent_commands
from tui import fakefeed as ff
from tui.app import DistrlTui
from tui.device import DeviceScreen
from tui.fleet import FleetScreen
from tui.fleet_table import FleetTable
from tui.learner import LearnerScreen, SeriesRow
from tui.logs import LogsScreen
from tui.modals import ConfirmScreen, HelpScreen, PromptScreen
from tui.model import FARM_STATUS_ID
from tui.source import FakeSource

SIZE = (150, 45)
App = Callable[..., DistrlTui]


def fleet(app: DistrlTui) -> FleetScreen:
    assert isinstance(app.screen, FleetScreen)
    return app.screen


def text(widget: Static) -> str:
    """What a Static shows, as plain text (markup strings, Text or Content)."""
    c = widget.content
    if isinstance(c, Text):
        return c.plain
    return str(Content.from_markup(c)) if isinstance(c, str) else str(c)


def table_rows(app: DistrlTui) -> list[str]:
    return [k[1] for k in fleet(app).table.keys]  # type: ignore[index]


async def test_fleet_lists_devices_with_thumbnails_and_totals(make_app: App,
                                                              source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 4)
        await app.settle()
        await pilot.pause()
        assert table_rows(app) == ["sim-0", "sim-1", "sim-2", "sim-3"]
        assert all(d.thumb is not None for d in app.model.devices.values())
        assert fleet(app).table.cells[(FARM, "sim-0")]["thumb"] is \
            app.model.devices[(FARM, "sim-0")].thumb
        bar = text(fleet(app).query_one("#statusbar", Static))
        assert "devices 4" in bar and "online 4" in bar and "busy 2" in bar
        assert "episodes 46" in bar  # 10 + 11 + 12 + 13
        assert "success" not in bar  # no learner yet


async def test_bars_show_episodes_learning_and_the_farm_link(make_app: App,
                                                            source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=(200, 45)) as pilot:
        feed_fleet(source, 2)
        source.push(*ff.status(FARM, "controller", "ready"))
        source.push(*ff.metrics(1, {"success_rate": 0.125, "version": 4.0, "episodes": 30}))
        source.push(*ff.metrics(2, {"success_rate": 0.375, "version": 9.0, "episodes": 60}))
        await app.settle()
        await pilot.pause()
        assert table_rows(app) == ["sim-0", "sim-1"]  # the farm itself is no row
        cells = fleet(app).table.cells
        assert [str(cells[(FARM, s)]["episodes"]) for s in ("sim-0", "sim-1")] == ["10", "11"]
        bar = text(fleet(app).query_one("#statusbar", Static))
        assert "devices 2 " in bar and "episodes 21" in bar
        assert "success 38 %" in bar and "policy v9" in bar
        assert f"farm {FARM} ● up" in text(fleet(app).query_one("#title", Static))
        source.push(*ff.status(FARM, "sim-0", "busy", episodes=12, step=3))
        source.push(*ff.status(FARM, "controller", "offline"))
        await app.settle()
        await pilot.pause()
        assert "episodes 23" in text(fleet(app).query_one("#statusbar", Static))
        assert f"farm {FARM} ● offline" in text(fleet(app).query_one("#title", Static))
        assert str(fleet(app).table.cells[(FARM, "sim-0")]["episodes"]) == "12"


async def test_newer_frame_replaces_the_thumbnail(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 1)
        await app.settle()
        first = app.model.devices[(FARM, "sim-0")].thumb
        source.push(*ff.frame(FARM, "sim-0", step=5, seed=3))
        await app.settle()
        await pilot.pause()
        dev = app.model.devices[(FARM, "sim-0")]
        assert dev.thumb is not first and dev.frame is not None and dev.frame.step == 5
        assert fleet(app).table.cells[(FARM, "sim-0")]["thumb"] is dev.thumb


async def test_filter_and_sort_keys(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 4)
        await app.settle()
        await pilot.press("slash", "b", "u", "s", "y")
        assert fleet(app).query_one("#filter", Input).has_focus
        await pilot.pause()
        assert table_rows(app) == ["sim-0", "sim-2"]
        await pilot.press("enter", "escape")  # back to the table, then clear the filter
        await pilot.pause()
        assert table_rows(app) == ["sim-0", "sim-1", "sim-2", "sim-3"]
        # s cycles: device → state → task → step → return → episodes → battery
        await pilot.press(*["s"] * 5)
        await pilot.pause()
        assert fleet(app).sort_key == "episodes"
        assert table_rows(app) == ["sim-3", "sim-2", "sim-1", "sim-0"]  # most first
        await pilot.press("S", "s")
        await pilot.pause()
        assert fleet(app).sort_key == "battery" and fleet(app).reverse
        await pilot.press("S")
        await pilot.pause()
        assert table_rows(app) == ["sim-3", "sim-2", "sim-1", "sim-0"]  # lowest first
        await pilot.press("S")
        await pilot.pause()
        assert table_rows(app) == ["sim-0", "sim-1", "sim-2", "sim-3"]


async def test_device_log_and_elements_scroll_and_keep_every_line(
        make_app: App, source: FakeSource) -> None:
    """The device log shows every kept line (not the last 40) in a list that follows
    its end unless scrolled up; the elements column scrolls too."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 1)
        await app.settle()
        key = (FARM, "sim-0")
        for i in range(120):
            app.model.log("info", f"event {i}", key)
        app.model.devices[key].rev += 1
        await pilot.press("enter")
        await app.settle()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DeviceScreen)
        log = text(screen.query_one("#devlog-text", Static))
        assert "event 0" in log and "event 119" in log
        box = screen.query_one("#devlog", VerticalScroll)
        assert box.max_scroll_y > 0 and box.scroll_y == box.max_scroll_y  # at the end
        box.scroll_home(animate=False)
        await pilot.pause()
        app.model.log("info", "event 120", key)
        app.model.devices[key].rev += 1
        screen.refresh_from_model()
        await pilot.pause()
        assert box.scroll_y == 0  # scrolled up by the user: left there
        assert "event 120" in text(screen.query_one("#devlog-text", Static))
        assert isinstance(screen.query_one("#elements"), VerticalScroll)


async def test_enter_opens_the_device_screen_and_esc_returns(make_app: App,
                                                             source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 3)
        await app.settle()
        await pilot.press("down", "down", "enter")
        await app.settle()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DeviceScreen) and screen.key == (FARM, "sim-2")
        dev = app.model.devices[(FARM, "sim-2")]
        assert dev.big is not None and dev.big.rows > dev.thumb.rows  # type: ignore[union-attr]
        assert screen.query_one("#screen", Static).content is dev.big
        info = text(screen.query_one("#info", Static))
        assert "Turn off Wi-Fi" in info and "76%" in info and "v3" in info
        hist = text(screen.query_one("#history-text", Static))
        assert "#2 swipe(" in hist
        log = text(screen.query_one("#devlog-text", Static))
        assert "unknown → busy" in log
        # the frame's UI elements; the newest tap (540, 700 px) landed on row 1
        els = text(screen.query_one("#elements-text", Static)).splitlines()
        assert els[0] == "UI elements (7, ▶ newest tap)"
        assert "  App 2 TextView" in els and "› Row 2 (current) LinearLayout" in els
        assert "› [x] Wi-Fi Switch" in els and "▶ Row 1 LinearLayout" in els
        # a new frame while open is drawn large
        old_big = dev.big
        source.push(*ff.frame(FARM, "sim-2", step=9, seed=2, actions=[
            {"action_type": "long_press", "x": 0.2, "y": 0.2}]))
        await app.settle()
        assert dev.big is not old_big and dev.frame is not None and dev.frame.step == 9
        assert "picture     step 9 (its elements, its action)" in text(
            screen.query_one("#info", Static))
        assert "#9 long_press" in text(screen.query_one("#history-text", Static))
        els = text(screen.query_one("#elements-text", Static)).splitlines()  # updated live
        assert "▶ Row 0 LinearLayout" in els and "› Row 1 (current) LinearLayout" in els
        assert "› [ ] Wi-Fi Switch" in els and "› Row 1 LinearLayout" not in els
        source.push(*ff.frame(FARM, "sim-2", step=10, seed=2, elements=[]))
        await app.settle()
        assert "none in this frame" in text(screen.query_one("#elements-text", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        assert app.decoder._focus is None


async def test_plain_device_actions_publish_commands(make_app: App,
                                                     source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        await pilot.press("down", "p", "u", "r", "e")
        await app.wait_commands()
        await app.settle()
        got = sent_commands(source)
        assert [(t, c.op, c.device_id) for t, c in got] == [
            (topics.cmd(FARM, "sim-1"), op, "sim-1")
            for op in ("pause", "resume", "reconnect", "release")]
        # the farm's answers (the responder) are matched to the commands and logged
        assert {r.command_id for r in app.model.results.values()} == {c.id for _t, c in got}
        assert any("pause on farm1/sim-1: ok" in ln.text for ln in app.model.logs)


async def test_commands_are_signed_with_the_operator_key_and_expire(
        make_app: App, source: FakeSource) -> None:
    """What a farm that trusts the operator's key checks: every command the TUI sends
    verifies against that key and carries an expiry (a replay later is refused)."""
    import time

    from distrl_sdk.wire.signing import SigningKey, TrustedKeys, Verdict, check_envelope

    key = SigningKey.generate("operator")
    app = make_app(signer=key)
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        await pilot.press("down", "p", "u")
        await app.wait_commands()
    assert len(source.sent) == 2
    for _topic, payload in source.sent:
        assert check_envelope(payload, TrustedKeys.of([key])) == (Verdict.OK, "operator")
    for _topic, cmd in sent_commands(source):
        assert cmd.expires_at is not None and 0 < cmd.expires_at - time.time() <= 60


async def test_actions_work_from_the_device_screen(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        await pilot.press("enter", "p")
        await app.wait_commands()
        assert [(c.op, c.device_id) for _t, c in sent_commands(source)] == [("pause", "sim-0")]


async def test_quarantine_asks_first(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "Quarantine farm1/sim-0?" in text(app.screen.query_one("#question", Static))
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen) and source.sent == []
        await pilot.press("x", "y")
        await app.wait_commands()
        assert [(c.op, c.device_id) for _t, c in sent_commands(source)] == \
            [("quarantine", "sim-0")]


async def test_run_task_takes_a_task_name(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("enter")  # empty: refused, the dialog stays
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"wifi_off", "enter")
        await app.wait_commands()
        [(topic, cmd)] = sent_commands(source)
        assert topic == topics.cmd(FARM, "sim-0")
        assert (cmd.op, cmd.args) == ("run_task", {"task": "wifi_off"})
        await pilot.press("t", "escape")  # cancel sends nothing
        await app.wait_commands()
        assert len(source.sent) == 1


async def test_run_task_offers_the_tasks_the_farm_names(make_app: App,
                                                       source: FakeSource) -> None:
    """The farm's own status lists its tasks (farm.transport.Publisher): the dialog shows
    how many, completes a prefix to one of them (→) and sends nothing else."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        source.push(*ff.status(FARM, FARM_STATUS_ID, "ready",
                               tasks=["clock.set_alarm", "settings.wifi_off"]))
        feed_fleet(source, 1)
        await app.settle()
        await pilot.press("t")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        assert "2 this farm runs: clock.set_alarm, settings.wifi_off" in app.screen.question
        await pilot.press(*"wifi", "enter")  # not a task: stays, says what was meant
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        assert "did you mean settings.wifi_off" in [n.message for n in app._notifications][-1]
        answer = app.screen.query_one("#answer", Input)
        answer.value = ""
        await pilot.press(*"settings.w", "right", "enter")  # → takes the completion
        await app.wait_commands()
        [(_, cmd)] = sent_commands(source)
        assert cmd.args == {"task": "settings.wifi_off"}


async def test_deploy_builds_the_deploy_command_line(make_app: App,
                                                     source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 1)
        await app.settle()
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"Turn off Wi-Fi", "enter")
        await pilot.pause()
        assert source.sent == []  # nothing goes to the farm
        line = app.model.logs[-1].text
        # the fake source knows no broker or learner; the command still runs as it is
        assert "distrl deploy --device sim-0 --policy random 'Turn off Wi-Fi'" in line
        assert any("distrl deploy" in n.message for n in app._notifications)
        assert "CHECKPOINT" not in line


async def test_deploy_command_names_the_published_policy_and_the_farms_adb_port(
        make_app: App, source: FakeSource) -> None:
    """What the real farm reports (DeviceStatus.adb_server) and a broker URL give a
    line that runs as it is on the farm's host (tests/deploy/test_deploy_trained.py runs
    that `--policy published` line against a real broker)."""
    source.broker_url = "mqtt://ops@10.0.0.5:1883"
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        source.push(*ff.status(FARM, "127.0.0.1:40001", "ready",
                               adb_server="127.0.0.1:41234"))
        await app.settle()
        line = app.deploy_hint((FARM, "127.0.0.1:40001"), "Turn off Wi-Fi")
        assert line == ("distrl deploy --device 127.0.0.1:40001 --adb-port 41234 --policy "
                        "published --broker mqtt://ops@10.0.0.5:1883 'Turn off Wi-Fi'")
        source.push(*ff.pointer(4, where="file:///runs/learner/policy-v4"))
        await app.settle()
        line = app.deploy_hint((FARM, "127.0.0.1:40001"), "Turn it off")
        assert "--policy /runs/learner/policy-v4 'Turn it off'" in line
        await pilot.pause()


async def test_deploy_command_carries_the_tuis_password_file(
        make_app: App, source: FakeSource, tmp_path: Path) -> None:
    """A broker with accounts (the demo's, `distrl broker`'s) refuses a login without a
    password: the line names the file the TUI was given, never the password itself."""
    source.broker_url = "mqtt://operator@127.0.0.1:1883"
    (tmp_path / "operator.pw").write_text("s3cret\n")
    app = make_app(password_file=tmp_path / "operator.pw")
    async with app.run_test(size=SIZE) as pilot:
        source.push(*ff.status(FARM, "127.0.0.1:40001", "ready"))
        await app.settle()
        line = app.deploy_hint((FARM, "127.0.0.1:40001"), "Turn off Wi-Fi")
        assert (f"--policy published --broker mqtt://operator@127.0.0.1:1883 "
                f"--password-file {tmp_path / 'operator.pw'} 'Turn off Wi-Fi'") in line
        assert "s3cret" not in line
        await pilot.pause()


async def test_command_palette_runs_device_actions(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 3)
        await app.settle()
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"Reconnect farm1/sim-2")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await app.wait_commands()
        await pilot.pause()
        assert [(c.op, c.device_id) for _t, c in sent_commands(source)] == \
            [("reconnect", "sim-2")]


async def test_readonly_refuses_every_mutation(make_app: App, source: FakeSource) -> None:
    app = make_app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        keys = [b.binding.key for b in app.screen.active_bindings.values()]
        for k in "purxetd":
            assert k not in keys  # hidden from the footer
            await pilot.press(k)
            await pilot.pause()
            assert isinstance(app.screen, FleetScreen)  # no dialog either
        await pilot.press("enter", "x")  # nor on the device screen
        await app.wait_commands()
        assert source.sent == []
        msgs = [n.message for n in app._notifications]
        assert any("read-only mode: quarantine is disabled" in m for m in msgs)
        assert all(not t.startswith(("Pause", "Quarantine")) for t, _h, _c in
                   app.palette_commands())
        app.request("pause", (FARM, "sim-0"))  # the palette path refuses too
        assert app.send_command((FARM, "sim-0"), "pause") is None
        await app.wait_commands()
        assert source.sent == []


async def test_help_lists_every_key(make_app: App) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = text(app.screen.query_one("#keys", Static))
        for cls in (DistrlTui, FleetScreen, FleetTable, DeviceScreen):
            for b in cls.BINDINGS:
                assert f" {b.key_display or b.key} " in keys, b  # type: ignore[union-attr]
        assert "ctrl+p" in keys
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)


async def test_learner_screen_plots_every_series(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        for i in range(6):
            source.push(*ff.metrics(i, {"success_rate": i / 5, "return_mean": i / 10,
                                        "replay_size": 100.0 * i, "custom_thing": 1.0}))
        source.push(*ff.metrics(1, {"episodes": 7.0}, farm=FARM))
        source.push(*ff.pointer(4))
        await pilot.press("2")
        await app.settle()
        await pilot.pause()
        assert isinstance(app.screen, LearnerScreen)
        rows = {r.series: r for r in app.screen.query(SeriesRow)}
        assert list(rows["success_rate"].query_one(Sparkline).data or []) == \
            [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
        assert list(rows["custom_thing"].query_one(Sparkline).data or []) == [1.0] * 6
        summary = text(app.screen.query_one("#summary", Static))
        assert "learner step 5" in summary and "v4" in summary and "episodes 7" in summary


async def test_logs_screen_shows_events_and_garbage(make_app: App,
                                                    source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 1)
        source.push(topics.status(FARM, "sim-0"), b"\x00garbage")
        source.push(topics.frame(FARM, "sim-0"), b"DRF1\x00\x00\x00\x05{{{{{")
        source.push(*ff.frame(FARM, "sim-0", image=b"not an image"))
        await pilot.press("3")
        await app.settle()
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        lines = [str(s.text) for s in app.screen.query_one("#log", RichLog).lines]
        assert any("unknown → busy" in ln for ln in lines)
        assert sum("rejected message on distrl/v1/farm1/" in ln for ln in lines) == 2
        assert any("bad frame" in ln for ln in lines)
        head = text(app.screen.query_one("#garbage", Static))
        assert "rejected messages: 3" in head and "bad_image 1" in head
        await pilot.press("1")  # the fleet still works
        await pilot.pause()
        assert table_rows(app) == ["sim-0"]


async def test_state_changes_notify(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 2)
        await app.settle()
        source.push(*ff.status(FARM, "sim-1", "quarantined", detail="operator"))
        source.push(*ff.status(FARM, "sim-0", "offline"))
        await app.settle()
        await pilot.pause()
        msgs = [n.message for n in app._notifications]
        assert "farm1/sim-1: ready → quarantined" in msgs
        assert "farm1/sim-0: busy → offline" in msgs
        bar = text(fleet(app).query_one("#statusbar", Static))
        assert "quarantined 1" in bar and "error 1" in bar


async def test_lost_link_is_shown_and_commands_fail_cleanly(make_app: App,
                                                            source: FakeSource) -> None:
    from tui.source import ConnectionChanged

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 1)
        await app.settle()
        source.push_event(ConnectionChanged(False, "broker gone"))
        await app.settle()
        await pilot.press("p")
        await app.wait_commands()
        await pilot.pause()
        assert "disconnected" in text(fleet(app).query_one("#title", Static))
        assert any("pause not sent" in n.message for n in app._notifications)
        assert source.sent == []


async def test_only_changed_visible_rows_are_redrawn(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 20, frames=False)
        await app.settle()
        await pilot.pause()
        table = fleet(app).table
        visible = table.size.height // table.row_height
        assert 3 < visible < 20
        built = table.rows_built
        source.push(*ff.status(FARM, "sim-1", "ready", battery=5))
        await app.settle()
        await pilot.pause()
        assert table.rows_built == built + 1  # that row only
        source.push(*ff.status(FARM, "sim-19", "ready", battery=5))  # below the fold
        await app.settle()
        await pilot.pause()
        assert table.rows_built == built + 1
        await pilot.press("end")  # scrolled into view: drawn now
        await pilot.pause()
        assert table.rows_built > built + 1
        assert fleet(app).current_device() == (FARM, "sim-19")


async def test_mouse_selects_and_double_click_opens(make_app: App, source: FakeSource) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 4)
        await app.settle()
        await pilot.pause()
        h = fleet(app).table.row_height
        await pilot.click("#fleet", offset=(20, 2 * h + 1))
        assert fleet(app).current_device() == (FARM, "sim-2")
        await pilot.double_click("#fleet", offset=(20, 3 * h))
        await pilot.pause()
        assert isinstance(app.screen, DeviceScreen) and app.screen.key == (FARM, "sim-3")


async def test_readonly_filter_typing_is_not_refused(make_app: App, source: FakeSource) -> None:
    app = make_app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        feed_fleet(source, 3)
        await app.settle()
        await pilot.press("slash", "p", "u", "x")
        await pilot.pause()
        assert fleet(app).query_one("#filter", Input).value == "pux"
        assert not any("read-only" in n.message for n in app._notifications)


async def test_learner_screen_takes_any_metric_name(make_app: App, source: FakeSource) -> None:
    """The real learner publishes ``train/*``, ``unlearnable/*`` and ``rejected/<reason>``;
    a Textual id built from such a name used to kill the app (and the demo with it)."""
    names = ["train/actor_loss", "unlearnable/no decisions", "rejected/bad json",
             "refused/[b]x[/b]", "train/actor.loss", "train/actor_loss ", "naïve→λ", ""]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        source.push(*ff.metrics(1, {n: float(i) for i, n in enumerate(names)}))
        await pilot.press("2")
        await app.settle()
        await pilot.pause()
        assert isinstance(app.screen, LearnerScreen)
        rows = {r.series: r for r in app.screen.query(SeriesRow)}
        assert set(names) <= set(rows)
        assert len({r.id for r in rows.values()}) == len(rows)
        assert list(rows["refused/[b]x[/b]"].query_one(Sparkline).data or []) == [3.0]

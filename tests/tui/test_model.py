"""The TUI's headless parts: the model folding wire messages, half-block rendering,
action marks and the coalescing frame decoder."""

from __future__ import annotations

import time
from typing import Any

from PIL import Image

from distrl_sdk.wire import DeviceFrame, topics
from tests.tui.conftest import FARM, NOW, fixed_clock
from tui import fakefeed as ff
from tui.decoder import FrameDecoder, FrameJob
from tui.imaging import decode, draw_marks, fit_cells, halfblock, marks_of
from tui.model import FARM_STATUS_ID, FleetModel


def model_with(*wires: tuple[str, bytes]) -> FleetModel:
    m = FleetModel(fixed_clock)
    for t, p in wires:
        m.ingest(t, p)
    return m


def test_statuses_fold_into_devices_and_totals() -> None:
    m = model_with(ff.status(FARM, "a", "busy"), ff.status(FARM, "b", "ready"),
                   ff.status(FARM, "c", "quarantined"), ff.status("farm2", "d", "offline"),
                   ff.status(FARM, "e", "paused"))
    tot = m.totals()
    assert (tot.total, tot.online, tot.busy, tot.paused, tot.quarantined, tot.error) == \
        (5, 4, 1, 1, 1, 1)
    assert ("farm2", "d") in m.devices
    m.ingest(*ff.status(FARM, "a", "offline", detail="heartbeat lost"))
    assert m.totals().error == 2
    assert any(n[1] == "farm1/a: busy → offline" for n in m.notices)
    assert "heartbeat lost" in m.logs[-1].text


def test_busy_ready_churn_is_logged_but_not_notified() -> None:
    m = model_with(ff.status(FARM, "a", "ready"))
    m.notices.clear()
    m.ingest(*ff.status(FARM, "a", "busy"))
    m.ingest(*ff.status(FARM, "a", "ready"))
    assert m.notices == []
    assert [c.new for c in m.changes] == ["ready", "busy", "ready"]


def test_garbage_is_counted_and_logged_never_raised() -> None:
    m = FleetModel(fixed_clock)
    cases = [(topics.status(FARM, "a"), b"{not json"),
             (topics.status(FARM, "a"), b"\xff" * 10),
             (topics.frame(FARM, "a"), b"DRF1garbage"),
             (topics.metrics(FARM), b'{"schema": "command", "version": 1, "body": {}}'),
             ("distrl/v1/farm1/unknown/x", b"x"),
             (topics.status(FARM, "a"), b"[]")]
    for t, p in cases:
        assert m.ingest(t, p) is None
    assert sum(m.garbage.values()) == len(cases)
    assert m.devices == {}
    assert all(line.level == "error" for line in m.logs)


def test_filter_and_sort() -> None:
    m = model_with(ff.status(FARM, "pixel-2", "busy", task="wifi_off", battery=20),
                   ff.status(FARM, "pixel-1", "ready", battery=90),
                   ff.status("lab", "emu-9", "busy", task="clock_alarm", battery=50))
    assert m.visible() == [("farm1", "pixel-1"), ("farm1", "pixel-2"), ("lab", "emu-9")]
    assert m.visible("busy") == [("farm1", "pixel-2"), ("lab", "emu-9")]
    assert m.visible("busy !wifi") == [("lab", "emu-9")]
    assert m.visible("LAB") == [("lab", "emu-9")]
    assert [k[1] for k in m.visible(sort="battery")] == ["pixel-2", "emu-9", "pixel-1"]
    assert [k[1] for k in m.visible(sort="battery", reverse=True)] == \
        ["pixel-1", "emu-9", "pixel-2"]
    assert m.visible(sort="state")[-1] == ("farm1", "pixel-1")


def test_action_history_comes_from_statuses_else_frames() -> None:
    act = {"action_type": "click", "x": 0.5, "y": 0.5}
    px = {"action_type": "click", "x": 540, "y": 1200}  # the same tap, as a frame has it
    m = model_with(ff.status(FARM, "a", "busy", step=3, last_action=act),
                   ff.status(FARM, "a", "busy", step=3, last_action=act),  # re-published
                   ff.frame(FARM, "a", step=3, actions=[px]),
                   ff.status(FARM, "a", "busy", step=4, last_action=act),
                   ff.frame(FARM, "b", step=1, actions=[px]),  # a source without statuses
                   ff.frame(FARM, "b", step=1, actions=[px]),
                   ff.frame(FARM, "b", step=2, actions=[px, act]))
    assert list(m.devices[(FARM, "a")].actions) == ["#3 click(x=0.5, y=0.5)",
                                                    "#4 click(x=0.5, y=0.5)"]
    assert list(m.devices[(FARM, "b")].actions) == ["#1 click(x=540, y=1200)",
                                                    "#2 click(x=0.5, y=0.5)"]


def test_learner_series_and_pointer() -> None:
    m = model_with(*(ff.metrics(i, {"success_rate": i / 10, "entropy": 1 - i / 10})
                     for i in range(5)), ff.pointer(7))
    assert list(m.series["success_rate"]) == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert m.learner_step == 4
    assert m.pointer is not None and m.pointer.version == 7


def test_halfblock_cells_carry_upper_and_lower_pixels() -> None:
    img = Image.new("RGB", (2, 4), (255, 0, 0))
    img.putpixel((0, 1), (0, 0, 255))  # lower half of the first cell
    hb = halfblock(img, 2, 2)
    assert (hb.cols, hb.rows) == (2, 2)
    first = hb.lines[0][0]
    assert first.text == "▀"
    assert first.style is not None and first.style.color is not None
    assert first.style.color.get_truecolor() == (248, 0, 0)  # quantised to 5 bits
    assert first.style.bgcolor is not None
    assert first.style.bgcolor.get_truecolor() == (0, 0, 248)
    assert "".join(s.text for s in hb.lines[1]) == "▀▀"  # equal neighbours merged


def test_fit_cells_keeps_the_aspect_ratio() -> None:
    assert fit_cells(1080, 2400, 80, 40) == (36, 40)
    assert fit_cells(2400, 1080, 80, 40) == (80, 18)


def test_marks_accept_pixels_normalised_px_keys_and_scroll() -> None:
    marks = marks_of([{"action_type": "click", "x": 540, "y": 1200},
                      {"action_type": "long_press", "x": 0.25, "y": 0.75},
                      {"action_type": "click", "x": 0.5, "y": 0.5, "x_px": 108, "y_px": 240},
                      {"action_type": "swipe", "x1": 0.5, "y1": 0.9, "x2": 0.5, "y2": 0.1},
                      {"action_type": "scroll", "direction": "down"},
                      {"action_type": "input_text", "text": "hi"},
                      {"action_type": "click", "x": "bad", "y": None}, "junk"],  # type: ignore[list-item]
                     1080, 2400)
    assert [(m.kind, round(m.x, 2), round(m.y, 2)) for m in marks] == [
        ("tap", 0.5, 0.5), ("long_press", 0.25, 0.75), ("tap", 0.1, 0.1),
        ("swipe", 0.5, 0.9), ("swipe", 0.5, marks[4].y)]
    assert marks[4].y2 is not None and marks[4].y2 < marks[4].y  # finger moves up


def test_drawn_marks_change_pixels_at_the_tap() -> None:
    img = Image.new("RGB", (40, 80), (0, 0, 0))
    out = draw_marks(img, marks_of([{"action_type": "click", "x": 0.5, "y": 0.5}], 1, 1))
    near = [out.getpixel((x, y)) for x in range(16, 24) for y in range(36, 44)]
    assert sum(p != (0, 0, 0) for p in near) >= 4
    assert out.getpixel((2, 2)) == (0, 0, 0)  # nothing far from the tap
    assert img.getextrema() == ((0, 0), (0, 0), (0, 0))  # the input is not modified


def test_decoder_coalesces_to_the_newest_frame_per_device() -> None:
    dec = FrameDecoder(thumb_rows=4, thumb_cols=5)
    key = (FARM, "a")
    frames = []
    for step in range(3):
        body = DeviceFrame(device_id="a", width=108, height=240, screen_width=1080,
                           screen_height=2400, step=step, captured_at=NOW)
        frames.append(FrameJob(key, body, ff.screen_jpeg(0, step)))
    for job in frames:  # thread not started yet: all three queue up
        dec.submit(job)
    dec.submit(FrameJob((FARM, "b"), frames[0].frame, b"not a jpeg"))
    dec.start()
    try:
        deadline = time.monotonic() + 10
        while not dec.idle and time.monotonic() < deadline:
            time.sleep(0.01)
        done = dec.take()
    finally:
        dec.stop()
    assert dec.stats.coalesced == 2 and dec.stats.decoded == 1 and dec.stats.errors == 1
    assert done[key].frame.step == 2 and done[key].thumb is not None
    assert done[(FARM, "b")].thumb is None and done[(FARM, "b")].error


def test_focused_device_gets_a_large_picture_with_marks() -> None:
    dec = FrameDecoder(thumb_rows=4, thumb_cols=5)
    body = DeviceFrame(device_id="a", width=108, height=240, screen_width=1080,
                       screen_height=2400, actions=[{"action_type": "click", "x": 540,
                                                     "y": 1200}])
    job = FrameJob((FARM, "a"), body, ff.screen_jpeg(1))
    plain = dec.render(job, None)
    big = dec.render(job, ((FARM, "a"), 40, 30))
    assert plain.big is None and plain.thumb is not None and plain.thumb.rows == 4
    assert big.big is not None and (big.big.cols, big.big.rows) == (27, 30)
    assert decode(ff.screen_jpeg(1)).size == (108, 240)


def test_the_farm_status_is_its_link_not_a_device() -> None:
    m = model_with(ff.status(FARM, "a", "busy", episodes=7),
                   ff.status(FARM, "b", "ready", episodes=5),
                   ff.status(FARM, FARM_STATUS_ID, "ready"),
                   ff.status("lab", FARM_STATUS_ID, "offline"))
    assert set(m.devices) == {(FARM, "a"), (FARM, "b")}
    tot = m.totals()
    assert (tot.total, tot.online, tot.error, tot.episodes) == (2, 2, 0, 12)
    assert m.farm_links() == [(FARM, True), ("lab", False)]
    m.notices.clear()
    m.ingest(*ff.status(FARM, FARM_STATUS_ID, "offline"))
    assert m.farm_links()[0] == (FARM, False)
    assert m.notices == [("warning", f"farm {FARM}: offline")]
    assert "farm farm1: offline" in m.logs[-1].text
    assert m.totals().total == 2  # its devices keep their rows (their own statuses say)


def test_learner_latest_scalars() -> None:
    m = FleetModel(fixed_clock)
    assert m.learner_latest("success_rate") is None
    for i, sr in enumerate((0.1, 0.25, 0.4)):
        m.ingest(*ff.metrics(i, {"success_rate": sr, "version": float(3 + i)}))
    assert m.learner_latest("success_rate") == 0.4 and m.learner_latest("version") == 5.0


def test_routine_live_details_are_not_logged() -> None:
    m = model_with(ff.status(FARM, "a", "busy", detail="leased: w0"))
    n = m.log_total
    m.ingest(*ff.status(FARM, "a", "busy", detail="episode running", step=1))
    m.ingest(*ff.status(FARM, "a", "busy", detail="episode over", step=2))
    assert m.log_total == n
    m.ingest(*ff.status(FARM, "a", "busy", detail="pausing"))
    assert m.log_total == n + 1


def test_a_stopped_farm_clears_its_devices_and_says_it_stopped() -> None:
    """What farm.transport.Publisher.stop publishes (tests/transport/test_delivery.py
    checks that side against mosquitto): offline, then an empty retained payload per
    device, then the farm's own status offline with the detail ``stopped``."""
    from farm.transport.publisher import STOPPED

    m = model_with(ff.status(FARM, "a", "busy"), ff.status(FARM, "b", "ready"),
                   ff.status("lab", "c", "ready"), ff.status(FARM, FARM_STATUS_ID, "ready"))
    m.ingest(*ff.status(FARM, "a", "offline"))
    m.ingest(topics.status(FARM, "a"), b"")
    m.ingest(topics.status(FARM, "b"), b"")
    m.ingest(*ff.status(FARM, FARM_STATUS_ID, "offline", detail=STOPPED))
    assert set(m.devices) == {("lab", "c")}
    assert sorted(m.removed) == [(FARM, "a"), (FARM, "b")]
    assert not m.garbage  # a cleared status is not garbage
    assert "left the fleet" in m.logs[-2].text and m.logs[-1].text == f"farm {FARM}: stopped"
    assert m.logs[-1].level == "info"
    m.ingest(topics.status(FARM, "zz"), b"")  # clearing an unknown device: nothing
    assert set(m.devices) == {("lab", "c")}


def test_a_repeated_log_line_is_counted_not_repeated() -> None:
    m = FleetModel(fixed_clock)
    for _ in range(5):
        m.ingest("distrl/v1/farm1/status/x", b"{not json")
    m.log("info", "something else")
    texts = [ln.text for ln in m.logs]
    assert len(texts) == 3 and texts[0].startswith("rejected message on")
    assert texts[1] == "… the line above 4 more times" and texts[2] == "something else"
    assert m.garbage["bad_json"] == 5  # every one still counted by reason


def test_forged_statuses_cannot_grow_the_fleet_without_bound() -> None:
    """20,000 forged statuses made 20,000 rows: the fleet holds ``max_devices``, making
    room by dropping the longest-unseen offline device, and counts the rest."""
    m = FleetModel(fixed_clock, max_devices=50)
    m.ingest(*ff.status(FARM, "real", "busy"))
    for i in range(200):
        m.ingest(*ff.status("evil", f"x{i}", "ready"))
    assert len(m.devices) == 50 and (FARM, "real") in m.devices
    assert m.garbage["too_many_devices"] == 151
    assert sum("more than 50 devices" in ln.text for ln in m.logs) == 1
    m.ingest(*ff.status("evil", "x0", "offline"))  # an offline one makes room
    m.ingest(*ff.status(FARM, "new", "ready"))
    assert (FARM, "new") in m.devices and ("evil", "x0") not in m.devices
    assert len(m.devices) == 50


def test_the_history_has_every_step_episode_separators_and_outcomes() -> None:
    """What farm.controller sends (tests/tui/test_live_status.py checks it against a
    real farm): each status carries the steps since the previous one; the newest
    finished episode's outcome rides along. Replayed statuses add nothing."""
    def act(k: int) -> dict[str, Any]:
        return {"step": k, "action": {"action_type": "click", "x": k, "y": k}}

    m = model_with(ff.status(FARM, "a", "busy", episode=1, task="t.one",
                             steps=[act(0), act(1)]),
                   ff.status(FARM, "a", "busy", episode=1, task="t.one", steps=[act(2)]),
                   ff.status(FARM, "a", "busy", episode=1, task="t.one", steps=[act(2)]),
                   ff.status(FARM, "a", "busy", episode=2, task="t.two", steps=[act(0)],
                             last_episode={"episode": 1, "outcome": "success",
                                           "return": 1.0, "steps": 3}),
                   ff.status(FARM, "a", "ready", episode=None,
                             last_episode={"episode": 1, "outcome": "success",
                                           "return": 1.0, "steps": 3}))
    assert list(m.devices[(FARM, "a")].actions) == [
        "▶ episode 1: t.one", "  #0 click(x=0, y=0)", "  #1 click(x=1, y=1)",
        "  #2 click(x=2, y=2)", "■ episode 1: success · return +1.00 · 3 steps",
        "▶ episode 2: t.two", "  #0 click(x=0, y=0)"]


def test_the_decoder_renders_only_devices_on_screen_and_catches_up() -> None:
    """The wall shows 20 of 64 phones at 200×50: off-screen frames wait (newest only)
    and are rendered the moment their device scrolls into view."""
    dec = FrameDecoder(4, 8)
    dec.set_tile(10, 10)
    dec.start()
    try:
        keys = [(FARM, f"d{i}") for i in range(6)]
        dec.set_visible(keys[:2])
        for k in keys:
            t, p = ff.frame(*k)
            m = FleetModel(fixed_clock)
            job = m.ingest(t, p)
            assert job is not None
            dec.submit(job)
        deadline = time.monotonic() + 10
        got: dict[Any, Any] = {}
        while (len(got) < 2 or not dec.idle) and time.monotonic() < deadline:
            got.update(dec.take())
            time.sleep(0.01)  # the decoder thread: nothing to await from here
        assert set(got) == set(keys[:2]) and dec.stats.deferred == 4
        dec.set_visible(keys[2:4])  # scrolled
        while (len(got) < 4 or not dec.idle) and time.monotonic() < deadline:
            got.update(dec.take())
            time.sleep(0.01)
        assert set(got) == set(keys[:4])
        dec.set_visible(None)  # the list view: everyone
        while len(got) < 6 and time.monotonic() < deadline:
            got.update(dec.take())
            time.sleep(0.01)
        assert set(got) == set(keys)
    finally:
        dec.stop()

"""Shipped evaluators against real simulated-phone state (SimPhone behind the Device seam)."""

from __future__ import annotations

import gc
import json

import pytest

from distrl_sdk.device import Device
from distrl_sdk.errors import DeviceOffline, TaskError
from distrl_sdk.evaluators import (
    ActivityIs,
    AllOf,
    AnswerMatches,
    AnyOf,
    FileContains,
    LogcatRegex,
    RewardEvaluator,
    SettingEquals,
    ShellRegex,
    UIPredicate,
    Weighted,
    episode_state,
    fill,
    fill_regex,
    parse_logcat,
    safe_evaluate,
    safe_step_reward,
)
from distrl_sdk.evaluators.activity import parse_focus
from distrl_sdk.evaluators.answer import extract_numbers
from distrl_sdk.evaluators.files import json_lookup
from distrl_sdk.trajectory import Step, Trajectory
from farm.sim.phone import SimPhone
from tests.sdk.sim_device import SimDevice, SimDeviceNoXml


@pytest.fixture
def dev() -> SimDevice:
    return SimDevice()


@pytest.fixture
def traj() -> Trajectory:
    return Trajectory(task="t", instruction="do it")


async def score(ev: RewardEvaluator, dev: Device, traj: Trajectory, **params: object) -> float:
    return await ev.evaluate(dev, traj, params)


async def open_settings(dev: SimDevice) -> None:
    assert (await dev.shell("am start -n com.android.settings/.Settings")).ok


# -- setting -----------------------------------------------------------------------------
async def test_setting_equals_follows_settings_put(dev: SimDevice, traj: Trajectory) -> None:
    on, off = SettingEquals("global", "wifi_on", "1"), SettingEquals("global", "wifi_on", "0")
    assert await score(on, dev, traj) == 1.0
    assert await score(off, dev, traj) == 0.0
    await dev.shell("settings put global wifi_on 0")
    assert await score(on, dev, traj) == 0.0
    assert await score(off, dev, traj) == 1.0
    assert await score(SettingEquals("global", "wifi_on", False), dev, traj) == 1.0
    assert await score(SettingEquals("global", "wifi_on", 0), dev, traj) == 1.0
    assert await score(SettingEquals("global", "wifi_on", "{want}"), dev, traj, want=0) == 1.0
    assert await score(SettingEquals("global", "{key}", "0"), dev, traj, key="wifi_on") == 1.0
    assert await score(SettingEquals("system", "no_such_key", None), dev, traj) == 1.0
    assert off.describe() == "setting(global/wifi_on == '0')"
    with pytest.raises(TaskError, match="namespace"):
        SettingEquals("local", "x", "1")  # type: ignore[arg-type]


# -- activity ----------------------------------------------------------------------------
async def test_activity_is(dev: SimDevice, traj: Trajectory) -> None:
    settings = ActivityIs("com.android.settings")
    assert await score(settings, dev, traj) == 0.0  # the launcher is in front
    await open_settings(dev)
    assert await score(settings, dev, traj) == 1.0
    assert await score(ActivityIs("com.android.settings", ".Settings"), dev, traj) == 1.0
    assert await score(ActivityIs("com.android.settings", "com.android.settings.Settings"),
                       dev, traj) == 1.0
    assert await score(ActivityIs("com.android.settings", ".SubSettings"), dev, traj) == 0.0
    assert await score(ActivityIs("{pkg}"), dev, traj, pkg="com.android.settings") == 1.0
    assert await score(ActivityIs("com.android.chrome"), dev, traj) == 0.0
    assert settings.describe() == "activity(com.android.settings)"
    with pytest.raises(TaskError, match="package name"):
        ActivityIs("com.android.settings/.Settings")


def test_parse_focus_prefers_window_and_falls_back_to_app() -> None:
    app = "  mFocusedApp=ActivityRecord{2 u0 com.b/.X t3}"
    win = "  mCurrentFocus=Window{1 u0 com.a/com.a.Main}\n" + app
    assert parse_focus(win) == ("com.a", "com.a.Main")
    app_only = "  mCurrentFocus=Window{1 u0 StatusBar}\n" + app
    assert parse_focus(app_only) == ("com.b", "com.b.X")
    assert parse_focus("mCurrentFocus=null") is None


# -- ui ----------------------------------------------------------------------------------
async def test_ui_selectors_on_the_settings_screen(dev: SimDevice, traj: Trajectory) -> None:
    net = UIPredicate(text="Network & internet")
    assert await score(net, dev, traj) == 0.0
    await open_settings(dev)
    assert await score(net, dev, traj) == 1.0
    cases: list[tuple[UIPredicate, float]] = [
        (UIPredicate(text="network & internet"), 0.0),  # exact is case-sensitive
        (UIPredicate(text_contains="NETWORK"), 1.0),
        (UIPredicate(text_regex=r"^\d+% - Charging$"), 1.0),
        (UIPredicate(text_regex=r"^\d{3}% - Charging$"), 0.0),
        (UIPredicate(resource_id="homepage_title", text="Settings"), 1.0),
        (UIPredicate(resource_id="com.android.settings:id/homepage_title"), 1.0),
        (UIPredicate(resource_id="android:id/title", count={"min": 5}), 1.0),
        (UIPredicate(resource_id="android:id/title", count={"max": 3}), 0.0),
        (UIPredicate(resource_id="homepage_title", count=1), 1.0),
        (UIPredicate(resource_id="homepage_title", count=2), 0.0),
        (UIPredicate(class_name="android.widget.Switch"), 0.0),
        (UIPredicate(text="Wi-Fi", exists=False), 1.0),
        (UIPredicate(text="Battery", exists=False), 0.0),
        (UIPredicate(text="Battery", package="com.android.settings", enabled=True), 1.0),
        (UIPredicate(text="Battery", package="com.android.chrome"), 0.0),
        (UIPredicate(text="Battery", focused=True), 0.0),
        (UIPredicate(content_desc="nothing has this"), 0.0),
    ]
    for ev, want in cases:
        assert await score(ev, dev, traj) == want, ev.describe()


async def test_ui_checked_switch_follows_setting(dev: SimDevice, traj: Trajectory) -> None:
    await open_settings(dev)
    el = next(e for e in await dev.ui_elements() if e.text == "Network & internet")
    await dev.shell("input tap {} {}".format(*el.bounds.center))
    switch_on = UIPredicate(class_name="android.widget.Switch", checked=True)
    switch_off = UIPredicate(class_name="android.widget.Switch", checked=False)
    assert await score(switch_off, dev, traj) == 1.0
    assert await score(switch_on, dev, traj) == 0.0
    await dev.shell("settings put global airplane_mode_on 1")
    assert await score(switch_on, dev, traj) == 1.0


async def test_ui_params_fill_strings_and_escape_regexes(dev: SimDevice, traj: Trajectory
                                                         ) -> None:
    await open_settings(dev)
    assert await score(UIPredicate(text="{label}"), dev, traj, label="Battery") == 1.0
    # a param in a regex is literal text: "." does not match any character
    assert await score(UIPredicate(text_regex="^Network {amp} internet$"), dev, traj,
                       amp="&") == 1.0
    assert await score(UIPredicate(text_regex="^Batter{x}$"), dev, traj, x=".") == 0.0


async def test_ui_xpath_on_raw_xml(dev: SimDevice, traj: Trajectory) -> None:
    await open_settings(dev)
    title = UIPredicate(xpath=".//node[@resource-id='com.android.settings:id/homepage_title']")
    assert await score(title, dev, traj) == 1.0
    rows = UIPredicate(xpath=".//node[@resource-id='android:id/title']", count={"min": 5})
    assert await score(rows, dev, traj) == 1.0
    summary_of = UIPredicate(xpath=".//node[@text='{label}']/../node[@text='{summary}']")
    assert await score(summary_of, dev, traj, label="Location", summary="On") == 1.0
    assert await score(summary_of, dev, traj, label="Location", summary="Off") == 0.0
    gone = UIPredicate(xpath=".//node[@text='Wi-Fi']", exists=False)
    assert await score(gone, dev, traj) == 1.0
    # a device without ui_xml(): the evaluator dumps through the shell
    bare = SimDeviceNoXml(dev.phone)
    assert not callable(getattr(bare, "ui_xml", None))
    assert await score(title, bare, traj) == 1.0
    assert await score(UIPredicate(text="Battery"), bare, traj) == 1.0


def test_ui_config_errors() -> None:
    with pytest.raises(TaskError, match="cannot be combined"):
        UIPredicate(xpath=".//node", text="x")
    with pytest.raises(TaskError, match="at least one selector"):
        UIPredicate()
    with pytest.raises(TaskError, match="contradict"):
        UIPredicate(text="x", count=2, exists=False)
    with pytest.raises(TaskError, match="max 1 < min 2"):
        UIPredicate(text="x", count={"min": 2, "max": 1})
    with pytest.raises(TaskError, match="XPath subset"):
        UIPredicate(xpath="//node[contains(@text,'x')]")
    with pytest.raises(TaskError, match="does not compile"):
        UIPredicate(text_regex="(")


def test_ui_describe() -> None:
    assert UIPredicate(text="Wi-Fi", checked=False).describe() == "ui(text='Wi-Fi', checked=False)"
    assert UIPredicate(text="x", exists=False).describe() == "ui(text='x', absent)"
    ranged = UIPredicate(text="x", count={"min": 1, "max": 3})
    assert ranged.describe() == "ui(text='x', count∈[1,3])"
    assert "xpath=" in UIPredicate(xpath=".//node").describe()


# -- shell -------------------------------------------------------------------------------
async def test_shell_regex(dev: SimDevice, traj: Trajectory) -> None:
    assert await score(ShellRegex("getprop ro.product.model", r"\w+"), dev, traj) == 1.0
    hello = ShellRegex("echo hello {who}", r"^hello {who}$")
    assert await score(hello, dev, traj, who="bob") == 1.0
    assert await score(ShellRegex("echo hello", "bye"), dev, traj) == 0.0
    assert await score(ShellRegex("false"), dev, traj) == 0.0
    assert await score(ShellRegex("true"), dev, traj) == 1.0
    assert await score(ShellRegex("exit 3", expect_exit=3), dev, traj) == 1.0
    assert await score(ShellRegex("echo x; exit 3", "x"), dev, traj) == 0.0  # exit must be 0
    assert await score(ShellRegex("echo x; exit 3", "x", expect_exit=None), dev, traj) == 1.0
    assert await score(ShellRegex("cat /nope", "No such file", stream="stderr",
                                  expect_exit=None), dev, traj) == 1.0
    assert hello.describe() == "shell(`echo hello {who}`, stdout~/^hello {who}$/, exit=0)"
    with pytest.raises(TaskError, match="neither"):
        ShellRegex("echo", expect_exit=None)


# -- file --------------------------------------------------------------------------------
async def test_file_contains(dev: SimDevice, traj: Trajectory) -> None:
    notes = "/sdcard/Documents/notes.txt"
    assert await score(FileContains(notes), dev, traj) == 0.0  # missing: 0, not an error
    await dev.shell(f"mkdir -p /sdcard/Documents && echo 'buy milk at 7' > {notes}")
    assert await score(FileContains(notes), dev, traj) == 1.0
    assert await score(FileContains(notes, r"milk at \d+"), dev, traj) == 1.0
    assert await score(FileContains(notes, "bread"), dev, traj) == 0.0
    assert await score(FileContains("/sdcard/Documents/{name}.txt", "{item}"), dev, traj,
                       name="notes", item="milk") == 1.0

    doc = {"alarms": [{"hour": 7, "label": "Gym", "on": True}], "name": "x y"}
    await dev.push(json.dumps(doc).encode(), "/sdcard/alarms.json")
    path = "/sdcard/alarms.json"
    assert await score(FileContains(path, json_path="alarms[0].hour", value=7), dev, traj) == 1.0
    assert await score(FileContains(path, json_path="$.alarms[0].hour", value="{h}"), dev,
                       traj, h=7) == 1.0
    assert await score(FileContains(path, json_path="alarms[0].hour", value=8), dev, traj) == 0.0
    assert await score(FileContains(path, json_path="alarms[0].on", value=True), dev, traj) == 1.0
    assert await score(FileContains(path, json_path="alarms[0].on", value=1), dev, traj) == 0.0
    assert await score(FileContains(path, json_path="alarms[3].hour", value=7), dev, traj) == 0.0
    assert await score(FileContains(path, json_path="['name']", value="x y"), dev, traj) == 1.0
    assert await score(FileContains(notes, json_path="a", value=1), dev, traj) == 0.0  # not JSON
    with pytest.raises(TaskError, match="needs a `value`"):
        FileContains(path, json_path="a")
    with pytest.raises(TaskError, match="absolute"):
        FileContains("notes.txt")


async def test_file_contains_raises_device_faults(traj: Trajectory) -> None:
    class Offline(SimDevice):
        async def pull(self, remote_path: str) -> bytes:
            raise DeviceOffline("gone", serial=self.serial)

        async def shell(self, command: str, *, timeout: float = 30.0):  # type: ignore[no-untyped-def]
            raise DeviceOffline("gone", serial=self.serial)

    with pytest.raises(DeviceOffline):
        await score(FileContains("/sdcard/x"), Offline(), traj)


def test_json_lookup() -> None:
    doc = {"a": {"b": [1, {"c": "d"}]}}
    assert json_lookup(doc, "a.b[1].c") == "d"
    assert json_lookup(doc, "$.a.b[-1]['c']") == "d"
    with pytest.raises(KeyError):
        json_lookup(doc, "a.x")


# -- logcat ------------------------------------------------------------------------------
async def test_logcat_regex_episode_and_step_rewards(dev: SimDevice, traj: Trajectory) -> None:
    await dev.shell("logcat -c")
    ev = LogcatRegex(r"reward: ([\d.]+)", tag="AndroidRLTask")
    assert await score(ev, dev, traj) == 0.0
    assert await ev.step_reward(dev, traj, {}) == 0.0
    dev.log("AndroidRLTask", "reward: 1.0")
    dev.log("OtherTag", "reward: 5.0")  # another tag: not counted
    assert await score(ev, dev, traj) == 1.0
    assert await ev.step_reward(dev, traj, {}) == 1.0
    assert await ev.step_reward(dev, traj, {}) == 0.0  # nothing new since
    dev.log("AndroidRLTask", "reward: 0.5")
    dev.log("AndroidRLTask", "reward: 0.5")
    assert await ev.step_reward(dev, traj, {}) == 2.0
    # another episode has its own step state
    other = Trajectory(task="t", instruction="again")
    assert await ev.step_reward(dev, other, {}) == 3.0

    assert await score(LogcatRegex("reward", min_count=3), dev, traj) == 1.0  # any tag
    assert await score(LogcatRegex("reward", tag="AndroidRLTask", min_count=4), dev, traj) == 0.0
    assert await score(LogcatRegex("item {n} done", tag="{tag}"), dev, traj,
                       n=3, tag="AndroidRLTask") == 0.0
    assert ev.describe() == r"logcat(AndroidRLTask: /reward: ([\d.]+)/)"


async def test_logcat_sees_system_lines(dev: SimDevice, traj: Trajectory) -> None:
    await dev.shell("logcat -c")
    await open_settings(dev)
    started = LogcatRegex(r"START .*cmp=com\.android\.settings/", tag="ActivityTaskManager")
    assert await score(started, dev, traj) == 1.0


def test_parse_logcat() -> None:
    text = ("--------- beginning of main\n"
            "12-02 12:26:30.871  1000  1001 I ActivityTaskManager: START u0 {cmp=a/.B}\n"
            "12-02 12:26:30.872  1000  1000 D Tag     : reward: 1: two\n"
            "garbage\n")
    lines = parse_logcat(text)
    assert [(ln.tag, ln.priority, ln.message) for ln in lines] == [
        ("ActivityTaskManager", "I", "START u0 {cmp=a/.B}"), ("Tag", "D", "reward: 1: two")]
    assert lines[0].tid == 1001


def test_episode_state_is_per_trajectory_and_freed() -> None:
    from distrl_sdk.evaluators import common

    owner = object()
    t = Trajectory(task="t", instruction="")
    episode_state(owner, t)["n"] = 1
    assert episode_state(owner, t) == {"n": 1}
    assert episode_state(object(), t) == {}
    before = len(common._STATE)
    del t
    gc.collect()
    assert len(common._STATE) < before


# -- answer ------------------------------------------------------------------------------
@pytest.mark.parametrize(("ev", "answer", "want"), [
    (AnswerMatches("Paris"), "  paris ", 1.0),
    (AnswerMatches("Paris", case_insensitive=False), "paris", 0.0),
    (AnswerMatches("Paris"), "Paris, France", 0.0),
    (AnswerMatches("Paris", "contains"), "It is Paris, France", 1.0),
    (AnswerMatches(["Rome", "Paris"], "contains"), "paris", 1.0),
    (AnswerMatches(r"^\d{2}:\d{2}$", "regex"), "07:30", 1.0),
    (AnswerMatches(r"^\d{2}:\d{2}$", "regex"), "7:30", 0.0),
    (AnswerMatches(12.5, "number"), "about 12.50 km", 1.0),
    (AnswerMatches("1234", "number"), "It costs $1,234.", 1.0),
    (AnswerMatches(3, "number"), "2 or 4", 0.0),
    (AnswerMatches("{n}", "number"), "-3 degrees", 1.0),
    (AnswerMatches("{city}"), "Oslo", 1.0),
    (AnswerMatches("Oslo"), None, 0.0),
])
async def test_answer_matches(ev: AnswerMatches, answer: str | None, want: float,
                              dev: SimDevice) -> None:
    t = Trajectory(task="t", instruction="q", answer=answer)
    assert await ev.evaluate(dev, t, {"n": -3, "city": "oslo"}) == want


def test_answer_helpers() -> None:
    assert extract_numbers("1,234.5 and -2 and .5") == [1234.5, -2.0, 0.5]
    assert AnswerMatches("x", "contains").describe() == "answer(contains 'x')"
    with pytest.raises(TaskError, match="mode"):
        AnswerMatches("x", "fuzzy")  # type: ignore[arg-type]


# -- composites --------------------------------------------------------------------------
async def test_composites_on_sim_state(dev: SimDevice, traj: Trajectory) -> None:
    wifi_off = SettingEquals("global", "wifi_on", "0")
    in_settings = ActivityIs("com.android.settings")
    both = wifi_off & in_settings
    either = wifi_off | in_settings
    half = Weighted({wifi_off: 1.0, in_settings: 1.0})
    assert isinstance(both, AllOf) and isinstance(either, AnyOf)
    assert [await score(e, dev, traj) for e in (both, either, half)] == [0.0, 0.0, 0.0]
    await open_settings(dev)
    assert [await score(e, dev, traj) for e in (both, either, half)] == [0.0, 1.0, 0.5]
    await dev.shell("settings put global wifi_on 0")
    assert [await score(e, dev, traj) for e in (both, either, half)] == [1.0, 1.0, 1.0]
    assert both.describe() == "all(setting(global/wifi_on == '0'), activity(com.android.settings))"


# -- safe evaluation ---------------------------------------------------------------------
class Boom(RewardEvaluator):
    name = "boom"

    def __init__(self, exc: BaseException | None = None, value: float = 0.5) -> None:
        self.exc, self.value = exc, value

    async def evaluate(self, device, trajectory, params):  # type: ignore[no-untyped-def]
        if self.exc is not None:
            raise self.exc
        return self.value

    async def step_reward(self, device, trajectory, params):  # type: ignore[no-untyped-def]
        if self.exc is not None:
            raise self.exc
        return None


async def test_safe_evaluate_turns_evaluator_failures_into_task_errors(
        dev: SimDevice, traj: Trajectory) -> None:
    ok = await safe_evaluate(Boom(), dev, traj, {})
    assert ok.ok and ok.unwrap() == 0.5

    out = await safe_evaluate(Boom(ZeroDivisionError("division by zero")), dev, traj, {})
    assert not out.ok and out.score is None
    assert isinstance(out.error, TaskError)
    assert "evaluator boom raised ZeroDivisionError in evaluate" in str(out.error)
    assert isinstance(out.error.__cause__, ZeroDivisionError)
    with pytest.raises(TaskError, match="ZeroDivisionError"):
        out.unwrap()

    # a failing evaluator inside a composite: the whole tree's outcome is the error
    tree = SettingEquals("global", "wifi_on", "1") & Boom(KeyError("x"))
    out = await safe_evaluate(tree, dev, traj, {})
    assert isinstance(out.error, TaskError) and "KeyError" in str(out.error)

    out = await safe_evaluate(Boom(value=1.5), dev, traj, {})
    assert out.error is not None and "[0, 1]" in str(out.error)

    # device faults are not the task's fault: they propagate for the runner to ABORT
    with pytest.raises(DeviceOffline):
        await safe_evaluate(Boom(DeviceOffline("gone")), dev, traj, {})

    step = await safe_step_reward(Boom(), dev, traj, {})
    assert step.ok and step.score is None
    step = await safe_step_reward(Boom(RuntimeError("bad")), dev, traj, {})
    assert isinstance(step.error, TaskError)


def test_fill_survives_regex_braces() -> None:
    assert fill(r"^\d{2}:{m:02d}$", {"m": 5}) == r"^\d{2}:05$"
    assert fill("{", {}) == "{"
    assert fill("{a} {b}", {"a": 1}) == "1 {b}"
    assert fill_regex("{q}+{x}", {"q": "1+1"}) == r"1\+1+{x}"


def test_steps_screenshots_do_not_confuse_trajectory() -> None:
    t = Trajectory(task="t", instruction="i", steps=[Step(index=0, action=None)])
    assert t.actions == [None]


async def test_answer_from_device_reads_the_expected_value_from_the_phone() -> None:
    from distrl_sdk.evaluators import AnswerFromDevice

    phone = SimPhone()
    device = SimDevice(phone)
    ev = AnswerFromDevice("getprop ro.build.version.release")
    traj = Trajectory(task="t", instruction="which version?")
    assert await ev.evaluate(device, traj, {}) == 0.0  # no answer at all
    traj.answer = "It runs Android 14."
    assert await ev.evaluate(device, traj, {}) == 1.0
    traj.answer = "Android 13"
    assert await ev.evaluate(device, traj, {}) == 0.0
    by_regex = AnswerFromDevice("wm size", regex=r"(\d+)x\d+", mode="number")
    traj.answer = "1080 pixels wide"
    assert await by_regex.evaluate(device, traj, {}) == 1.0

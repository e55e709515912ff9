"""Declarative task files: loading, parameters, and errors that name file, line and field."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from distrl_sdk.declarative import TaskFileError, load_task_file, load_task_text, locate_line

GOOD = '''
[[task]]
name = "demo.alarm"
template = "Set an alarm for {hour}:{minute}"
[task.params.hour]
range = [5, 12]
[task.params.minute]
train = ["00", "15"]
test = ["45"]
[[task.setup]]
shell = "echo ready"
expect = { stdout_regex = "ready" }
[task.success]
type = "setting"
namespace = "global"
key = "wifi_on"
value = "0"
[[task.oracle]]
tap = { text = "Alarm" }
'''


def test_good_file_builds_a_task_class_with_disjoint_splits() -> None:
    (cls,) = load_task_text(GOOD, "good.toml")
    assert cls.name == "demo.alarm" and cls().has_oracle
    rng = random.Random(1)
    train = {tuple(cls.generate_params(rng, "train").items()) for _ in range(200)}
    test = {tuple(cls.generate_params(rng, "test").items()) for _ in range(200)}
    assert train and test and not (train & test)
    hours_test = {dict(t)["hour"] for t in test}
    assert hours_test == {8, 12}  # every fourth value of range(5, 13) goes to test
    task = cls({"hour": 7, "minute": "15"})
    assert task.instruction == "Set an alarm for 7:15"


@pytest.mark.parametrize(("text", "where"), [
    (GOOD.replace('shell = "echo ready"', 'shell = 42'),
     ":11: task[0].setup[0].shell: Input should be a valid string"),
    (GOOD.replace('[[task.setup]]\nshell = "echo ready"', '[[task.setup]]\nsleep = 1\nshell = "x"'),
     ":10: task[0].setup[0]: Value error, each step needs exactly one of"),
    (GOOD.replace('name = "demo.alarm"', 'name = "Demo Alarm"'),
     ":3: task[0].name: String should match pattern"),
    (GOOD.replace("{minute}", "{minute}{second}"),
     ":2: task[0]: Value error, template uses undefined params: ['second']"),
    (GOOD.replace('[[task.oracle]]\ntap = { text = "Alarm" }', '[[task.oracle]]\nfly = 1'),
     ":19: task[0].oracle[0].fly: Extra inputs are not permitted"),
    (GOOD.replace('range = [5, 12]', 'range = [12, 5]'),
     ":5: task[0].params.hour: Value error, range must be [low, high]"),
    (GOOD + "[[task\n", ":20: TOML syntax"),
])
def test_errors_name_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(TaskFileError) as exc:
        load_task_text(text, "bad.toml")
    line, message = where[1:].split(": ", 1)
    assert any(p.startswith(f"bad.toml:{line}: ") and message in p
               for p in exc.value.problems), exc.value.problems


def test_locate_line_follows_array_tables() -> None:
    text = "[[task]]\nname='a'\n[[task.setup]]\nshell='x'\n[[task]]\nname='b'\n" \
           "[[task.setup]]\nshell='y'\n[[task.setup]]\nshell='z'\n"
    assert locate_line(text, ["task", 1, "setup", 1, "shell"]) == 10
    assert locate_line(text, ["task", 1, "name"]) == 6
    assert locate_line(text, ["task", 0, "setup", 0]) == 3


def test_unreadable_file_is_a_task_file_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.toml"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TaskFileError, match="not UTF-8"):
        load_task_file(bad)
    with pytest.raises(TaskFileError, match="cannot read"):
        load_task_file(tmp_path / "missing.toml")


async def test_oracle_steps_at_fixed_points_for_screens_without_named_targets() -> None:
    from distrl_sdk.actions import LongPress, Swipe, Tap

    text = GOOD.replace('[[task.oracle]]\ntap = { text = "Alarm" }', '''[[task.oracle]]
tap_at = { x = 0.5, y = 0.25 }
[[task.oracle]]
long_press_at = { x = 0.1, y = 0.9 }
[[task.oracle]]
swipe = { x1 = 0.5, y1 = 0.8, x2 = 0.5, y2 = 0.2, duration_ms = 150 }''')
    (cls,) = load_task_text(text, "points.toml")

    class Screen:  # the oracle asks only the screen's size for fixed points
        async def screen_size(self) -> tuple[int, int]:
            return 1080, 2400

    steps = [a async for a in cls({"hour": 7, "minute": "15"}).oracle(Screen())]  # type: ignore[arg-type]
    assert steps == [Tap(0.5, 0.25), LongPress(0.1, 0.9), Swipe(0.5, 0.8, 0.5, 0.2, 150)]
    bad = text.replace("x = 0.5, y = 0.25", "x = 540, y = 600")  # pixels: refused
    with pytest.raises(TaskFileError) as exc:
        load_task_text(bad, "bad.toml")
    assert any("oracle[0].tap_at.x: Input should be less than or equal to 1" in p
               for p in exc.value.problems), exc.value.problems

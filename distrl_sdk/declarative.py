"""Declarative tasks: a TOML file of ``[[task]]`` tables becomes Task classes.

    [[task]]
    name = "settings.wifi_off"
    template = "Turn off Wi-Fi"
    apps = ["com.android.settings"]

    [[task.setup]]                       # each step: one action, optional expect, retries
    setting = { namespace = "global", key = "wifi_on", value = "1" }

    [task.success]                       # any evaluator config (see distrl_sdk.evaluators)
    type = "setting"
    namespace = "global"
    key = "wifi_on"
    value = "0"

    [[task.oracle]]                      # the scripted solution, resolved on the live screen
    open_app = "Settings"
    [[task.oracle]]
    tap = { text = "Network & internet" }

Parameters: ``[task.params.NAME]`` with ``train``/``test`` lists, or ``values`` (every
fourth goes to test), or ``range = [lo, hi]`` (integers; every fourth to test).
Errors name the file, the line and the field: ``wifi.toml:12: task[0].setup[1].shell: …``.
"""

from __future__ import annotations

import asyncio
import base64
import random
import re
import tomllib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from distrl_sdk.device import Device
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators.base import RewardEvaluator, fill
from distrl_sdk.task import Split, Task
from distrl_sdk.uitree import UIElement, find_elements

__all__ = ["TaskFileError", "load_task_file", "load_task_text"]


class TaskFileError(TaskError):
    """A task file is invalid; ``problems`` lists every ``file:line: field: message``."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamSpec(_Strict):
    """Values of one parameter, split into train and test."""

    train: list[Any] | None = None
    test: list[Any] | None = None
    values: list[Any] | None = None
    range: tuple[int, int] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ParamSpec:
        forms = [self.values is not None, self.range is not None,
                 self.train is not None or self.test is not None]
        if sum(forms) != 1:
            raise ValueError("give exactly one of: train+test lists, values, or range")
        if self.train is not None and not self.train:
            raise ValueError("train must not be empty")
        if self.range is not None and self.range[0] > self.range[1]:
            raise ValueError("range must be [low, high] with low <= high")
        return self

    def split(self, split: Split) -> list[Any]:
        if self.train is not None:
            return list(self.train if split == "train" else (self.test or self.train))
        pool = list(self.values) if self.values is not None else list(
            range(self.range[0], self.range[1] + 1)) if self.range else []
        test = pool[3::4]
        train = [v for i, v in enumerate(pool) if i % 4 != 3]
        return train if split == "train" or not test else test


class SettingStep(_Strict):
    namespace: Literal["system", "secure", "global"]
    key: str
    value: str


class PushStep(_Strict):
    path: str
    content: str | None = None
    base64: str | None = None

    @model_validator(mode="after")
    def _one(self) -> PushStep:
        if (self.content is None) == (self.base64 is None):
            raise ValueError("give exactly one of content or base64")
        return self


class Expect(_Strict):
    exit_code: int | None = 0
    stdout_regex: str | None = None


class SetupStep(_Strict):
    """One preparation step; exactly one action key."""

    shell: str | None = None
    start: str | None = Field(None, description="component, e.g. com.android.settings/.Settings")
    setting: SettingStep | None = None
    push: PushStep | None = None
    sleep: float | None = Field(None, ge=0, le=60)
    key: Literal["home", "back"] | None = None
    clear: str | None = Field(None, description="package to `pm clear`")
    force_stop: str | None = None
    expect: Expect | None = None
    retries: int = Field(0, ge=0, le=10)

    @model_validator(mode="after")
    def _one_action(self) -> SetupStep:
        actions = [k for k in ("shell", "start", "setting", "push", "sleep", "key", "clear",
                               "force_stop") if getattr(self, k) is not None]
        if len(actions) != 1:
            raise ValueError("each step needs exactly one of shell, start, setting, push, "
                             f"sleep, key, clear, force_stop (got {actions or 'none'})")
        return self


class Selector(_Strict):
    text: str | None = None
    text_contains: str | None = None
    resource_id: str | None = None
    content_desc: str | None = None
    class_name: str | None = None
    nth: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _some(self) -> Selector:
        if not any((self.text, self.text_contains, self.resource_id, self.content_desc,
                    self.class_name)):
            raise ValueError("a selector needs text, text_contains, resource_id, "
                             "content_desc or class_name")
        return self


class Point(_Strict):
    """A point on the screen, normalised: (0, 0) top left, (1, 1) bottom right."""

    x: float = Field(ge=0, le=1)
    y: float = Field(ge=0, le=1)


class SwipeSpec(_Strict):
    """A finger moving from (x1, y1) to (x2, y2), normalised, in ``duration_ms``."""

    x1: float = Field(ge=0, le=1)
    y1: float = Field(ge=0, le=1)
    x2: float = Field(ge=0, le=1)
    y2: float = Field(ge=0, le=1)
    duration_ms: int = Field(300, ge=1, le=10_000)


class OracleStep(_Strict):
    """One step of the scripted solution; exactly one key."""

    tap: Selector | None = None
    long_press: Selector | None = None
    #: where no element names the target (a canvas, a map, a game): a fixed point
    tap_at: Point | None = None
    long_press_at: Point | None = None
    swipe: SwipeSpec | None = None
    type: str | None = None
    key: Literal["home", "back", "enter"] | None = None
    open_app: str | None = None
    scroll: Literal["up", "down", "left", "right"] | None = None
    wait: float | None = Field(None, ge=0, le=30)
    answer: str | None = None
    #: answer with the text shown right after the matching element (a label's value)
    answer_from: Selector | None = None
    complete: Literal[True] | None = None

    @model_validator(mode="after")
    def _one(self) -> OracleStep:
        set_keys = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if len(set_keys) != 1:
            raise ValueError("each oracle step needs exactly one of "
                             + ", ".join(type(self).model_fields) + f" (got {set_keys})")
        return self


class TaskModel(_Strict):
    name: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
    template: str = Field(min_length=1)
    max_steps: int = Field(10, ge=1, le=100)
    difficulty: Literal["easy", "medium", "hard"] = "easy"
    tags: list[str] = []
    apps: list[str] = []
    needs_answer: bool = False
    params: dict[str, ParamSpec] = {}
    setup: list[SetupStep] = []
    teardown: list[SetupStep] = []
    success: dict[str, Any]
    step_reward: dict[str, Any] | None = None
    oracle: list[OracleStep] = []
    #: a plausible wrong solution (wrong toggle, wrong product …); tests check it scores 0
    near_miss: list[OracleStep] = []

    @model_validator(mode="after")
    def _template_fits(self) -> TaskModel:
        fields = {m.group(1) for m in re.finditer(r"\{([A-Za-z_]\w*)", self.template)}
        missing = fields - set(self.params)
        if missing:
            raise ValueError(f"template uses undefined params: {sorted(missing)}")
        return self


class TaskFile(_Strict):
    task: list[TaskModel] = Field(min_length=1)


# -- running the declarative parts --------------------------------------------------
async def _run_setup_step(device: Device, step: SetupStep, params: dict[str, Any]) -> None:
    last = ""
    for _attempt in range(step.retries + 1):
        out = None
        if step.shell is not None:
            out = await device.shell(fill(step.shell, params))
        elif step.start is not None:
            out = await device.shell(f"am start -W -n {fill(step.start, params)}")
        elif step.setting is not None:
            s = step.setting
            out = await device.shell(
                f"settings put {s.namespace} {s.key} '{fill(s.value, params)}'")
        elif step.push is not None:
            p = step.push
            data = (fill(p.content, params).encode() if p.content is not None
                    else base64.b64decode(p.base64 or ""))
            await device.push(data, fill(p.path, params))
        elif step.sleep is not None:
            await asyncio.sleep(step.sleep)
        elif step.key is not None:
            out = await device.shell(f"input keyevent KEYCODE_{step.key.upper()}")
        elif step.clear is not None:
            out = await device.shell(f"pm clear {step.clear}")
        elif step.force_stop is not None:
            out = await device.shell(f"am force-stop {step.force_stop}")
        if out is None:
            return  # push and sleep raise on failure themselves
        exp = step.expect or Expect()
        ok = (exp.exit_code is None or out.exit_code == exp.exit_code) and (
            exp.stdout_regex is None or re.search(fill(exp.stdout_regex, params), out.stdout))
        if ok:
            return
        last = (f"exit {out.exit_code}, stdout {out.stdout.strip()[:200]!r}, "
                f"stderr {out.stderr.strip()[:200]!r}")
    raise TaskError(f"setup step {step.model_dump(exclude_defaults=True)} did not succeed "
                    f"after {step.retries + 1} attempt(s): {last}")


def _select(elements: list[UIElement], sel: Selector, params: dict[str, Any]) -> UIElement | None:
    def f(v: str | None) -> str | None:
        return None if v is None else fill(v, params)

    hits = find_elements(elements, text=f(sel.text), text_contains=f(sel.text_contains),
                         resource_id=f(sel.resource_id), content_desc=f(sel.content_desc),
                         class_name=f(sel.class_name))
    hits = [h for h in hits if h.bounds.width > 0 and h.bounds.height > 0]
    return hits[sel.nth] if len(hits) > sel.nth else None


async def _oracle(steps: Sequence[OracleStep], device: Device,
                  params: dict[str, Any]) -> AsyncIterator[Any]:
    from distrl_sdk.actions import (
        Answer,
        Complete,
        Key,
        LongPress,
        OpenApp,
        Scroll,
        Swipe,
        Tap,
        TypeText,
        Wait,
    )

    width, height = await device.screen_size()
    for step in steps:
        sel = step.tap or step.long_press
        if sel is not None:
            for _ in range(8):  # scroll to find, as a person would
                hit = _select(await device.ui_elements(), sel, params)
                if hit is not None:
                    x, y = hit.bounds.center
                    cls = Tap if step.tap else LongPress
                    yield cls(min(x / width, 1.0), min(y / height, 1.0))
                    break
                yield Scroll("down")
            else:
                wanted = sel.model_dump(exclude_defaults=True)
                raise TaskError(f"oracle: nothing on screen matches {wanted}")
        elif step.tap_at is not None:
            yield Tap(step.tap_at.x, step.tap_at.y)
        elif step.long_press_at is not None:
            yield LongPress(step.long_press_at.x, step.long_press_at.y)
        elif step.swipe is not None:
            w = step.swipe
            yield Swipe(w.x1, w.y1, w.x2, w.y2, w.duration_ms)
        elif step.type is not None:
            yield TypeText(fill(step.type, params))
        elif step.key is not None:
            yield Key(step.key)
        elif step.open_app is not None:
            yield OpenApp(fill(step.open_app, params))
        elif step.scroll is not None:
            yield Scroll(step.scroll)
        elif step.wait is not None:
            yield Wait(step.wait)
        elif step.answer is not None:
            yield Answer(fill(step.answer, params))
        elif step.answer_from is not None:
            elements = await device.ui_elements()
            label = _select(elements, step.answer_from, params)
            value = next((e.text for e in elements[label.index + 1:] if e.text), None) \
                if label is not None else None
            if value is None:
                raise TaskError(f"oracle: no value shown after "
                                f"{step.answer_from.model_dump(exclude_defaults=True)}")
            yield Answer(value)
        elif step.complete:
            yield Complete()


def _make_class(model: TaskModel, source: str, success_ev: RewardEvaluator,
                step_ev: RewardEvaluator | None) -> type[Task]:
    class DeclarativeTask(Task):
        name: ClassVar[str] = model.name
        template: ClassVar[str] = model.template
        max_steps: ClassVar[int] = model.max_steps
        difficulty = model.difficulty
        tags: ClassVar[tuple[str, ...]] = tuple(model.tags)
        apps: ClassVar[tuple[str, ...]] = tuple(model.apps)
        needs_answer: ClassVar[bool] = model.needs_answer
        success: ClassVar[RewardEvaluator | None] = success_ev
        step_evaluator: ClassVar[RewardEvaluator | None] = step_ev
        spec: ClassVar[TaskModel] = model
        source_file: ClassVar[str] = source

        @classmethod
        def generate_params(cls, rng: random.Random, split: Split = "train") -> dict[str, Any]:
            return {k: rng.choice(spec.split(split)) for k, spec in cls.spec.params.items()}

        async def setup(self, device: Device) -> None:
            for step in self.spec.setup:
                await _run_setup_step(device, step, self.params)

        async def teardown(self, device: Device) -> None:
            for step in self.spec.teardown:
                await _run_setup_step(device, step, self.params)

        def oracle(self, device: Device) -> AsyncIterator[Any]:
            if not self.spec.oracle:
                raise NotImplementedError(f"task {self.name} has no oracle")
            return _oracle(self.spec.oracle, device, self.params)

        @property
        def has_oracle(self) -> bool:
            return bool(self.spec.oracle)

        def near_miss(self, device: Device) -> AsyncIterator[Any] | None:
            if not self.spec.near_miss:
                return None
            return _oracle(self.spec.near_miss, device, self.params)

    DeclarativeTask.__name__ = DeclarativeTask.__qualname__ = "Task_" + model.name.replace(".", "_")
    return DeclarativeTask


# -- loading with precise errors ----------------------------------------------------
def _loc_str(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def locate_line(text: str, loc: Sequence[int | str]) -> int:
    """Best-effort line (1-based) of a key path like ('task', 2, 'setup', 0, 'shell')."""
    lines = text.splitlines()
    header = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?")
    counters: dict[str, int] = {}
    # table path with indices for each header line, e.g. task[2].setup[0]
    paths: list[tuple[int, str]] = []
    current_parent = ""
    for no, line in enumerate(lines, 1):
        m = header.match(line)
        if not m:
            continue
        dotted = m.group(2).replace('"', "")
        parts = dotted.split(".")
        if m.group(1) == "[[":
            parent = _indexed_prefix(current_parent, parts[:-1])
            key = f"{parent}|{parts[-1]}"
            counters[key] = counters.get(key, -1) + 1
            path = (f"{parent}." if parent else "") + f"{parts[-1]}[{counters[key]}]"
        else:
            path = _indexed_prefix(current_parent, parts)
        current_parent = path
        paths.append((no, path))
    want = _loc_str(loc)
    best_line, best_len = 1, -1
    for no, path in paths:
        if (want == path or want.startswith(path + ".") or want.startswith(path + "[")) \
                and len(path) > best_len:
            best_line, best_len = no, len(path)
    # then the key line inside that table
    rest = want[best_len:].lstrip(".") if best_len > 0 else want
    next_key = re.split(r"[.\[]", rest)[0] if rest else ""
    if next_key:
        end = next((no for no, _ in paths if no > best_line), len(lines) + 1)
        for no in range(best_line, end):
            if re.match(rf"^\s*{re.escape(next_key)}\s*=", lines[no - 1]):
                return no
    return best_line


def _indexed_prefix(current: str, parts: list[str]) -> str:
    """Map a dotted TOML table name onto the indexed path of the enclosing array item."""
    out = ""
    cur_parts = re.findall(r"([^.\[\]]+)(\[\d+\])?", current)
    for i, part in enumerate(parts):
        if i < len(cur_parts) and cur_parts[i][0] == part:
            out += ("." if out else "") + part + cur_parts[i][1]
        else:
            out += ("." if out else "") + part
    return out


def load_task_text(text: str, source: str = "<string>") -> list[type[Task]]:
    """Parse and validate TOML task text; raises TaskFileError listing every problem."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise TaskFileError([f"{source}:{m.group(1) if m else '?'}: TOML syntax: {exc}"]) from None
    got = raw.get("task")
    raw_tasks: list[Any] = got if isinstance(got, list) else []
    # every evaluator is checked even when the file has other errors: one run of
    # `tasks validate` lists every kind of problem
    evaluators, problems = _evaluators(raw_tasks, text, source)
    try:
        spec = TaskFile.model_validate(raw)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
            where = _loc_str(loc) or "(file)"
            errors.append(f"{source}:{locate_line(text, loc)}: {where}: {err['msg']}")
        raise TaskFileError(errors + problems) from None
    classes: list[type[Task]] = []
    for i, model in enumerate(spec.task):
        success = evaluators[i]["success"]
        if success is not None:
            classes.append(_make_class(model, source, success, evaluators[i]["step_reward"]))
    names = [c.name for c in classes]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"{source}:1: duplicate task names: {dupes}")
    if problems:
        raise TaskFileError(problems)
    return classes


def _evaluators(raw_tasks: list[Any], text: str, source: str
                ) -> tuple[list[dict[str, RewardEvaluator | None]], list[str]]:
    """Each raw task's ``success`` and ``step_reward`` evaluators (None where absent or
    broken), and the problems of the broken ones, with their lines."""
    from distrl_sdk.evaluators import evaluator_from_config

    out: list[dict[str, RewardEvaluator | None]] = []
    problems: list[str] = []
    for i, task in enumerate(raw_tasks):
        built: dict[str, RewardEvaluator | None] = {"success": None, "step_reward": None}
        for key in built:
            cfg = task.get(key) if isinstance(task, dict) else None
            if not isinstance(cfg, dict):
                continue  # missing or not a table: the model's own errors say so
            try:
                built[key] = evaluator_from_config(cfg, path=f"task[{i}].{key}")
            except (TaskError, ValueError, TypeError) as exc:
                problems.append(f"{source}:{locate_line(text, ['task', i, key])}: {exc}")
        out.append(built)
    return out, problems


def load_task_file(path: str | Path) -> list[type[Task]]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFileError([f"{p}: cannot read: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise TaskFileError([f"{p}: not UTF-8 text: {exc}"]) from None
    return load_task_text(text, str(p))

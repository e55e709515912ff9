"""The producers and the TUI tests must not drift apart: every metric name and wire
field the real code emits has to be one the TUI tests feed to every screen
(tests/tui/contract.py). A new name fails here until it is added there, which puts it
into test_recorded_feed's every-key run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.record_tui_feed import DEFAULT_OUT, load, record
from distrl_sdk import wire
from distrl_sdk.wire import Message, Metrics, parse_message
from farm.broker import find_mosquitto
from farm.evaluate.aggregate import EvalAggregator
from farm.evaluate.stats import Tally
from farm.learner.metrics import LearnerStats
from tests.tui.contract import TESTED_FIELDS, covered, untested


def metric_names(feed: list[tuple[str, bytes]]) -> set[str]:
    out: set[str] = set()
    for t, p in feed:
        m = parse_message(t, p)
        if isinstance(m, Message) and isinstance(m.body, Metrics):
            out |= set(m.body.scalars)
    return out


@pytest.mark.parametrize("schema", sorted(TESTED_FIELDS))
def test_every_schema_field_is_tested(schema: str) -> None:
    fields = set(getattr(wire, schema).model_fields)
    assert fields == TESTED_FIELDS[schema], (
        f"{schema} fields changed: new {sorted(fields - TESTED_FIELDS[schema])}, "
        f"gone {sorted(TESTED_FIELDS[schema] - fields)}: feed them in "
        "test_recorded_feed.everything() and list them in tests/tui/contract.py")


def test_the_recorded_real_feed_is_covered() -> None:
    assert untested(metric_names(load(DEFAULT_OUT))) == []


def test_the_learners_and_evaluations_names_are_covered() -> None:
    """Names straight from the producing code (the learner's window stats, the held-out
    evaluation's scalars), including ones the short recording never reaches."""
    stats = LearnerStats()
    stats.episode(True, 1.0, 2)
    stats.update()
    tally = Tally()
    tally.add("settings.wifi_off", "success", 3)
    names = set(stats.snapshot()) | set(tally.scalars(4)) | set(EvalAggregator().scalars())
    assert untested(names) == []


def test_the_contract_can_fail() -> None:
    assert not covered("brand_new_metric") and not covered("eval/brand_new")
    assert covered("train/anything") and covered("eval/task/clock.alarm")


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_a_fresh_recording_is_covered(tmp_path: Path) -> None:
    """Run the real farm and learner now (not the committed fixture): whatever they
    publish today must be covered."""
    out = tmp_path / "feed.jsonl.gz"
    assert asyncio.run(record(25.0, 2, out, 4)) > 0
    feed = load(out)
    names = metric_names(feed)
    assert any(n.startswith("train/") for n in names), names
    assert untested(names) == []
    for t, p in feed:
        if not p and "/status/" in t:
            continue  # a stopped farm clearing a device's retained status
        assert isinstance(parse_message(t, p), Message), t

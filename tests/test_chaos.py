"""bench/chaos.py's 60-second schedule in CI: every part a real process (sim phones,
adb server, `distrl broker` with accounts, `distrl learner`, `distrl farm up`), SIGKILLed
alone and together, sim faults, and a forger holding every broker password but no
signing key. Nothing the farm ledgered is lost or duplicated, nothing forged gets in."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import KINDS, passed, report, run, schedule
from farm.broker import find_mosquitto

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")]


def test_the_seeded_schedule_covers_every_fault_kind() -> None:
    plan = schedule(0, 60)
    assert len(plan) >= 10 and {f.kind for f in plan} == set(KINDS)
    assert plan == schedule(0, 60)  # seeded: the same faults at the same times


@pytest.mark.timeout(400)
async def test_sixty_seconds_of_chaos_lose_and_let_in_nothing(tmp_path: Path) -> None:
    r = await run(60, 0, 3, "instant", tmp_path, progress=print)
    print(report(r))
    assert r["faults"] >= 10 and all(n >= 2 for n in r["kills"].values()), r["kills"]
    assert r["published"] > 0 and r["learned"] == r["published"]
    fs = r["forged_sent"]  # the forger really reached the parts, every kind of it
    assert min(fs["acks"], fs["commands"], fs["trajectories"], fs["pointers"]) > 0, fs
    assert passed(r), report(r)
    assert r["exit_status"]["farm"] == 0 and r["exit_status"]["learner"] == 0

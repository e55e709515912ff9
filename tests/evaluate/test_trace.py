"""farm.evaluate.trace: episode records for ``distrl eval --episodes-out`` (the CLI test
feeds it real sim episodes; these pin the edges)."""

from __future__ import annotations

import json

from distrl_sdk.actions import Tap
from distrl_sdk.actions.types import InvalidAction
from distrl_sdk.trajectory import EpisodeStatus, Step, Trajectory
from distrl_sdk.uitree import parse_ui_dump
from farm.evaluate.trace import SCHEMA, episode_record, step_record, touched_label
from tests.policies.test_uitree import DUMP  # a Settings-like screen, rows' text in children


def test_a_touch_on_a_row_is_named_by_the_rows_first_text() -> None:
    screen = parse_ui_dump(DUMP)
    assert touched_label(screen, 0.96, 0.26) == "Network & internet"  # the row's margin
    assert touched_label(screen, 0.5, 0.1) is None  # nothing labelled there
    assert touched_label([], 0.5, 0.1) is None


def test_invalid_actions_and_unknown_screens_still_make_a_record() -> None:
    bad = step_record(Step(index=0, action=InvalidAction(reason="no JSON", raw="tap it")))
    assert bad["action"] is None and "no JSON" in bad["describe"]
    blind = step_record(Step(index=1, action=Tap(x=0.5, y=0.1)))  # no screen recorded
    assert blind["action"] == {"action_type": "click", "x": 0.5, "y": 0.1}
    assert "target" not in blind
    traj = Trajectory(task="t", instruction="do it", params={"k": 1},
                      steps=[Step(index=0, action=InvalidAction(reason="x", raw=""))],
                      status=EpisodeStatus.ABORTED)
    rec = episode_record(traj, final=True)
    assert rec["schema"] == SCHEMA and rec["status"] == "aborted" and rec["scored"] is False
    assert json.loads(json.dumps(rec)) == rec

"""bench/training_efficiency.py's per-task comparison of two arms (what a suite mean hides)."""

from __future__ import annotations

from typing import Any

from bench.training_efficiency import ArmRun, task_gaps


def _run(arm: str, seed: int, by_task: dict[str, float]) -> ArmRun:
    final: dict[str, Any] = {"success_rate": sum(by_task.values()) / len(by_task),
                             "by_task": by_task}
    return ArmRun(arm=arm, seed=seed, final_eval=final)


def test_task_gaps_rank_tasks_by_the_mean_gap_over_shared_seeds(capsys: Any) -> None:
    ours = [_run("aride", 0, {"a": 1.0, "b": 0.0, "c": 0.6}),
            _run("aride", 1, {"a": 1.0, "b": 0.4, "c": 0.6}),
            _run("aride", 5, {"a": 0.0, "b": 0.0, "c": 0.0})]  # no partner: left out
    theirs = [_run("digirl-async", 0, {"a": 1.0, "b": 1.0, "c": 0.4}),
              _run("digirl-async", 1, {"a": 1.0, "b": 0.6, "c": 0.4})]
    rows = task_gaps(ours, theirs)
    assert [r["task"] for r in rows] == ["b", "c", "a"]
    assert round(rows[0]["gap"], 6) == -0.6 and round(rows[1]["gap"], 6) == 0.2
    assert rows[0]["ours"] == [0.0, 0.4] and rows[0]["theirs"] == [1.0, 0.6]
    assert rows[2]["gap"] == 0.0
    assert "b" in capsys.readouterr().out
    assert task_gaps([ArmRun(arm="aride", seed=0)], theirs) == []  # no final evaluation

"""bench/training_efficiency.py: its phone fleet, and its summary: the per-task
comparison of two arms (what a suite mean hides) and the bars, whose pairs of runs share
a seed (one SFT start)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from bench.training_efficiency import (
    ArmRun,
    main,
    merged_runs,
    sim_fleet,
    summarise,
    task_gaps,
)


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


def _rounds(arm: str, seed: int, rates: list[float], final: float) -> ArmRun:
    """A run with a 35-episode round every 300 s and a final evaluation."""
    evals = [{"wall_s": 300.0 * i, "success_rate": r, "complete": True}
             for i, r in enumerate(rates)]
    return ArmRun(arm=arm, seed=seed, wall_s=300.0 * (len(rates) - 1), evals=evals,
                  final_eval={"success_rate": final, "by_task": {"a": final}})


def test_sync_bars_pair_runs_by_seed_not_by_order(capsys: Any) -> None:
    # merged directories list seeds in any order; a seed without a partner is left out
    runs = [_rounds("aride", 3, [0.5, 0.9, 0.9], 0.9),
            _rounds("aride", 0, [0.5, 0.6, 0.6], 0.6),
            _rounds("digirl-sync", 0, [0.5, 0.6, 0.5], 0.5),
            _rounds("digirl-sync", 3, [0.5, 0.7, 0.75], 0.6),
            _rounds("digirl-sync", 7, [0.5, 0.5, 0.5], 0.5)]
    bars = summarise(runs, argparse.Namespace())["bars"]
    rel, fast = bars["relative_vs_sync_ge_0.20"], bars["time_to_sync_final_le_1/3"]
    assert rel["seeds"] == fast["seeds"] == [3, 0]
    assert [round(v, 6) for v in rel["values"]] == [0.5, 0.2]  # 0.9/0.6, 0.6/0.5
    assert rel["pass"]
    # seed 3 reaches sync's last round (0.75) at 300 s of 600; seed 0 its 0.5 at 0 s
    assert fast["values"] == [0.5, 0.0] and fast["pass"]  # a mean of 0.25 ≤ ⅓
    capsys.readouterr()


def _results(folder: Path, *runs: ArmRun) -> str:
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"runs": [asdict(r) for r in runs]}))
    return str(folder)


def test_merge_keeps_named_arms_and_refuses_a_run_counted_twice(tmp_path: Path) -> None:
    # a directory's async run was re-run elsewhere: merging both would count seed 3 twice
    old = _results(tmp_path / "old", _run("digirl-async", 3, {"a": 0.9}),
                   _run("digirl-sync", 3, {"a": 0.8}))
    new = _results(tmp_path / "new", _run("digirl-async", 3, {"a": 0.7}),
                   _run("aride", 3, {"a": 0.75}))
    with pytest.raises(ValueError, match="digirl-async seed 3 is in both"):
        merged_runs([old, new])
    runs = merged_runs([f"{old}:digirl-sync", new])
    assert sorted((r.arm, r.final) for r in runs) == [
        ("aride", 0.75), ("digirl-async", 0.7), ("digirl-sync", 0.8)]
    with pytest.raises(ValueError, match="no arm nope"):
        merged_runs([f"{old}:nope"])
    with pytest.raises(ValueError, match="not a training_efficiency result"):
        merged_runs([str(tmp_path / "missing")])
    odd = _results(tmp_path / "run:2", _run("aride", 0, {"a": 1.0}))  # a colon in the path
    assert [r.arm for r in merged_runs([odd])] == ["aride"]
    assert merged_runs([f"{odd}:digirl-sync"]) == []


def test_a_mixed_fleet_puts_the_slow_profile_on_the_last_training_phones() -> None:
    opts = argparse.Namespace(phones=3, slow_phones=1, eval_phones=1, profile="instant",
                              slow_profile="pixel")
    with contextlib.ExitStack() as stack:
        phones, eval_phones = sim_fleet(stack, opts)
        assert [p["profile"] for p in phones] == ["instant", "instant", "pixel"]
        assert [p["profile"] for p in eval_phones] == ["instant"]
        assert len({p["serial"] for p in phones + eval_phones}) == 4


@pytest.mark.parametrize("argv", [["--slow-phones", "8"], ["--slow-phones", "-1"],
                                  ["--slow-profile", "fast-phone"]])
def test_a_fleet_it_cannot_build_is_a_usage_error(argv: list[str], monkeypatch: Any,
                                                  capsys: Any) -> None:
    monkeypatch.setattr(sys, "argv", ["training_efficiency.py", "--phones", "8", *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and "slow-p" in capsys.readouterr().err

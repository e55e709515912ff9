"""bench/drop_noise.py: the noise floor of the second-half-drop bar, read from a run the
training-efficiency bench recorded (tests/fixtures/bench_mx22_g2: seed 2 of the default
A-RIDE arm, 105-episode rounds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.drop_noise import flat_drops, main, noise_floor, played_per_task
from bench.training_efficiency import merged_runs

RECORDED = Path(__file__).parent / "fixtures" / "bench_mx22_g2"


def test_a_policy_certain_of_every_task_never_drops() -> None:
    rng = np.random.default_rng(0)
    judged = np.array([False] * 6 + [True] * 6)
    assert flat_drops(np.array([1.0, 0.0, 1.0]), judged, 1, 200, rng).max() == 0.0


def test_rounds_judged_nowhere_show_no_drop() -> None:
    rng = np.random.default_rng(0)
    assert flat_drops(np.full(35, 0.5), np.zeros(12, bool), 1, 200, rng).max() == 0.0


def test_more_episodes_per_task_narrow_the_flat_policys_drop() -> None:
    rng = np.random.default_rng(0)
    judged = np.array([False] * 6 + [True] * 6)
    rates = np.linspace(0.3, 1.0, 35)
    one, four = (flat_drops(rates, judged, k, 2000, rng).mean() for k in (1, 4))
    assert one > 0.05 and four < one / 1.6  # the spread of a round falls as 1/√k


def test_the_recorded_run_is_read_as_the_bench_judges_it() -> None:
    (run,) = merged_runs([str(RECORDED)])
    assert played_per_task(run) == 3
    floor = noise_floor(run, 3, draws=500, bar=10, rng=np.random.default_rng(0))
    assert floor.measured == pytest.approx(100 * run.second_half_drop())
    assert 2 < floor.mean < 8 and floor.share_over_bar < 0.05
    loose = noise_floor(run, 1, draws=500, bar=10, rng=np.random.default_rng(0))
    assert loose.mean > floor.mean and loose.share_over_bar > 0.1


def test_the_cli_prints_each_runs_floor_and_refuses_a_bad_directory(
        tmp_path: Path, capsys: Any) -> None:
    assert main([str(RECORDED), "--per-task", "1", "3", "--draws", "200",
                 "--json", str(tmp_path / "rows.json")]) == 0
    out = capsys.readouterr().out
    assert "k = 1:" in out and "k = 3:" in out and "bench_mx22_g2" in out
    assert (tmp_path / "rows.json").read_text().count('"per_task"') == 2
    assert main([str(tmp_path / "nowhere")]) == 2
    assert "not a training_efficiency result" in capsys.readouterr().err

"""`distrl demo --headless`: the whole system for a short while, then a clean stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_headless_demo_learns_reports_and_leaves_nothing_running(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "farm.cli", "demo", "--headless", "--json", "--phones", "2",
         "--duration", "40", "--eval-every", "5", "--run-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=200)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["exit_codes"] == {"farm": 0, "learner": 0}, summary
    assert summary["episodes"] > 0 and summary["first_episode_s"] is not None
    assert len(summary["devices"]) == 2  # the farm's own status is not a device
    assert summary["policy_version"] is not None  # the learner published and reported
    run = Path(summary["run_dir"])
    assert run.parent == tmp_path.resolve()
    assert list((run / "learner" / "checkpoints").glob("ckpt-*/policy/policy.safetensors"))
    # the paper's pipeline: demonstrations → SFT → online RL, judged held out
    assert summary["pretrain_s"] is not None and (run / "demos" / "demos.json").is_file()
    assert (run / "sft" / "policy.safetensors").is_file()
    assert summary["heldout"] is not None and summary["heldout_version"] is not None
    pids = json.loads((run / "logs" / "pids.json").read_text())
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids.values() if p) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [n for n, p in pids.items() if p and _alive(p)], pids


def test_json_without_headless_is_a_usage_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "demo", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--json needs --headless" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unknown_task_is_refused_before_anything_starts(tmp_path: Path) -> None:
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "farm.cli", "demo", "--headless",
                           "--task", "settings.wifi_off", "--task", "nope",
                           "--run-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "no task named 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()  # no broker, no sims, no run dir
    assert time.monotonic() - t0 < 30


@pytest.mark.slow
def test_a_tui_crash_leaves_farm_and_learner_running_and_is_reported(tmp_path: Path) -> None:
    """The TUI child dies (exit 3) a moment in: the demo says so and where the
    traceback is, carries on headless until --duration, stops farm and learner cleanly
    and reports the crash (the CLI turns ``crashed`` into exit status 1)."""
    import asyncio

    from farm.demo import DemoConfig, run_demo

    said: list[str] = []
    crash = "import sys, time; time.sleep(2); sys.exit(3)"
    cfg = DemoConfig(phones=1, duration_s=30, run_dir=tmp_path, progress_every_s=2.0,
                     tui_argv=(sys.executable, "-c", crash))
    summary = asyncio.run(run_demo(cfg, said.append))
    assert summary.crashed == ["tui"] and summary.exit_codes["tui"] == 3, summary
    assert summary.exit_codes["farm"] == 0 and summary.exit_codes["learner"] == 0, summary
    at = next(i for i, line in enumerate(said) if "the TUI crashed (exit 3" in line)
    assert "farm and learner keep running" in said[at]
    progress = [line for line in said[at:] if "devices:" in line]
    assert len(progress) >= 3, said  # headless progress after the crash
    assert summary.episodes > 0  # the farm kept collecting


@pytest.mark.parametrize(("crashed", "codes", "status"), [
    (["tui"], {"tui": 3, "farm": 0, "learner": 0}, 1),  # the test above: the TUI died
    ([], {"farm": 0, "learner": 0, "tui": 130}, 0),  # stopped with Ctrl-C: clean
    ([], {"farm": -9, "learner": 0}, 1),  # a part that did not stop cleanly
])
def test_the_demos_exit_status_says_what_happened(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, crashed: list[str],
                                                  codes: dict[str, int], status: int) -> None:
    """How `distrl demo` turns the run's summary (run_demo, exercised for real above)
    into its exit status and last line."""
    from click.testing import CliRunner

    import farm.demo
    from farm.cli import cli

    async def fake_run(cfg: object, say: object, *, stop: object = None) -> farm.demo.DemoSummary:
        return farm.demo.DemoSummary(crashed=list(crashed), exit_codes=dict(codes))

    monkeypatch.setattr(farm.demo, "run_demo", fake_run)
    r = CliRunner().invoke(cli, ["demo", "--headless", "--run-dir", str(tmp_path)])
    assert r.exit_code == status, r.output
    assert ("ended badly" in r.output) == (status == 1), r.output
    if crashed:
        assert "failed: tui ended badly" in r.output

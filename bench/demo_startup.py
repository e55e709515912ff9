"""``distrl demo`` start-up: how long until the first finished episode is on screen.

Two figures, each the median of ``--runs`` fresh demos (2 sim phones by default):

  tui       launch ``distrl demo`` in a detached 200×50 tmux terminal, poll
            ``tmux capture-pane`` every 0.1 s until the fleet status bar's
            ``episodes N`` shows N ≥ 1; from the launch (Python start-up and imports
            included) — what a user waits for. Then ``q``, and the demo's exit is timed.
  headless  ``distrl demo --headless --duration 20 --json``: its ``first_episode_s``
            (measured inside the demo, from run_demo's start to the first finished
            episode reported on the broker — no interpreter start-up, no TUI).

Usage:  .venv/bin/python bench/demo_startup.py [--runs 3] [--phones 2] [--skip-tui]
Needs tmux for the first figure (skipped with a note when missing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPISODES = re.compile(r"│ episodes (\d+) │")
SERIAL_ROW = re.compile(r"^\S*\s+(127\.0\.0\.1:\d+)\s+(\w+)\s", re.M)


def _tmux(sock: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(["tmux", "-S", str(sock), *args], capture_output=True, text=True,
                          timeout=10, env=env, check=False)


def tui_run(phones: int, timeout: float = 90.0) -> dict[str, float | None]:
    """One demo in tmux: seconds from launch to devices and to the first episode on
    screen, and from ``q`` to the demo's exit."""
    work = Path(tempfile.mkdtemp(prefix="dstart"))
    sock, rc = work / "s", work / "rc"
    cmd = (f"{shlex.quote(sys.executable)} -m farm.cli demo --phones {phones} "
           f"--duration {timeout:.0f} --run-dir {shlex.quote(str(work / 'runs'))}; "
           f"echo $? > {shlex.quote(str(rc))}")
    out: dict[str, float | None] = {"devices_s": None, "first_episode_s": None,
                                    "exit_s": None, "rc": None}
    t0 = time.monotonic()
    _tmux(sock, "new-session", "-d", "-s", "demo", "-x", "200", "-y", "50", "-c", str(ROOT),
          cmd)
    try:
        while time.monotonic() - t0 < timeout and not rc.exists():
            screen = _tmux(sock, "capture-pane", "-p", "-t", "demo").stdout
            now = time.monotonic() - t0
            if out["devices_s"] is None and len(set(SERIAL_ROW.findall(screen))) >= phones:
                out["devices_s"] = round(now, 2)
            m = EPISODES.search(screen)
            if m and int(m.group(1)) >= 1:
                out["first_episode_s"] = round(now, 2)
                break
            time.sleep(0.1)
        t1 = time.monotonic()
        _tmux(sock, "send-keys", "-t", "demo", "q")
        while not rc.exists() and time.monotonic() - t1 < 60:
            time.sleep(0.1)
        if rc.exists():
            out["exit_s"] = round(time.monotonic() - t1, 2)
            out["rc"] = float(rc.read_text().strip() or "nan")
    finally:
        _tmux(sock, "kill-server")  # SIGHUP: the demo shuts its children down
        shutil.rmtree(work, ignore_errors=True)
    return out


def headless_run(phones: int, duration: float = 20.0) -> dict[str, float | None]:
    work = Path(tempfile.mkdtemp(prefix="dstart"))
    try:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "farm.cli", "demo", "--headless", "--json",
                            "--phones", str(phones), "--duration", str(duration),
                            "--run-dir", str(work / "runs")], cwd=ROOT, capture_output=True,
                           text=True, timeout=duration + 120, check=False)
        wall = time.monotonic() - t0
        try:
            summary = json.loads(p.stdout)
        except json.JSONDecodeError:
            print(f"  headless run failed (exit {p.returncode}): {p.stderr[-400:]}")
            return {"first_episode_s": None, "wall_s": round(wall, 2), "episodes": None}
        return {"first_episode_s": summary.get("first_episode_s"), "wall_s": round(wall, 2),
                "episodes": summary.get("episodes")}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _median(vals: list[float | None]) -> str:
    got = [v for v in vals if v is not None]
    return "-" if not got else f"{statistics.median(got):.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--phones", type=int, default=2)
    ap.add_argument("--skip-tui", action="store_true")
    args = ap.parse_args()
    print(f"distrl demo start-up, {args.phones} sim phones, {args.runs} runs each "
          f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    if args.skip_tui or shutil.which("tmux") is None:
        print("tui: skipped" + ("" if args.skip_tui else " (tmux not installed)"))
    else:
        tui = []
        for i in range(args.runs):
            r = tui_run(args.phones)
            tui.append(r)
            print(f"  tui run {i + 1}: devices on screen {r['devices_s']} s, first episode "
                  f"on screen {r['first_episode_s']} s, q → exit {r['exit_s']} s "
                  f"(exit code {r['rc']})")
        first = _median([r["first_episode_s"] for r in tui])
        print(f"tui: launch → first episode on screen, median {first} "
              f"(devices {_median([r['devices_s'] for r in tui])}, "
              f"q → exit {_median([r['exit_s'] for r in tui])})")
    hl = []
    for i in range(args.runs):
        r = headless_run(args.phones)
        hl.append(r)
        print(f"  headless run {i + 1}: first_episode_s {r['first_episode_s']}, "
              f"{r['episodes']} episodes, wall {r['wall_s']} s")
    print(f"headless: first_episode_s median {_median([r['first_episode_s'] for r in hl])}")


if __name__ == "__main__":
    main()

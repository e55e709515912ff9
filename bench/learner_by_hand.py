"""Does a learner started by hand, as the README describes, learn as fast as the demo?

Two arms, one after the other on the same machine, each from a fresh policy (no
pretraining, so only the online learner differs), on the demo's task set (the easy
tier) and the same number of sim phones:

* **demo**: ``distrl demo --headless --no-pretrain --phones N --duration D``;
* **by hand**: ``distrl broker`` (accounts), then ``distrl learner --broker … --run-dir
  …`` with no config file, then ``distrl farm up --sim N --policy learned --tag easy`` —
  the README's commands, every setting at its default.

For each arm the learner's own scalar log gives the training episodes' success rate
(its trailing window) and the episodes received against wall time since the learner
started; the report lines them up at fixed times.

    python bench/learner_by_hand.py                         # 4 phones, 180 s per arm
    python bench/learner_by_hand.py --phones 8 --duration 300 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.chaos import Part, _wait_port  # noqa: E402
from farm.learner.metrics import read_scalars  # noqa: E402
from farm.sim.adbhost import free_port  # noqa: E402

CHECKPOINTS_S = (30, 60, 90, 120, 180, 240, 300, 420, 600)


def curve(scalars: Path) -> list[tuple[float, float, float]]:
    """(seconds since the learner's first record, success rate, episodes received)."""
    recs = list(read_scalars(scalars)) if scalars.exists() else []
    if not recs:
        return []
    t0 = min(r["wall_time"] for r in recs)
    out: list[tuple[float, float, float]] = []
    rate, received = 0.0, 0.0
    for r in sorted(recs, key=lambda r: r["wall_time"]):
        if r["tag"] == "success_rate":
            rate = float(r["value"])
        elif r["tag"] == "received":
            received = float(r["value"])
        else:
            continue
        out.append((r["wall_time"] - t0, rate, received))
    return out


def at(points: list[tuple[float, float, float]], t: float) -> tuple[float, float] | None:
    """(success rate, received) as last recorded at or before ``t`` seconds."""
    before = [p for p in points if p[0] <= t]
    return (before[-1][1], before[-1][2]) if before else None


async def demo_arm(phones: int, duration: float, work: Path) -> Path:
    run = work / "demo"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "farm.cli", "demo", "--headless", "--json", "--no-pretrain",
        "--phones", str(phones), "--duration", str(duration), "--eval-every", "0",
        "--run-dir", str(run), cwd=ROOT, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate()
    summary = json.loads(out)
    return Path(summary["run_dir"]) / "learner" / "scalars.jsonl"


async def by_hand_arm(phones: int, duration: float, work: Path) -> Path:
    accounts, logs = work / "accounts", work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DISTRL_KEYS": str(work / "keys"), "PYTHONUNBUFFERED": "1",
           "DISTRL_STATE_DIR": str(work / "state")}
    port = free_port()
    cli = [sys.executable, "-m", "farm.cli"]
    broker = Part("broker", [*cli, "broker", "--port", str(port), "--accounts",
                             str(accounts), "--farm", "farm"], env, logs)
    await broker.start()
    await _wait_port(port)
    for _ in range(100):
        if (accounts / "farm-farm.password").exists():
            break
        await asyncio.sleep(0.1)
    run = work / "learner"
    learner = Part("learner", [*cli, "learner", "--broker", f"mqtt://learner@127.0.0.1:{port}",
                               "--password-file", str(accounts / "learner.password"),
                               "--run-dir", str(run)], env, logs)
    farm = Part("farm", [*cli, "farm", "up", "--broker", f"mqtt://farm-farm@127.0.0.1:{port}",
                         "--password-file", str(accounts / "farm-farm.password"),
                         "--sim", str(phones), "--policy", "learned", "--tag", "easy",
                         "--spool", str(work / "spool")], env, logs)
    await learner.start()
    await farm.start()
    try:
        await asyncio.sleep(duration)
    finally:
        await farm.stop(timeout=60)
        await learner.stop(timeout=60)
        await broker.stop(timeout=30)
    return run / "scalars.jsonl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--phones", type=int, default=4)
    ap.add_argument("--duration", type=float, default=180.0, help="seconds per arm")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    work = a.work_dir or Path(tempfile.mkdtemp(prefix="distrl-byhand-"))
    print(f"demo arm: {a.phones} phones, {a.duration:.0f} s …", file=sys.stderr, flush=True)
    demo = curve(asyncio.run(demo_arm(a.phones, a.duration, work)))
    print(f"by-hand arm: {a.phones} phones, {a.duration:.0f} s …", file=sys.stderr,
          flush=True)
    hand = curve(asyncio.run(by_hand_arm(a.phones, a.duration, work / "hand")))
    times = [t for t in CHECKPOINTS_S if t <= a.duration]
    rows = [{"t_s": t, "demo": at(demo, t), "by_hand": at(hand, t)} for t in times]
    if a.json:
        print(json.dumps({"phones": a.phones, "duration_s": a.duration, "rows": rows,
                          "work_dir": str(work)}, indent=2))
        return 0
    print(f"training success (trailing window) / episodes received, {a.phones} phones, "
          "from a fresh policy")
    print(f"  {'t':>5}  {'demo':>16}  {'by hand':>16}")
    for r in rows:
        cells = [("-" if v is None else f"{v[0]:.2f} / {v[1]:.0f}") for v in (r["demo"],
                                                                           r["by_hand"])]
        print(f"  {r['t_s']:>4}s  {cells[0]:>16}  {cells[1]:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

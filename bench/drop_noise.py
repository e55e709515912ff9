"""How far does a run's "worst held-out drop in its second half" fall by chance alone?

The learning bar says no run's held-out success may fall more than 10 points below its
best in the run's second half (``ArmRun.second_half_drop`` in training_efficiency.py).
A periodic round plays only ``k`` test episodes per task (35·k on the suite), so its
figure moves from round to round even when the policy's expected success does not. This
script replays each run's schedule (its complete rounds, which of them fall in the
second half) for a **flat** policy: one whose per-task success stays at what the run's
final evaluation measured (175 episodes), every round drawing ``k`` Bernoulli episodes
per task. The drop that policy shows is the noise floor of the measurement: a measured
drop well inside it says nothing about collapse; only one beyond it does.

    python bench/drop_noise.py RESULT_DIR [RESULT_DIR …] [--per-task 1 3] [--draws 2000]
        [--bar 10] [--seed 0] [--json OUT]

RESULT_DIR is a ``training_efficiency.py --out`` directory (``DIR:ARM,ARM`` keeps only
those arms). ``--per-task`` defaults to the episodes per task the run's rounds played.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.training_efficiency import ArmRun, merged_runs  # noqa: E402


@dataclass(frozen=True)
class NoiseFloor:
    """The second-half drop of a flat policy on one run's schedule, in points."""

    source: str
    arm: str
    seed: int
    measured: float
    per_task: int
    mean: float
    p90: float
    share_over_bar: float


def task_rates(run: ArmRun) -> np.ndarray:
    """Per-task success of the run's final evaluation (older records keep a bare rate)."""
    if not run.final_eval or not run.final_eval.get("by_task"):
        raise ValueError(f"{run.arm} seed {run.seed}: no final evaluation by task")
    return np.array([v["success_rate"] if isinstance(v, dict) else float(v)
                     for v in run.final_eval["by_task"].values()], dtype=float)


def second_half_mask(run: ArmRun) -> np.ndarray:
    """Which of the run's complete rounds the bar judges (as ``second_half_drop``)."""
    done = [e for e in run.evals if e["complete"]]
    if not done:
        raise ValueError(f"{run.arm} seed {run.seed}: no complete evaluation round")
    return np.array([run.in_second_half(e) for e in done])


def played_per_task(run: ArmRun) -> int:
    done = [e for e in run.evals if e["complete"]]
    tasks = len(done[-1]["by_task"]) if done and done[-1].get("by_task") else 0
    return max(1, round(done[-1]["episodes"] / tasks)) if tasks else 1


def flat_drops(rates: np.ndarray, judged: np.ndarray, per_task: int, draws: int,
               rng: np.random.Generator) -> np.ndarray:
    """``draws`` second-half drops (fractions) of a policy that succeeds at ``rates``."""
    wins = rng.binomial(per_task, rates, size=(draws, judged.size, rates.size))
    rounds = wins.sum(axis=2) / (per_task * rates.size)
    below_best = np.maximum.accumulate(rounds, axis=1) - rounds
    return np.where(judged, below_best, 0.0).max(axis=1)


def noise_floor(run: ArmRun, per_task: int, *, draws: int, bar: float,
                rng: np.random.Generator, source: str = "") -> NoiseFloor:
    drops = 100 * flat_drops(task_rates(run), second_half_mask(run), per_task, draws, rng)
    return NoiseFloor(source=source, arm=run.arm, seed=run.seed,
                      measured=100 * run.second_half_drop(),
                      per_task=per_task, mean=float(drops.mean()),
                      p90=float(np.percentile(drops, 90)),
                      share_over_bar=float((drops > bar).mean()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", metavar="RESULT_DIR",
                    help="training_efficiency.py --out directories (DIR:ARM,ARM: those arms)")
    ap.add_argument("--per-task", type=int, nargs="+", metavar="K",
                    help="episodes per task and round to simulate (default: as played)")
    ap.add_argument("--draws", type=int, default=2000, help="simulated runs per real run")
    ap.add_argument("--bar", type=float, default=10.0, help="the drop bar, in points")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, metavar="OUT", help="also write the rows here")
    opts = ap.parse_args(argv)
    if opts.draws < 1 or any(k < 1 for k in opts.per_task or []):
        ap.error("--draws and --per-task must be at least 1")
    try:
        # one directory at a time: re-runs of one arm and seed are separate runs here
        runs = [(Path(src.split(":")[0]).name, run) for src in opts.results
                for run in merged_runs([src])]
        rng = np.random.default_rng(opts.seed)
        rows = [noise_floor(run, k, draws=opts.draws, bar=opts.bar, rng=rng, source=name)
                for name, run in runs for k in (opts.per_task or [played_per_task(run)])]
    except ValueError as exc:
        print(f"drop_noise: {exc}", file=sys.stderr)
        return 2
    print(f"{'run':<16} {'arm':<14} {'seed':>4} {'measured':>9} {'k/task':>7} {'flat mean':>10} "
          f"{'flat p90':>9} {'P(flat > ' + format(opts.bar, 'g') + ')':>12}")
    for r in rows:
        print(f"{r.source[:16]:<16} {r.arm:<14} {r.seed:>4} {r.measured:>8.1f}  "
              f"{r.per_task:>6}  {r.mean:>9.1f} {r.p90:>9.1f} {r.share_over_bar:>12.2f}")
    for k in sorted({r.per_task for r in rows}):
        some = [r for r in rows if r.per_task == k]
        print(f"k = {k}: a flat policy's drop {statistics.mean(r.mean for r in some):.1f} "
              f"points on average; over {opts.bar:g} in "
              f"{statistics.mean(r.share_over_bar for r in some):.0%} of runs")
    if opts.json:
        opts.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sum-tree sampling throughput (docs/design.md §8: ≥ 100k samples/s, O(log n)).

Draws prioritized batches from a full ``SumTree`` (and from ``PrioritizedReplay``,
which adds IS weights and the episode lookup), with priority updates interleaved as a
learner does them, at several capacities, and prints samples/s and the ratio to the bar.

    .venv/bin/python bench/sumtree.py
    .venv/bin/python bench/sumtree.py --capacities 10000 1000000 --batch 256 --seconds 2
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401 - puts the repo on sys.path
import numpy as np

from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.learn.replay import PrioritizedReplay, SumTree

BAR = 100_000  # samples/s


def bench_tree(capacity: int, batch: int, seconds: float) -> tuple[float, float]:
    """(samples/s with an update of the drawn leaves after each batch, updates/s)."""
    rng = np.random.default_rng(0)
    tree = SumTree(capacity)
    tree.set_all(rng.random(capacity) + 1e-3)
    drawn = 0
    t_sample = t_update = 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        idx = tree.sample(batch, rng)
        t1 = time.perf_counter()
        tree.update_batch(idx, rng.random(batch) + 1e-3)
        t_update += time.perf_counter() - t1
        t_sample += t1 - t0
        drawn += batch
    return drawn / t_sample, drawn / t_update


def bench_replay(capacity: int, batch: int, seconds: float) -> float:
    """samples/s of PrioritizedReplay.sample (IS weights, lags, episode objects)."""
    step = StepRecord(obs={}, choice={}, log_mu=-1.0, reward=0.0, policy_version=0)
    ep = EpisodeRecord(id="e", task="t", instruction="i", steps=[step], success=False,
                       reward=0.0)
    replay = PrioritizedReplay(capacity, seed=0)
    rng = np.random.default_rng(1)
    for _ in range(capacity):
        replay.add(ep)
    replay.update_priorities(replay.filled(), rng.random(capacity) + 1e-3)
    drawn, spent = 0, 0.0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        replay.sample(batch, 0.6, 0.4, current_version=0)
        spent += time.perf_counter() - t0
        drawn += batch
    return drawn / spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capacities", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    print(f"bar: {BAR:,} samples/s; batch {args.batch}")
    print(f"{'capacity':>10} {'tree samples/s':>15} {'× bar':>7} {'updates/s':>12} "
          f"{'replay samples/s':>17} {'× bar':>7}")
    for cap in args.capacities:
        s, u = bench_tree(cap, args.batch, args.seconds)
        r = bench_replay(cap, args.batch, args.seconds) if cap <= 100_000 else float("nan")
        print(f"{cap:>10,} {s:>15,.0f} {s / BAR:>7.1f} {u:>12,.0f} {r:>17,.0f} {r / BAR:>7.1f}")


if __name__ == "__main__":
    main()

"""Replay bookkeeping per learner update, against replay size (issue 14: O(log n)).

One simulated A-RIDE update's replay work: add 4 new episodes, draw a batch of 16
(prioritized, IS weights), write their 16 priorities, prune by lag, re-score the 8
stalest, read the mean and entry priorities. Timed on a full buffer at each capacity,
for this tree's ``PrioritizedReplay`` and — with ``--compare REV`` — the one in git
revision REV (loaded from ``git show``; the working tree is not touched).

    .venv/bin/python bench/replay_bookkeeping.py                       # 1k, 100k, 1M
    .venv/bin/python bench/replay_bookkeeping.py --compare HEAD --updates 300
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import _common  # noqa: F401 - puts the repo on sys.path
import numpy as np

from distrl_sdk.learn import replay as current
from distrl_sdk.learn.api import EpisodeRecord, StepRecord

ROOT = Path(__file__).resolve().parents[1]


def load_revision(rev: str) -> ModuleType:
    src = subprocess.run(["git", "show", f"{rev}:distrl_sdk/learn/replay.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="replay-rev-")) / "replay_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("replay_rev", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replay_rev"] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


def episodes(n_versions: int) -> list[EpisodeRecord]:
    """One shared record per policy version (the bookkeeping never reads the steps)."""
    return [EpisodeRecord(id=f"v{v}", task="t", instruction="i", success=False, reward=0.0,
                          steps=[StepRecord(obs={}, choice={}, log_mu=-1.0, reward=0.0,
                                            policy_version=v)]) for v in range(n_versions)]


def bench(mod: Any, capacity: int, updates: int) -> float:
    """Mean ms of replay bookkeeping per update on a full buffer of ``capacity``."""
    rng = np.random.default_rng(0)
    eps = episodes(4096)
    replay = mod.PrioritizedReplay(capacity, max_lag=4000, seed=0)
    version = 0
    for i in range(capacity):  # fill: versions rise slowly, as a learner's do
        replay.add(eps[min(i * 4000 // max(capacity, 1), 4095)], float(rng.random() + 0.1))
    version = 4000
    t0 = time.perf_counter()
    for u in range(updates):
        for _ in range(4):
            replay.add(eps[min(version, 4095)], current_version=version)
        s = replay.sample(16, 0.6, 0.7, current_version=version)
        replay.update_priorities(s.indices, rng.random(16) + 0.1)
        replay.prune(version)
        stale = replay.stalest(8)
        replay.update_priorities(stale, rng.random(stale.size) + 0.1)
        if hasattr(replay, "mean_priority"):
            replay.mean_priority()
        else:  # the old trainer's metric: a scan of every stored priority
            replay.priorities(replay.filled()).mean()
        _ = replay.max_priority
        version += u % 2  # a new version every other update
    return (time.perf_counter() - t0) / updates * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--capacities", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    ap.add_argument("--updates", type=int, default=200, help="timed updates per capacity")
    ap.add_argument("--compare", metavar="REV", help="also time replay.py of this git revision")
    args = ap.parse_args()
    mods: list[tuple[str, Any]] = [("this tree", current)]
    if args.compare:
        mods.append((args.compare, load_revision(args.compare)))
    print(f"| capacity | {' | '.join(f'{name} ms/update' for name, _ in mods)} |")
    print(f"|---:|{'---:|' * len(mods)}")
    for cap in args.capacities:
        cells = []
        for _, mod in mods:
            cells.append(f"{bench(mod, cap, args.updates):.3f}")
            print(f"  … {cap} done", file=sys.stderr, flush=True)
        print(f"| {cap:,} | {' | '.join(cells)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Checkpoint cost: the whole replay rewritten every save vs the append-only replay store.

A trainer (A-RIDE over a UI-tree policy) holds N replayed episodes shaped like the demo's
(8 steps, ~40 candidates each, as UITreePolicy encodes a Settings screen). Each round
adds ``--new`` episodes (what arrives between two checkpoints) and saves both ways, side
by side in one run; the figure is the steady-state save time of each and their ratio.

    .venv/bin/python bench/checkpoint.py                      # N = 1 000 and 5 000
    .venv/bin/python bench/checkpoint.py --sizes 1000 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from distrl_sdk.learn import ARIDEConfig, ARIDETrainer, save_trainer
from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.learn.state import gc_replay_store
from distrl_sdk.policies.uitree import UITreePolicy


def episode(i: int, steps: int = 8, candidates: int = 40) -> EpisodeRecord:
    cands = [["tap", f"Row {j} of screen {i % 97}", f"row_{j}", "LinearLayout", 1,
              0.05, 0.1 + j * 0.02, 0.95, 0.12 + j * 0.02] for j in range(candidates)]
    recs = [StepRecord(obs={"v": 2, "i": "Turn on airplane mode", "s": t, "h": ["tap"],
                            "c": cands},
                       choice={"index": t % candidates, "kind": "tap", "label": "Row"},
                       log_mu=-3.2, reward=0.0, policy_version=0) for t in range(steps)]
    return EpisodeRecord(id=f"ep-{i}", task="settings.airplane_on",
                         instruction="Turn on airplane mode", steps=recs, success=i % 3 == 0,
                         reward=float(i % 3 == 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    ap.add_argument("--new", type=int, default=100, help="episodes added between two saves")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"{'replay':>8} {'full save':>11} {'store save':>11} {'ratio':>7}  (median of "
          f"{args.rounds} saves, {args.new} new episodes each)")
    for n in args.sizes:
        trainer = ARIDETrainer(UITreePolicy(), ARIDEConfig(capacity=n + args.new * args.rounds,
                                                           max_policy_lag=None))
        for i in range(n):
            trainer.add_episode(episode(i))
        tmp = Path(tempfile.mkdtemp(prefix="distrl-ckpt-bench-"))
        try:
            save_trainer(trainer, tmp / "warm", replay_store=tmp / "store")  # the first save
            full, inc = [], []
            for r in range(args.rounds):
                for i in range(args.new):
                    trainer.add_episode(episode(n + r * args.new + i))
                t0 = time.perf_counter()
                save_trainer(trainer, tmp / "full")
                t1 = time.perf_counter()
                save_trainer(trainer, tmp / f"inc{r}", replay_store=tmp / "store")
                t2 = time.perf_counter()
                gc_replay_store(tmp / "store", [tmp / f"inc{r}"])
                full.append(t1 - t0)
                inc.append(t2 - t1)
            f, s = statistics.median(full), statistics.median(inc)
            print(f"{n:>8} {f * 1000:>9.0f} ms {s * 1000:>9.0f} ms {f / s:>6.1f}×")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

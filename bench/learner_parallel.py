"""A-RIDE updates per second: one learner process vs the same learner leading data-
parallel workers (``distrl learner --nproc N``), side by side on the same replay.

Every arm builds the UI-tree policy and trainer exactly as ``distrl learner`` does
(``default_trainer``), fills replay with the same episodes (screens of 24 elements,
8 steps each, played by the untrained policy), runs warm-up updates, then times
``--updates`` updates. Arms: 1 process × 1 torch thread, 1 process × N threads, N
processes × 1 thread (gloo).

    python bench/learner_parallel.py                     # N = 2, batch 32 episodes
    python bench/learner_parallel.py --nproc 4 --batch 64 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def episodes(n: int, steps: int, seed: int) -> list[Any]:
    """``n`` episodes of ``steps`` decisions on settings-like screens."""
    import random

    from distrl_sdk.learn.api import EpisodeRecord, StepRecord
    from distrl_sdk.policies import build_policy
    from distrl_sdk.policy import Observation
    from distrl_sdk.uitree import Bounds, UIElement

    rng = random.Random(seed)
    words = ["Wi-Fi", "Bluetooth", "Display", "Battery", "Sound", "Storage", "Apps",
             "Location", "Security", "Accounts", "System", "About phone", "Dark theme",
             "Airplane mode", "Hotspot", "Notifications"]
    behaviour = build_policy("uitree", {"seed": seed})
    out = []
    for e in range(n):
        instr = f"Turn {'on' if e % 2 else 'off'} {rng.choice(words)}"
        obs = []
        for s in range(steps):
            labels = rng.sample(words, 12) + [f"{w} settings" for w in rng.sample(words, 11)]
            els = [UIElement(index=i + 1, depth=1, parent=0, text=t, resource_id="",
                             class_name="android.widget.TextView",
                             package="com.android.settings", content_desc="",
                             bounds=Bounds(0, 90 * i, 1080, 90 * i + 80), clickable=True)
                   for i, t in enumerate(labels)]
            root = UIElement(index=0, depth=0, parent=None, text="", resource_id="",
                             class_name="android.widget.FrameLayout",
                             package="com.android.settings", content_desc="",
                             bounds=Bounds(0, 0, 1080, 2400), clickable=False)
            obs.append(Observation(instruction=instr, screen_size=(1080, 2400), step=s,
                                   elements=[root, *els]))
        ds = behaviour.decide(obs)
        win = rng.random() < 0.4
        out.append(EpisodeRecord(
            id=f"e{e}", task="settings.toggle", instruction=instr, success=win,
            reward=1.0 if win else 0.0,
            steps=[StepRecord(obs=d.obs or {}, choice=d.choice or {},
                              log_mu=d.log_prob or 0.0, reward=0.0, policy_version=0)
                   for d in ds]))
    return out


def arm(nproc: int, threads: int, opts: argparse.Namespace) -> dict[str, Any]:
    import torch

    from distrl_sdk.policies import build_policy
    from farm.learner.service import LearnerConfig, default_trainer

    torch.set_num_threads(threads)
    cfg = LearnerConfig.model_validate({
        "algo_config": {"batch_episodes": opts.batch, "min_episodes": 1, "seed": 0,
                        "refresh_every": 0},
        "torch_threads": threads, "nproc": nproc})
    trainer = default_trainer(build_policy("uitree", {"seed": 0}), cfg)
    for ep in episodes(opts.episodes, opts.steps, 0):
        trainer.add_episode(ep)
    group = None
    if nproc > 1:
        from farm.learner.parallel import start_workers

        group = start_workers(trainer, cfg)
    try:
        for _ in range(opts.warmup):
            trainer.update()
        t0 = time.perf_counter()
        for _ in range(opts.updates):
            trainer.update()
        wall = time.perf_counter() - t0
    finally:
        if group is not None:
            group.stop()
    return {"nproc": nproc, "threads": threads, "updates": opts.updates,
            "updates_per_s": round(opts.updates / wall, 2),
            "ms_per_update": round(1000 * wall / opts.updates, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32, help="episodes per update")
    ap.add_argument("--episodes", type=int, default=256, help="in replay")
    ap.add_argument("--steps", type=int, default=8, help="per episode")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = [arm(1, 1, a), arm(1, a.nproc, a), arm(a.nproc, 1, a)]
    base = rows[0]["updates_per_s"]
    for r in rows:
        r["speedup"] = round(r["updates_per_s"] / base, 2)
    if a.json:
        print(json.dumps({"batch_episodes": a.batch, "steps_per_episode": a.steps,
                          "arms": rows}, indent=2))
    else:
        print(f"A-RIDE updates/s, UI-tree policy, {a.batch} episodes × {a.steps} steps "
              "per update")
        for r in rows:
            print(f"  {r['nproc']} process(es) × {r['threads']} thread(s): "
                  f"{r['updates_per_s']:6.2f} updates/s ({r['ms_per_update']} ms) "
                  f"×{r['speedup']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

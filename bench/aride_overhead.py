"""What A-RIDE's off-policy and prioritisation work costs (issue #5: ≤ 5 % of update time).

Trains ``UITreePolicy`` (default config: what the demo uses) with ``ARIDETrainer`` on
recorded episodes of synthetic Settings-like screens, and reads the trainer's own
timers: Retrace(λ) targets + advantages, and DPER priority work (the sampled episodes'
new priorities after each update, plus the rolling re-scoring of the stalest episodes
every ``refresh_every`` updates, which re-evaluates them under the current policy).
Prints their share of the whole update and the ratio to the bar.

    .venv/bin/python bench/aride_overhead.py
    .venv/bin/python bench/aride_overhead.py --updates 60 --steps 10 --batch 16
"""

from __future__ import annotations

import argparse
import random

import _common  # noqa: F401 - puts the repo on sys.path
import torch

from distrl_sdk.learn.api import EpisodeRecord, StepRecord
from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer
from distrl_sdk.policies.uitree import UITreePolicy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import parse_ui_dump

BAR = 0.05
WORDS = ("Network", "internet", "Bluetooth", "Display", "Sound", "Battery", "Storage",
         "Apps", "Security", "Location", "Accounts", "System", "Wi-Fi", "hotspot", "Alarm",
         "Timer", "Contacts", "Search", "Cart", "Checkout", "Brightness", "Dark theme")
INSTRUCTIONS = ("Turn on Bluetooth", "Open display settings", "Set an alarm for 7:30",
                'Search for "red shoes"', "Enable dark theme", "Add Anna to contacts")


def screen(rng: random.Random, rows: int) -> str:
    nodes = []
    for i in range(rows):
        top = 200 + 150 * i
        label = " ".join(rng.sample(WORDS, 2))
        nodes.append(
            f'<node index="{i}" text="" resource-id="" class="android.widget.LinearLayout" '
            f'package="p" content-desc="" clickable="true" bounds="[0,{top}][1080,{top + 150}]">'
            f'<node index="0" text="{label}" resource-id="android:id/title" '
            f'class="android.widget.TextView" package="p" content-desc="" clickable="false" '
            f'bounds="[40,{top + 20}][1000,{top + 120}]"/></node>')
    return ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
            '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" '
            'package="p" content-desc="" clickable="false" bounds="[0,0][1080,2400]">'
            + "".join(nodes) + "</node></hierarchy>")


def episodes(policy: UITreePolicy, n: int, steps: int, seed: int) -> list[EpisodeRecord]:
    rng = random.Random(seed)
    out = []
    for e in range(n):
        instruction = rng.choice(INSTRUCTIONS)
        obs = [Observation(instruction, parse_ui_dump(screen(rng, rng.randint(6, 12))),
                           (1080, 2400), t) for t in range(steps)]
        decisions = policy.decide(obs)
        success = rng.random() < 0.3
        recs = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                           reward=(1.0 if success and t == steps - 1 else 0.0),
                           policy_version=0)
                for t, d in enumerate(decisions)]
        out.append(EpisodeRecord(id=f"e{e}", task="bench", instruction=instruction,
                                 steps=recs, success=success, reward=float(success)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=40)
    ap.add_argument("--episodes", type=int, default=96)
    ap.add_argument("--steps", type=int, default=10, help="steps per episode")
    ap.add_argument("--batch", type=int, default=16, help="episodes per update")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    policy = UITreePolicy()
    cfg = ARIDEConfig(batch_episodes=args.batch, min_episodes=args.batch,
                      max_policy_lag=None, actor_lr=1e-3, critic_lr=1e-3)
    trainer = ARIDETrainer(policy, cfg)
    for ep in episodes(policy, args.episodes, args.steps, seed=0):
        trainer.add_episode(ep)
    for _ in range(3):  # warm-up: allocator, first Adam steps
        trainer.update()
    before = dict(trainer.timings)
    for _ in range(args.updates):
        trainer.update()
    spent = {k: trainer.timings[k] - before[k] for k in trainer.timings}
    share_retrace = spent["retrace"] / spent["update"]
    share_priority = spent["priority"] / spent["update"]
    share_refresh = spent["refresh"] / spent["update"]
    share = share_retrace + share_priority + share_refresh
    print(f"UITreePolicy default config, {args.updates} updates × {args.batch} episodes × "
          f"{args.steps} steps; refresh {cfg.refresh_size} episodes every "
          f"{cfg.refresh_every} updates")
    print(f"update        {1e3 * spent['update'] / args.updates:8.2f} ms/update")
    print(f"Retrace(λ)    {1e3 * spent['retrace'] / args.updates:8.2f} ms/update "
          f"({100 * share_retrace:.2f} %)")
    print(f"DPER priority {1e3 * spent['priority'] / args.updates:8.2f} ms/update "
          f"({100 * share_priority:.2f} %)  new priorities of the sampled episodes")
    print(f"DPER refresh  {1e3 * spent['refresh'] / args.updates:8.2f} ms/update "
          f"({100 * share_refresh:.2f} %)  re-scoring the stalest, amortised")
    print(f"overhead {100 * share:.2f} % of update time; bar ≤ {100 * BAR:.0f} %: "
          f"ratio {share / BAR:.2f} of the bar ({'PASS' if share <= BAR else 'FAIL'})")


if __name__ == "__main__":
    main()

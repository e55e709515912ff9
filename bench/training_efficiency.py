"""Training efficiency: A-RIDE + async collection vs DigiRL-style + sync collection.

Setup. Sim phones run in a child process (`distrl sim serve`, bench/_common.py): by
default 6 with the ``emulator`` latency profile and 2 ``old-phone`` — a small
heterogeneous fleet, so a sync round waits for its slowest phone as in the paper. The
collector (farm.collect.Collector over a DeviceRegistry, through a private adb server)
and the learner (farm.learner.LocalLearner, in-process, no broker) run in this process.
Both runs start from the same freshly initialised UITreePolicy (same seed: a uniform,
near-random start) on the same phones, tasks and wall-clock budget:

- **A-RIDE, async**: every phone plays on its own; the learner trains concurrently
  (one update after another in a worker thread) and publishes after every update.
- **DigiRL-style, sync**: rounds with a barrier; after each round the learner runs
  ``--updates-per-round`` updates while the phones wait, then the next round starts.

Success is the sliding-window success rate of the training episodes (sampled actions)
over the last ``--window`` finished episodes, recorded as each episode finishes.

Figures (as the issue asks): the time A-RIDE needs to reach the baseline's final
success ÷ the baseline's whole run (bar ≤ ⅓), and A-RIDE's success at the same wall
time relative to the baseline's (bar ≥ +20 %). ``--easy``: A-RIDE async alone on the
tasks tagged ``easy``, until ``--target`` (80 %) or ``--duration``; reports the time
to the target (bar: within 15 minutes on 2 cores).

Writes ``series.json`` (the curves) and ``training_efficiency.png`` (Pillow) to --out.

    .venv/bin/python bench/training_efficiency.py --duration 600          # ≈ 20 min
    .venv/bin/python bench/training_efficiency.py --easy --duration 900   # ≤ 15 min
    .venv/bin/python bench/training_efficiency.py --duration 60 --phones 4  # smoke
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _common import phones_in_child

from distrl_sdk.learn.api import Trainer
from distrl_sdk.policies.uitree import UITreePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.task import Task
from farm.collect import Collector, CollectorConfig, Mode, TaskSampler
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.learner import LearningPoint, LocalLearner, LocalLearnerConfig
from farm.sim.adbhost import PrivateAdbServer, bundled_adb

LIFECYCLE = LifecycleConfig(heartbeat_s=10, reaper_s=30, probe_timeout_s=10, boot_poll_s=0.2,
                            backoff_min_s=0.2)


@dataclass
class Run:
    label: str
    algo: str
    mode: Mode
    wall_s: float = 0.0
    episodes: int = 0
    updates: int = 0
    update_s: float = 0.0
    final_success: float = 0.0
    by_task: dict[str, float] = field(default_factory=dict)
    points: list[LearningPoint] = field(default_factory=list)
    collector: dict[str, Any] = field(default_factory=dict)


def select_tasks(opts: argparse.Namespace) -> list[type[Task]]:
    reg = TaskRegistry.discover()
    tasks = list(reg)
    if opts.easy or opts.tag:
        tag = opts.tag or "easy"
        tasks = [t for t in tasks if tag in t.tags]
    if opts.tasks:
        tasks = [t for t in tasks if t.name.startswith(tuple(opts.tasks.split(",")))]
    if not tasks:
        sys.exit("no sample tasks match the selection (--tasks/--tag/--easy)")
    return tasks


def make_trainer(algo: str, policy: UITreePolicy, opts: argparse.Namespace) -> Trainer:
    if algo == "aride":
        from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer

        return ARIDETrainer(policy, ARIDEConfig(
            actor_lr=opts.actor_lr, critic_lr=opts.critic_lr, traj_critic_lr=opts.critic_lr,
            batch_episodes=opts.batch, min_episodes=opts.min_episodes,
            max_policy_lag=opts.max_lag, entropy_coef=opts.entropy, seed=opts.seed))
    from distrl_sdk.learn.digirl import DigiRLConfig, DigiRLTrainer

    return DigiRLTrainer(policy, DigiRLConfig(
        actor_lr=opts.actor_lr, critic_lr=opts.critic_lr, traj_critic_lr=opts.critic_lr,
        batch_episodes=opts.batch, actor_batch_episodes=opts.batch,
        min_episodes=opts.min_episodes, seed=opts.seed))


async def train(port: int, serials: list[str], tasks: list[type[Task]], algo: str, mode: Mode,
                opts: argparse.Namespace, *, target: float | None = None) -> Run:
    label = f"{'A-RIDE' if algo == 'aride' else 'DigiRL-style'} {mode}"
    run = Run(label, algo, mode)
    async with DeviceRegistry(port=port, targets=serials, config=LIFECYCLE, discover=False,
                              device_timeout=60) as reg:
        for s in serials:
            await reg.wait_for(s, DeviceState.READY, timeout=120)
        policy = UITreePolicy.from_config({"seed": opts.seed,
                                           "overlap_prior": opts.overlap_prior})
        learner = LocalLearner(make_trainer(algo, policy, opts), LocalLearnerConfig(
            schedule="concurrent" if mode == "async" else "rounds", window=opts.window,
            updates_per_round=opts.updates_per_round, torch_threads=opts.torch_threads,
            max_updates_per_episode=opts.replay_ratio or None),
            seed=opts.seed)
        col = Collector(reg, TaskSampler(tasks, seed=opts.seed), learner.provider,
                        learner.sink, CollectorConfig(mode=mode, duration_s=opts.duration,
                                                      episode_timeout_s=120))

        async def progress() -> None:
            while True:
                await asyncio.sleep(opts.print_every)
                st = learner.stats
                print(f"    {label:<17} {time.monotonic() - t0:6.0f} s  "
                      f"{st.finished:5d} episodes  success {learner.success_rate:5.2f}  "
                      f"v{learner.provider.version}  ({st.updates} updates, "
                      f"{st.update_s:.0f} s training)", flush=True)
                if target is not None and learner.stats.finished >= opts.window \
                        and learner.success_rate >= target:
                    col.stop()
                    return

        t0 = time.monotonic()
        watch = asyncio.create_task(progress())
        async with learner.running():
            stats = await col.run()
        watch.cancel()
        run.wall_s = time.monotonic() - t0
    st = learner.stats
    run.episodes, run.updates, run.update_s = st.finished, st.updates, st.update_s
    run.final_success = learner.success_rate
    run.by_task = learner.success_by_task()
    run.points = learner.history
    run.collector = stats.as_dict()
    return run


def first_time_at(points: list[LearningPoint], level: float, min_episodes: int) -> float | None:
    for p in points:
        if p.episodes >= min_episodes and p.success_rate >= level:
            return p.wall_s
    return None


def success_at(points: list[LearningPoint], wall_s: float) -> float:
    before = [p for p in points if p.wall_s <= wall_s]
    return before[-1].success_rate if before else 0.0


def thin(points: list[LearningPoint], every_s: float = 1.0) -> list[dict[str, Any]]:
    """One point a second at most (the curve is recorded per episode)."""
    out: list[dict[str, Any]] = []
    last = -every_s
    for i, p in enumerate(points):
        if p.wall_s - last >= every_s or i == len(points) - 1:
            out.append(asdict(p))
            last = p.wall_s
    return out


def plot(runs: list[Run], path: Path, title: str, target: float | None = None) -> None:
    """Success vs wall time, one line per run (Pillow: matplotlib is not installed)."""
    from PIL import Image, ImageDraw

    w, h, ml, mr, mt, mb = 900, 540, 70, 30, 50, 60
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    tmax = max([p.wall_s for r in runs for p in r.points] + [1.0])
    pw, ph = w - ml - mr, h - mt - mb

    def xy(t: float, s: float) -> tuple[float, float]:
        return ml + pw * t / tmax, mt + ph * (1 - s)

    d.rectangle([ml, mt, ml + pw, mt + ph], outline="black")
    for i in range(6):
        s = i / 5
        y = xy(0, s)[1]
        d.line([ml - 5, y, ml + pw, y], fill=(225, 225, 225) if i else "black")
        d.text((ml - 40, y - 6), f"{s:.1f}", fill="black")
    for i in range(6):
        t = tmax * i / 5
        x = xy(t, 0)[0]
        d.line([x, mt + ph, x, mt + ph + 5], fill="black")
        d.text((x - 12, mt + ph + 10), f"{t:.0f}", fill="black")
    d.text((ml + pw / 2 - 60, h - 25), "wall time (s)", fill="black")
    d.text((10, mt - 30), "success rate (sliding window)", fill="black")
    d.text((ml + pw / 2 - len(title) * 3, 12), title, fill="black")
    if target is not None:
        y = xy(0, target)[1]
        d.line([ml, y, ml + pw, y], fill=(150, 150, 150), width=1)
    colors = [(200, 40, 40), (40, 80, 200), (40, 150, 60), (150, 100, 0)]
    for i, r in enumerate(runs):
        c = colors[i % len(colors)]
        pts = [xy(p["wall_s"], p["success_rate"]) for p in thin(r.points, tmax / 400)]
        if len(pts) > 1:
            d.line(pts, fill=c, width=2)
        d.line([ml + 15, mt + 15 + 18 * i, ml + 45, mt + 15 + 18 * i], fill=c, width=3)
        d.text((ml + 52, mt + 9 + 18 * i), f"{r.label} (final {r.final_success:.2f})", fill=c)
    img.save(path)


def write(runs: list[Run], out: Path, opts: argparse.Namespace, summary: dict[str, Any],
          title: str, target: float | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data = {"options": {k: v for k, v in vars(opts).items() if k != "out"},
            "summary": summary,
            "runs": [{**{k: v for k, v in asdict(r).items() if k != "points"},
                      "series": thin(r.points)} for r in runs]}
    (out / "series.json").write_text(json.dumps(data, indent=1))
    plot(runs, out / "training_efficiency.png", title, target)
    print(f"\n  wrote {out / 'series.json'} and {out / 'training_efficiency.png'}")


def describe(r: Run) -> str:
    return (f"  {r.label:<17} final window success {r.final_success:.2f}; {r.episodes} "
            f"episodes, {r.updates} updates ({r.update_s:.0f} s training) in {r.wall_s:.0f} s; "
            f"{r.collector.get('trajectories_per_min', 0):.0f} traj/min")


async def main_async(opts: argparse.Namespace) -> None:
    tasks = select_tasks(opts)
    n_old = min(opts.old_phones, opts.phones)
    n_emu = opts.phones - n_old
    print(f"training efficiency: {opts.phones} sim phones ({n_emu} {opts.profile} + {n_old} "
          f"old-phone), {len(tasks)} task families, UITreePolicy seed {opts.seed}, "
          f"{opts.duration:g} s per run, window {opts.window} episodes")
    with contextlib.ExitStack() as stack:
        adb = stack.enter_context(PrivateAdbServer(bundled_adb()))
        serials: list[str] = []
        for n, profile, seed in ((n_emu, opts.profile, opts.seed + 1),
                                 (n_old, "old-phone", opts.seed + 2)):
            if n:
                child = stack.enter_context(phones_in_child(n, profile=profile, seed=seed))
                serials += [p["serial"] for p in child["phones"]]
        if opts.easy:
            print(f"\neasy tier, A-RIDE async, until {opts.target:.0%} success or "
                  f"{opts.duration:g} s: {', '.join(t.name for t in tasks)}")
            run = await train(adb.port, serials, tasks, "aride", "async", opts,
                              target=opts.target)
            print(describe(run))
            print(f"  per task: {run.by_task}")
            start = run.points[min(len(run.points), opts.window) - 1].success_rate \
                if run.points else 0.0
            t = first_time_at(run.points, opts.target, opts.window)
            print(f"  first window {start:.2f} → {run.final_success:.2f}; time to "
                  f"{opts.target:.0%}: {'not reached' if t is None else f'{t:.0f} s'}; bar ≤ "
                  f"900 s → {'PASS' if t is not None and t <= 900 else 'FAIL'}")
            write([run], Path(opts.out), opts, {"time_to_target_s": t, "first_window": start,
                                                "final": run.final_success},
                  "A-RIDE async, easy tier", opts.target)
            return
        runs: list[Run] = []
        for algo, mode in (("digirl", "sync"), ("aride", "async")):
            print(f"\n{'DigiRL-style, sync' if algo == 'digirl' else 'A-RIDE, async'}")
            runs.append(await train(adb.port, serials, tasks, algo, mode, opts))
            print(describe(runs[-1]))
    base, ours = runs
    print("\nresults")
    t_base = base.wall_s
    t_ours = first_time_at(ours.points, base.final_success, opts.window) \
        if base.final_success > 0 else None
    ratio = t_ours / t_base if t_ours is not None else None
    at_equal = success_at(ours.points, t_base)
    rel = (at_equal / base.final_success - 1) if base.final_success > 0 else None
    if ratio is None:
        why = "baseline final success is 0" if base.final_success <= 0 else "never reached"
        print(f"  time to the baseline's final success ({base.final_success:.2f}): {why}")
    else:
        print(f"  A-RIDE reaches the baseline's final success ({base.final_success:.2f}) after "
              f"{t_ours:.0f} s = {ratio:.2f} × the baseline's {t_base:.0f} s; bar ≤ 0.33 → "
              f"{'PASS' if ratio <= 1 / 3 else 'FAIL'}")
    if rel is None:
        print("  relative success at equal time: n/a (baseline final success 0)")
    else:
        print(f"  at equal time ({t_base:.0f} s): A-RIDE {at_equal:.2f} vs baseline "
              f"{base.final_success:.2f} = {rel:+.0%}; bar ≥ +20 % → "
              f"{'PASS' if rel >= 0.2 else 'FAIL'}")
    write(runs, Path(opts.out), opts, {"time_ratio": ratio, "relative_success": rel,
                                       "baseline_final": base.final_success,
                                       "aride_at_equal_time": at_equal},
          "success vs wall time: A-RIDE async vs DigiRL-style sync")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--phones", type=int, default=8)
    ap.add_argument("--old-phones", type=int, default=2, help="of --phones, old-phone profile")
    ap.add_argument("--profile", default="emulator", help="latency profile of the others")
    ap.add_argument("--tasks", default="", help="task name prefixes, comma-separated")
    ap.add_argument("--tag", default="", help="only tasks with this tag")
    ap.add_argument("--easy", action="store_true", help="A-RIDE on the easy tier to --target")
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--window", type=int, default=64, help="episodes in the success window")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overlap-prior", type=float, default=2.0,
                    help="UITreePolicy reading prior (0: uniform start)")
    ap.add_argument("--actor-lr", type=float, default=1e-3)
    ap.add_argument("--critic-lr", type=float, default=1e-3)
    ap.add_argument("--entropy", type=float, default=0.01, help="A-RIDE β")
    ap.add_argument("--batch", type=int, default=16, help="episodes per update")
    ap.add_argument("--min-episodes", type=int, default=32)
    ap.add_argument("--max-lag", type=int, default=1000, help="A-RIDE policy-lag bound K")
    ap.add_argument("--replay-ratio", type=float, default=0.5,
                    help="A-RIDE: at most this many updates per new episode (0: unbounded)")
    ap.add_argument("--updates-per-round", type=int, default=4, help="sync baseline")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--print-every", type=float, default=30.0)
    ap.add_argument("--out", default="bench/results/training_efficiency")
    opts = ap.parse_args()
    if opts.phones < 1 or opts.duration <= 0 or not 0 < opts.target <= 1 or opts.window < 1:
        ap.error("--phones ≥ 1, --duration > 0, 0 < --target ≤ 1 and --window ≥ 1 required")
    logging.basicConfig(level=logging.WARNING)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up phones on kill
    try:
        asyncio.run(main_async(opts))
    except KeyboardInterrupt:
        sys.exit("interrupted")


if __name__ == "__main__":
    main()

"""Training efficiency, held out: demonstrations → SFT → online RL, arms side by side.

The paper's pipeline (a pretrained agent fine-tuned online) on the sample suite, judged
on the **test parameter split** by greedy evaluation rounds whose episodes never enter
replay. Per seed:

1. ``distrl demos record`` — the oracle on the train split, ``--demos-per-task`` episodes
   per task family (the budget; default 4, which leaves SFT alone under 50 % held out).
2. ``distrl sft`` — behaviour cloning of a fresh UI-tree policy with the hand-made
   reading prior **off** (``overlap_prior=0``). The overlap *feature* (an input: how much
   of the instruction a candidate's text names, whose weight the network learns) is on
   unless ``--no-overlap-feature``; the scratch arm has neither.
3. Arms, one after another on the same sim phones, the same wall-clock ``--duration``
   and the same evaluation schedule (``--eval-every`` s; a round = every task's test
   instances, ``--eval-episodes`` each, the same instances every round):

   - ``sft``            SFT only: the checkpoint evaluated, nothing trained
   - ``aride``          SFT + A-RIDE, async collection (the learner trains concurrently)
   - ``digirl-async``   SFT + DigiRL-style, async collection
   - ``digirl-sync``    SFT + DigiRL-style, sync collection (barrier rounds; the baseline)
   - ``scratch``        A-RIDE from scratch (no SFT, prior and overlap feature off)

   The phones share one latency ``--profile``, or form a mixed fleet: ``--slow-phones N``
   of them on ``--slow-profile`` (default ``old-phone``), where a sync round waits for
   the slowest phone while async phones never wait for each other.

Figures (mean over seeds, with the seeds' spread): each arm's final held-out success —
the final policy on ``--final-episodes`` test instances per task (default 5: 175
episodes on the suite, where a periodic round's 35 leave ±16 points of noise);
A-RIDE vs the sync baseline at equal wall time (bar ≥ +20 % relative) and the time
A-RIDE needs to reach the baseline's final held-out success ÷ the baseline's run (bar
≤ ⅓); A-RIDE vs async DigiRL-style (ahead in the mean and on every seed); A-RIDE vs
SFT alone (must exceed the seeds' spread); the worst held-out drop from the best in
each run's second half (bar ≤ 10 points; rounds play 3 episodes per task by default,
as 1 leaves that figure to chance: bench/drop_noise.py); A-RIDE's final held-out
success (bar ≥ 80 % on the full suite within 30 min). Writes ``results.json`` and a plot
(matplotlib, if installed) to ``--out``.

    .venv/bin/python bench/training_efficiency.py                         # the bars: ~8 h
    .venv/bin/python bench/training_efficiency.py --seeds 0 --duration 300 --arms sft aride
    .venv/bin/python bench/training_efficiency.py --tag easy --duration 120   # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._common import ROOT, phones_in_child
from distrl_sdk.learn.api import Trainer
from distrl_sdk.learn.aride import ARIDEConfig
from distrl_sdk.policies import load_policy, save_policy
from distrl_sdk.policies.uitree import UITreeConfig, UITreePolicy
from distrl_sdk.registry import TaskRegistry
from distrl_sdk.task import Task
from farm.collect import Collector, CollectorConfig, Mode, TaskSampler
from farm.device.lifecycle import DeviceState, LifecycleConfig
from farm.device.registry import DeviceRegistry
from farm.learner import LocalLearner, LocalLearnerConfig
from farm.learner.local import EvalPoint
from farm.learner.service import DEMO_COEF, KIND_ALGO_DEFAULTS
from farm.sim.adbhost import PrivateAdbServer, bundled_adb
from farm.sim.profiles import PROFILES

#: the RL arms' trainer settings are `distrl learner`'s own for the UI-tree policy, so a
#: learner started by hand (and the demo) trains as the measured arms do
LEARNER = KIND_ALGO_DEFAULTS["uitree"]["aride"]
LIFECYCLE = LifecycleConfig(heartbeat_s=10, reaper_s=30, probe_timeout_s=10, boot_poll_s=0.2,
                            backoff_min_s=0.2)
ARMS: dict[str, tuple[str | None, Mode | None, bool]] = {
    # name: (algorithm, collection mode, starts from SFT)
    "sft": (None, None, True),
    "aride": ("aride", "async", True),
    "digirl-async": ("digirl", "async", True),
    "digirl-sync": ("digirl", "sync", True),
    "scratch": ("aride", "async", False),
    # not a headline arm: A-RIDE collected like the sync baseline, to tell the algorithm
    # from the collection mode (on 2 cores the sim phones and the learner share the CPU)
    "aride-sync": ("aride", "sync", True),
}
LABELS = {"sft": "SFT only", "aride": "SFT + A-RIDE async",
          "digirl-async": "SFT + DigiRL-style async", "digirl-sync": "SFT + DigiRL-style sync",
          "scratch": "A-RIDE from scratch", "aride-sync": "SFT + A-RIDE sync"}
#: the scratch arm's policy: no hand-made reading help at all
NO_PRIOR = {"overlap_prior": 0.0, "overlap_feature": False, "money_rank": False}


def sft_policy_config(opts: argparse.Namespace, seed: int) -> dict[str, Any]:
    """The SFT arms' fresh policy: never the logit prior; the overlap input if asked."""
    return {"overlap_prior": 0.0, "overlap_feature": opts.overlap_feature,
            "money_rank": opts.money_rank, "money_rank_asked": opts.money_rank_asked,
            "last_tap_same_element": opts.last_tap_same_element,
            "named_words": opts.named_words, "seed": seed}


@dataclass
class ArmRun:
    arm: str
    seed: int
    wall_s: float = 0.0
    episodes: int = 0
    updates: int = 0
    evals: list[dict[str, Any]] = field(default_factory=list)  # EvalPoint as dicts
    # the final policy on --final-episodes instances per task (a tighter figure than a
    # periodic round's); absent in runs recorded before it existed
    final_eval: dict[str, Any] | None = None

    @property
    def final(self) -> float:
        if self.final_eval is not None:
            return float(self.final_eval["success_rate"])
        return self.last_round

    @property
    def last_round(self) -> float:
        """The last periodic round's held-out success (the instances every round plays)."""
        done = [e for e in self.evals if e["complete"]] or self.evals
        return done[-1]["success_rate"] if done else 0.0

    def at(self, t: float) -> float:
        """Held-out success of the newest complete round that ended by ``t``."""
        before = [e for e in self.evals if e["wall_s"] <= t and e["complete"]]
        return before[-1]["success_rate"] if before else 0.0

    def first_reaching(self, level: float) -> float | None:
        for e in self.evals:
            if e["complete"] and e["success_rate"] >= level:
                return float(e["wall_s"])
        return None

    def in_second_half(self, round_: dict[str, Any]) -> bool:
        """Whether the drop bar judges this round (it ended in the run's second half)."""
        return bool(round_["wall_s"] >= self.wall_s / 2)

    def second_half_drop(self) -> float:
        """The worst fall below the best-so-far among rounds in the run's second half."""
        done = [e for e in self.evals if e["complete"]]
        best, worst = 0.0, 0.0
        for e in done:
            best = max(best, e["success_rate"])
            if self.in_second_half(e):
                worst = max(worst, best - e["success_rate"])
        return worst


def run_cli(*args: str, log_path: Path) -> None:
    """A ``distrl`` command as a user runs it; its output goes to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(log_path, "w") as f:
        rc = subprocess.call([sys.executable, "-m", "farm.cli", *args], cwd=ROOT, stdout=f,
                             stderr=subprocess.STDOUT)
    if rc not in (0, 1):  # 1: some demonstration failed; the rest are kept
        sys.exit(f"`distrl {' '.join(args)}` exited {rc}; see {log_path}")
    print(f"    distrl {args[0]} {args[1] if len(args) > 1 else ''}: "
          f"{time.monotonic() - t0:.0f} s (log {log_path})", flush=True)


def prepare_sft(opts: argparse.Namespace, seed: int, out: Path, selection: list[str]) -> Path:
    demos, ckpt = out / f"seed{seed}" / "demos", out / f"seed{seed}" / "sft"
    if not (opts.reuse and (demos / "demos.json").is_file()):
        run_cli("demos", "record", *selection, "--split", "train", "-k",
                str(opts.demos_per_task), "--sim", str(min(opts.phones, 4)), "--seed",
                str(seed), "--out", str(demos), "--no-frames", log_path=demos.with_suffix(".log"))
    if not (opts.reuse and (ckpt / "policy.json").is_file()):
        run_cli("sft", "--demos", str(demos), "--policy", "uitree", "--policy-config",
                json.dumps(sft_policy_config(opts, seed)), "--epochs", str(opts.sft_epochs),
                "--lr", str(opts.sft_lr), "--seed", str(seed), "--threads",
                str(opts.torch_threads), "--out", str(ckpt),
                log_path=ckpt.with_suffix(".log"))
    return ckpt


def make_trainer(algo: str, policy: Any, opts: argparse.Namespace, seed: int) -> Trainer:
    horizon = {"horizon_seconds": opts.duration}
    if algo == "aride":
        from distrl_sdk.learn.aride import ARIDETrainer

        return ARIDETrainer(policy, ARIDEConfig(
            actor_lr=opts.actor_lr, critic_lr=opts.critic_lr, traj_critic_lr=opts.critic_lr,
            batch_episodes=opts.batch, min_episodes=opts.min_episodes,
            entropy_coef=opts.entropy, entropy_target=opts.entropy_target,
            demo_coef=opts.demo_coef, actor_dropout=opts.actor_dropout,
            traj_filter_quantile=opts.aride_filter, traj_filter_mode=opts.aride_filter_mode,
            normalize_advantage=opts.normalize_advantage,
            advantage_floor=opts.advantage_floor, sil_coef=opts.sil_coef,
            binarize_advantage=opts.binarize_advantage, max_policy_lag=opts.max_policy_lag,
            keep_successes=opts.keep_successes, alpha=opts.priority_alpha,
            actor_ratio=opts.actor_ratio, step_critic=opts.step_critic,
            gamma=opts.gamma, actor_lr_end_fraction=opts.actor_lr_end, seed=seed, **horizon))
    from distrl_sdk.learn.digirl import DigiRLConfig, DigiRLTrainer

    return DigiRLTrainer(policy, DigiRLConfig(
        actor_lr=opts.actor_lr, critic_lr=opts.critic_lr, traj_critic_lr=opts.critic_lr,
        batch_episodes=opts.batch, actor_batch_episodes=opts.batch,
        min_episodes=opts.min_episodes, demo_coef=opts.demo_coef,
        actor_dropout=opts.actor_dropout, seed=seed))


async def run_arm(arm: str, seed: int, sft: Path, reg: DeviceRegistry, tasks: list[type[Task]],
                  opts: argparse.Namespace, eval_reg: DeviceRegistry | None = None) -> ArmRun:
    """One arm on the phones of ``reg``; held-out rounds on ``eval_reg`` when given (phones
    of its own, so evaluation takes no collection time from any arm), else on ``reg``."""
    algo, mode, from_sft = ARMS[arm]
    run = ArmRun(arm, seed)
    if from_sft:
        policy, _ = load_policy(sft)
    else:
        policy = UITreePolicy.from_config({**NO_PRIOR, "seed": seed})
    # the SFT-only arm still needs a trainer for the learner's plumbing; it never updates
    trainer = make_trainer(algo or "aride", policy, opts, seed)
    if from_sft and opts.demo_coef > 0:  # the SFT arms keep their demonstrations in play
        from distrl_sdk.learn.demos import read_demos
        from distrl_sdk.learn.sft import sft_examples

        steps, _ = sft_examples(policy, read_demos(sft.parent / "demos", frames=False,
                                                   split="train"))
        trainer.add_demonstrations(steps)  # type: ignore[attr-defined]
    learner = LocalLearner(trainer, LocalLearnerConfig(
        schedule="rounds" if mode == "sync" else "concurrent",
        updates_per_round=opts.updates_per_round, torch_threads=opts.torch_threads,
        max_updates_per_episode=opts.replay_ratio or None,
        min_updates_per_episode=None if mode == "sync" else opts.min_replay_ratio or None,
        eval_every_s=opts.eval_every,
        eval_episodes_per_task=opts.eval_episodes, eval_seed=opts.eval_seed),
        seed=seed, eval_registry=eval_reg or reg, eval_tasks=tasks)
    t0 = time.monotonic()

    async def progress() -> None:
        seen = (0, 0)  # (finished, successes) at the previous line
        while True:
            await asyncio.sleep(opts.print_every)
            last = learner.eval_history[-1] if learner.eval_history else None
            held = "-" if last is None else f"{last.success_rate:.2f} (v{last.version})"
            st = learner.stats
            done, won = st.finished - seen[0], st.successes - seen[1]
            seen = (st.finished, st.successes)
            # the training episodes' own success since the last line (sampled, train
            # split): its gap to held-out success is what does not generalise
            train = f"{won / done:.2f}" if done else "-"
            m = st.last_metrics
            ent = f"  entropy {m['entropy']:.2f} β {m['entropy_coef']:.3f}" \
                if "entropy" in m and "entropy_coef" in m else ""
            if "demo_nll" in m:  # the anchor's −log π of demonstrated actions
                ent += f" demo-nll {m['demo_nll']:.2f}"
            if "replay_size" in m:  # what the lag bounds (or the capacity) left in replay
                ent += f" replay {m['replay_size']:.0f}"
            if st.collect_wait_s:  # the throttle held phones back (--min-replay-ratio)
                ent += f" phones waited {st.collect_wait_s:.0f} s"
            print(f"    {LABELS[arm]:<26} {time.monotonic() - t0:6.0f} s  "
                  f"{st.finished:5d} episodes  {st.updates:5d} updates  "
                  f"training {train}  held-out {held}{ent}", flush=True)

    watch = asyncio.create_task(progress())
    try:
        if algo is None:  # SFT alone: its held-out success, measured like every arm's
            learner._t0 = t0
            point: EvalPoint = await learner.evaluate_now()
            run.evals = [asdict(point)]
            run.final_eval = asdict(await learner.evaluate_now(opts.final_episodes))
            run.wall_s = opts.duration
            return run
        col = Collector(reg, TaskSampler(tasks, seed=seed), learner.provider, learner.sink,
                        CollectorConfig(mode=mode or "async", duration_s=opts.duration,
                                        episode_timeout_s=120))
        async with learner.running():
            await col.run()
        run.evals = [asdict(p) for p in learner.eval_history]
        # the score the run ends with: one more round of the last published version
        final = await learner.evaluate_now()
        run.evals.append({**asdict(final), "wall_s": time.monotonic() - t0})
        run.wall_s = time.monotonic() - t0
        run.final_eval = asdict(await learner.evaluate_now(opts.final_episodes))
        run.episodes, run.updates = learner.stats.finished, learner.stats.updates
        # the policy the final figure belongs to, for `distrl eval` / `demos record --policy`
        save_policy(policy, Path(opts.out) / f"seed{seed}" / f"{arm}-policy", run.updates)
    finally:
        watch.cancel()
    return run


def spread(xs: list[float]) -> tuple[float, float, float]:
    """(mean, min, max)."""
    return (statistics.fmean(xs), min(xs), max(xs)) if xs else (0.0, 0.0, 0.0)


def task_gaps(ours: list[ArmRun], theirs: list[ArmRun], show: int = 6
               ) -> list[dict[str, Any]]:
    """Where two arms' final evaluations differ, task by task: the mean success per task
    over the seeds both ran, largest gap first (printed: the first ``show``). A suite-mean
    gap of a point or two is often one or two tasks, which a mean hides."""
    mine = {r.seed: r.final_eval["by_task"] for r in ours if r.final_eval}
    other = {r.seed: r.final_eval["by_task"] for r in theirs if r.final_eval}
    seeds = sorted(set(mine) & set(other))
    if not seeds:
        return []
    tasks = sorted(set().union(*(mine[s] for s in seeds)))
    rows = []
    for t in tasks:
        a = [float(mine[s].get(t, 0.0)) for s in seeds]
        b = [float(other[s].get(t, 0.0)) for s in seeds]
        rows.append({"task": t, "gap": statistics.fmean(a) - statistics.fmean(b),
                     "ours": a, "theirs": b})
    rows.sort(key=lambda r: (-abs(r["gap"]), r["task"]))
    print(f"\nlargest per-task gaps, {LABELS[ours[0].arm]} − {LABELS[theirs[0].arm]} "
          f"(final evaluation, seeds {seeds})")
    for r in rows[:show]:
        print(f"  {r['task']:<30} {r['gap']:+.2f}  {[round(x, 2) for x in r['ours']]} vs "
              f"{[round(x, 2) for x in r['theirs']]}")
    return rows


def summarise(runs: list[ArmRun], opts: argparse.Namespace) -> dict[str, Any]:
    by_arm: dict[str, list[ArmRun]] = {}
    for r in runs:
        by_arm.setdefault(r.arm, []).append(r)
    out: dict[str, Any] = {"arms": {}}
    print("\nheld-out success (test split, greedy), mean [min, max] over seeds")
    for arm, rs in by_arm.items():
        m, lo, hi = spread([r.final for r in rs])
        drop = max(r.second_half_drop() for r in rs)
        out["arms"][arm] = {"final_mean": m, "final_min": lo, "final_max": hi,
                            "finals": [r.final for r in rs], "worst_second_half_drop": drop,
                            "episodes": [r.episodes for r in rs],
                            "updates": [r.updates for r in rs]}
        print(f"  {LABELS[arm]:<26} {m:5.3f} [{lo:.3f}, {hi:.3f}]  worst second-half drop "
              f"{drop * 100:.0f} pts")
    bars: dict[str, Any] = {}
    if "aride" in by_arm:
        m = out["arms"]["aride"]["final_mean"]
        bars["aride_final_ge_0.8"] = {"value": m, "pass": m >= 0.8}
        drop = out["arms"]["aride"]["worst_second_half_drop"]
        bars["aride_second_half_drop_le_0.10"] = {"value": drop, "pass": drop <= 0.10}
    if "aride" in by_arm and "digirl-sync" in by_arm:
        rel, ratio, paired = [], [], []
        sync_by_seed = {r.seed: r for r in by_arm["digirl-sync"]}
        for a in by_arm["aride"]:  # pairs from one SFT start: the same seed
            b = sync_by_seed.get(a.seed)
            if b is not None and b.final > 0:
                # same duration, so the final figures are at equal wall time; older runs
                # without a final evaluation compare rounds
                both = a.final_eval is not None and b.final_eval is not None
                rel.append((a.final if both else a.at(b.wall_s)) / b.final - 1)
                t = a.first_reaching(b.last_round)  # rounds against rounds
                ratio.append(t / b.wall_s if t is not None else float("inf"))
                paired.append(a.seed)
        if rel:
            bars["relative_vs_sync_ge_0.20"] = {"seeds": paired, "values": rel,
                                                "mean": statistics.fmean(rel),
                                                "pass": statistics.fmean(rel) >= 0.2}
            bars["time_to_sync_final_le_1/3"] = {"seeds": paired, "values": ratio,
                                                 "pass": statistics.fmean(ratio) <= 1 / 3}
    if "aride" in by_arm and "digirl-async" in by_arm:
        a, b = out["arms"]["aride"]["final_mean"], out["arms"]["digirl-async"]["final_mean"]
        # seed by seed (each pair from one SFT start): a mean lead that some seed reverses
        # is inside the run-to-run noise, not "ahead"
        theirs = {r.seed: r.final for r in by_arm["digirl-async"]}
        leads = {r.seed: round(r.final - theirs[r.seed], 4) for r in by_arm["aride"]
                 if r.seed in theirs}
        bars["ahead_of_digirl_async"] = {"aride": a, "digirl_async": b, "by_seed": leads,
                                         "pass": a > b and all(v > 0 for v in leads.values())}
        out["task_gaps"] = task_gaps(by_arm["aride"], by_arm["digirl-async"])
    if "aride" in by_arm and "sft" in by_arm:
        a, s = out["arms"]["aride"], out["arms"]["sft"]
        margin = (a["final_max"] - a["final_min"]) + (s["final_max"] - s["final_min"])
        gain = a["final_mean"] - s["final_mean"]
        bars["better_than_sft_by_more_than_spread"] = {"gain": gain, "spread": margin,
                                                       "pass": gain > margin}
    out["bars"] = bars
    print("\nbars")
    for name, b in bars.items():
        print(f"  {name:<40} {'PASS' if b['pass'] else 'FAIL'}  "
              f"{ {k: v for k, v in b.items() if k != 'pass'} }")
    return out


def plot(runs: list[ArmRun], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib not installed: no plot)")
        return False
    fig, ax = plt.subplots(figsize=(9, 5.4), dpi=110)
    colours = {"sft": "grey", "aride": "tab:red", "digirl-async": "tab:blue",
               "digirl-sync": "tab:green", "scratch": "tab:orange", "aride-sync": "tab:purple"}
    seen: set[str] = set()
    for r in runs:
        xs = [e["wall_s"] / 60 for e in r.evals if e["complete"]]
        ys = [e["success_rate"] for e in r.evals if e["complete"]]
        if r.arm == "sft" and ys:
            xs, ys = [0, r.wall_s / 60], [ys[0], ys[0]]
        label = LABELS[r.arm] if r.arm not in seen else None
        seen.add(r.arm)
        ax.plot(xs, ys, marker="o", ms=3, lw=1.5, alpha=0.8, color=colours[r.arm], label=label,
                linestyle="--" if r.arm == "sft" else "-")
    ax.set_xlabel("wall time (min)")
    ax.set_ylabel("held-out success (test split, greedy)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


@contextlib.asynccontextmanager
async def ready_registry(port: int, serials: list[str]) -> AsyncIterator[DeviceRegistry]:
    async with DeviceRegistry(port=port, targets=serials, config=LIFECYCLE,
                              discover=False, device_timeout=60) as reg:
        for s in serials:
            await reg.wait_for(s, DeviceState.READY, timeout=120)
        yield reg


def sim_fleet(stack: contextlib.ExitStack, opts: argparse.Namespace
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The arms' sim phones (``--phones``, the last ``--slow-phones`` of them on
    ``--slow-profile``) and the held-out rounds' own (``--eval-phones``), as ``sim serve``
    lists them; the children stop when ``stack`` closes. The eval phones keep the main
    profile: the fleet changes how fast an arm collects, not how its policy is judged."""
    fast = opts.phones - opts.slow_phones
    child = stack.enter_context(phones_in_child(fast + opts.eval_phones,
                                                profile=opts.profile, seed=1))
    phones, eval_phones = child["phones"][:fast], child["phones"][fast:]
    if opts.slow_phones:
        slow = stack.enter_context(phones_in_child(opts.slow_phones,
                                                   profile=opts.slow_profile, seed=2))
        phones = phones + slow["phones"]
    return phones, eval_phones


async def main_async(opts: argparse.Namespace) -> None:
    reg_all = TaskRegistry.discover()
    tasks = [t for t in reg_all if not opts.tag or opts.tag in t.tags]
    if opts.tasks:
        tasks = [t for t in tasks if t.name in opts.tasks]
    if not tasks:
        sys.exit("no sample tasks match --tag/--task")
    selection = [a for t in tasks for a in ("--task", t.name)] \
        if (opts.tag or opts.tasks) else ["--all-tasks"]
    out = Path(opts.out)  # absolute (main): the CLI steps run from the repository root
    fast = opts.phones - opts.slow_phones
    fleet = f"{opts.phones} sim phones ({opts.profile}" + (
        f": {fast}, {opts.slow_profile}: {opts.slow_phones})" if opts.slow_phones else ")")
    print(f"training efficiency (held out): {len(tasks)} task families, {fleet}, arms "
          f"{', '.join(opts.arms)}, seeds {opts.seeds}, {opts.duration:g} s per arm, "
          f"evaluation every {opts.eval_every:g} s")
    runs: list[ArmRun] = []
    with contextlib.ExitStack() as stack:
        adb = stack.enter_context(PrivateAdbServer(bundled_adb()))
        phones, eval_phones = sim_fleet(stack, opts)
        serials = [p["serial"] for p in phones]
        eval_serials = [p["serial"] for p in eval_phones]
        for seed in opts.seeds:
            print(f"\nseed {seed}: demonstrations and SFT")
            sft = prepare_sft(opts, seed, out, selection)
            report = json.loads((sft / "sft_report.json").read_text()) \
                if (sft / "sft_report.json").is_file() else {}
            acc = report.get("after", {}).get("train", {}).get("accuracy")
            if isinstance(acc, float) and acc == acc:
                print(f"    SFT oracle-action accuracy on its demonstrations {acc:.3f}")
            for arm in opts.arms:
                print(f"  seed {seed}, {LABELS[arm]}")
                async with contextlib.AsyncExitStack() as regs:
                    reg = await regs.enter_async_context(ready_registry(adb.port, serials))
                    eval_reg = await regs.enter_async_context(
                        ready_registry(adb.port, eval_serials)) if eval_serials else None
                    run = await run_arm(arm, seed, sft, reg, tasks, opts, eval_reg)
                runs.append(run)
                print(f"    → final held-out {run.final:.3f} after {run.wall_s:.0f} s "
                      f"({run.episodes} episodes, {run.updates} updates)", flush=True)
                (out / "runs.json").write_text(json.dumps([asdict(r) for r in runs], indent=1))
    summary = summarise(runs, opts)
    data = {"options": {k: v for k, v in vars(opts).items()}, "summary": summary,
            "runs": [asdict(r) for r in runs]}
    (out / "results.json").write_text(json.dumps(data, indent=1))
    title = f"held-out success, {len(tasks)} tasks, seeds {opts.seeds}"
    if plot(runs, out / "training_efficiency.png", title):
        print(f"  wrote {out / 'training_efficiency.png'}")
    print(f"  wrote {out / 'results.json'}")


def merged_runs(sources: list[str]) -> list[ArmRun]:
    """The runs of earlier ``--out`` directories; ``DIR:ARM,ARM`` keeps only those arms of
    DIR (e.g. the sync run of a directory whose async run was later re-run). Two runs of
    one arm and seed would both count in its figures, so they are refused."""
    runs: list[ArmRun] = []
    origin: dict[tuple[str, int], str] = {}
    for src in sources:
        folder, sep, only = src.rpartition(":")
        if not sep or Path(src).is_dir():  # a directory whose name has a colon
            folder, only = src, ""
        keep = {a for a in only.split(",") if a}
        if bad := keep - set(ARMS):
            raise ValueError(f"{src}: no arm {', '.join(sorted(bad))} "
                             f"(arms: {', '.join(ARMS)})")
        path = Path(folder) / "results.json"
        try:
            found = json.loads(path.read_text())["runs"]
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{path}: not a training_efficiency result ({exc})") from exc
        for r in found:
            try:
                run = ArmRun(**r)
            except TypeError as exc:
                raise ValueError(f"{path}: a run this script cannot read ({exc})") from exc
            if keep and run.arm not in keep:
                continue
            if (run.arm, run.seed) in origin:
                raise ValueError(f"{run.arm} seed {run.seed} is in both "
                                 f"{origin[run.arm, run.seed]} and {folder}: keep one "
                                 f"with DIR:ARM,…")
            origin[run.arm, run.seed] = folder
            runs.append(run)
    return runs


def merge(opts: argparse.Namespace) -> None:
    runs = merged_runs(opts.merge)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(runs, opts)
    (out / "results.json").write_text(json.dumps(
        {"merged": opts.merge, "summary": summary, "runs": [asdict(r) for r in runs]},
        indent=1))
    seeds = sorted({r.seed for r in runs})
    if plot(runs, out / "training_efficiency.png", f"held-out success, seeds {seeds}"):
        print(f"  wrote {out / 'training_efficiency.png'}")


def build_parser() -> argparse.ArgumentParser:
    """The bench's command line; its RL knobs default to the UI-tree learner's settings."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", nargs="+", default=[a for a in ARMS if a != "aride-sync"],
                    choices=list(ARMS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--duration", type=float, default=1800.0, help="seconds per arm")
    ap.add_argument("--phones", type=int, default=8)
    ap.add_argument("--eval-phones", type=int, default=0,
                    help="extra sim phones that only play held-out rounds (default 0: the "
                         "rounds share the arm's phones and take collection time from it)")
    ap.add_argument("--profile", default="instant", choices=list(PROFILES),
                    help="sim latency profile: instant (CPU-bound: sims and learner share the "
                         "cores) or a device's, e.g. pixel (device-bound, as a real farm)")
    ap.add_argument("--slow-phones", type=int, default=0,
                    help="of the --phones, this many run --slow-profile instead: a mixed "
                         "fleet, where sync rounds wait for the slowest phone (default 0)")
    ap.add_argument("--slow-profile", default="old-phone", choices=list(PROFILES),
                    help="latency profile of the --slow-phones (default old-phone)")
    ap.add_argument("--tag", default="", help="only tasks with this tag (default: all)")
    ap.add_argument("--task", dest="tasks", action="append", default=[])
    ap.add_argument("--demos-per-task", type=int, default=1,
                    help="the demonstration budget: 1 leaves SFT alone at ≤ 50 %% held out")
    ap.add_argument("--sft-epochs", type=int, default=60)
    ap.add_argument("--sft-lr", type=float, default=1e-3)
    ap.add_argument("--overlap-feature", action=argparse.BooleanOptionalAction, default=True,
                    help="the SFT arms' policy reads instruction/element word overlap as an "
                         "input (its weight learned; the logit prior stays off either way)")
    ap.add_argument("--money-rank", action=argparse.BooleanOptionalAction,
                    default=UITreeConfig.money_rank,
                    help="the SFT arms' policy marks the lowest / highest amount of money "
                         "among the candidates on screen (UITreeConfig.money_rank)")
    ap.add_argument("--money-rank-asked", action=argparse.BooleanOptionalAction,
                    default=UITreeConfig.money_rank_asked,
                    help="with --money-rank: mark the amounts only when the instruction asks "
                         "about price (UITreeConfig.money_rank_asked)")
    ap.add_argument("--last-tap-same-element", action=argparse.BooleanOptionalAction,
                    default=UITreeConfig.last_tap_same_element,
                    help="the SFT arms' policy flags a candidate as tapped by the previous "
                         "action only where the previous screen had that element under the "
                         "tap (UITreeConfig.last_tap_same_element)")
    ap.add_argument("--named-words", action=argparse.BooleanOptionalAction,
                    default=UITreeConfig.named_words,
                    help="the SFT arms' policy reads a candidate's words that the instruction "
                         "names as one word (UITreeConfig.named_words)")
    ap.add_argument("--eval-every", type=float, default=180.0, help="seconds between rounds")
    ap.add_argument("--eval-episodes", type=int, default=3,
                    help="test episodes per task and round (3: 105 on the suite; with 1 a "
                         "round's noise alone fails the drop bar in about a third of runs, "
                         "bench/drop_noise.py)")
    ap.add_argument("--final-episodes", type=int, default=5,
                    help="per task, for the final policy's held-out figure")
    ap.add_argument("--eval-seed", type=int, default=0, help="which test instances")
    ap.add_argument("--actor-lr", type=float, default=LEARNER["actor_lr"])
    ap.add_argument("--critic-lr", type=float, default=LEARNER["critic_lr"])
    ap.add_argument("--actor-lr-end", type=float,
                    default=LEARNER.get("actor_lr_end_fraction",
                                        ARIDEConfig.actor_lr_end_fraction),
                    help="A-RIDE: the actor's lr decays linearly over --duration to this "
                         "fraction of --actor-lr (1: constant)")
    ap.add_argument("--entropy", type=float, default=LEARNER["entropy_coef"], help="β")
    ap.add_argument("--entropy-target", type=lambda v: None if v == "none" else float(v),
                    default=ARIDEConfig.entropy_target,
                    help="H*, nats per step: β rises while the policy's entropy is below "
                         "it ('none': a fixed β)")
    ap.add_argument("--demo-coef", type=float, default=DEMO_COEF,
                    help="the SFT arms' demonstration anchor: weight of −log π of the "
                         "demonstrated actions in every actor update (0 = off; without "
                         "it online RL unlearns long tasks SFT solved)")
    ap.add_argument("--actor-dropout", action=argparse.BooleanOptionalAction,
                    default=LEARNER["actor_dropout"],
                    help="RL's actor passes with the policy's token dropout (every RL arm)")
    ap.add_argument("--aride-filter", type=float, default=ARIDEConfig.traj_filter_quantile,
                    help="A-RIDE's trajectory filter: the actor trains on episodes above "
                         "this quantile of r − V_traj (0 = off; the released code: 0.9)")
    ap.add_argument("--aride-filter-mode", choices=("buffer", "batch"),
                    default=ARIDEConfig.traj_filter_mode,
                    help="with --aride-filter: the actor's batch drawn from the kept "
                         "episodes of replay (buffer, the released code's actor buffer) "
                         "or the critics' batch with the others masked out (batch)")
    ap.add_argument("--normalize-advantage", action=argparse.BooleanOptionalAction,
                    default=ARIDEConfig.normalize_advantage,
                    help="A-RIDE: advantages standardised over each batch's steps")
    ap.add_argument("--advantage-floor", type=lambda v: None if v == "none" else float(v),
                    default=LEARNER.get("advantage_floor"),
                    help="A-RIDE: advantages below this are raised to it in the actor loss "
                         "(0: only better-than-expected actions pull; 'none': the signed "
                         "advantage; default: the UI-tree learner's)")
    ap.add_argument("--binarize-advantage", action=argparse.BooleanOptionalAction,
                    default=LEARNER.get("binarize_advantage", False),
                    help="A-RIDE: the actor weighs a step by 1[A > 0] (DigiRL's and the "
                         "released code's weights), not by the advantage's size")
    ap.add_argument("--actor-ratio", choices=("truncated", "none"),
                    default=LEARNER.get("actor_ratio", ARIDEConfig.actor_ratio),
                    help="A-RIDE: the actor's weight of a replayed step includes "
                         "min(1, π/μ) (truncated, the paper's) or not (none: AWR-style)")
    ap.add_argument("--sil-coef", type=float, default=LEARNER["sil_coef"],
                    help="A-RIDE: weight of the self-imitation term −(G − V)₊·log π on "
                         "replayed steps (0 = off; default: the UI-tree learner's)")
    ap.add_argument("--priority-alpha", type=float, default=LEARNER["alpha"],
                    help="A-RIDE: priority exponent α of replay sampling (0: uniform, "
                         "every IS weight 1; default: the UI-tree learner's)")
    ap.add_argument("--max-policy-lag", type=lambda v: None if v == "none" else int(v),
                    default=LEARNER["max_policy_lag"],
                    help="A-RIDE: K, episodes more than K versions old leave replay "
                         "('none': no bound; default: the UI-tree learner's)")
    ap.add_argument("--step-critic", choices=("vtrace", "mc_classifier"),
                    default=LEARNER.get("step_critic", ARIDEConfig.step_critic),
                    help="A-RIDE's step critic: V-trace regression (the paper's) or DigiRL's "
                         "Monte Carlo classifier with its doubly-robust advantage")
    ap.add_argument("--gamma", type=float, default=LEARNER.get("gamma", ARIDEConfig.gamma),
                    help="A-RIDE's discount γ (DigiRL-style keeps its own 0.5)")
    ap.add_argument("--keep-successes", action=argparse.BooleanOptionalAction,
                    default=LEARNER.get("keep_successes", ARIDEConfig.keep_successes),
                    help="A-RIDE: successful episodes are exempt from the lag bounds (K and "
                         "the stale share); only the capacity removes them")
    ap.add_argument("--batch", type=int, default=16, help="episodes per update")
    ap.add_argument("--min-episodes", type=int, default=32)
    ap.add_argument("--replay-ratio", type=float, default=0.5,
                    help="async arms: at most this many updates per new episode (0: unbounded)")
    ap.add_argument("--min-replay-ratio", type=float, default=None,
                    help="async arms: phones wait at an episode's start while the trainer has "
                         "made fewer updates per episode than this (default: --replay-ratio, "
                         "which pins the ratio at the sync arm's 0.5 on shared cores; 0: "
                         "phones never wait, the setting of runs before this flag)")
    ap.add_argument("--updates-per-round", type=int, default=4, help="sync arm")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--print-every", type=float, default=60.0)
    ap.add_argument("--reuse", action="store_true",
                    help="reuse demonstrations and SFT checkpoints already in --out")
    ap.add_argument("--out", default="bench/results/training_efficiency")
    ap.add_argument("--merge", nargs="+", metavar="DIR", default=None,
                    help="only summarise and plot the runs in these earlier --out directories "
                         "together (e.g. seeds run separately) into --out; DIR:ARM,ARM takes "
                         "only those arms of DIR")
    return ap


def main() -> None:
    ap = build_parser()
    opts = ap.parse_args()
    if opts.merge:
        try:
            merge(opts)
        except ValueError as exc:
            ap.error(f"--merge: {exc}")
        return
    if opts.eval_phones < 0 or opts.phones < 1 or opts.duration <= 0 or opts.eval_every <= 0:
        ap.error("--phones ≥ 1, --eval-phones ≥ 0, --duration > 0 and --eval-every > 0 "
                 "are required")
    if not 0 <= opts.slow_phones < opts.phones:
        ap.error("--slow-phones must be ≥ 0 and fewer than --phones (a fleet of slow phones "
                 "only is --profile SLOW)")
    if opts.min_replay_ratio is None:
        opts.min_replay_ratio = opts.replay_ratio
    low, high = opts.min_replay_ratio, opts.replay_ratio
    if low < 0 or (high and low > high):
        ap.error("--min-replay-ratio must be ≥ 0 and at most --replay-ratio")
    logging.basicConfig(level=logging.WARNING)
    opts.out = str(Path(opts.out).resolve())
    Path(opts.out).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up phones on kill
    try:
        asyncio.run(main_async(opts))
    except KeyboardInterrupt:
        sys.exit("interrupted")


if __name__ == "__main__":
    main()

"""Mutation check for A-RIDE: does breaking each mechanism make tests/learn fail?

Each mutation is one textual edit of ``distrl_sdk/learn/aride.py`` or ``replay.py``,
applied to a COPY of the repository in a temporary directory (the working tree is
never touched); ``pytest tests/learn`` then runs inside that copy, whose package
shadows the original (the copy's root comes first on ``sys.path``; the bench checks
that the imported ``distrl_sdk`` really is the copy's). A mutation is *killed* when
at least one test fails, *survived* when all pass. The unmutated copy must pass first.

    .venv/bin/python bench/mutations.py                 # the nine of issue 14
    .venv/bin/python bench/mutations.py --extras        # … and the other fixes' mutations
    .venv/bin/python bench/mutations.py --only is_weights_dropped rho_bar_removed
    .venv/bin/python bench/mutations.py --tests tests/learn/test_aride_mechanics.py

Tests stop at the first failure (``-x``), so a killed mutation costs seconds; a
survivor costs the whole of tests/learn (≈ 25 s here without the SFT/demo tests, which
``--all-tests`` adds back). Exit status 1 if any mutation survives.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARIDE, REPLAY = "distrl_sdk/learn/aride.py", "distrl_sdk/learn/replay.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    issue: bool = True  # one of the nine listed in issue 14


MUTATIONS = [
    Mutation("is_weights_dropped", ARIDE,
             "w_ep = torch.as_tensor(sample.weights, dtype=torch.float32)",
             "w_ep = torch.ones(len(sample.weights))"),
    Mutation("rho_bar_removed", ARIDE, "rho_bar = rho.clamp(max=cfg.rho_max)",
             "rho_bar = torch.ones_like(rho)"),
    Mutation("priorities_never_updated", ARIDE,
             "self.replay.update_priorities(sample.indices, prio)", "pass"),
    Mutation("stale_refresh_off", ARIDE,
             "if cfg.refresh_every and self.updates % cfg.refresh_every == 0 and len(self.replay):",
             "if False:"),
    Mutation("uniform_sampling", ARIDE,
             "sample = self.replay.sample(cfg.batch_episodes, cfg.alpha, beta,",
             "sample = self.replay.sample(cfg.batch_episodes, 0.0, beta,"),
    Mutation("traj_filter_off", ARIDE, "keep, threshold = self._traj_filter(sample.episodes)",
             "keep, threshold = torch.ones(len(sample.episodes)), -1.0"),
    Mutation("advantage_one_step_td", ARIDE,
             "adv = (rewards + cfg.gamma * _shift(targets) - values.detach()) * batch.mask",
             "adv = td"),
    Mutation("traj_critic_frozen", ARIDE,
             "self._step(self.traj_opt, traj_loss, self.traj_critic.parameters())", "pass"),
    Mutation("is_beta_frozen", ARIDE,
             "return cfg.is_beta_start + self.anneal_fraction() * "
             "(cfg.is_beta_end - cfg.is_beta_start)",
             "return cfg.is_beta_start"),
    # beyond the issue's nine: the other fixes of issue 14
    Mutation("v_target_q_form", ARIDE, "c_max=cfg.trace_c_max, form=cfg.v_target)",
             'c_max=cfg.trace_c_max, form="retrace_q")', issue=False),
    Mutation("vtrace_first_step_uncorrected", ARIDE,
             "scaled = rho.clamp(max=rho_max) * td", "scaled = td", issue=False),
    Mutation("stale_eviction_off", ARIDE, "limit = self.config.max_stale_share",
             "limit = None", issue=False),
    Mutation("lag_prune_off", REPLAY, 'if self.max_lag is None or self.lag_mode != "drop":\n'
             "            return 0\n        heap", "if True:\n            return 0\n        heap",
             issue=False),
    Mutation("entropy_floor_off", ARIDE, "if cfg.entropy_target is not None:  # the floor",
             "if False:  # the floor", issue=False),
    Mutation("entry_priority_survives_removal", REPLAY,
             "self._max_measured.update_batch(s, self._max_measured.identity)\n",
             "pass\n", issue=False),
    Mutation("replay_sampling_uniform", REPLAY, "slots = self._tree.sample(batch, self.rng)",
             "slots = self.rng.choice(self.filled(), size=batch)", issue=False),
    Mutation("actor_buffer_off", ARIDE,
             'return cfg.traj_filter_quantile > 0 and cfg.traj_filter_mode == "buffer"',
             "return False", issue=False),
    Mutation("actor_buffer_unfiltered", ARIDE,
             "picked = self.replay.rng.choice(kept, size=cfg.batch_episodes)",
             "picked = self.replay.rng.choice(ref, size=cfg.batch_episodes)", issue=False),
    Mutation("step_cost_ignored", ARIDE,
             "rewards = batch.rewards - cfg.step_cost * batch.mask\n        w_ep",
             "rewards = batch.rewards\n        w_ep", issue=False),
]

_IGNORE = shutil.ignore_patterns(".git", ".venv", "runs", "__pycache__", ".pytest_cache",
                                 ".mypy_cache", ".ruff_cache", "*.egg-info", "node_modules",
                                 ".hypothesis")


def make_copy(dest: Path) -> None:
    """The parts of the repository the tests import (package, farm, tests, tasks)."""
    for name in ("distrl_sdk", "farm", "tests", "tui", "sample_tasks", "plugins"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=_IGNORE)
    for name in ("pyproject.toml", "conftest.py"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, dest / name)


def apply(copy_root: Path, m: Mutation) -> None:
    path = copy_root / m.path
    text = path.read_text()
    if text.count(m.old) != 1:  # the source moved on: the mutation must be re-aimed
        raise SystemExit(f"mutation {m.name}: pattern found {text.count(m.old)} times in "
                         f"{m.path} (expected once)")
    path.write_text(text.replace(m.old, m.new))


def run_tests(copy_root: Path, tests: list[str], timeout_s: float) -> tuple[bool, str, float]:
    """(all passed, the failing test or pytest's last line, seconds)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(copy_root)}
    probe = subprocess.run([sys.executable, "-c", "import distrl_sdk; print(distrl_sdk.__file__)"],
                           cwd=copy_root, env=env, capture_output=True, text=True, check=True)
    if not Path(probe.stdout.strip()).resolve().is_relative_to(copy_root.resolve()):
        raise SystemExit(f"the copy does not shadow the package: {probe.stdout.strip()}")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-n", "0",
                           "-p", "no:cacheprovider", *tests],
                          cwd=copy_root, env=env, capture_output=True, text=True,
                          timeout=timeout_s)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    failed = [ln.split()[1] for ln in lines if ln.startswith(("FAILED ", "ERROR "))]
    tail = failed[0] if failed else (lines[-1] if lines else proc.stderr[-200:])
    return proc.returncode == 0, tail, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="run just these mutations (names below)")
    ap.add_argument("--tests", nargs="*", help="test paths (default: tests/learn without "
                                               "the SFT and demonstration tests)")
    ap.add_argument("--all-tests", action="store_true", help="all of tests/learn")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run")
    ap.add_argument("--extras", action="store_true",
                    help="also the mutations of issue 14's other fixes (V-trace, bounds, …)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = ap.parse_args()
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:32s} {m.path}{'' if m.issue else '   (extra)'}")
        return 0
    chosen = [m for m in MUTATIONS if m.name in args.only] if args.only else \
        [m for m in MUTATIONS if m.issue or args.extras]
    unknown = set(args.only or []) - {m.name for m in MUTATIONS}
    if unknown:
        print(f"unknown mutation(s): {', '.join(sorted(unknown))} (see --list)",
              file=sys.stderr)
        return 2
    if args.tests:
        tests = args.tests
    elif args.all_tests:
        tests = ["tests/learn"]
    else:
        tests = ["tests/learn", "--ignore=tests/learn/test_sft.py",
                 "--ignore=tests/learn/test_demos.py"]
    with tempfile.TemporaryDirectory(prefix="distrl-mutations-") as tmp:
        base = Path(tmp) / "base"
        make_copy(base)
        ok, tail, secs = run_tests(base, tests, args.timeout)
        print(f"unmutated copy: {'pass' if ok else 'FAIL'} ({tail}, {secs:.0f} s)", flush=True)
        if not ok:
            print("the unmutated tests fail: fix them before reading mutation results",
                  file=sys.stderr)
            return 1
        rows = []
        for m in chosen:
            work = Path(tmp) / m.name
            shutil.copytree(base, work)
            apply(work, m)
            passed, tail, secs = run_tests(work, tests, args.timeout)
            verdict = "survived" if passed else "killed"
            rows.append((m, verdict, tail if not passed else ""))
            print(f"{m.name:32s} {verdict:9s} {secs:5.1f} s  {tail}", flush=True)
            shutil.rmtree(work, ignore_errors=True)
    print("\n| mutation | file | issue 14 | result | first failing test |\n|---|---|---|---|---|")
    for m, verdict, by in rows:
        print(f"| {m.name} | {Path(m.path).name} | {'yes' if m.issue else 'extra'} | "
              f"{verdict} | {by.split('::')[-1]} |")
    survivors = [m.name for m, v, _ in rows if v == "survived"]
    print(f"\n{len(rows) - len(survivors)}/{len(rows)} killed"
          + (f"; survived: {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())

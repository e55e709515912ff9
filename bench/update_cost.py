"""What one A-RIDE update of UITreePolicy costs, with and without the per-step cache.

Three arms on identical recorded episodes (same seeds, same weights), run in one process
and interleaved update by update so machine load hits them alike:

* ``legacy``  — the featurisation as it was: a Python loop writing one scalar at a
  time into the batch tensors, redone every time a step is replayed (copied here
  verbatim as ``legacy_featurize``, the reference the new path must reproduce);
* ``nocache`` — per-step arrays + vectorised collation, recomputed every time
  (``policy.step_cache = False``);
* ``cached``  — the arrays computed once per step and kept in ``StepRecord.cache``.

Reports the median time of one ``ARIDETrainer.update`` (16 episodes × 8 steps by
default) and of ``evaluate`` alone on one such batch, and the ratios. Checks that the
three arms produce identical log-probs first.

    .venv/bin/python bench/update_cost.py                       # ~1 min on 2 busy cores
    .venv/bin/python bench/update_cost.py --updates 200 --rows 6 40
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

import _common  # noqa: F401 - puts the repo on sys.path
import torch
from aride_overhead import INSTRUCTIONS, screen

from distrl_sdk.learn.api import EpisodeRecord, PolicyOutput, StepRecord
from distrl_sdk.learn.aride import ARIDEConfig, ARIDETrainer
from distrl_sdk.learn.microbatch import accumulate_gradients, evaluate_detached
from distrl_sdk.policies import uitree
from distrl_sdk.policies.uitree import UITreePolicy
from distrl_sdk.policy import Observation
from distrl_sdk.uitree import parse_ui_dump


def legacy_featurize(encoded: Sequence[Mapping[str, Any]], buckets: int,
                     overlap: bool = True) -> Any:
    """The pre-cache featurisation, verbatim (one scalar at a time)."""
    u = uitree
    bsz = len(encoded)
    n = max(1, max((len(e["c"]) for e in encoded), default=1))
    instr_ids: list[int] = []
    instr_off: list[int] = []
    glob = torch.zeros(bsz, u._GLOBAL)
    cand_ids: list[int] = []
    cand_off: list[int] = []
    dense = torch.zeros(bsz, n, u._DENSE)
    mask = torch.zeros(bsz, n, dtype=torch.bool)
    counts: list[int] = []
    for b, enc in enumerate(encoded):
        instr = str(enc["i"])
        instr_off.append(len(instr_ids))
        instr_ids.extend(u._hashed(instr, "", buckets))
        want = u._content(instr) if overlap else frozenset()
        glob[b, 0] = min(float(enc.get("s", 0)), 20.0) / 10.0
        hist = list(enc.get("h", []))[-u._HISTORY:]
        hist = ["none"] * (u._HISTORY - len(hist)) + hist
        for j, hk in enumerate(hist):
            k = u.HIST_KINDS.index(hk) if hk in u.HIST_KINDS else u.HIST_KINDS.index("other")
            glob[b, 1 + j * len(u.HIST_KINDS) + k] = 1.0
        cands = enc["c"]
        counts.append(len(cands))
        for j in range(n):
            cand_off.append(len(cand_ids))
            if j >= len(cands):
                continue
            kind, text, rid, cls, flags = cands[j][:5]
            cand_ids.extend(u._hashed(str(text), "", buckets))
            if rid:
                cand_ids.extend(u._hashed(u._rid_text(str(rid)), "r", buckets))
            if cls:
                cand_ids.extend(u._hashed(str(cls), "k", buckets))
            mask[b, j] = True
            row = dense[b, j]
            row[u.KINDS.index(kind)] = 1.0
            for bit in range(u._FLAG_BITS):
                row[len(u.KINDS) + bit] = float((int(flags) >> bit) & 1)
            o = len(u.KINDS) + u._FLAG_BITS
            row[o:o + 4] = torch.tensor([float(v) for v in cands[j][5:9]])
            if want:
                hit = len(want & u._content(str(text))) / len(want)
                row[o + 4], row[o + 5] = hit, float(hit > 0)
    # (candidates' context tokens came later: empty bags here)
    return u._Batch(torch.tensor(instr_ids, dtype=torch.long),
                    torch.tensor(instr_off, dtype=torch.long), glob,
                    torch.tensor(cand_ids, dtype=torch.long),
                    torch.tensor(cand_off, dtype=torch.long), dense, mask,
                    torch.zeros(0, dtype=torch.long), torch.zeros(bsz * n, dtype=torch.long),
                    counts)


class LegacyUITreePolicy(UITreePolicy):
    """UITreePolicy scoring through :func:`legacy_featurize` (the "before" arm)."""

    def _evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput:
        idx = torch.tensor([int(s.choice["index"]) for s in steps], dtype=torch.long)
        logits, feats = self.model(legacy_featurize([s.obs for s in steps],
                                                    self.config.buckets,
                                                    self.config.overlap_feature))
        logp = torch.log_softmax(logits, -1)
        chosen = logp.gather(1, idx.unsqueeze(1)).squeeze(1)
        entropy = -(logp.exp() * logp.masked_fill(torch.isinf(logp), 0.0)).sum(-1)
        return PolicyOutput(log_prob=chosen, entropy=entropy, features=feats)


def episodes(policy: UITreePolicy, n: int, steps: int, rows: tuple[int, int], seed: int
             ) -> list[EpisodeRecord]:
    rng = random.Random(seed)
    out = []
    for e in range(n):
        instruction = rng.choice(INSTRUCTIONS)
        obs = [Observation(instruction, parse_ui_dump(screen(rng, rng.randint(*rows))),
                           (1080, 2400), t) for t in range(steps)]
        decisions = policy.decide(obs)
        success = rng.random() < 0.3
        recs = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                           reward=(1.0 if success and t == steps - 1 else 0.0),
                           policy_version=0) for t, d in enumerate(decisions)]
        out.append(EpisodeRecord(id=f"e{e}", task="bench", instruction=instruction,
                                 steps=recs, success=success, reward=float(success)))
    return out


def build(arm: str, args: argparse.Namespace) -> tuple[ARIDETrainer, list[EpisodeRecord]]:
    policy: UITreePolicy = LegacyUITreePolicy() if arm == "legacy" else UITreePolicy()
    policy.step_cache = arm == "cached"
    cfg = ARIDEConfig(batch_episodes=args.batch, min_episodes=args.batch,
                      max_policy_lag=None, actor_lr=1e-3, critic_lr=1e-3)
    trainer = ARIDETrainer(policy, cfg)
    eps = episodes(policy, args.episodes, args.steps, tuple(args.rows), seed=0)
    for ep in eps:
        trainer.add_episode(ep)
    return trainer, eps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=40, help="timed updates per arm")
    ap.add_argument("--episodes", type=int, default=64, help="episodes in replay")
    ap.add_argument("--steps", type=int, default=8, help="steps per episode")
    ap.add_argument("--batch", type=int, default=16, help="episodes per update")
    ap.add_argument("--rows", type=int, nargs=2, default=(6, 24), metavar=("MIN", "MAX"),
                    help="list rows per screen (candidates = rows + ~12 fixed actions)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    arms = ("legacy", "nocache", "cached")
    trainers = {a: build(a, args) for a in arms}

    # the same numbers from every arm (same init seed, same episodes)
    batch = [s for e in trainers["cached"][1][: args.batch] for s in e.steps]
    cands = [len(s.obs["c"]) for s in batch]
    ref = None
    for a in arms:
        steps = [s for e in trainers[a][1][: args.batch] for s in e.steps]
        lp = trainers[a][0].policy.evaluate(steps).log_prob.detach()
        assert ref is None or torch.equal(lp, ref), f"arm {a} scores differently"
        ref = lp

    ev: dict[str, list[float]] = {a: [] for a in arms}
    up: dict[str, list[float]] = {a: [] for a in arms}
    for _ in range(3):  # warm-up: allocator, first Adam steps, the cache filling
        for a in arms:
            trainers[a][0].update()
    for _ in range(args.updates):
        for a in arms:
            trainer, eps = trainers[a]
            steps = [s for e in eps[: args.batch] for s in e.steps]
            t0 = time.perf_counter()
            with torch.no_grad():
                trainer.policy.evaluate(steps)
            ev[a].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            trainer.update()
            up[a].append(time.perf_counter() - t0)

    cached_policy = trainers["cached"][0].policy
    assert isinstance(cached_policy, UITreePolicy)
    nbytes = cached_policy.prepare(batch) / len(batch)
    print(f"UITreePolicy default config; A-RIDE update of {args.batch} episodes × {args.steps} "
          f"steps; {min(cands)}–{max(cands)} candidates/step (mean "
          f"{statistics.mean(cands):.1f}); {args.updates} updates/arm, interleaved; "
          f"cache {nbytes / 1024:.1f} KiB/step")
    print(f"{'arm':10s}{'update ms':>12s}{'evaluate ms':>14s}")
    for a in arms:
        print(f"{a:10s}{1e3 * statistics.median(up[a]):12.1f}"
              f"{1e3 * statistics.median(ev[a]):14.1f}")
    lu, cu = statistics.median(up["legacy"]), statistics.median(up["cached"])
    le, ce = statistics.median(ev["legacy"]), statistics.median(ev["cached"])
    nu = statistics.median(up["nocache"])
    print(f"update: legacy / cached = {lu / cu:.2f}x  (nocache / cached = {nu / cu:.2f}x)")
    print(f"evaluate: legacy / cached = {le / ce:.2f}x")

    # the actor's gradient, as today (one evaluate with grad) vs the micro-batch helper
    # (a no-grad pass for ratios/critics + accumulated gradient passes), cached arm
    params = cached_policy.trainable_parameters()
    ca, cb = torch.randn(len(batch)), torch.full((len(batch),), -0.01)
    ways: dict[str, list[float]] = {"one evaluate + backward": [], "helper, one slice": [],
                                    "helper, micro-batches of 32": []}
    for _ in range(max(5, args.updates // 2)):
        for way in ways:
            for p in params:
                p.grad = None
            t0 = time.perf_counter()
            if way.startswith("one"):
                out = cached_policy.evaluate(batch)
                ((ca * out.log_prob).sum() + (cb * out.entropy).sum()).backward()  # type: ignore[no-untyped-call]
            else:
                evaluate_detached(cached_policy, batch)
                accumulate_gradients(cached_policy, batch, ca, cb,
                                     micro_batch=None if "one" in way else 32)
            ways[way].append(time.perf_counter() - t0)
    for way, ts in ways.items():
        print(f"actor gradient, {way:28s} {1e3 * statistics.median(ts):7.1f} ms")


if __name__ == "__main__":
    main()

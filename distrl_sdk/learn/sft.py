"""Behaviour cloning from a demonstration dataset: maximise log π(demonstrated action | obs).

Any :class:`~distrl_sdk.learn.TrainablePolicy` trains through its own ``evaluate`` (the
same log π the RL trainers use), on steps re-encoded from the dataset's raw observation
by *this* policy's encoder, so a dataset recorded once serves any policy config:

* ``uitree``: ``obs`` = its candidate JSON, ``choice`` = the candidate that stands for
  the demonstrated action (:func:`~distrl_sdk.policies.uitree.match_action`; steps no
  candidate expresses are skipped and counted).
* ``vlm``: ``obs`` = the chat prompt's parts, ``choice`` = the action's JSON reply ending
  with EOS, ``frame`` = the step's JPEG — LoRA SFT in the exact format it acts with.

The report gives, on train and held-out (test split) steps, the mean negative
log-likelihood of the demonstrated action and the **oracle-action accuracy**: for
``uitree`` the greedy choice equals it; for ``vlm`` its probability exceeds ½ (then
greedy decoding produces exactly that reply, so this is a lower bound of greedy accuracy).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from distrl_sdk.actions import to_json
from distrl_sdk.learn.api import StepRecord, training_mode
from distrl_sdk.learn.demos import DemoEpisode
from distrl_sdk.policy import Observation

if TYPE_CHECKING:
    from distrl_sdk.learn.api import TrainablePolicy

__all__ = ["SFTConfig", "evaluate_steps", "sft_examples", "train_sft"]


@dataclass(frozen=True)
class SFTConfig:
    epochs: int = 20
    lr: float = 1e-3  # Adam; a LoRA adapter usually wants ~1e-4
    batch_size: int = 64
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0


def _observation(ep: DemoEpisode, i: int, frames: bool) -> Observation:
    s = ep.steps[i]
    prev = list(ep.steps[i - 1].elements) if i > 0 else None
    return Observation(ep.instruction, list(s.elements), s.screen_size, i, ep.history(i),
                       s.frame if frames else None, prev)


def sft_examples(policy: TrainablePolicy, episodes: Iterable[DemoEpisode]
                 ) -> tuple[list[StepRecord], int]:
    """The policy's training steps for ``episodes`` and how many steps it cannot express."""
    skipped = 0
    out: list[StepRecord] = []
    kind = policy.kind
    for ep in episodes:
        for i, s in enumerate(ep.steps):
            if kind == "uitree":
                from distrl_sdk.policies.uitree import encode_observation, match_action

                cfg = policy.config  # type: ignore[attr-defined]
                enc = encode_observation(_observation(ep, i, False), cfg)
                k = match_action(enc, s.action)
                if k is None:
                    skipped += 1
                    continue
                out.append(StepRecord(obs=enc, choice={"index": k}, log_mu=0.0, reward=0.0,
                                      policy_version=0))
            elif kind == "vlm":
                obs = policy.encode_observation(  # type: ignore[attr-defined]
                    _observation(ep, i, True))
                out.append(StepRecord(obs=obs, choice={"text": to_json(s.action), "eos": True},
                                      log_mu=0.0, reward=0.0, policy_version=0,
                                      frame=s.frame))
            else:
                raise ValueError(f"no SFT encoding for policy kind {kind!r}")
    return out, skipped


def _greedy_hits(policy: TrainablePolicy, steps: Sequence[StepRecord],
                 logp: Any) -> list[bool]:
    if policy.kind == "uitree":
        import torch

        with torch.no_grad():
            logits, _ = policy.model(policy._batch([s.obs for s in steps]))  # type: ignore
        picks = logits.argmax(-1).tolist()
        return [int(p) == int(s.choice["index"]) for p, s in zip(picks, steps, strict=True)]
    return [float(v) > math.log(0.5) for v in logp.tolist()]


def evaluate_steps(policy: TrainablePolicy, steps: Sequence[StepRecord],
                   batch_size: int = 64) -> dict[str, float]:
    """Mean NLL, mean probability and oracle-action accuracy over ``steps`` (no grads)."""
    import torch

    if not steps:
        return {"steps": 0, "nll": float("nan"), "prob": float("nan"),
                "accuracy": float("nan")}
    nll = prob = hits = 0.0
    with torch.no_grad():
        for b in range(0, len(steps), batch_size):
            chunk = steps[b:b + batch_size]
            lp = policy.evaluate(chunk).log_prob.detach().float().cpu()
            nll -= float(lp.sum())
            prob += float(lp.exp().sum())
            hits += sum(_greedy_hits(policy, chunk, lp))
    n = len(steps)
    return {"steps": n, "nll": nll / n, "prob": prob / n, "accuracy": hits / n}


def train_sft(policy: TrainablePolicy, train: Sequence[StepRecord],
              heldout: Sequence[StepRecord] = (), config: SFTConfig | None = None, *,
              progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Train ``policy`` in place; returns the report (before/after, per epoch)."""
    import torch

    cfg = config or SFTConfig()
    if not train:
        raise ValueError("no training steps (is the dataset's train split empty?)")
    params = [p for p in policy.trainable_parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = random.Random(cfg.seed)
    t0 = time.monotonic()
    report: dict[str, Any] = {"config": asdict(cfg), "policy": policy.kind,
                              "before": {"train": evaluate_steps(policy, train, cfg.batch_size),
                                         "heldout": evaluate_steps(policy, heldout,
                                                                   cfg.batch_size)},
                              "epochs": []}
    order = list(range(len(train)))
    for epoch in range(cfg.epochs):
        rng.shuffle(order)
        total = 0.0
        # a policy with a training mode (the UI-tree policy's token dropout) is in it for
        # the gradient passes only; every figure in the report is read with it off
        with training_mode(policy):
            for b in range(0, len(order), cfg.batch_size):
                batch = [train[i] for i in order[b:b + cfg.batch_size]]
                loss = -policy.evaluate(batch).log_prob.mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()  # type: ignore[no-untyped-call]
                if cfg.grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
                opt.step()
                total += float(loss.detach()) * len(batch)
        row: dict[str, Any] = {"epoch": epoch + 1, "train_loss": total / len(train),
                               "seconds": round(time.monotonic() - t0, 2)}
        if heldout:
            row["heldout"] = evaluate_steps(policy, heldout, cfg.batch_size)
        report["epochs"].append(row)
        if progress is not None:
            progress(row)
    report["after"] = {"train": evaluate_steps(policy, train, cfg.batch_size),
                       "heldout": evaluate_steps(policy, heldout, cfg.batch_size)}
    report["seconds"] = round(time.monotonic() - t0, 2)
    return report

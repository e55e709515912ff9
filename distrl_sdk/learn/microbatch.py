"""Gradient micro-batches: a policy loss over many recorded steps, run in slices.

A trainer's actor loss is linear in each step's log π and entropy once its advantages,
ratios and weights are fixed (they come from a no-grad pass):

    L = Σ_i  a_i · log π(a_i|s_i)  +  b_i · H(π(·|s_i))

so it can be evaluated and back-propagated ``micro_batch`` steps at a time, the
gradients accumulating in ``.grad``: the same gradient as one pass over all steps (up to
float rounding), with the activations of one slice alive at a time — what lets a 2B
VLM learn from 16 episodes × 8 steps on one GPU.

    out = evaluate_detached(policy, steps, micro_batch=8)      # ratios, critic inputs
    a, b = …coefficients from out, the critics, the IS weights…
    opt.zero_grad(set_to_none=True)
    res = accumulate_gradients(policy, steps, a, b, micro_batch=8)
    if res.finite: clip, opt.step()

Policies whose ``evaluate`` takes ``grad=`` / ``features=`` keywords (UITreePolicy,
VLMPolicy) get a real no-grad pass and a gradient pass that keeps no hidden states;
any other :class:`~distrl_sdk.learn.TrainablePolicy` works through plain ``evaluate``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from distrl_sdk.learn.api import PolicyOutput, StepRecord, TrainablePolicy

__all__ = ["MicroBatchResult", "accumulate_gradients", "evaluate_detached", "slices"]


@dataclass
class MicroBatchResult:
    """What :func:`accumulate_gradients` did."""

    loss: float  # Σ over micro-batches of their loss (= the one-shot loss)
    finite: bool  # False: a micro-batch's loss was not finite; gradients are incomplete
    micro_batches: int  # forward+backward passes run
    log_prob: torch.Tensor  # [N] log π of every step, detached (from the gradient pass)
    entropy: torch.Tensor  # [N] entropy of every step, detached


def slices(n: int, micro_batch: int | None) -> list[slice]:
    """``[0, n)`` in consecutive slices of ``micro_batch`` (None or ≤ 0: one slice)."""
    if n <= 0:
        return []
    size = n if micro_batch is None or micro_batch <= 0 else micro_batch
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _kwargs(policy: TrainablePolicy, **wanted: bool) -> dict[str, bool]:
    """The keywords of ``wanted`` that this policy's ``evaluate`` accepts."""
    try:
        params = inspect.signature(policy.evaluate).parameters
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in wanted.items() if k in params}


def evaluate_detached(policy: TrainablePolicy, steps: Sequence[StepRecord],
                      micro_batch: int | None = None) -> PolicyOutput:
    """``policy.evaluate`` without an autograd graph, ``micro_batch`` steps at a time,
    concatenated: log π for ratios, features for the critics, entropy for metrics."""
    import torch

    from distrl_sdk.learn.api import PolicyOutput

    kw = _kwargs(policy, grad=False)
    outs: list[PolicyOutput] = []
    with torch.no_grad():
        for sl in slices(len(steps), micro_batch):
            o = policy.evaluate(steps[sl], **kw)
            outs.append(PolicyOutput(log_prob=o.log_prob.detach(), entropy=o.entropy.detach(),
                                     features=o.features.detach()))
    if not outs:
        empty = torch.zeros(0)
        return PolicyOutput(log_prob=empty, entropy=empty,
                            features=torch.zeros(0, policy.feature_dim))
    return PolicyOutput(log_prob=torch.cat([o.log_prob for o in outs]),
                        entropy=torch.cat([o.entropy for o in outs]),
                        features=torch.cat([o.features for o in outs]))


def accumulate_gradients(policy: TrainablePolicy, steps: Sequence[StepRecord],
                         logp_coef: torch.Tensor | Sequence[float],
                         entropy_coef: torch.Tensor | Sequence[float],
                         micro_batch: int | None = None) -> MicroBatchResult:
    """Forward + backward of ``Σ_i logp_coef[i]·log π_i + entropy_coef[i]·H_i`` per
    micro-batch, gradients accumulating into the policy's parameters' ``.grad`` (zero
    them before, clip and step after). The coefficients are constants (detached). Stops
    at the first non-finite micro-batch loss without back-propagating it."""
    import torch

    a = torch.as_tensor(logp_coef, dtype=torch.float32).detach().reshape(-1)
    b = torch.as_tensor(entropy_coef, dtype=torch.float32).detach().reshape(-1)
    if a.shape[0] != len(steps) or b.shape[0] != len(steps):
        raise ValueError(f"{len(steps)} steps but {a.shape[0]} log-prob and {b.shape[0]} "
                         "entropy coefficients")
    kw: dict[str, Any] = _kwargs(policy, features=False)
    total, runs, finite = 0.0, 0, True
    lps: list[torch.Tensor] = []
    ents: list[torch.Tensor] = []
    for sl in slices(len(steps), micro_batch):
        out = policy.evaluate(steps[sl], **kw)
        lp, ent = out.log_prob, out.entropy
        loss = (a[sl].to(lp.device) * lp).sum() + (b[sl].to(ent.device) * ent).sum()
        lps.append(lp.detach().float().cpu())
        ents.append(ent.detach().float().cpu())
        runs += 1
        if not torch.isfinite(loss):
            finite = False
            total = float("nan")
            break
        if loss.requires_grad:
            loss.backward()  # type: ignore[no-untyped-call]
        total += float(loss.detach())
    empty = torch.zeros(0)
    return MicroBatchResult(loss=total, finite=finite, micro_batches=runs,
                            log_prob=torch.cat(lps) if lps else empty,
                            entropy=torch.cat(ents) if ents else empty)

"""Retrace(λ) targets for V (aride.retrace_targets) against hand computation and theory."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_sdk.learn.aride import retrace_targets


def _row(*xs: float) -> torch.Tensor:
    return torch.tensor([list(xs)], dtype=torch.float64)


def literal_delta(r: list[float], v: list[float], rho: list[float], gamma: float,
                  lam: float) -> list[float]:
    """The paper's double sum, term by term (no recursion):
    δ_t = Σ_{k=t..H} γ^{k−t} (Π_{i=t+1..k} c_i) [r_k + γ V(s_{k+1}) − V(s_k)]."""
    h = len(r)
    c = [lam * min(1.0, x) for x in rho]
    out = []
    for t in range(h):
        total = 0.0
        for k in range(t, h):
            trace = math.prod(c[t + 1 : k + 1])
            v_next = v[k + 1] if k + 1 < h else 0.0
            total += gamma**(k - t) * trace * (r[k] + gamma * v_next - v[k])
        out.append(total)
    return out


def test_hand_computed_example() -> None:
    # three steps, γ = 0.9, λ = 0.8, ρ = (0.5, 2.0, 0.5)  →  c = (0.4, 0.8, 0.4)
    # V = (0.5, 0.4, 0.2), V(s_3) = 0, r = (0, 0, 1)
    # TD_2 = 1 + 0 − 0.2 = 0.8          δ_2 = 0.8
    # TD_1 = 0 + 0.9·0.2 − 0.4 = −0.22  δ_1 = −0.22 + 0.9·c_2·δ_2 = −0.22 + 0.288 = 0.068
    # TD_0 = 0 + 0.9·0.4 − 0.5 = −0.14  δ_0 = −0.14 + 0.9·c_1·δ_1 = −0.14 + 0.04896 = −0.09104
    # targets v = V + δ = (0.40896, 0.468, 1.0)
    log_mu = _row(math.log(0.2), math.log(0.1), math.log(0.6))
    log_pi = log_mu + _row(math.log(0.5), math.log(2.0), math.log(0.5))
    targets, td, rho = retrace_targets(_row(0, 0, 1), _row(0.5, 0.4, 0.2), log_pi, log_mu,
                                       _row(1, 1, 1), gamma=0.9, lam=0.8)
    assert torch.allclose(rho, _row(0.5, 2.0, 0.5))
    assert torch.allclose(td, _row(-0.14, -0.22, 0.8))
    assert torch.allclose(targets, _row(0.40896, 0.468, 1.0))


def test_lambda_zero_gives_one_step_td_targets() -> None:
    r, v = _row(0.1, -0.2, 0.3, 1.0), _row(0.4, 0.7, -0.1, 0.5)
    log_pi, log_mu = _row(-1.0, -0.3, -2.0, -0.1), _row(-0.5, -0.6, -1.0, -0.9)
    targets, _, _ = retrace_targets(r, v, log_pi, log_mu, torch.ones_like(r), gamma=0.95,
                                    lam=0.0)
    v_next = _row(0.7, -0.1, 0.5, 0.0)
    assert torch.allclose(targets, r + 0.95 * v_next)


def test_lambda_one_on_policy_gives_monte_carlo_returns() -> None:
    r, v = _row(0.1, -0.2, 0.3, 1.0), _row(0.4, 0.7, -0.1, 0.5)
    logp = _row(-1.0, -0.3, -2.0, -0.1)
    gamma = 0.9
    targets, _, rho = retrace_targets(r, v, logp, logp.clone(), torch.ones_like(r),
                                      gamma=gamma, lam=1.0)
    g = [sum(gamma**(k - t) * float(r[0, k]) for k in range(t, 4)) for t in range(4)]
    assert torch.allclose(rho, torch.ones_like(rho))
    assert torch.allclose(targets, torch.tensor([g], dtype=torch.float64))  # V cancels out


def test_off_policy_traces_are_cut() -> None:
    """A step π would never take (ρ = 0) stops the trace: later errors do not leak back."""
    r, v = _row(0.0, 0.0, 1.0), _row(0.1, 0.2, 0.3)
    log_mu = _row(-1.0, -1.0, -1.0)
    log_pi = _row(-1.0, -80.0, -1.0)  # ρ_1 ≈ 0
    targets, td, _ = retrace_targets(r, v, log_pi, log_mu, torch.ones_like(r), gamma=1.0,
                                     lam=1.0)
    assert torch.allclose(targets[0, 0], v[0, 0] + td[0, 0])


def test_padding_does_not_change_an_episode() -> None:
    """Batched episodes of different lengths equal each episode computed alone."""
    r = torch.tensor([[0.0, 0.5, 1.0], [0.3, 0.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[0.2, 0.1, 0.4], [0.6, 0.0, 0.0]], dtype=torch.float64)
    lp = torch.tensor([[-0.5, -1.0, -0.2], [-0.1, 0.0, 0.0]], dtype=torch.float64)
    lm = torch.tensor([[-0.7, -0.4, -0.2], [-0.3, 0.0, 0.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.float64)
    both, _, _ = retrace_targets(r, v, lp, lm, mask, gamma=0.9, lam=0.7)
    first, _, _ = retrace_targets(r[:1], v[:1], lp[:1], lm[:1], mask[:1], gamma=0.9, lam=0.7)
    second, _, _ = retrace_targets(r[1:, :1], v[1:, :1], lp[1:, :1], lm[1:, :1], mask[1:, :1],
                                   gamma=0.9, lam=0.7)
    assert torch.allclose(both[0], first[0])
    assert torch.allclose(both[1, :1], second[0]) and torch.all(both[1, 1:] == 0)


floats = st.floats(-2.0, 2.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(floats, floats, st.floats(-3.0, 0.0), st.floats(-3.0, 0.0)),
                     min_size=1, max_size=8),
       gamma=st.floats(0.0, 1.0), lam=st.floats(0.0, 1.0))
def test_recursion_equals_the_papers_double_sum(data: list[tuple[float, float, float, float]],
                                                gamma: float, lam: float) -> None:
    r, v, lp, lm = (list(x) for x in zip(*data, strict=True))
    rho = list(np.exp(np.array(lp) - np.array(lm)))
    targets, _, _ = retrace_targets(_row(*r), _row(*v), _row(*lp), _row(*lm),
                                    torch.ones(1, len(r), dtype=torch.float64),
                                    gamma=gamma, lam=lam)
    expected = np.array(v) + np.array(literal_delta(r, v, rho, gamma, lam))
    assert np.allclose(targets[0].numpy(), expected, atol=1e-9)

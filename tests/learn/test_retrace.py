"""Off-policy targets for V (aride.retrace_targets): the V-trace form against hand
computation, its own double sum, and values solved from an MDP; the Q-style form
("retrace_q", kept for comparison) against the paper's double sum, and its bias."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from distrl_sdk.learn.aride import retrace_targets
from tests.learn.toys import GOOD, Chain


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


def test_q_form_hand_computed_example() -> None:
    # three steps, γ = 0.9, λ = 0.8, ρ = (0.5, 2.0, 0.5)  →  c = (0.4, 0.8, 0.4)
    # V = (0.5, 0.4, 0.2), V(s_3) = 0, r = (0, 0, 1)
    # TD_2 = 1 + 0 − 0.2 = 0.8          δ_2 = 0.8
    # TD_1 = 0 + 0.9·0.2 − 0.4 = −0.22  δ_1 = −0.22 + 0.9·c_2·δ_2 = −0.22 + 0.288 = 0.068
    # TD_0 = 0 + 0.9·0.4 − 0.5 = −0.14  δ_0 = −0.14 + 0.9·c_1·δ_1 = −0.14 + 0.04896 = −0.09104
    # targets v = V + δ = (0.40896, 0.468, 1.0)
    log_mu = _row(math.log(0.2), math.log(0.1), math.log(0.6))
    log_pi = log_mu + _row(math.log(0.5), math.log(2.0), math.log(0.5))
    targets, td, rho = retrace_targets(_row(0, 0, 1), _row(0.5, 0.4, 0.2), log_pi, log_mu,
                                       _row(1, 1, 1), gamma=0.9, lam=0.8, form="retrace_q")
    assert torch.allclose(rho, _row(0.5, 2.0, 0.5))
    assert torch.allclose(td, _row(-0.14, -0.22, 0.8))
    assert torch.allclose(targets, _row(0.40896, 0.468, 1.0))


def test_lambda_zero_gives_one_step_targets() -> None:
    r, v = _row(0.1, -0.2, 0.3, 1.0), _row(0.4, 0.7, -0.1, 0.5)
    log_pi, log_mu = _row(-1.0, -0.3, -2.0, -0.1), _row(-0.5, -0.6, -1.0, -0.9)
    v_next = _row(0.7, -0.1, 0.5, 0.0)
    q_form, _, _ = retrace_targets(r, v, log_pi, log_mu, torch.ones_like(r), gamma=0.95,
                                   lam=0.0, form="retrace_q")
    assert torch.allclose(q_form, r + 0.95 * v_next)
    # V-trace: V + ρ̄·TD, with ρ = (e^-0.5, e^0.3, e^-1, e^0.8) all under ρ̄ = 5
    vtrace, _, rho = retrace_targets(r, v, log_pi, log_mu, torch.ones_like(r), gamma=0.95,
                                     lam=0.0)
    assert torch.allclose(vtrace, v + rho * (r + 0.95 * v_next - v))


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
def test_q_form_equals_the_papers_double_sum(data: list[tuple[float, float, float, float]],
                                             gamma: float, lam: float) -> None:
    r, v, lp, lm = (list(x) for x in zip(*data, strict=True))
    rho = list(np.exp(np.array(lp) - np.array(lm)))
    targets, _, _ = retrace_targets(_row(*r), _row(*v), _row(*lp), _row(*lm),
                                    torch.ones(1, len(r), dtype=torch.float64),
                                    gamma=gamma, lam=lam, form="retrace_q")
    expected = np.array(v) + np.array(literal_delta(r, v, rho, gamma, lam))
    assert np.allclose(targets[0].numpy(), expected, atol=1e-9)


def literal_vtrace_delta(r: list[float], v: list[float], rho: list[float], gamma: float,
                         lam: float, rho_bar: float, c_bar: float) -> list[float]:
    """V-trace's double sum (Espeholt et al. 2018, eq. 1), term by term:
    δ_t = Σ_{k=t..H} γ^{k−t} (Π_{i=t..k−1} c_i) ρ̄_k [r_k + γ V(s_{k+1}) − V(s_k)]."""
    h = len(r)
    c = [lam * min(c_bar, x) for x in rho]
    out = []
    for t in range(h):
        total = 0.0
        for k in range(t, h):
            v_next = v[k + 1] if k + 1 < h else 0.0
            total += (gamma**(k - t) * math.prod(c[t:k]) * min(rho_bar, rho[k])
                      * (r[k] + gamma * v_next - v[k]))
        out.append(total)
    return out


def test_vtrace_hand_computed_example() -> None:
    # γ = 0.9, λ = 0.8, ρ = (0.5, 2.0, 0.5), ρ̄ = 5, c̄ = 1 → c = (0.4, 0.8, 0.4)
    # V = (0.5, 0.4, 0.2), r = (0, 0, 1); TD = (−0.14, −0.22, 0.8)
    # δ_2 = 0.5·0.8 = 0.4
    # δ_1 = 2.0·(−0.22) + 0.9·0.8·0.4 = −0.44 + 0.288 = −0.152
    # δ_0 = 0.5·(−0.14) + 0.9·0.4·(−0.152) = −0.07 − 0.05472 = −0.12472
    log_mu = _row(math.log(0.2), math.log(0.1), math.log(0.6))
    log_pi = log_mu + _row(math.log(0.5), math.log(2.0), math.log(0.5))
    targets, _, _ = retrace_targets(_row(0, 0, 1), _row(0.5, 0.4, 0.2), log_pi, log_mu,
                                    _row(1, 1, 1), gamma=0.9, lam=0.8)
    assert torch.allclose(targets, _row(0.5 - 0.12472, 0.4 - 0.152, 0.2 + 0.4))


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(floats, floats, st.floats(-3.0, 1.0), st.floats(-3.0, 0.0)),
                     min_size=1, max_size=8),
       gamma=st.floats(0.0, 1.0), lam=st.floats(0.0, 1.0), rho_bar=st.floats(0.5, 8.0),
       c_bar=st.floats(0.5, 2.0))
def test_vtrace_recursion_equals_its_double_sum(data: list[tuple[float, float, float, float]],
                                                gamma: float, lam: float, rho_bar: float,
                                                c_bar: float) -> None:
    r, v, lp, lm = (list(x) for x in zip(*data, strict=True))
    rho = list(np.exp(np.array(lp) - np.array(lm)))
    targets, _, _ = retrace_targets(_row(*r), _row(*v), _row(*lp), _row(*lm),
                                    torch.ones(1, len(r), dtype=torch.float64), gamma=gamma,
                                    lam=lam, rho_max=rho_bar, c_max=c_bar)
    expected = np.array(v) + np.array(literal_vtrace_delta(r, v, rho, gamma, lam, rho_bar,
                                                           c_bar))
    assert np.allclose(targets[0].numpy(), expected, atol=1e-9)


def _expected_targets(chain: Chain, mu: list[float], pi: list[float], values: np.ndarray,
                      **kw: object) -> np.ndarray:
    """E_μ[v_t | s_t = s] exactly: every path of the chain weighted by its μ-probability,
    averaged over the visits to each state."""
    num, den = np.zeros(chain.length), np.zeros(chain.length)
    for actions, rewards in chain.paths():
        states = list(range(len(actions)))
        prob = math.prod(mu[s] if a == GOOD else 1 - mu[s]
                         for s, a in zip(states, actions, strict=True))
        lm = [math.log(mu[s] if a == GOOD else 1 - mu[s]) for s, a in zip(states, actions,
                                                                             strict=True)]
        lp = [math.log(pi[s] if a == GOOD else 1 - pi[s]) for s, a in zip(states, actions,
                                                                             strict=True)]
        t, _, _ = retrace_targets(_row(*rewards), _row(*values[states]), _row(*lp), _row(*lm),
                                  torch.ones(1, len(actions), dtype=torch.float64),
                                  gamma=chain.gamma, lam=1.0, **kw)  # type: ignore[arg-type]
        for i, s in enumerate(states):
            num[s] += prob * float(t[0, i])
            den[s] += prob
    return num / den


def _iterate(chain: Chain, mu: list[float], pi: list[float], **kw: object) -> np.ndarray:
    """V ← E_μ[target | s] from V = 0 until it stops moving (the critic's fixed point)."""
    v = np.zeros(chain.length)
    for _ in range(200):
        v = _expected_targets(chain, mu, pi, v, **kw)
    return v


def test_the_issues_example_targets_v_pi_not_v_mu() -> None:
    """One step: μ(good) = 0.2, π(good) = 0.9, reward 1 for good. V^π = 0.9; the Q-style
    form (no first-step correction) averages to V^μ = 0.2 — the bias the issue found."""
    chain = Chain(length=1, gamma=0.9, goal=1.0, bail=0.0)
    mu, pi = [0.2], [0.9]
    assert chain.values(pi)[0] == 0.9
    for v0 in (0.0, 0.5):  # whatever V is now, the expected target is V^π
        assert _expected_targets(chain, mu, pi, np.array([v0]))[0] == pytest.approx(0.9)
        assert _expected_targets(chain, mu, pi, np.array([v0]),
                                 form="retrace_q")[0] == pytest.approx(0.2)
    # IMPALA's ρ̄ = 1 converges to π̃ ∝ min(μ, π) = (0.2, 0.1): V = 2/3, still not V^μ
    assert _iterate(chain, mu, pi, rho_max=1.0)[0] == pytest.approx(2 / 3, abs=1e-6)


@pytest.mark.parametrize(("mu", "pi"), [([0.5, 0.5, 0.5], [0.9, 0.8, 0.9]),
                                        ([0.3, 0.6, 0.4], [0.7, 0.95, 0.5])])
def test_chain_targets_converge_to_the_solved_v_pi(mu: list[float], pi: list[float]) -> None:
    """Three-state chain, data from μ: iterating V ← E_μ[v_t | s] reaches V^π solved from
    the MDP (π/μ ≤ ρ̄_V = 5 here). The Q-style form's first step is never corrected: at
    the last state it learns V^μ exactly, and elsewhere it stays away from V^π."""
    chain = Chain(length=3, gamma=0.9, goal=1.0, bail=0.1)
    v_pi, v_mu = chain.values(pi), chain.values(mu)
    assert np.abs(v_pi - v_mu).max() > 0.1  # the two policies really differ
    assert np.allclose(_iterate(chain, mu, pi), v_pi, atol=1e-6)
    q_form = _iterate(chain, mu, pi, form="retrace_q")
    assert q_form[-1] == pytest.approx(v_mu[-1]) and np.abs(q_form - v_pi).min() > 0.05

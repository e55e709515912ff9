"""Toy MDPs with exactly known values, and a tabular TrainablePolicy that trainers train.

``Chain``: states 0..H−1 in a row. In state s, action GOOD moves to s+1 (from the last
state it ends the episode with reward ``goal``); action BAD ends the episode with
reward ``bail``. Everything else gives 0. Values of any policy come from solving the
Bellman equations (``Chain.values``), not from the trainer's formulas.

``TablePolicy`` is a real :class:`TrainablePolicy`: a softmax over actions from a
logit table indexed by state, with one-hot state features for the critics. With
``probe=True`` it records, for every ``evaluate`` that builds a graph, the steps it
was given and the gradient that reached each step's log π(a|s) — the actor loss's
per-step coefficient, read at the policy's own seam.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from distrl_sdk.learn import EpisodeRecord, PolicyOutput, StepRecord
from distrl_sdk.policy import Decision, Observation

BAD, GOOD = 0, 1


@dataclass(frozen=True)
class Chain:
    length: int = 3
    gamma: float = 0.9
    goal: float = 1.0
    bail: float = 0.1

    def values(self, p_good: Sequence[float]) -> np.ndarray:
        """V^π(s) for π(GOOD|s) = p_good[s]: solves (I − γ P_π) V = r_π exactly."""
        n = self.length
        p_mat, r = np.zeros((n, n)), np.zeros(n)
        for s in range(n):
            g = p_good[s]
            r[s] = (1 - g) * self.bail + (g * self.goal if s == n - 1 else 0.0)
            if s + 1 < n:
                p_mat[s, s + 1] = g
        return np.linalg.solve(np.eye(n) - self.gamma * p_mat, r)

    def paths(self) -> list[tuple[list[int], list[float]]]:
        """Every possible episode as (actions, rewards): k GOODs then a BAD, or all GOOD."""
        out = []
        for k in range(self.length):
            out.append(([GOOD] * k + [BAD], [0.0] * k + [self.bail]))
        out.append(([GOOD] * self.length, [0.0] * (self.length - 1) + [self.goal]))
        return out


class TablePolicy:
    """π(a|s) = softmax(table[s]); features: one-hot state; instructions: one-hot bucket."""

    kind = "toy-table"

    def __init__(self, n_states: int, n_actions: int = 2, *, p_good: Sequence[float] | None = None,
                 seed: int = 0, probe: bool = False) -> None:
        self.n_states, self.n_actions = n_states, n_actions
        self.feature_dim = n_states + 8
        self.table = nn.Parameter(torch.zeros(n_states, n_actions))
        if p_good is not None:
            self.set_p_good(p_good)
        self.gen = torch.Generator().manual_seed(seed)
        self.probe = probe
        self.calls: list[tuple[list[StepRecord], torch.Tensor]] = []

    def set_p_good(self, p_good: Sequence[float]) -> None:
        with torch.no_grad():
            self.table.zero_()
            self.table[:, GOOD] = torch.logit(torch.tensor(list(p_good), dtype=torch.float32))

    def probs(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.softmax(self.table, -1)

    def _features(self, states: torch.Tensor) -> torch.Tensor:
        return torch.cat([nn.functional.one_hot(states, self.n_states).float(),
                          torch.zeros(len(states), 8)], dim=1)

    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        states = torch.tensor([int(o.instruction.rsplit(" ", 1)[-1]) for o in observations])
        with torch.no_grad():
            logp = torch.log_softmax(self.table[states], -1)
        acts = (logp.argmax(-1) if greedy
                else torch.multinomial(logp.exp(), 1, generator=self.gen).squeeze(-1))
        return [Decision(action=int(a), log_prob=float(logp[i, a]), obs={"s": int(s)},
                         choice={"a": int(a)})
                for i, (a, s) in enumerate(zip(acts, states, strict=True))]

    def evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput:
        states = torch.tensor([st.obs["s"] for st in steps])
        acts = torch.tensor([st.choice["a"] for st in steps])
        logp_all = torch.log_softmax(self.table[states], -1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        log_prob = logp_all.gather(1, acts[:, None]).squeeze(1)
        if self.probe and log_prob.requires_grad:
            grad = torch.zeros(len(steps))
            self.calls.append((list(steps), grad))
            log_prob.register_hook(lambda g: grad.copy_(g))  # type: ignore[no-untyped-call]
        return PolicyOutput(log_prob, entropy, self._features(states))

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        idx = torch.tensor([zlib.crc32(i.encode()) % 8 for i in instructions])
        return torch.cat([torch.zeros(len(instructions), self.n_states),
                          nn.functional.one_hot(idx, 8).float()], dim=1)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [self.table]

    def weights(self) -> dict[str, torch.Tensor]:
        return {"table": self.table.detach().clone()}

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None:
        with torch.no_grad():
            self.table.copy_(weights["table"])

    def config_dict(self) -> dict[str, Any]:
        return {"n_states": self.n_states, "n_actions": self.n_actions}

    def last_grads(self) -> list[tuple[StepRecord, float]]:
        """(step, ∂L/∂log π) of the last graph-building evaluate (the actor's batch)."""
        steps, grad = self.calls[-1]
        return list(zip(steps, grad.tolist(), strict=True))


def step(state: int, action: int, reward: float, log_mu: float, version: int = 0,
         tag: str = "") -> StepRecord:
    return StepRecord(obs={"s": state, **({"tag": tag} if tag else {})}, choice={"a": action},
                      log_mu=log_mu, reward=reward, policy_version=version)


def episode(steps: list[StepRecord], *, reward: float, instruction: str = "walk the chain",
            eid: str = "") -> EpisodeRecord:
    return EpisodeRecord(id=eid or f"ep{id(steps)}", task="chain", instruction=instruction,
                         steps=steps, success=reward >= 0.5, reward=reward)


def rollout(chain: Chain, behaviour: TablePolicy, n: int, rng: np.random.Generator,
            version: int = 0) -> list[EpisodeRecord]:
    """``n`` episodes of ``chain`` acted by ``behaviour`` (log μ recorded per step)."""
    behaviour.gen.manual_seed(int(rng.integers(1 << 62)))
    probs = behaviour.probs().numpy()
    out = []
    for _ in range(n):
        steps, s = [], 0
        while True:
            a = int(rng.random() < probs[s, GOOD])
            logp = float(np.log(probs[s, a]))
            done = a == BAD or s == chain.length - 1
            r = (chain.bail if a == BAD else chain.goal) if done else 0.0
            steps.append(step(s, a, r, logp, version))
            if done:
                break
            s += 1
        final = 1.0 if steps[-1].reward == chain.goal and steps[-1].choice["a"] == GOOD else 0.0
        out.append(episode(steps, reward=final, eid=f"r{rng.integers(1 << 62)}"))
    return out

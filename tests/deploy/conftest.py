"""A tiny checkpointable policy for deploy tests, until the UI-tree policy lands.

:class:`ScriptPolicy` is a real :class:`~distrl_sdk.learn.TrainablePolicy` as far as
deploy cares: saved with ``save_policy`` (policy.json + safetensors), loaded with
``load_policy`` (``build_policy`` is patched to know its kind), run through
``PolicyAgent`` (batched ``decide`` in a thread, log-probs, versions). Its "weights" are
one tensor; its behaviour is a plan of steps read from the config, resolved against the
live UI tree, so it can walk to a dangerous button the way a bad policy would.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.actions import Complete, OpenApp, Scroll, Tap
from distrl_sdk.policy import Decision, Observation

KIND = "test-script"


class ScriptPolicy:
    """Plan steps: ``["open", app]``, ``["tap", label]`` (scrolls down until the label is
    on screen), ``["complete"]``. Past the plan it completes."""

    kind = KIND
    feature_dim = 1

    def __init__(self, plan: Sequence[Sequence[str]]) -> None:
        import torch

        self.plan = [list(p) for p in plan]
        self.pos = 0
        self.w = torch.nn.Parameter(torch.zeros(1))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ScriptPolicy:
        return cls(config["plan"])

    def _one(self, obs: Observation) -> Any:
        if self.pos >= len(self.plan):
            return Complete()
        op, *args = self.plan[self.pos]
        if op == "open":
            self.pos += 1
            return OpenApp(args[0])
        if op == "tap":
            w, h = obs.screen_size
            for e in obs.elements:
                if e.label == args[0] and e.bounds.width > 0:
                    self.pos += 1
                    x, y = e.bounds.center
                    return Tap(x / w, y / h)
            return Scroll("down")
        self.pos += 1
        return Complete()

    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        out = []
        for o in observations:
            before = self.pos
            a = self._one(o)
            out.append(Decision(a, log_prob=float(self.w.item()), obs={"step": o.step},
                                choice={"plan": before}))
        return out

    def evaluate(self, steps: Any) -> Any:
        raise NotImplementedError

    def instruction_features(self, instructions: Sequence[str]) -> Any:
        raise NotImplementedError

    def trainable_parameters(self) -> list[Any]:
        return [self.w]

    def weights(self) -> dict[str, Any]:
        return {"w": self.w.detach()}

    def load_weights(self, weights: Mapping[str, Any]) -> None:
        self.w.data.copy_(weights["w"])

    def config_dict(self) -> dict[str, Any]:
        return {"plan": self.plan}


@pytest.fixture
def script_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``make(plan, version=3) -> checkpoint dir``, loadable by ``distrl deploy --policy``."""
    import distrl_sdk.policies as policies
    from distrl_sdk.policies import save_policy

    real = policies.build_policy

    def build(kind: str, config: dict[str, Any]) -> Any:
        return ScriptPolicy.from_config(config) if kind == KIND else real(kind, config)

    monkeypatch.setattr(policies, "build_policy", build)

    def make(plan: Sequence[Sequence[str]], version: int = 3) -> Path:
        d = tmp_path / f"ckpt-{version}"
        save_policy(ScriptPolicy(plan), d, version=version)  # type: ignore[arg-type]
        return d

    yield make

"""The contracts between policies, trainers, the learner service and the farm.

    farm episode ──Decision(obs, choice, log μ, version)──► trajectory on the wire
    learner: DecodedTrajectory ─► EpisodeRecord ─► Trainer.add_episode ─► Trainer.update
             Trainer.policy.weights() ─► safetensors blob ─► farm: policy.load_weights()

A :class:`TrainablePolicy` acts in batches without gradients (on the farm) and
re-evaluates recorded steps with gradients (in the learner) from its own JSON
encodings ``obs``/``choice``; so a trajectory carries everything needed to recompute
log π(a|s) under newer weights, whatever the policy's architecture.

``torch`` is imported lazily: the farm can run scripted/random policies without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from distrl_sdk.policy import Decision, Observation

if TYPE_CHECKING:
    import torch

    from distrl_sdk.trajectory import Trajectory
    from distrl_sdk.wire import DecodedTrajectory

__all__ = [
    "EpisodeRecord",
    "PolicyAgent",
    "PolicyOutput",
    "StepRecord",
    "TrainablePolicy",
    "Trainer",
    "has_training_mode",
    "training_mode",
]


def has_training_mode(policy: object) -> bool:
    """Whether ``policy`` has a training mode (``set_training``: the UI-tree policy's
    token dropout); policies without one train and act the same way."""
    return callable(getattr(policy, "set_training", None))


@contextlib.contextmanager
def training_mode(policy: object, on: bool = True) -> Iterator[None]:
    """``policy`` in its training mode for the block (gradient passes only: acting, ratios
    and every reported figure read it with the mode off), off again after; nothing when
    ``on`` is false or the policy has no such mode."""
    if not (on and has_training_mode(policy)):
        yield
        return
    policy.set_training(True)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        policy.set_training(False)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class StepRecord:
    """One recorded decision, as the learner trains on it."""

    obs: dict[str, Any]  # the policy's encoding of what it saw (Decision.obs)
    choice: dict[str, Any]  # the policy's encoding of what it chose (Decision.choice)
    log_mu: float  # behaviour log-prob log μ(a|s), from the farm
    reward: float  # step reward; the episode's final reward is added on the last step
    policy_version: int  # the version that chose it
    invalid: bool = False  # an action the policy produced but that did not parse
    frame: bytes | None = None  # JPEG/PNG of the screen, for image policies
    # what a policy precomputed from this step (compact arrays, keyed by the policy's
    # encoding): computed once, reused every time the step is replayed; never travels,
    # never serialised, not part of equality
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class EpisodeRecord:
    """One finished episode (success or failure: aborted/errored ones are never learned)."""

    id: str
    task: str
    instruction: str
    steps: list[StepRecord]
    success: bool
    reward: float  # the evaluator's final score in [0, 1]
    farm_id: str = ""
    device_id: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_version(self) -> int:
        """The oldest version that acted in it (what policy lag is measured by)."""
        return min((s.policy_version for s in self.steps), default=0)

    @classmethod
    def from_wire(cls, decoded: DecodedTrajectory) -> EpisodeRecord | None:
        """From a received trajectory; ``None`` if it cannot be learned from (not an
        agent outcome, steps without the policy's obs/choice/log-prob, or a held-out
        evaluation episode, which is never learned from)."""
        msg = decoded.msg
        if msg.eval is not None or msg.status not in ("success", "failure") or not msg.steps:
            return None
        steps: list[StepRecord] = []
        for s in msg.steps:
            if s.obs is None or s.choice is None or s.log_prob is None:
                return None
            if not math.isfinite(s.log_prob) or not math.isfinite(s.reward):
                return None
            frame = decoded.attachments.get(s.frame) if s.frame else None
            steps.append(StepRecord(obs=s.obs, choice=s.choice, log_mu=float(s.log_prob),
                                    reward=float(s.reward), policy_version=s.policy_version or 0,
                                    invalid=s.action is None, frame=frame))
        return cls._finish(msg.id, msg.task, msg.instruction, steps, msg.status == "success",
                           msg.reward, msg.farm_id, msg.device_id)

    @classmethod
    def from_trajectory(cls, traj: Trajectory, *, episode_id: str, farm_id: str = "",
                        device_id: str = "") -> EpisodeRecord | None:
        """From an SDK trajectory (in-process training, no wire in between)."""
        from distrl_sdk.actions import InvalidAction
        from distrl_sdk.trajectory import EpisodeStatus

        if traj.status not in (EpisodeStatus.SUCCESS, EpisodeStatus.FAILURE) or not traj.steps:
            return None
        steps: list[StepRecord] = []
        for s in traj.steps:
            obs, choice, lp = (s.info.get("policy_obs"), s.info.get("policy_choice"),
                               s.info.get("log_prob"))
            if obs is None or choice is None or lp is None:
                return None
            shot = s.info.get("screenshot_png")
            steps.append(StepRecord(obs=obs, choice=choice, log_mu=float(lp),
                                    reward=float(s.reward),
                                    policy_version=int(s.info.get("policy_version") or 0),
                                    invalid=isinstance(s.action, InvalidAction),
                                    frame=shot if isinstance(shot, bytes) else None))
        return cls._finish(episode_id, traj.task, traj.instruction, steps,
                           traj.status is EpisodeStatus.SUCCESS, traj.reward, farm_id, device_id)

    @classmethod
    def _finish(cls, eid: str, task: str, instruction: str, steps: list[StepRecord],
                success: bool, reward: float, farm_id: str, device_id: str) -> EpisodeRecord:
        last = steps[-1]
        steps[-1] = StepRecord(obs=last.obs, choice=last.choice, log_mu=last.log_mu,
                               reward=last.reward + float(reward),
                               policy_version=last.policy_version, invalid=last.invalid,
                               frame=last.frame)
        return cls(id=eid, task=task, instruction=instruction, steps=steps, success=success,
                   reward=float(reward), farm_id=farm_id, device_id=device_id)


@dataclass
class PolicyOutput:
    """:meth:`TrainablePolicy.evaluate` of a batch of recorded steps."""

    log_prob: torch.Tensor  # [B] log π(choice | obs), differentiable
    entropy: torch.Tensor  # [B] H(π(·|obs)): exact, or a sampled estimate for generative policies
    features: torch.Tensor  # [B, D] state features the critics read (trainers detach them)


@runtime_checkable
class TrainablePolicy(Protocol):
    """A policy the learner can train and the farm can run (UITreePolicy, VLMPolicy)."""

    kind: str  # "uitree" | "vlm": picks the class that loads a checkpoint
    feature_dim: int  # D of PolicyOutput.features / instruction_features

    def decide(self, observations: Sequence[Observation], *, greedy: bool = False
               ) -> list[Decision]:
        """One decision per observation, batched, no gradients. Each Decision carries
        ``log_prob`` (of the action it returns), ``obs`` and ``choice``."""
        ...

    def evaluate(self, steps: Sequence[StepRecord]) -> PolicyOutput: ...

    def instruction_features(self, instructions: Sequence[str]) -> torch.Tensor:
        """[B, D] features of an instruction alone (the trajectory-level critic's input)."""
        ...

    def trainable_parameters(self) -> list[torch.nn.Parameter]: ...

    def weights(self) -> dict[str, torch.Tensor]:
        """What is broadcast to the farm: the LoRA adapter, or a small policy's weights."""
        ...

    def load_weights(self, weights: Mapping[str, torch.Tensor]) -> None: ...

    def config_dict(self) -> dict[str, Any]:
        """JSON-able architecture config: ``build_policy(kind, config)`` rebuilds it."""
        ...


class Trainer(Protocol):
    """A-RIDE (distrl_sdk.learn.aride) and the DigiRL-style baseline (…learn.digirl)."""

    policy: TrainablePolicy
    version: int  # bumped by every update that changed the policy

    def add_episode(self, episode: EpisodeRecord) -> bool:
        """Insert into replay; False if refused (e.g. older than the lag bound)."""
        ...

    def ready(self) -> bool:
        """Enough data for an update."""
        ...

    def update(self) -> dict[str, float]:
        """One training update; returns scalar metrics (losses, entropy, priorities, …)."""
        ...

    def state_tensors(self) -> dict[str, torch.Tensor]:
        """Policy, critics and optimiser state as tensors (safetensors; never pickle)."""
        ...

    def state_meta(self) -> dict[str, Any]:
        """JSON-able rest of the state (config, counters, optimiser hyper-parameters)."""
        ...

    def load_state(self, tensors: Mapping[str, torch.Tensor], meta: Mapping[str, Any]) -> None:
        ...


class PolicyAgent:
    """Adapts a :class:`TrainablePolicy` to the farm's async ``Policy``: concurrent
    ``act`` calls from many devices are batched into one ``decide`` run in a thread
    (a VLM's generate is worth batching; the event loop never blocks on torch)."""

    def __init__(self, policy: TrainablePolicy, version: int = 0, *, greedy: bool = False,
                 max_batch: int = 32, max_wait_s: float = 0.005) -> None:
        self.policy, self.version, self.greedy = policy, version, greedy
        self.name = f"{policy.kind}@v{version}"
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self._pending: list[tuple[Observation, asyncio.Future[Decision]]] = []
        self._flusher: asyncio.Task[None] | None = None

    def swap(self, policy: TrainablePolicy, version: int) -> None:
        """Use new weights from the next decision on (episodes in flight keep going)."""
        self.policy, self.version, self.name = policy, version, f"{policy.kind}@v{version}"

    async def act(self, observation: Observation) -> Decision:
        fut: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self._pending.append((observation, fut))
        if len(self._pending) >= self.max_batch:
            await self._flush()
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later())
        return await fut

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.max_wait_s)
        await self._flush()

    async def _flush(self) -> None:
        batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
        if not batch:
            return
        policy, version = self.policy, self.version
        try:
            decisions = await asyncio.to_thread(
                policy.decide, [o for o, _ in batch], greedy=self.greedy)
        except Exception as exc:  # every waiting episode sees the policy's failure
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (_, fut), d in zip(batch, decisions, strict=True):
            d.policy_version = version
            if not fut.done():
                fut.set_result(d)
        if self._pending:
            await self._flush()

"""Record a demonstration episode: any policy (the task's oracle by default) on a device,
each step kept with its frame, UI elements, action and every policy's own encoding.

With ``drive=True`` (the default) the UI-tree candidate that stands for the
demonstrator's action is what gets executed, so a successful demonstration is also a
proof that the UI-tree action space can do the task (``tests/test_expressivity.py``).
A demonstrator action no candidate expresses runs as it is and is counted in
``unmatched``.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field
from typing import Any

from distrl_sdk.actions import InvalidAction, to_json
from distrl_sdk.device import Device
from distrl_sdk.learn.demos import DemoEpisode, DemoStep
from distrl_sdk.policies.uitree import (
    UITreeConfig,
    candidate_action,
    encode_observation,
    match_action,
)
from distrl_sdk.policy import Decision, Observation, Policy
from distrl_sdk.runner import run_episode
from distrl_sdk.task import Task

__all__ = ["DemoRecorder", "png_to_jpeg", "record_episode", "vlm_encoding"]

VLM_HISTORY = 4  # VLMConfig.history_len's default: the vlm encoding stored at recording


def png_to_jpeg(png: bytes, quality: int = 85) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        out = io.BytesIO()
        im.convert("RGB").save(out, "JPEG", quality=quality)
        return out.getvalue()


def vlm_encoding(obs: Observation, action: Any, history_len: int = VLM_HISTORY
                 ) -> dict[str, Any]:
    """VLMPolicy's ``Decision.obs``/``choice`` for this step: the chat prompt's parts and
    the reply it should produce (the action's JSON, then end of sequence)."""
    hist = obs.history[-history_len:] if history_len else []
    entries = [f"(invalid output: {a.reason[:80]})" if isinstance(a, InvalidAction)
               else to_json(a) for a in hist]
    return {"obs": {"instruction": obs.instruction, "history": entries,
                    "screen_size": [int(obs.screen_size[0]), int(obs.screen_size[1])],
                    "step": int(obs.step), "image": obs.screenshot_png is not None},
            "choice": {"text": to_json(action), "eos": True}}


@dataclass
class _Seen:
    obs: Observation
    action: Any
    source: Any
    uitree: dict[str, Any]


@dataclass
class DemoRecorder:
    """A :class:`~distrl_sdk.policy.Policy` wrapping the demonstrator."""

    inner: Policy
    uitree: UITreeConfig = field(default_factory=UITreeConfig)
    drive: bool = True
    seen: list[_Seen] = field(default_factory=list)
    unmatched: list[tuple[int, Any]] = field(default_factory=list)
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or str(getattr(self.inner, "name", "policy"))

    async def act(self, observation: Observation) -> Any:
        out = await self.inner.act(observation)
        source = out.action if isinstance(out, Decision) else out
        enc = encode_observation(observation, self.uitree)
        k = None if isinstance(source, InvalidAction) else match_action(enc, source)
        action = source
        if k is None:
            self.unmatched.append((observation.step, source))
            choice = None
        else:
            cand = enc["c"][k]
            choice = {"index": k, "kind": cand[0], "label": str(cand[1])[:40]}
            if self.drive:
                action = candidate_action(cand)
        self.seen.append(_Seen(observation, action, source,
                               {"obs": enc, "choice": choice}))
        return action


async def record_episode(task: Task, device: Device, demonstrator: Policy, *, split: str,
                         seed: int | None = None, uitree: UITreeConfig | None = None,
                         drive: bool = True, frames: bool = True, device_id: str = "",
                         jpeg_quality: int = 85) -> tuple[DemoEpisode, list[tuple[int, Any]]]:
    """One episode of ``demonstrator`` on ``task``; returns it and the unmatched actions
    (step, action) the UI-tree action space could not express."""
    rec = DemoRecorder(demonstrator, uitree or UITreeConfig(), drive)
    traj = await run_episode(task, device, rec, with_screenshots=frames)
    steps: list[DemoStep] = []
    for i, (step, seen) in enumerate(zip(traj.steps, rec.seen, strict=False)):
        obs = seen.obs
        png = obs.screenshot_png
        steps.append(DemoStep(
            index=i, action=step.action, elements=list(obs.elements),
            screen_size=(int(obs.screen_size[0]), int(obs.screen_size[1])),
            frame=png_to_jpeg(png, jpeg_quality) if png else None,
            source_action=seen.source if seen.source != step.action else None,
            encodings={"uitree": seen.uitree, "vlm": vlm_encoding(obs, step.action)}))
    ep = DemoEpisode(id=uuid.uuid4().hex[:16], task=task.name, instruction=traj.instruction,
                     params=dict(task.params), split=split, status=str(traj.status),
                     reward=float(traj.reward), steps=steps, policy=rec.name, seed=seed,
                     device=device_id, answer=traj.answer, error=traj.error)
    return ep, rec.unmatched

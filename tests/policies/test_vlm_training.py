"""The VLM learner path sized for a real model, on CPU with the tiny LLaVA / Qwen2-VL:
no-grad scoring, gradient checkpointing (really recomputing, same gradient), bf16
autocast, per-frame vision-feature cache (same numbers, vision tower run once per
frame), length-normalised log-probs."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from distrl_sdk.errors import ConfigError  # noqa: E402
from distrl_sdk.learn.api import StepRecord  # noqa: E402
from distrl_sdk.policies import build_policy  # noqa: E402
from distrl_sdk.policies.vlm import VLMPolicy  # noqa: E402

from .test_microbatch import LLAVA, QWEN, vlm_steps  # noqa: E402

ARCHS = pytest.mark.parametrize("config", [LLAVA, QWEN], ids=["llava", "qwen2_vl"])


def _policy(config: dict[str, Any], **extra: Any) -> VLMPolicy:
    p = build_policy("vlm", {**config, **extra})
    assert isinstance(p, VLMPolicy)
    return p


def _grads(policy: VLMPolicy, steps: list[StepRecord]) -> list[Any]:
    for p in policy.trainable_parameters():
        p.grad = None
    out = policy.evaluate(steps)
    (out.log_prob.sum() + 0.1 * out.entropy.sum()).backward()  # type: ignore[no-untyped-call]
    return [p.grad.clone() for p in policy.trainable_parameters() if p.grad is not None]


def _vision_module(policy: VLMPolicy) -> Any:
    inner = policy.model.get_base_model().model
    return getattr(inner, "vision_tower", None) or inner.visual


@ARCHS
def test_no_grad_pass_matches_and_builds_no_graph(config: dict[str, Any]) -> None:
    policy = _policy(config)
    steps = vlm_steps(policy, 3)
    out = policy.evaluate(steps, grad=False)
    assert not out.log_prob.requires_grad and not out.features.requires_grad
    assert out.log_prob.tolist() == pytest.approx([s.log_mu for s in steps], abs=2e-3)
    lean = policy.evaluate(steps, features=False)
    assert lean.log_prob.requires_grad and lean.features.shape == (3, 0)
    assert torch.allclose(lean.log_prob.detach(), out.log_prob, atol=1e-5)


@ARCHS
def test_gradient_checkpointing_recomputes_layers_and_keeps_the_gradient(
        config: dict[str, Any]) -> None:
    plain, ckpt = _policy(config), _policy(config, gradient_checkpointing=True)
    steps = vlm_steps(plain, 3)
    calls: list[int] = []
    attn = next(m for n, m in ckpt.model.named_modules()
                if n.endswith("language_model.layers.0.self_attn"))
    handle = attn.register_forward_hook(lambda *_: calls.append(1))
    g_ckpt = _grads(ckpt, steps)
    handle.remove()
    assert len(calls) == 2  # forward, and again in backward: really checkpointed
    g_plain = _grads(plain, steps)
    assert len(g_plain) == len(g_ckpt) > 0
    for x, y in zip(g_plain, g_ckpt, strict=True):
        assert torch.allclose(x, y, rtol=1e-4, atol=1e-6)
    # no-grad passes do not recompute, and the layers are back in eval mode after
    calls.clear()
    handle = attn.register_forward_hook(lambda *_: calls.append(1))
    ckpt.evaluate(steps, grad=False)
    handle.remove()
    assert len(calls) == 1
    assert not any(m.training for m in ckpt.model.modules())


@ARCHS
def test_bf16_autocast_acts_and_learns_finitely(config: dict[str, Any]) -> None:
    policy = _policy(config, autocast="bfloat16")
    steps = vlm_steps(policy, 3)
    out = policy.evaluate(steps)
    assert bool(torch.isfinite(out.log_prob).all()) and bool(torch.isfinite(out.entropy).all())
    # acting and scoring share the autocast: the behaviour log-prob is still reproduced
    assert out.log_prob.tolist() == pytest.approx([s.log_mu for s in steps], abs=5e-2)
    out.log_prob.sum().backward()  # type: ignore[no-untyped-call]
    grads = [p.grad for p in policy.trainable_parameters() if p.grad is not None]
    assert grads and all(bool(torch.isfinite(g).all()) for g in grads)


@ARCHS
def test_vision_features_are_cached_per_frame(config: dict[str, Any]) -> None:
    cached, uncached = _policy(config), _policy(config, vision_cache_frames=0)
    steps = vlm_steps(cached, 6)  # 2 distinct frames, 4 screenshot steps
    assert cached.vision_cache_stats["enabled"] and not uncached.vision_cache_stats["enabled"]
    assert cached.vision_cache_stats["misses"] == 2  # decide computed each frame once
    runs: list[int] = []
    handle = _vision_module(cached).register_forward_hook(lambda *_: runs.append(1))
    a = cached.evaluate(steps)
    handle.remove()
    assert runs == []  # every frame came from the cache
    assert cached.vision_cache_stats["hits"] >= 4
    b = uncached.evaluate(steps)
    assert torch.allclose(a.log_prob, b.log_prob, atol=1e-5)
    assert torch.allclose(a.features, b.features, atol=1e-5)
    for x, y in zip(_grads(cached, steps), _grads(uncached, steps), strict=True):
        assert torch.allclose(x, y, rtol=1e-4, atol=1e-6)
    # a different frame is computed, not confused with a cached one
    other = [StepRecord(obs=s.obs, choice=s.choice, log_mu=0.0, reward=0.0, policy_version=0,
                        frame=(steps[1].frame if s.frame == steps[0].frame else steps[0].frame))
             for s in steps if s.frame is not None]
    c = cached.evaluate(other).log_prob
    d = uncached.evaluate(other).log_prob
    assert torch.allclose(c, d, atol=1e-5)


def test_vision_cache_turns_itself_off_when_the_vision_path_trains() -> None:
    policy = _policy(LLAVA, lora_target_modules=r".*(language_model.*\.q_proj|"
                                                r"multi_modal_projector\.linear_1)")
    assert not policy.vision_cache_stats["enabled"]


@ARCHS
def test_mean_reduction_is_the_sum_over_the_reply_length(config: dict[str, Any]) -> None:
    total, mean = _policy(config), _policy(config, logprob_reduction="mean")
    steps = vlm_steps(total, 3)
    s_sum = total.evaluate(steps, grad=False)
    s_mean = mean.evaluate(steps, grad=False)
    n = torch.tensor([len(s.choice["ids"]) + int(s.choice["eos"]) for s in steps])
    assert torch.allclose(s_mean.log_prob, s_sum.log_prob / n, atol=1e-5)
    assert torch.allclose(s_mean.entropy, s_sum.entropy)
    [d] = mean.decide([_obs_of(steps[0])], greedy=True)  # decide reports the same reduction
    assert d.log_prob is not None
    assert d.log_prob == pytest.approx(
        float(mean.evaluate([StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=0.0,
                                        reward=0.0, policy_version=0, frame=steps[0].frame)],
                            grad=False).log_prob[0]), abs=2e-3)


def _obs_of(step: StepRecord) -> Any:
    from distrl_sdk.policy import Observation

    return Observation(step.obs["instruction"], [], tuple(step.obs["screen_size"]),
                       step.obs["step"], [], step.frame)


def test_training_options_are_validated() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"logprob_reduction": "max"}, "logprob_reduction"),
        ({"autocast": "int8"}, "autocast"),
        ({"vision_cache_frames": -1}, "vision_cache_frames")]
    for bad, match in cases:
        with pytest.raises(ConfigError, match=match):
            build_policy("vlm", {**LLAVA, **bad})

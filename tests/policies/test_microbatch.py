"""Gradient micro-batches: the accumulated gradient equals the one-shot gradient, for
the UI-tree policy and the tiny VLMs (LLaVA, Qwen2-VL) built from configs."""

from __future__ import annotations

import io
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from distrl_sdk.actions import Tap  # noqa: E402
from distrl_sdk.learn.api import StepRecord, TrainablePolicy  # noqa: E402
from distrl_sdk.learn.microbatch import (  # noqa: E402
    accumulate_gradients,
    evaluate_detached,
    slices,
)
from distrl_sdk.policies import build_policy  # noqa: E402
from distrl_sdk.policy import Observation  # noqa: E402
from distrl_sdk.uitree import Bounds, UIElement  # noqa: E402

from .test_uitree_cache import _steps  # noqa: E402

LLAVA: dict[str, Any] = {"tiny": {"seed": 0}, "max_new_tokens": 12}
QWEN: dict[str, Any] = {"tiny": {"arch": "qwen2_vl", "image_size": 56, "patch_size": 14},
                        "max_new_tokens": 12}


def _png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (90, 200), color).save(buf, format="PNG")
    return buf.getvalue()


def vlm_steps(policy: Any, n: int = 5) -> list[StepRecord]:
    """Steps the tiny VLM decided itself, on two screens and none (text only)."""
    button = UIElement(index=0, depth=0, parent=None, text="Wi-Fi", resource_id="",
                       class_name="android.widget.Button", package="p", content_desc="",
                       clickable=True, bounds=Bounds(10, 20, 98, 50))
    frames = [_png((30, 120, 200)), _png((200, 40, 40)), None]
    obs = [Observation("Turn off Wi-Fi", [button], (1080, 2400), t, [Tap(0.5, 0.5)] * (t % 2),
                       frames[t % 3]) for t in range(n)]
    return [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                       reward=0.0, policy_version=0, frame=o.screenshot_png)
            for d, o in zip(policy.decide(obs), obs, strict=True)]


def _coefs(n: int) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(7)
    return torch.randn(n, generator=g), 0.1 * torch.randn(n, generator=g)


def _one_shot(policy: TrainablePolicy, steps: list[StepRecord], a: Any, b: Any
              ) -> tuple[float, list[Any]]:
    params = policy.trainable_parameters()
    for p in params:
        p.grad = None
    out = policy.evaluate(steps)
    loss = (a * out.log_prob).sum() + (b * out.entropy).sum()
    loss.backward()
    return float(loss.detach()), [p.grad.clone() if p.grad is not None else torch.zeros_like(p)
                         for p in params]


def _micro(policy: TrainablePolicy, steps: list[StepRecord], a: Any, b: Any, size: int
           ) -> tuple[Any, list[Any]]:
    params = policy.trainable_parameters()
    for p in params:
        p.grad = None
    res = accumulate_gradients(policy, steps, a, b, micro_batch=size)
    return res, [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for p in params]


def _assert_same(g1: list[Any], g2: list[Any], rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Equal up to float32 summation order: ``atol`` is relative to the largest gradient
    entry (a sum of slices differs from one sum by rounding, ~1e-7 of its terms' size,
    so an absolute 1e-6 on entries near zero failed one run in a few)."""
    assert any(bool(g.abs().sum() > 0) for g in g1)
    scale = max(float(g.abs().max()) for g in g1)
    for x, y in zip(g1, g2, strict=True):
        assert torch.allclose(x, y, rtol=rtol, atol=atol * scale), float((x - y).abs().max())


def test_slices() -> None:
    assert slices(5, 2) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert slices(5, None) == [slice(0, 5)] == slices(5, 0)
    assert slices(0, 3) == []


@pytest.mark.parametrize("size", [1, 3, 7])
def test_uitree_accumulated_gradient_equals_one_shot(size: int) -> None:
    policy = build_policy("uitree", {"buckets": 2048, "embed_dim": 16, "hidden": 32})
    # seeded: from the global RNG the weights (and so the loss) changed with test order
    torch.nn.init.normal_(policy.model.score_out.weight,  # type: ignore[attr-defined]
                          generator=torch.Generator().manual_seed(3))
    steps = _steps(policy, n=13)  # type: ignore[arg-type]
    a, b = _coefs(len(steps))
    loss, full = _one_shot(policy, steps, a, b)
    res, micro = _micro(policy, steps, a, b, size)
    assert res.finite and res.micro_batches == -(-len(steps) // size)
    # float32 sums of the same terms in another grouping: the error scales with the
    # terms, not with their (much smaller, cancelling) total — one run missed abs=1e-6
    with torch.no_grad():
        out = policy.evaluate(steps)
        scale = float((a * out.log_prob).abs().sum() + (b * out.entropy).abs().sum())
    assert res.loss == pytest.approx(loss, rel=1e-5, abs=1e-6 * max(1.0, scale))
    _assert_same(full, micro)
    det = evaluate_detached(policy, steps, micro_batch=size)
    assert not det.log_prob.requires_grad
    assert torch.allclose(det.log_prob, res.log_prob, atol=1e-6)
    assert det.features.shape == (len(steps), policy.feature_dim)


@pytest.mark.parametrize("config", [LLAVA, QWEN], ids=["llava", "qwen2_vl"])
def test_vlm_accumulated_gradient_equals_one_shot(config: dict[str, Any]) -> None:
    policy = build_policy("vlm", config)
    steps = vlm_steps(policy)
    a, b = _coefs(len(steps))
    loss, full = _one_shot(policy, steps, a, b)
    res, micro = _micro(policy, steps, a, b, 2)
    assert res.finite and res.micro_batches == 3
    assert res.loss == pytest.approx(loss, rel=1e-4, abs=1e-5)
    _assert_same(full, micro)
    det = evaluate_detached(policy, steps, micro_batch=2)
    assert det.log_prob.tolist() == pytest.approx([s.log_mu for s in steps], abs=2e-3)
    assert det.features.shape == (len(steps), policy.feature_dim)
    assert not det.features.requires_grad


def test_a_non_finite_micro_batch_stops_without_backward() -> None:
    policy = build_policy("uitree", {"buckets": 2048, "embed_dim": 16, "hidden": 32})
    steps = _steps(policy, n=6)  # type: ignore[arg-type]
    a, b = _coefs(len(steps))
    a[4] = float("inf")
    res, grads = _micro(policy, steps, a, b, 2)
    assert not res.finite and res.micro_batches == 3
    assert all(bool(torch.isfinite(g).all()) for g in grads)
    with pytest.raises(ValueError, match="coefficients"):
        accumulate_gradients(policy, steps, a[:3], b, micro_batch=2)

"""One VLM learner step at real size: the GPU check of the 2B training path.

Builds a VLMPolicy (a local checkpoint, or a random Qwen2-VL of 2B shape built from its
config — no download), lets it act on synthetic phone screens (16 episodes × 8 steps),
then runs one learner step the way a trainer does: the no-grad pass (ratios, critic
features) in micro-batches, the gradient pass through
``distrl_sdk.learn.microbatch.accumulate_gradients`` with gradient checkpointing and
bf16, an optimiser step on the LoRA adapter. Prints one JSON line: times, peak GPU
memory, |log π − log μ|, the vision cache's hits and the no-grad pass with the cache
cold vs warm, and whether the micro-batched gradient equals the one-shot one on a few
steps.

    .venv/bin/python bench/gpu_vlm_step.py --tiny                 # CPU, seconds (CI-sized)
    python bench/gpu_vlm_step.py --size 2b --device cuda          # random 2B-shaped model
    python bench/gpu_vlm_step.py --model-path /models/qwen2-vl-2b --device cuda
"""

from __future__ import annotations

import argparse
import io
import json
import random
import time
from typing import Any

import _common  # noqa: F401 - puts the repo on sys.path
import torch

from distrl_sdk.learn.api import StepRecord
from distrl_sdk.learn.microbatch import accumulate_gradients, evaluate_detached
from distrl_sdk.policies import build_policy
from distrl_sdk.policies.vlm import VLMPolicy
from distrl_sdk.policy import Observation

# Qwen2-VL-2B's shape: a 1.5 B language model and a 32-block, 1280-wide vision tower
# (random weights, a small tokenizer: the memory and time of a learner step, not skill)
SIZE_2B = {"arch": "qwen2_vl", "hidden_size": 1536, "intermediate_size": 8960,
           "num_layers": 28, "num_heads": 12, "vision_hidden_size": 1280,
           "vision_layers": 32, "vision_heads": 16, "image_size": 448, "patch_size": 14}
TINY = {"arch": "qwen2_vl", "image_size": 56, "patch_size": 14}
INSTRUCTIONS = ("Turn off Wi-Fi", "Open the Clock app and add an alarm for 7:30",
                'Search for "red shoes" in Chrome', "Enable dark theme")


def _screen(rng: random.Random, size: tuple[int, int]) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, (rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    draw = ImageDraw.Draw(img)
    for i in range(rng.randint(4, 10)):
        top = 120 + i * size[1] // 12
        draw.rectangle((20, top, size[0] - 20, top + size[1] // 14), fill=(250, 250, 250))
        draw.text((40, top + 10), f"Row {rng.randrange(1000)}", fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--tiny", action="store_true", help="the tiny Qwen2-VL (CPU smoke run)")
    src.add_argument("--size", choices=("2b",), help="a random model of this shape")
    src.add_argument("--model-path", help="a local Hugging Face image-text-to-text dir")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, else float32")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--act-batch", type=int, default=16, help="observations per generate")
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--no-checkpointing", action="store_true")
    ap.add_argument("--reduction", choices=("sum", "mean"), default="mean")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    dtype = args.dtype or ("bfloat16" if cuda else "float32")
    base: dict[str, Any] = ({"model_path": args.model_path} if args.model_path
                            else {"tiny": SIZE_2B if args.size else TINY})
    config = {**base, "dtype": dtype, "device": args.device, "lora_r": args.lora_r,
              "lora_alpha": 2 * args.lora_r, "max_new_tokens": args.max_new_tokens,
              "image_max_side": 1024, "logprob_reduction": args.reduction,
              "gradient_checkpointing": not args.no_checkpointing,
              "autocast": "bfloat16" if dtype == "bfloat16" else None}
    report: dict[str, Any] = {"config": {k: v for k, v in config.items() if k != "tiny"},
                              "model": base}
    t0 = time.perf_counter()
    policy = build_policy("vlm", config)
    assert isinstance(policy, VLMPolicy)
    report["build_s"] = round(time.perf_counter() - t0, 2)
    report["params_total"] = sum(p.numel() for p in policy.model.parameters())
    report["params_lora"] = sum(p.numel() for p in policy.trainable_parameters())

    # act: every step its own screen (a replayed batch sees each frame once per pass)
    rng = random.Random(0)
    n = args.episodes * args.steps
    obs = [Observation(INSTRUCTIONS[i // args.steps % len(INSTRUCTIONS)], [], (1080, 2400),
                       i % args.steps, [], _screen(rng, (540, 1200))) for i in range(n)]
    t0 = time.perf_counter()
    decisions = []
    for i in range(0, n, args.act_batch):
        decisions += policy.decide(obs[i:i + args.act_batch])
    _sync(args.device)
    report["act_s"] = round(time.perf_counter() - t0, 2)
    steps = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                        reward=0.0, policy_version=0, frame=o.screenshot_png)
             for d, o in zip(decisions, obs, strict=True)]
    report["reply_tokens_mean"] = sum(len(s.choice["ids"]) for s in steps) / n
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    # the learner step: no-grad pass (cache warm from acting), coefficients, gradient pass
    t0 = time.perf_counter()
    out = evaluate_detached(policy, steps, micro_batch=args.micro_batch)
    _sync(args.device)
    report["nograd_pass_s_cache_warm"] = round(time.perf_counter() - t0, 2)
    report["max_abs_logpi_minus_logmu"] = float(
        (out.log_prob - torch.tensor([s.log_mu for s in steps])).abs().max())
    g = torch.Generator().manual_seed(0)
    a = -torch.randn(n, generator=g) / n  # −ρ̄·A·w/N, as a trainer would pass it
    b = torch.full((n,), -0.01 / n)  # −β·w/N
    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-5)
    opt.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    res = accumulate_gradients(policy, steps, a, b, micro_batch=args.micro_batch)
    norm = torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), 1.0)
    opt.step()
    _sync(args.device)
    report["grad_pass_s"] = round(time.perf_counter() - t0, 2)
    report["grad_finite"] = bool(res.finite and torch.isfinite(norm))
    report["grad_norm"] = float(norm)
    if cuda:
        report["peak_gpu_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    report["vision_cache"] = policy.vision_cache_stats

    # the vision cache's saving: the same no-grad pass with the cache cleared
    policy._vision.store.clear()
    t0 = time.perf_counter()
    evaluate_detached(policy, steps, micro_batch=args.micro_batch)
    _sync(args.device)
    report["nograd_pass_s_cache_cold"] = round(time.perf_counter() - t0, 2)

    # micro-batched = one-shot gradient, on a few steps
    few = steps[:4]
    params = policy.trainable_parameters()
    opt.zero_grad(set_to_none=True)
    accumulate_gradients(policy, few, a[:4] * n, b[:4] * n, micro_batch=1)
    micro = [p.grad.detach().float().clone() for p in params if p.grad is not None]
    opt.zero_grad(set_to_none=True)
    accumulate_gradients(policy, few, a[:4] * n, b[:4] * n, micro_batch=None)
    full = [p.grad.detach().float().clone() for p in params if p.grad is not None]
    diff = max(float((x - y).abs().max()) for x, y in zip(micro, full, strict=True))
    scale = max(float(y.abs().max()) for y in full)
    report["microbatch_grad_rel_diff"] = diff / max(scale, 1e-12)
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""VLMPolicy.evaluate with and without the per-frame vision-feature cache (CPU).

A mid-size random model (4-block vision tower, 224² screens) of each tiny architecture
acts on 32 synthetic screens; the same recorded steps are then scored by two policies
identical but for ``vision_cache_frames`` (128 vs 0): the no-grad pass over all steps
in micro-batches of 8, and one gradient pass over 8 steps. The saving grows with the
vision tower (Qwen2-VL-2B's has 32 blocks: bench/gpu_vlm_step.py measures that).

    .venv/bin/python bench/vlm_vision_cache.py            # ~1 min
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

import _common  # noqa: F401 - puts the repo on sys.path
import torch
from gpu_vlm_step import _screen

from distrl_sdk.learn.api import StepRecord
from distrl_sdk.learn.microbatch import evaluate_detached
from distrl_sdk.policies import build_policy
from distrl_sdk.policy import Observation


def main() -> None:
    torch.set_num_threads(1)
    for arch in ("qwen2_vl", "llava"):
        tiny: dict[str, Any] = {
            "arch": arch, "hidden_size": 64, "intermediate_size": 128, "num_layers": 2,
            "num_heads": 4, "vision_hidden_size": 128, "vision_layers": 4, "vision_heads": 4,
            "image_size": 224, "patch_size": 14 if arch == "qwen2_vl" else 16}
        pols = {f: build_policy("vlm", {"tiny": tiny, "max_new_tokens": 24,
                                        "vision_cache_frames": f}) for f in (128, 0)}
        rng = random.Random(0)
        obs = [Observation("Turn off Wi-Fi", [], (1080, 2400), i, [], _screen(rng, (540, 1200)))
               for i in range(32)]
        decisions = pols[128].decide(obs[:16]) + pols[128].decide(obs[16:])
        steps = [StepRecord(obs=d.obs or {}, choice=d.choice or {}, log_mu=d.log_prob or 0.0,
                            reward=0.0, policy_version=0, frame=o.screenshot_png)
                 for d, o in zip(decisions, obs, strict=True)]
        nograd: dict[int, float] = {}
        grad: dict[int, float] = {}
        lps: dict[int, torch.Tensor] = {}
        for f, p in pols.items():
            ts, tg = [], []
            for _ in range(3):
                t0 = time.perf_counter()
                lps[f] = evaluate_detached(p, steps, micro_batch=8).log_prob
                ts.append(time.perf_counter() - t0)
            for _ in range(3):
                t0 = time.perf_counter()
                p.evaluate(steps[:8]).log_prob.sum().backward()  # type: ignore[no-untyped-call]
                tg.append(time.perf_counter() - t0)
            nograd[f], grad[f] = statistics.median(ts), statistics.median(tg)
        same = float((lps[128] - lps[0]).abs().max())
        print(f"{arch:9s} no-grad 32 steps: {nograd[0]:.3f} s uncached, {nograd[128]:.3f} s "
              f"cached ({nograd[0] / nograd[128]:.2f}x); grad 8 steps: {grad[0]:.3f} s vs "
              f"{grad[128]:.3f} s ({grad[0] / grad[128]:.2f}x); max |Δ log π| {same:.1e}")


if __name__ == "__main__":
    main()

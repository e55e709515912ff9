"""The learner's side of remote inference: each new policy version's LoRA adapter goes
into the inference server before farms hear of the version.

For version N the loader writes the adapter in PEFT's layout to ``ADAPTER_DIR/vN``
(a directory the server can read: the same host, or a shared filesystem), asks the
server to load it as ``distrl-vN`` (vLLM's ``POST /v1/load_lora_adapter``) and unloads
the versions older than the newest ``keep`` (episodes in flight still finish on the one
they started with). Only then does the learner publish the pointer, so a farm never
asks for a version the server lacks.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from distrl_sdk.policies.remote import adapter_name

if TYPE_CHECKING:
    import torch

__all__ = ["AdapterLoader", "LoadError"]

log = logging.getLogger("distrl.serve")


class LoadError(RuntimeError):
    """The server did not take an adapter (its answer, or why it could not be reached)."""


class AdapterLoader:
    def __init__(self, base_url: str, adapter_dir: str | Path, *, keep: int = 4,
                 api_key: str | None = None, timeout_s: float = 120.0) -> None:
        if keep < 1:
            raise ValueError("keep must be ≥ 1")
        self.base_url = base_url.rstrip("/")
        self.adapter_dir = Path(adapter_dir).resolve()
        self.keep = keep
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        self.loaded: deque[int] = deque()
        self.loads = 0

    async def check(self) -> None:
        """Fail early (``LoadError``) when no server answers at ``base_url``."""
        try:
            async with httpx.AsyncClient(timeout=10.0) as http:
                r = await http.get(f"{self.base_url}/v1/models", headers=self.headers)
        except httpx.HTTPError as exc:
            raise LoadError(f"no inference server at {self.base_url} ({exc!r}); start one "
                            "(`distrl serve`, or vLLM with --enable-lora)") from None
        if r.status_code != 200:
            raise LoadError(f"inference server {self.base_url}: GET /v1/models answered "
                            f"{r.status_code}: {r.text[:200]}")

    async def load(self, version: int, weights: Mapping[str, torch.Tensor],
                   config: Mapping[str, Any]) -> str:
        """Write and load version ``version``'s adapter; returns its served name."""
        from distrl_sdk.policies.vlm import write_adapter

        path = self.adapter_dir / f"v{version}"
        await asyncio.to_thread(write_adapter, weights, config, path)
        name = adapter_name(version)
        async with httpx.AsyncClient(timeout=self.timeout_s) as http:
            try:
                r = await http.post(f"{self.base_url}/v1/load_lora_adapter", headers=self.headers,
                                    json={"lora_name": name, "lora_path": str(path)})
            except httpx.HTTPError as exc:
                raise LoadError(f"inference server {self.base_url}: {exc!r}") from None
            if r.status_code != 200 and "already been loaded" not in r.text:
                raise LoadError(f"inference server {self.base_url} refused adapter {name}: "
                                f"{r.status_code} {r.text[:300]}")
            self.loaded.append(version)
            self.loads += 1
            while len(self.loaded) > self.keep:
                old = self.loaded.popleft()
                try:
                    await http.post(f"{self.base_url}/v1/unload_lora_adapter",
                                    headers=self.headers, json={"lora_name": adapter_name(old)})
                except httpx.HTTPError as exc:  # the next load retries nothing: just say so
                    log.warning("could not unload %s: %r", adapter_name(old), exc)
                await asyncio.to_thread(shutil.rmtree, self.adapter_dir / f"v{old}", True)
        return name

"""An OpenAI-compatible inference server for a VLM policy, with vLLM's LoRA endpoints.

What a farm host's :class:`~distrl_sdk.policies.remote.RemotePolicy` and the learner's
:class:`~farm.serve.lora.AdapterLoader` talk to — the same subset of the HTTP API vLLM
serves (``vllm serve BASE --enable-lora``, ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``),
so either server fits:

    GET  /health, /v1/models
    POST /v1/load_lora_adapter    {"lora_name", "lora_path"}
    POST /v1/unload_lora_adapter  {"lora_name"}
    POST /v1/chat/completions     one user turn (image_url data URI + text), logprobs

This one serves the policy through transformers on whatever device its config names
(the tiny test models on a CPU; a real checkpoint on a GPU, without vLLM's paged
attention and continuous batching — it is the reference and the test double, vLLM the
engine for a fleet). Its distribution is exactly the policy's π: a reply's per-token
log-probs come from the forward pass the learner's ``evaluate`` runs, so Retrace's ρ
is 1 for the same weights. Requests for the same adapter that arrive together are
decided in one batch.

A sampling parameter that would make the reported log-probs differ from π (top-p/top-k
cuts, penalties, another temperature, n > 1) is refused with a 400 that names it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from distrl_sdk.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from distrl_sdk.policies.vlm import Completion, VLMPolicy

__all__ = ["InferenceServer", "RequestError"]

log = logging.getLogger("distrl.serve")

_TOKEN_ID_PREFIX = "token_id:"


class RequestError(Exception):
    """A request the server refuses: HTTP status and an OpenAI-style error message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestError)
    return _error(exc.status, exc.message)


def _error(status: int, message: str) -> JSONResponse:
    kind = {400: "BadRequestError", 401: "AuthenticationError",
            404: "NotFoundError"}.get(status, "InternalServerError")
    return JSONResponse({"error": {"message": message, "type": kind, "code": status},
                         "object": "error", "message": message, "type": kind, "code": status},
                        status_code=status)


@dataclass
class _Job:
    adapter: str
    prompt: str
    frame: bytes | None
    greedy: bool
    max_new_tokens: int
    done: asyncio.Future[Completion] = field(repr=False)


def _user_turn(messages: Any) -> tuple[str, bytes | None]:
    """The prompt text and screenshot of a one-user-turn chat (what a policy sends)."""
    if not isinstance(messages, list) or len(messages) != 1 or not isinstance(
            messages[0], dict) or messages[0].get("role") != "user":
        raise RequestError(400, "messages must be one user turn (a policy's decision: the "
                                "screenshot and the prompt text)")
    content = messages[0].get("content")
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise RequestError(400, "message content must be a string or a list of parts")
    texts: list[str] = []
    frame: bytes | None = None
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            if frame is not None:
                raise RequestError(400, "one image per request (the screen)")
            url = (part.get("image_url") or {}).get("url", "")
            head, _, data = str(url).partition(",")
            if not (head.startswith("data:image/") and head.endswith(";base64")):
                raise RequestError(400, "images must be data URIs (data:image/png;base64,…): "
                                        "this server fetches nothing")
            try:
                frame = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise RequestError(400, "the image data URI is not valid base64") from None
        else:
            raise RequestError(400, f"unsupported content part {kind!r} (text, image_url)")
    if not texts:
        raise RequestError(400, "the user turn has no text")
    return "\n".join(texts), frame


class InferenceServer:
    """Serves ``policy`` (a :class:`VLMPolicy`) under ``base_name`` (its own adapter as
    built or loaded) and every LoRA adapter loaded at run time under its name."""

    def __init__(self, policy: VLMPolicy, *, base_name: str = "base", max_batch: int = 16,
                 max_adapters: int = 8, api_key: str | None = None) -> None:
        self.policy, self.base_name = policy, base_name
        self.max_batch, self.max_adapters, self.api_key = max_batch, max_adapters, api_key
        self.adapters: OrderedDict[str, dict[str, torch.Tensor]] = OrderedDict()
        self.adapters[base_name] = policy.weights()
        self.adapter_paths: dict[str, str] = {}
        self._current: str | None = base_name  # the adapter now in the policy's weights
        self._jobs: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.requests = 0  # chat completions queued
        self.batches = 0
        self.completions = 0
        self.app = Starlette(routes=[
            Route("/health", self.health, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/load_lora_adapter", self.load_adapter, methods=["POST"]),
            Route("/v1/unload_lora_adapter", self.unload_adapter, methods=["POST"]),
            Route("/v1/chat/completions", self.chat, methods=["POST"]),
        ], lifespan=self._lifespan,
            # a refused request, raised anywhere in a handler, answers as OpenAI's do
            exception_handlers={RequestError: _refused})

    # ── lifecycle ───────────────────────────────────────────────────────────────────
    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The batching worker lives as long as the server's event loop."""
        self._jobs = asyncio.Queue()
        self._worker = asyncio.create_task(self._work(), name="distrl-serve-batches")
        try:
            yield
        finally:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    # ── routes ──────────────────────────────────────────────────────────────────────
    def _check_key(self, request: Request) -> None:
        if self.api_key is not None and request.headers.get(
                "authorization") != f"Bearer {self.api_key}":
            raise RequestError(401, "Unauthorized")

    async def _json(self, request: Request) -> dict[str, Any]:
        """The authorised request's JSON object body."""
        self._check_key(request)
        try:
            body = await request.json()
        except ValueError:
            raise RequestError(400, "the request body is not JSON") from None
        if not isinstance(body, dict):
            raise RequestError(400, "the request body must be a JSON object")
        return body

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("")

    async def models(self, request: Request) -> Response:
        self._check_key(request)
        now = int(time.time())
        data = [{"id": name, "object": "model", "created": now, "owned_by": "distrl",
                 "root": self.adapter_paths.get(name, name),
                 "parent": None if name == self.base_name else self.base_name}
                for name in self.adapters]
        return JSONResponse({"object": "list", "data": data})

    async def load_adapter(self, request: Request) -> Response:
        body = await self._json(request)
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise RequestError(400, "both 'lora_name' and 'lora_path' must be provided")
        if name in self.adapters:
            raise RequestError(400, f"The lora adapter '{name}' has already been loaded.")
        try:
            weights = await asyncio.to_thread(self.policy.read_adapter, path)
        except ConfigError as exc:
            raise RequestError(400, f"cannot load LoRA adapter '{name}': {exc}") from None
        self.adapters[name] = weights
        self.adapter_paths[name] = path
        if self._current == name:  # an earlier adapter of that name is in the model
            self._current = None
        while len(self.adapters) > self.max_adapters + 1:  # the base never leaves
            oldest = next(n for n in self.adapters if n != self.base_name)
            del self.adapters[oldest]
            self.adapter_paths.pop(oldest, None)
            log.info("adapter %s evicted (max %d)", oldest, self.max_adapters)
        log.info("adapter %s loaded from %s", name, path)
        return PlainTextResponse(f"Success: LoRA adapter '{name}' added successfully.")

    async def unload_adapter(self, request: Request) -> Response:
        body = await self._json(request)
        name = body.get("lora_name")
        if not isinstance(name, str) or name == self.base_name or name not in self.adapters:
            raise RequestError(404, f"The lora adapter '{name}' cannot be found.")
        del self.adapters[name]
        self.adapter_paths.pop(name, None)
        if self._current == name:
            self._current = None
        return PlainTextResponse(f"Success: LoRA adapter '{name}' removed successfully.")

    async def chat(self, request: Request) -> Response:
        body = await self._json(request)
        job, want_logprobs, ids_as_tokens = self._job(body)
        assert self._jobs is not None
        await self._jobs.put(job)
        self.requests += 1
        done = await job.done  # a RequestError set by the worker is raised here
        return JSONResponse(self._response(body, job, done, want_logprobs, ids_as_tokens))

    # ── requests → jobs → responses ────────────────────────────────────────────────
    def _job(self, body: dict[str, Any]) -> tuple[_Job, bool, bool]:
        model = body.get("model", self.base_name)
        if model not in self.adapters:
            raise RequestError(404, f"The model `{model}` does not exist.")
        cfg = self.policy.config
        temperature = body.get("temperature", cfg.temperature)
        if not isinstance(temperature, int | float) or temperature < 0:
            raise RequestError(400, "temperature must be a number ≥ 0")
        greedy = temperature == 0
        if not greedy and abs(float(temperature) - cfg.temperature) > 1e-9:
            raise RequestError(400, f"this server samples at the policy's temperature "
                                    f"{cfg.temperature:g} (or 0 for greedy): the log-probs it "
                                    f"reports are the policy's")
        checks: dict[str, tuple[Any, ...]] = {
            "top_p": (1.0, None), "top_k": (-1, 0, None), "n": (1, None),
            "repetition_penalty": (1.0, None), "presence_penalty": (0, 0.0, None),
            "frequency_penalty": (0, 0.0, None), "stream": (False, None), "stop": (None, [])}
        for key, allowed in checks.items():
            if body.get(key) not in allowed:
                raise RequestError(400, f"{key}={body[key]!r} is not supported: sampling "
                                        f"must be the policy's own distribution")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is None:
            limit = cfg.max_new_tokens
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 4096:
            raise RequestError(400, "max_tokens must be an integer from 1 to 4096")
        prompt, frame = _user_turn(body.get("messages"))
        fut: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        job = _Job(str(model), prompt, frame, greedy, int(limit), fut)
        return job, bool(body.get("logprobs")), bool(body.get("return_tokens_as_token_ids"))

    def _response(self, body: dict[str, Any], job: _Job, c: Completion, want_logprobs: bool,
                  ids_as_tokens: bool) -> dict[str, Any]:
        tok = self.policy.tokenizer
        ids = [*c.ids, self.policy.eos_id] if c.eos else list(c.ids)
        logprobs = None
        if want_logprobs:
            entries = []
            for i, lp in zip(ids, c.token_log_probs, strict=True):
                text = tok.decode([i]) if i != self.policy.eos_id else ""
                entries.append({"token": f"{_TOKEN_ID_PREFIX}{i}" if ids_as_tokens else text,
                                "logprob": lp, "bytes": list(text.encode()),
                                "top_logprobs": []})
            logprobs = {"content": entries}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": job.adapter,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": c.text},
                         "logprobs": logprobs, "finish_reason": "stop" if c.eos else "length",
                         "stop_reason": None}],
            "usage": {"completion_tokens": len(ids), "prompt_tokens": None,
                      "total_tokens": None},
        }

    # ── the batching worker ─────────────────────────────────────────────────────────
    async def _work(self) -> None:
        assert self._jobs is not None
        while True:
            first = await self._jobs.get()
            await asyncio.sleep(0.002)  # let the requests that came together gather
            batch: list[_Job] = [first]
            rest: list[_Job] = []
            while not self._jobs.empty():
                j = self._jobs.get_nowait()
                same = (j.adapter, j.greedy, j.max_new_tokens) == (
                    first.adapter, first.greedy, first.max_new_tokens)
                (batch if same and len(batch) < self.max_batch else rest).append(j)
            for j in rest:  # the next batch's, in arrival order
                self._jobs.put_nowait(j)
            await self._run(batch)

    async def _run(self, batch: list[_Job]) -> None:
        live = [j for j in batch if not j.done.cancelled()]
        if not live:
            return
        weights = self.adapters.get(first := live[0].adapter)
        if weights is None:  # unloaded while it waited
            for j in live:
                if not j.done.done():
                    j.done.set_exception(RequestError(404, f"The model `{first}` does not exist."))
            return
        try:
            out = await asyncio.to_thread(self._decide, first, weights, live)
        except Exception as exc:  # a model failure answers every waiting request
            log.exception("batch of %d for %s failed", len(live), first)
            for j in live:
                if not j.done.done():
                    j.done.set_exception(RequestError(500, f"inference failed: {exc}"))
            return
        self.batches += 1
        self.completions += len(live)
        for j, c in zip(live, out, strict=True):
            if not j.done.done():
                j.done.set_result(c)

    def _decide(self, name: str, weights: dict[str, torch.Tensor], jobs: list[_Job]
                ) -> list[Completion]:
        if self._current != name:
            self.policy.load_weights(weights)
            self._current = name
        return self.policy.complete([j.prompt for j in jobs], [j.frame for j in jobs],
                                    greedy=jobs[0].greedy, max_new_tokens=jobs[0].max_new_tokens)

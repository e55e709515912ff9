"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` (vLLM, SGLang, Ollama, …)."""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import httpx

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import JudgeBackend

__all__ = ["OpenAICompatibleJudge", "chat_completions_url"]

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def chat_completions_url(base_url: str) -> str:
    """``http://h:8000`` and ``http://h:8000/v1`` both → ``http://h:8000/v1/chat/completions``."""
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if not url.endswith("/v1"):
        url += "/v1"
    return url + "/chat/completions"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    raise TaskError(f"judge server: unexpected message content {content!r:.200}")


class OpenAICompatibleJudge(JudgeBackend):
    """POSTs the prompt and the screenshots (base64 PNG ``image_url`` parts).

    ``api_key`` (or the environment variable ``api_key_env``) is sent as a Bearer
    token when set. 408/429/5xx answers and connection errors are retried
    ``retries`` times, waiting ``backoff`` s and doubling; what still fails is a ``TaskError``
    (the episode is ERRORED, not failed).
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *,
                 api_key_env: str | None = None, timeout: float = 60.0,
                 max_tokens: int = 256, temperature: float = 0.0, retries: int = 2,
                 backoff: float = 0.5,
                 system_prompt: str | None = None,
                 extra_body: dict[str, Any] | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = chat_completions_url(base_url)
        self.model = model
        self.api_key = api_key
        self.api_key_env = api_key_env
        self.timeout, self.max_tokens, self.temperature = timeout, max_tokens, temperature
        self.retries, self.backoff = retries, backoff
        self.system_prompt = system_prompt
        self.extra_body = dict(extra_body or {})
        self.transport = transport

    def request_body(self, images: list[bytes], prompt: str) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        for png in images:
            b64 = base64.b64encode(png).decode("ascii")
            parts.append({"type": "image_url",
                          "image_url": {"url": f"data:image/png;base64,{b64}"}})
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        messages.append({"role": "user", "content": parts})
        return {"model": self.model, "messages": messages, "max_tokens": self.max_tokens,
                "temperature": self.temperature, **self.extra_body}

    def _headers(self) -> dict[str, str]:
        key = self.api_key or (os.environ.get(self.api_key_env) if self.api_key_env else None)
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def judge(self, images: list[bytes], prompt: str) -> str:
        body = self.request_body(images, prompt)
        last = ""
        async with httpx.AsyncClient(timeout=self.timeout, transport=self.transport) as client:
            for attempt in range(self.retries + 1):
                if attempt:
                    await asyncio.sleep(min(8.0, self.backoff * 2 ** (attempt - 1)))
                try:
                    resp = await client.post(self.url, json=body, headers=self._headers())
                except httpx.TransportError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                    continue
                if resp.status_code in _RETRY_STATUS:
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                    continue
                if resp.status_code != 200:
                    raise TaskError(f"judge server {self.url} answered HTTP {resp.status_code}: "
                                    f"{resp.text[:300]}")
                try:
                    data = resp.json()
                    return _content_text(data["choices"][0]["message"]["content"])
                except (ValueError, KeyError, IndexError, TypeError) as exc:
                    raise TaskError(f"judge server {self.url} sent no chat completion "
                                    f"({type(exc).__name__}: {exc}): {resp.text[:300]}") from None
        raise TaskError(f"judge server {self.url} failed {self.retries + 1} time(s); "
                        f"last: {last}")

    def describe(self) -> str:
        return f"openai:{self.model}"

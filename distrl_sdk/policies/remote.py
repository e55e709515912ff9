"""RemotePolicy: a VLM policy that acts through an OpenAI-compatible inference server.

A farm host without a GPU plays a :class:`~distrl_sdk.policies.vlm.VLMPolicy` version
by asking a server (vLLM serving the base model with LoRA enabled, or ``distrl serve``)
for a chat completion under the adapter named for that version. The step it records is
exactly the step a local ``VLMPolicy`` would record:

- ``Decision.obs`` is :func:`~distrl_sdk.policies.vlm.encode_observation`'s dict and
  the user turn is the screenshot plus :func:`~distrl_sdk.policies.vlm.format_prompt`'s
  text, so the learner rebuilds the identical prompt;
- ``Decision.choice`` carries the sampled token ids (``return_tokens_as_token_ids``), so
  the learner scores exactly what was sampled, not a re-tokenisation of the text;
- ``Decision.log_prob`` (log μ) is the sum (or mean, ``logprob_reduction``) of the
  server's per-token ``logprobs``, the end-of-sequence token's included when the reply
  stopped by itself (``finish_reason == "stop"``: the last entry is that token).

Sampling must be π's: temperature as in the policy config, no top-k/top-p, no
penalties (the request says so explicitly). Greedy decisions ask for temperature 0.

No torch here: a farm host needs only ``httpx``.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from distrl_sdk.actions import parse_action
from distrl_sdk.policy import Decision, Observation

__all__ = ["RemoteError", "RemotePolicy", "adapter_name", "chat_request", "parse_completion"]

_TOKEN_ID_PREFIX: Final = "token_id:"


class RemoteError(RuntimeError):
    """The inference server refused or could not be reached; the message says which."""


def adapter_name(version: int) -> str:
    """The served-model name of a policy version's LoRA adapter (learner and farms
    agree on it: the learner loads ``distrl-v7`` before it announces version 7)."""
    return f"distrl-v{version}"


@dataclass(frozen=True)
class RemoteSettings:
    """What of a ``VLMConfig`` shapes a request (the rest lives on the server)."""

    temperature: float = 1.0
    max_new_tokens: int = 64
    history_len: int = 4
    action_prompt: str | None = None  # None: the default schema (ACTION_PROMPT)
    logprob_reduction: str = "sum"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RemoteSettings:
        from distrl_sdk.policies.vlm import VLMConfig

        cfg = VLMConfig.from_dict(config)
        return cls(temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens,
                   history_len=cfg.history_len, action_prompt=cfg.action_prompt,
                   logprob_reduction=cfg.logprob_reduction)


def chat_request(obs: Mapping[str, Any], frame: bytes | None, *, model: str,
                 settings: RemoteSettings, greedy: bool = False) -> dict[str, Any]:
    """The ``/v1/chat/completions`` body for one decision."""
    from distrl_sdk.policies.vlm import ACTION_PROMPT, format_prompt

    text = format_prompt(obs, settings.action_prompt or ACTION_PROMPT)
    content: list[dict[str, Any]] = []
    if frame is not None:
        url = "data:image/png;base64," + base64.b64encode(frame).decode("ascii")
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": text})
    return {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": settings.max_new_tokens,
        "temperature": 0.0 if greedy else settings.temperature,
        "top_p": 1.0,
        "n": 1,
        "logprobs": True,
        "top_logprobs": 0,
        # vLLM's extensions: sample exactly π and name the sampled tokens by id
        "top_k": -1,
        "repetition_penalty": 1.0,
        "return_tokens_as_token_ids": True,
        "skip_special_tokens": True,
    }


def parse_completion(body: Any, *, reduction: str = "sum"
                     ) -> tuple[dict[str, Any], float, int]:
    """``(choice, log μ, tokens)`` from a chat-completion response; ``RemoteError`` when
    it lacks what an exact importance ratio needs (log-probs by token id)."""
    try:
        choice = body["choices"][0]
        text = choice["message"]["content"] or ""
        entries = choice["logprobs"]["content"]
        finish = choice.get("finish_reason")
        ids: list[int] = []
        logps: list[float] = []
        for e in entries:
            token = str(e["token"])
            if not token.startswith(_TOKEN_ID_PREFIX):
                raise RemoteError("the server named tokens by text, not id (it must honour "
                                  "return_tokens_as_token_ids, as vLLM does)")
            ids.append(int(token[len(_TOKEN_ID_PREFIX):]))
            logps.append(float(e["logprob"]))
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RemoteError(f"not a chat completion with token log-probs ({exc!r}); ask the "
                          "server for logprobs (vLLM: any recent version)") from None
    eos = finish == "stop"
    if eos and not ids:
        raise RemoteError("a reply that stopped by itself must end with its end token")
    choice_ids = ids[:-1] if eos else ids
    total = sum(logps)
    if reduction == "mean":
        total /= max(1, len(logps))
    return {"text": text, "eos": eos, "ids": choice_ids}, total, len(logps)


class RemotePolicy:
    """The farm's async ``Policy`` for one policy version served remotely.

    ``client`` is an ``httpx.AsyncClient`` (shared by every version's policy: one
    connection pool per farm); ``base_url`` the server's root (``http://host:8000``, the
    ``/v1`` routes are appended)."""

    kind = "vlm"

    def __init__(self, client: Any, base_url: str, version: int,
                 config: Mapping[str, Any], *, greedy: bool = False,
                 api_key: str | None = None) -> None:
        self.settings = RemoteSettings.from_config(config)  # ConfigError names what is wrong
        self.client, self.version, self.greedy = client, version, greedy
        self.url = base_url.rstrip("/") + "/v1/chat/completions"
        self.model = adapter_name(version)
        self.name = f"vlm@v{version}"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def greedy_copy(self) -> RemotePolicy:
        """The same version decoding greedily (held-out evaluation rounds)."""
        twin = copy.copy(self)
        twin.greedy = True
        return twin

    async def act(self, observation: Observation) -> Decision:
        from distrl_sdk.policies.vlm import encode_observation

        obs = encode_observation(observation, self.settings.history_len)
        body = chat_request(obs, observation.screenshot_png, model=self.model,
                            settings=self.settings, greedy=self.greedy)
        import httpx

        try:
            resp = await self.client.post(self.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise RemoteError(f"inference server {self.url}: {exc!r}") from None
        if resp.status_code != 200:
            raise RemoteError(f"inference server {self.url} answered {resp.status_code} for "
                              f"{self.model}: {resp.text[:300]}")
        choice, log_mu, n = parse_completion(resp.json(),
                                             reduction=self.settings.logprob_reduction)
        action = parse_action(choice["text"], elements=observation.elements,
                              screen=observation.screen_size)
        return Decision(action=action, log_prob=log_mu, obs=obs, choice=choice,
                        policy_version=self.version,
                        info={"server_model": self.model, "tokens": n})

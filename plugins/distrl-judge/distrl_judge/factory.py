"""The ``judge`` evaluator type: config → ``ModelJudge`` with the chosen backend."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import model_validator

from distrl_judge.hf import TransformersJudge
from distrl_judge.openai_compat import OpenAICompatibleJudge
from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import DEFAULT_JUDGE_PROMPT as DEFAULT_PROMPT
from distrl_sdk.evaluators import EvaluatorConfig, JudgeBackend, ModelJudge

__all__ = ["JudgeConfig", "JudgeEvaluatorFactory"]


class JudgeConfig(EvaluatorConfig):
    backend: Literal["openai", "transformers"]
    # what ModelJudge does
    last_n_screens: int = 1
    prompt: str = DEFAULT_PROMPT
    on_unparsed: Literal["failure", "error"] = "failure"
    # backend "openai"
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    api_key_env: str | None = None
    timeout: float = 60.0
    max_tokens: int = 256
    temperature: float = 0.0
    retries: int = 2
    backoff: float = 0.5
    # backend "transformers"
    model_path: str | None = None
    device: str = "cpu"
    dtype: str | None = None
    max_new_tokens: int = 64
    # either
    system_prompt: str | None = None

    @model_validator(mode="after")
    def _backend_needs(self) -> JudgeConfig:
        if self.backend == "openai" and (not self.base_url or not self.model):
            raise ValueError("backend 'openai' needs `base_url` and `model`")
        if self.backend == "transformers" and not self.model_path:
            raise ValueError("backend 'transformers' needs `model_path`")
        return self


# Many tasks share one judge model: load each (path, device, dtype) once per process.
_MODELS: dict[tuple[str, str, str | None], TransformersJudge] = {}
_MODELS_LOCK = threading.Lock()


class JudgeEvaluatorFactory:
    """Entry point ``judge`` of ``distrl.evaluators``: ``from_config(dict) -> ModelJudge``."""

    config_model = JudgeConfig

    @staticmethod
    def backend(cfg: JudgeConfig) -> JudgeBackend:
        if cfg.backend == "openai":
            assert cfg.base_url is not None and cfg.model is not None
            return OpenAICompatibleJudge(
                cfg.base_url, cfg.model, cfg.api_key, api_key_env=cfg.api_key_env,
                timeout=cfg.timeout, max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                retries=cfg.retries, backoff=cfg.backoff, system_prompt=cfg.system_prompt)
        assert cfg.model_path is not None
        key = (cfg.model_path, cfg.device, cfg.dtype)
        with _MODELS_LOCK:
            if key not in _MODELS:
                _MODELS[key] = TransformersJudge.from_pretrained(
                    cfg.model_path, device=cfg.device, dtype=cfg.dtype,
                    max_new_tokens=cfg.max_new_tokens, system_prompt=cfg.system_prompt)
            return _MODELS[key]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelJudge:
        cfg = JudgeConfig.model_validate(dict(config))
        try:
            backend = cls.backend(cfg)
        except (OSError, ValueError) as exc:
            raise TaskError(f"judge: cannot load backend {cfg.backend!r}: {exc}") from exc
        return ModelJudge(backend, last_n_screens=cfg.last_n_screens,
                          prompt_template=cfg.prompt, on_unparsed=cfg.on_unparsed)

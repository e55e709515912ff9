"""A judge run in-process: any Hugging Face image-text-to-text model and its processor."""

from __future__ import annotations

import asyncio
import importlib
import io
import threading
from typing import Any

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import JudgeBackend

__all__ = ["TransformersJudge"]


class TransformersJudge(JudgeBackend):
    """Greedy generation with ``model.generate`` on the processor's chat template.

    ``model``/``processor`` are already-built objects (e.g. ``AutoModelForImageText
    ToText`` and ``AutoProcessor``); :meth:`from_pretrained` loads them from a local
    directory. Generation runs in a worker thread, one call at a time.
    """

    name = "transformers"

    def __init__(self, model: Any, processor: Any, *, max_new_tokens: int = 64,
                 generate_kwargs: dict[str, Any] | None = None,
                 system_prompt: str | None = None) -> None:
        self.model = model
        self.processor = processor
        self.max_new_tokens = max_new_tokens
        self.generate_kwargs = {"do_sample": False, **(generate_kwargs or {})}
        self.system_prompt = system_prompt
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, model_path: str, *, device: str = "cpu", dtype: str | None = None,
                        local_files_only: bool = True, **kwargs: Any) -> TransformersJudge:
        try:
            torch: Any = importlib.import_module("torch")
            transformers: Any = importlib.import_module("transformers")
        except ImportError as exc:
            raise TaskError("the transformers judge needs `pip install distrl-judge[transformers]` "
                            f"and torch: {exc}") from None
        torch_dtype = getattr(torch, dtype) if dtype else None
        processor = transformers.AutoProcessor.from_pretrained(
            model_path, local_files_only=local_files_only)
        model = transformers.AutoModelForImageTextToText.from_pretrained(
            model_path, local_files_only=local_files_only, dtype=torch_dtype)
        return cls(model.to(device).eval(), processor, **kwargs)

    def _prompt_text(self, n_images: int, prompt: str) -> str:
        content: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
        content.append({"type": "text", "text": prompt})
        messages: list[dict[str, Any]] = []
        if self.system_prompt:
            messages.append({"role": "system",
                             "content": [{"type": "text", "text": self.system_prompt}]})
        messages.append({"role": "user", "content": content})
        if getattr(self.processor, "chat_template", None):
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True,
                                                      tokenize=False)
            return str(text)
        token = getattr(self.processor, "image_token", "<image>")
        return " ".join([token] * n_images + [prompt])

    def _generate(self, images: list[bytes], prompt: str) -> str:
        from PIL import Image

        torch: Any = importlib.import_module("torch")

        pil = [Image.open(io.BytesIO(png)).convert("RGB") for png in images]
        text = self._prompt_text(len(pil), prompt)
        inputs = self.processor(text=[text], images=pil or None, return_tensors="pt")
        inputs = inputs.to(self.model.device)
        with self._lock, torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                      **self.generate_kwargs)
        new = out[:, inputs["input_ids"].shape[1]:]
        return str(self.processor.batch_decode(new, skip_special_tokens=True)[0]).strip()

    async def judge(self, images: list[bytes], prompt: str) -> str:
        return await asyncio.to_thread(self._generate, images, prompt)

    def describe(self) -> str:
        name = getattr(getattr(self.model, "config", None), "_name_or_path", "") or \
            type(self.model).__name__
        return f"transformers:{name}"

"""The distrl-judge plugin's backends: an OpenAI-compatible server and a local HF model."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from distrl_sdk.errors import TaskError
from distrl_sdk.evaluators import ModelJudge, evaluator_from_config, parse_verdict, safe_evaluate
from distrl_sdk.trajectory import Trajectory
from tests.sdk.sim_device import SimDevice

distrl_judge = pytest.importorskip("distrl_judge")
OpenAICompatibleJudge = distrl_judge.OpenAICompatibleJudge


# -- a local OpenAI-compatible server ----------------------------------------------------
class FakeOpenAI:
    """Checks each request's shape and answers like OpenAI; ``script`` queues statuses."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: list[int] = []
        self.reply = "The Settings app is open.\nStatus: success"
        self.problems: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                owner.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    owner.problems.append(f"path {self.path}")
                status = owner.script.pop(0) if owner.script else 200
                if status == 200:
                    owner.problems += owner.check(body)
                payload = (self._completion(body) if status == 200
                           else {"error": {"message": "try later", "code": status}})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
                return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                        "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": owner.reply}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                  "total_tokens": 2}}

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @staticmethod
    def check(body: dict[str, Any]) -> list[str]:
        problems = []
        if not isinstance(body.get("model"), str):
            problems.append("no model")
        msgs = body.get("messages")
        if not isinstance(msgs, list) or msgs[-1].get("role") != "user":
            return [*problems, "no user message"]
        parts = msgs[-1]["content"]
        if not any(p.get("type") == "text" and p.get("text") for p in parts):
            problems.append("no text part")
        images = [p for p in parts if p.get("type") == "image_url"]
        if not images:
            problems.append("no image_url part")
        for p in images:
            url = p["image_url"]["url"]
            prefix = "data:image/png;base64,"
            if not url.startswith(prefix) or \
                    not base64.b64decode(url[len(prefix):], validate=True).startswith(b"\x89PNG"):
                problems.append("image is not a base64 PNG data URL")
        return problems

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def images(self, i: int = -1) -> list[bytes]:
        parts = self.requests[i]["messages"][-1]["content"]
        return [base64.b64decode(p["image_url"]["url"].split(",", 1)[1])
                for p in parts if p["type"] == "image_url"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    srv = FakeOpenAI()
    srv.thread.start()
    try:
        yield srv
    finally:
        srv.server.shutdown()
        srv.server.server_close()


async def test_openai_judge_request_shape_and_verdict(openai_server: FakeOpenAI) -> None:
    dev = SimDevice()
    await dev.shell("am start -n com.android.settings/.Settings")
    backend = OpenAICompatibleJudge(openai_server.base_url, "judge-vl", api_key="sk-test",
                                    timeout=10)
    judge = ModelJudge(backend)
    t = Trajectory(task="settings.open", instruction="Open the Settings app")
    assert await judge.evaluate(dev, t, {}) == 1.0
    assert openai_server.problems == []
    body = openai_server.requests[0]
    assert body["model"] == "judge-vl" and body["temperature"] == 0.0
    assert "Open the Settings app" in body["messages"][-1]["content"][0]["text"]
    assert openai_server.images() == [await dev.screenshot_png()]
    assert openai_server.headers[0]["Authorization"] == "Bearer sk-test"

    openai_server.reply = "Status: failure"
    assert await judge.evaluate(dev, t, {}) == 0.0


async def test_openai_judge_from_config_retries_then_errors(
        openai_server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-env")
    judge = evaluator_from_config({
        "type": "judge", "backend": "openai", "base_url": openai_server.base_url + "/v1/",
        "model": "m", "api_key_env": "MY_JUDGE_KEY", "retries": 2, "backoff": 0.01,
        "timeout": 10})
    assert isinstance(judge, ModelJudge)
    dev, t = SimDevice(), Trajectory(task="t", instruction="i")
    openai_server.script = [503, 429]  # two transient failures, then success
    assert await judge.evaluate(dev, t, {}) == 1.0
    assert len(openai_server.requests) == 3 and openai_server.problems == []
    assert openai_server.headers[-1]["Authorization"] == "Bearer sk-env"

    openai_server.script = [400]
    out = await safe_evaluate(judge, dev, t, {})
    assert isinstance(out.error, TaskError) and "HTTP 400" in str(out.error)
    openai_server.script = [503, 503, 503]
    out = await safe_evaluate(judge, dev, t, {})
    assert isinstance(out.error, TaskError) and "failed 3 time(s)" in str(out.error)


async def test_openai_judge_unreachable_server_is_a_task_error() -> None:
    backend = OpenAICompatibleJudge("http://127.0.0.1:9", "m", retries=0, timeout=2)
    out = await safe_evaluate(ModelJudge(backend), SimDevice(),
                              Trajectory(task="t", instruction="i"), {})
    assert isinstance(out.error, TaskError) and "ConnectError" in str(out.error)


# -- a tiny random Hugging Face VLM ------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_vlm() -> tuple[Any, Any]:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.plugins.tiny_vlm import build_tiny_llava

    return build_tiny_llava(seed=0)


async def test_transformers_judge_end_to_end(tiny_vlm: tuple[Any, Any]) -> None:
    from distrl_judge import TransformersJudge

    model, processor = tiny_vlm
    backend = TransformersJudge(model, processor, max_new_tokens=12)
    dev = SimDevice()
    await dev.shell("am start -n com.android.settings/.Settings")
    judge = ModelJudge(backend, last_n_screens=2)
    t = Trajectory(task="t", instruction="Open Settings")
    t0 = time.perf_counter()
    s1 = await judge.evaluate(dev, t, {})
    elapsed = time.perf_counter() - t0
    reply = judge.last_reply
    assert isinstance(reply, str) and reply  # random words, but words
    assert s1 == (1.0 if parse_verdict(reply) else 0.0)
    # greedy decoding of a seeded model: the same screens give the same reply and score
    s2 = await judge.evaluate(dev, t, {})
    assert (judge.last_reply, s2) == (reply, s1)
    assert elapsed < 30, f"tiny-model judging took {elapsed:.1f} s"
    print(f"tiny VLM judge: {elapsed:.3f} s for 2 screens, reply {reply!r}")


async def test_transformers_judge_from_config(tiny_vlm: tuple[Any, Any], tmp_path: Path) -> None:
    from distrl_judge import TransformersJudge

    model, processor = tiny_vlm
    model.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    judge = evaluator_from_config({"type": "judge", "backend": "transformers",
                                   "model_path": str(tmp_path), "max_new_tokens": 12})
    assert isinstance(judge, ModelJudge) and isinstance(judge.backend, TransformersJudge)
    dev, t = SimDevice(), Trajectory(task="t", instruction="Open Settings")
    direct = ModelJudge(TransformersJudge(model, processor, max_new_tokens=12))
    assert await judge.evaluate(dev, t, {}) == await direct.evaluate(dev, t, {})
    assert judge.last_reply == direct.last_reply
    # loaded once per process, shared by every task that names it
    again = evaluator_from_config({"type": "judge", "backend": "transformers",
                                   "model_path": str(tmp_path), "max_new_tokens": 12})
    assert isinstance(again, ModelJudge) and again.backend is judge.backend

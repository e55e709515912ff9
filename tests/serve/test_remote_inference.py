"""Remote policy inference against a real HTTP server serving the tiny transformers VLM:
the learner loads versions' LoRA adapters into it (vLLM's load_lora_adapter endpoint),
farms act through the OpenAI chat API, and the behaviour log-probs the server reports
are the learner's log π for the same version (Retrace's ratio is exact)."""

from __future__ import annotations

import asyncio
import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

from distrl_sdk.actions import InvalidAction  # noqa: E402
from distrl_sdk.learn import StepRecord  # noqa: E402
from distrl_sdk.policies import build_policy  # noqa: E402
from distrl_sdk.policies.remote import (  # noqa: E402
    RemoteError,
    RemotePolicy,
    RemoteSettings,
    chat_request,
)
from distrl_sdk.policies.vlm import VLMPolicy, encode_observation  # noqa: E402
from distrl_sdk.policy import Decision, Observation  # noqa: E402
from distrl_sdk.uitree import Bounds, UIElement  # noqa: E402
from farm.serve.lora import AdapterLoader, LoadError  # noqa: E402
from farm.serve.server import InferenceServer  # noqa: E402

CONFIG: dict[str, Any] = {"tiny": {"seed": 0}, "max_new_tokens": 16}


def _png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (108, 240), color)
    ImageDraw.Draw(img).rectangle((10, 20, 98, 50), fill=(255, 255, 255))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _obs(step: int, shot: bytes, instruction: str = "Turn off Wi-Fi") -> Observation:
    button = UIElement(index=0, depth=0, parent=None, text="Wi-Fi", resource_id="",
                       class_name="android.widget.Button", package="com.android.settings",
                       content_desc="", clickable=True, bounds=Bounds(10, 20, 98, 50))
    return Observation(instruction, [button], (1080, 2400), step, [], shot)


def _step(d: Decision, frame: bytes | None) -> StepRecord:
    assert d.obs is not None and d.choice is not None and d.log_prob is not None
    return StepRecord(obs=d.obs, choice=d.choice, log_mu=d.log_prob, reward=0.0,
                      policy_version=0, invalid=isinstance(d.action, InvalidAction), frame=frame)


def _trained(seed: int) -> VLMPolicy:
    """A learner's policy some updates in: every LoRA B matrix non-zero."""
    p = build_policy("vlm", CONFIG)
    assert isinstance(p, VLMPolicy)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in p.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=g) * 0.3)
    return p


def _lp(policy: VLMPolicy, steps: list[StepRecord]) -> list[float]:
    return [float(x) for x in policy.evaluate(steps, grad=False).log_prob]


class _Running:
    def __init__(self, server: InferenceServer) -> None:
        self.server = server
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.uv = uvicorn.Server(uvicorn.Config(server.app, log_level="warning"))
        self.thread = threading.Thread(target=self.uv.run, kwargs={"sockets": [sock]},
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.uv.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.uv.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def served() -> Iterator[_Running]:
    """``distrl serve --policy-config CONFIG`` in a thread: a real HTTP server."""
    policy = build_policy("vlm", CONFIG)
    assert isinstance(policy, VLMPolicy)
    running = _Running(InferenceServer(policy, max_batch=8))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def shots() -> list[bytes]:
    return [_png((30 * i, 90, 200 - 20 * i)) for i in range(4)]


def _load(served: _Running, tmp_path: Path, version: int, policy: VLMPolicy) -> None:
    loader = AdapterLoader(served.url, tmp_path / "adapters", keep=8)
    asyncio.run(loader.load(version, policy.weights(), CONFIG))


async def _act(url: str, version: int, observations: list[Observation], *,
               greedy: bool = False) -> list[Decision]:
    async with httpx.AsyncClient(timeout=60) as http:
        remote = RemotePolicy(http, url, version, CONFIG, greedy=greedy)
        return list(await asyncio.gather(*(remote.act(o) for o in observations)))


def test_the_servers_log_probs_are_the_learners_for_that_version(
        served: _Running, shots: list[bytes], tmp_path: Path) -> None:
    learner = _trained(seed=1)
    _load(served, tmp_path, 3, learner)
    server = served.server
    batches_before, requests_before = server.batches, server.requests
    obs = [_obs(i, shot) for i, shot in enumerate(shots)]
    # hold the model until all four requests are in, so they queue whatever the load:
    # the worker then decides the ones that waited in one batch
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with server.policy._lock:
            held.set()
            deadline = time.monotonic() + 60
            while server.requests < requests_before + len(obs) and time.monotonic() < deadline:
                time.sleep(0.005)
        release.set()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    decisions = asyncio.run(_act(served.url, 3, obs))
    holder.join(10)
    assert release.is_set()
    # four concurrent requests for one adapter: decided in fewer forward batches
    assert server.batches - batches_before <= 2
    steps = [_step(d, shot) for d, shot in zip(decisions, shots, strict=True)]
    for d, o in zip(decisions, obs, strict=True):
        assert d.policy_version == 3 and d.obs == encode_observation(o, 4)
        assert isinstance(d.choice, dict) and all(isinstance(i, int) for i in d.choice["ids"])
    # the learner scores the recorded ids on the identical prompt: ρ = 1
    assert _lp(learner, steps) == pytest.approx([s.log_mu for s in steps], abs=1e-3)
    # ... and the server really used v3's adapter, not the base model
    base = build_policy("vlm", CONFIG)
    assert isinstance(base, VLMPolicy)
    gaps = [abs(a - b) for a, b in zip(_lp(base, steps), [s.log_mu for s in steps],
                                       strict=True)]
    assert max(gaps) > 0.05


def test_greedy_remote_decisions_match_the_local_policy(
        served: _Running, shots: list[bytes], tmp_path: Path) -> None:
    learner = _trained(seed=2)
    _load(served, tmp_path, 4, learner)
    obs = [_obs(0, shots[0]), _obs(1, shots[1], "Turn on Bluetooth")]
    remote = asyncio.run(_act(served.url, 4, obs, greedy=True))
    local = learner.decide(obs, greedy=True)
    assert [d.choice for d in remote] == [d.choice for d in local]
    assert [d.log_prob for d in remote] == pytest.approx([d.log_prob for d in local], abs=1e-3)


def test_versions_the_server_lacks_and_bad_requests_are_refused_clearly(
        served: _Running, shots: list[bytes], tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match=r"404.*distrl-v999.*does not exist"):
        asyncio.run(_act(served.url, 999, [_obs(0, shots[0])]))
    loader = AdapterLoader(served.url, tmp_path / "adapters")
    (tmp_path / "empty").mkdir()
    with httpx.Client(base_url=served.url, timeout=30) as http:
        r = http.post("/v1/load_lora_adapter", json={"lora_name": "x",
                                                     "lora_path": str(tmp_path / "empty")})
        assert r.status_code == 400 and "no PEFT adapter" in r.json()["error"]["message"]
        body = chat_request(encode_observation(_obs(0, shots[0]), 4), shots[0], model="base",
                            settings=RemoteSettings.from_config(CONFIG))
        assert http.post("/v1/chat/completions", json=body).status_code == 200
        for bad, word in (({"top_p": 0.9}, "top_p"), ({"temperature": 0.5}, "temperature"),
                          ({"n": 2}, "n=2")):
            r = http.post("/v1/chat/completions", json={**body, **bad})
            assert r.status_code == 400 and word in r.json()["error"]["message"]
        fetch = {**body, "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "http://example.com/a.png"}},
            {"type": "text", "text": "hi"}]}]}
        r = http.post("/v1/chat/completions", json=fetch)
        assert r.status_code == 400 and "data URI" in r.json()["error"]["message"]
        models = [m["id"] for m in http.get("/v1/models").json()["data"]]
        assert "base" in models
    nowhere = AdapterLoader("http://127.0.0.1:9", tmp_path / "a2")
    with pytest.raises(LoadError, match="no inference server"):
        asyncio.run(nowhere.check())
    asyncio.run(loader.check())


def test_the_api_key_guards_every_v1_route_and_refusals_are_openai_errors(
        served: _Running) -> None:
    served.server.api_key = "s3cret"
    try:
        with httpx.Client(base_url=served.url, timeout=30) as http:
            assert http.get("/health").status_code == 200  # probes need no key
            for method, path in (("GET", "/v1/models"), ("POST", "/v1/chat/completions"),
                                 ("POST", "/v1/load_lora_adapter"),
                                 ("POST", "/v1/unload_lora_adapter")):
                r = http.request(method, path, json={}, headers={"Authorization": "Bearer no"})
                assert r.status_code == 401, path
                assert r.json()["error"]["type"] == "AuthenticationError"
            key = {"Authorization": "Bearer s3cret"}
            assert http.get("/v1/models", headers=key).status_code == 200
            r = http.post("/v1/unload_lora_adapter", json={"lora_name": "nope"}, headers=key)
            assert r.status_code == 404 and "nope" in r.json()["error"]["message"]
            r = http.post("/v1/load_lora_adapter", content=b"{not json", headers=key)
            assert r.status_code == 400 and r.json()["error"]["message"] == \
                "the request body is not JSON"
    finally:
        served.server.api_key = None


def test_old_versions_are_unloaded_beyond_keep(served: _Running, tmp_path: Path) -> None:
    loader = AdapterLoader(served.url, tmp_path / "adapters", keep=2)
    policy = _trained(seed=3)
    for v in (10, 11, 12):
        asyncio.run(loader.load(v, policy.weights(), CONFIG))
    names = set(served.server.adapters)
    assert {"distrl-v11", "distrl-v12"} <= names and "distrl-v10" not in names
    assert not (tmp_path / "adapters" / "v10").exists()
    assert (tmp_path / "adapters" / "v12" / "adapter_config.json").is_file()
    # the written layout is PEFT's: a local policy loads it as an adapter directory
    fresh = build_policy("vlm", CONFIG)
    assert isinstance(fresh, VLMPolicy)
    fresh.load_adapter(tmp_path / "adapters" / "v12")
    for k, v in policy.weights().items():
        assert torch.equal(fresh.weights()[k], v)


@pytest.mark.slow
async def test_a_farm_acts_remotely_on_the_version_the_learner_loaded(
        served: _Running, sim_adb_device: Any, tmp_path: Path) -> None:
    """The whole path: the learner (tiny VLM, --serve-url) loads v0's adapter into the
    server and only then publishes its pointer on a real mosquitto; a farm's provider
    (--policy remote) builds and fetches nothing, plays an episode on a sim phone through
    the server, and the learner's policy scores every recorded step at log μ."""
    from distrl_sdk.learn import EpisodeRecord
    from distrl_sdk.registry import TaskRegistry
    from distrl_sdk.runner import run_episode
    from farm.broker import EmbeddedBroker, find_mosquitto
    from farm.learner.service import LearnerConfig, LearnerService
    from farm.learner.weights import LearnedPolicyProvider

    if find_mosquitto() is None:
        pytest.skip("no mosquitto binary")
    async with EmbeddedBroker(backend="mosquitto") as broker:
        svc = LearnerService(LearnerConfig(
            broker_url=broker.url, run_dir=tmp_path / "run", policy_kind="vlm",
            policy_config=CONFIG, serve_url=served.url, checkpoint_every_s=3600,
            metrics_every_s=0.2, client_id="learner-remote", torch_threads=1))
        run = asyncio.create_task(svc.run())
        try:
            async with asyncio.timeout(120):
                while not svc.ready.is_set():
                    assert not run.done(), run.exception()
                    await asyncio.sleep(0.05)
            assert "distrl-v0" in served.server.adapters
            assert svc.metrics()["serve/loaded"] >= 1
            async with LearnedPolicyProvider(broker.url, inference_url=served.url) as provider:
                version = await provider.wait_ready(60)
                task = TaskRegistry.discover(use_env=False).get("settings.wifi_off")()
                choice = await provider.policy_for(task, sim_adb_device)
                assert isinstance(choice.policy, RemotePolicy) and choice.version == version
                traj = await run_episode(task, sim_adb_device, choice.policy, max_steps=3,
                                         with_screenshots=True)
                assert provider.builds == 0 and provider.subscriber.fetch_blobs is False
        finally:
            svc.stop()
            await asyncio.wait_for(run, 60)
    assert traj.steps, traj.error
    record = EpisodeRecord.from_trajectory(traj, episode_id="remote-1")
    assert record is not None and record.policy_version == version
    learner = svc.trainer.policy  # type: ignore[union-attr]
    assert isinstance(learner, VLMPolicy)
    assert _lp(learner, record.steps) == pytest.approx([s.log_mu for s in record.steps],
                                                      abs=1e-3)


@pytest.mark.slow
def test_distrl_serve_runs_answers_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """The command as a user runs it: port 0 becomes a real port in the banner, the
    OpenAI routes answer, Ctrl-C stops it with status 0 and no traceback."""
    import json
    import re
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "farm.cli", "serve", "--port", "0", "--policy-config",
         json.dumps(CONFIG)], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/v1", banner)
        assert m, banner
        url = f"http://127.0.0.1:{m.group(1)}"
        deadline = time.monotonic() + 60
        while True:
            try:
                models = httpx.get(f"{url}/v1/models", timeout=5).json()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.1)
        assert [m["id"] for m in models["data"]] == ["base"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err and "server stopped" in err

"""``distrl serve``: an OpenAI-compatible inference server for a VLM policy, with vLLM's
runtime LoRA endpoints (farm/serve/server.py), for farms that act remotely."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from distrl_sdk.errors import DistRLError
from farm.cli.common import CONTEXT, fail

__all__ = ["serve"]

err_console = Console(stderr=True, soft_wrap=True, highlight=False)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _server_class() -> type:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn without its own signal handling, which re-raises Ctrl-C after the
        shutdown (a traceback from the lifespan task); this command's handlers stop it."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

        def stop(self) -> None:
            self.should_exit = True

    return Server


def _build(init: Path | None, policy_config: str | None) -> Any:
    from distrl_sdk.policies import build_policy, load_policy

    if (init is None) == (policy_config is None):
        raise click.UsageError("give exactly one of --init CKPT and --policy-config JSON")
    if init is not None:
        from farm.learner.paths import policy_dir

        policy, _ = load_policy(policy_dir(init))
        if policy.kind != "vlm":
            raise ValueError(f"--init {init} is a {policy.kind} policy: only vlm policies are "
                             "served (a UI-tree policy is small enough to act on the farm)")
        return policy
    try:
        config = json.loads(policy_config or "")
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--policy-config") from None
    if not isinstance(config, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--policy-config")
    return build_policy("vlm", config)


@click.command("serve", context_settings=CONTEXT, epilog="""\b
For a fleet, serve the base model with vLLM instead (the same API):
  VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve /models/qwen2-vl-2b \\
    --enable-lora --max-lora-rank 16 --max-loras 4 --served-model-name base
and point `distrl learner --serve-url` and `distrl farm up --inference-url` at it.
Exit status: 0 stopped (Ctrl-C or SIGTERM: requests in flight are answered
first); 2 bad input (no such checkpoint, not a vlm policy, a busy port).""")
@click.option("--init", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A vlm policy checkpoint (or a learner run dir: its newest); its adapter "
                   "is served as the base model name.")
@click.option("--policy-config", default=None,
              help='A vlm policy config as JSON, e.g. \'{"tiny": {"seed": 0}}\' (the tiny '
                   "test model) or '{\"model_path\": \"/models/qwen2-vl-2b\", \"device\": "
                   "\"cuda\", \"dtype\": \"bfloat16\"}'. It must be the learner's.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on (0.0.0.0 for farms on other hosts).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port (0: any free one).")
@click.option("--served-model-name", default="base", show_default=True,
              help="The name requests use for the policy as built or loaded.")
@click.option("--max-batch", type=click.IntRange(1, 1024), default=16, show_default=True,
              help="Requests for the same adapter decided in one forward batch, at most.")
@click.option("--max-loras", type=click.IntRange(1, 1024), default=8, show_default=True,
              help="LoRA adapters held at once (the oldest is dropped beyond).")
@click.option("--api-key", default=None, envvar="DISTRL_SERVE_API_KEY",
              help="Require 'Authorization: Bearer KEY' on every request.")
@click.option("-v", "--verbose", is_flag=True, help="Log requests and adapter loads.")
def serve(init: Path | None, policy_config: str | None, host: str, port: int,
          served_model_name: str, max_batch: int, max_loras: int, api_key: str | None,
          verbose: bool) -> None:
    """Serve a VLM policy over the OpenAI chat-completions API with per-token log-probs
    (exactly the policy's, so a remote farm's behaviour log-probs keep Retrace's ratio
    exact) and load each learner version's LoRA adapter at run time
    (POST /v1/load_lora_adapter, as vLLM does)."""
    import socket

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(name)s: %(message)s")
    # bound before the model loads: a busy port is a clear error at once, and port 0
    # becomes a real one the banner can name
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    port = sock.getsockname()[1]
    try:
        policy = _build(init, policy_config)
    except (DistRLError, ValueError) as exc:
        sock.close()
        fail(str(exc))
    import uvicorn

    from farm.serve.server import InferenceServer

    _Server: Any = _server_class()

    server = InferenceServer(policy, base_name=served_model_name, max_batch=max_batch,
                             max_adapters=max_loras, api_key=api_key)
    err_console.print(f"serving {served_model_name} ({policy.config.model_path or 'tiny'}) "
                      f"on http://{host}:{port}/v1 — Ctrl-C stops")
    uv = _Server(uvicorn.Config(server.app, log_level="info" if verbose else "warning"))

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in _STOP_SIGNALS:  # a graceful stop: requests in flight are answered
            loop.add_signal_handler(sig, uv.stop)
        await uv.serve(sockets=[sock])

    try:
        asyncio.run(run())
    finally:
        sock.close()
    err_console.print("server stopped")

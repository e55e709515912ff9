"""``distrl learner``: train from the farms' trajectories and broadcast policy versions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

__all__ = ["learner", "load_learner_config"]

from distrl_sdk.wire import topics
from farm.broker_password import (
    broker_password,
    mask_url,
    password_file_option,
    url_with_password,
)
from farm.cli.common import CONTEXT, KEY_FILE, fail

console = Console()
err_console = Console(stderr=True, soft_wrap=True)



def _bound_keys(pairs: tuple[tuple[str, Path], ...]) -> dict[str, list[Path]]:
    """``--farm-key-for ID KEY`` pairs as LearnerConfig.farm_key_for (farm id → keys)."""
    out: dict[str, list[Path]] = {}
    for farm_id, key in pairs:
        out.setdefault(farm_id, []).append(key)
    return out


def _info(message: str) -> None:
    err_console.print(message, markup=False, highlight=False)


def load_learner_config(path: Path | None, overrides: dict[str, Any]) -> Any:
    """Defaults < the file's ``[learner]`` table (``--config`` or ``$DISTRL_CONFIG``) <
    ``DISTRL_LEARNER_*`` / ``DISTRL_BROKER_URL`` < flags (``overrides``: field → value, or
    → (value, flag name)). Raises ``ConfigError`` (a ValueError) naming file/variable/flag
    and field."""
    from farm.learner.settings import load_learner_settings

    flags = {k: v if isinstance(v, tuple) else (v, "--" + k.replace("_", "-"))
             for k, v in overrides.items()}
    return load_learner_settings(path, flags=flags).config


@click.command("learner", context_settings=CONTEXT)
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="TOML file: its [learner] table (the farm's sections "
                                 "may sit beside it) [default: $DISTRL_CONFIG]. "
                                 "DISTRL_LEARNER_<FIELD> variables override it, flags "
                                 "override both (`distrl config show --role learner`).")
@click.option("--broker", "broker_url", default=None,
              help="MQTT broker URL [default: $DISTRL_BROKER_URL, the config's, else "
                   "mqtt://127.0.0.1:1883].")
@password_file_option
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Checkpoints, journal and scalar logs; reusing it resumes "
                   "[default: runs/learner].")
@click.option("--algo", type=click.Choice(["aride", "digirl"]), default=None,
              help="A-RIDE, or the DigiRL-style baseline [default: aride].")
@click.option("--policy", "policy_kind", type=click.Choice(["uitree", "vlm"]), default=None,
              help="Policy to train [default: uitree].")
@click.option("--init", "init_policy", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Start a fresh run from this policy checkpoint (e.g. "
                                 "`distrl sft --out`); a run dir with checkpoints resumes "
                                 "instead.")
@click.option("--signing-key", type=KEY_FILE,
              default=None, help="Private key (`distrl keys create NAME`) that signs policy "
                                 "pointers and acks [default: the local learner key, created "
                                 "if missing; farms on this host trust it by default].")
@click.option("--farm-key", "farm_keys", multiple=True,
              type=KEY_FILE,
              help="A farm's public key (.pub) whose signed trajectories to learn from "
                   "(repeatable) [default: the local farm key, which `farm up` on this host "
                   "signs with].")
@click.option("--farm-key-for", "farm_key_for", nargs=2, multiple=True,
              type=(str, KEY_FILE), metavar="FARM_ID KEY.pub",
              help="A farm's public key trusted for that farm id only (repeatable): what it "
                   "signs under another farm id is refused as wrong_farm.")
@click.option("--demos", "demos", type=click.Path(file_okay=False, path_type=Path),
              multiple=True, help="Demonstration dataset (`distrl demos record`; repeatable) "
                                  "kept in play as the demonstration anchor: each actor "
                                  "update also clones its train split's actions.")
@click.option("--demo-coef", type=click.FloatRange(0), default=None,
              help="Weight of the demonstration anchor [default: 0.5 with --demos].")
@click.option("--nproc", type=click.IntRange(1, 64), default=None,
              help="Processes sharing each update (torch.distributed; gloo on CPU, NCCL "
                   "on GPU) [default: 1]. This one keeps ingest, replay and publishing. "
                   "A-RIDE only.")
@click.option("--track", "trackers", multiple=True, type=click.Choice(["mlflow", "wandb"]),
              help="Also log the scalars to this experiment tracker (repeatable; installed "
                   "separately, configured by its own MLFLOW_*/WANDB_* variables).")
@click.option("--serve-url", default=None,
              help="OpenAI-compatible inference server with runtime LoRA loading (`distrl "
                   "serve`, or vLLM --enable-lora): each version's adapter is loaded into it "
                   "before farms hear of it, for farms with --policy remote. VLM only.")
@click.option("--duration", type=click.FloatRange(0, min_open=True), default=None,
              help="Stop after this many seconds (default: until Ctrl-C).")
@click.option("--progress-every", type=click.FloatRange(0.1), default=5.0, show_default=True,
              help="Seconds between progress lines.")
@click.option("--json", "as_json", is_flag=True, help="Print the final summary as JSON.")
@click.option("-v", "--verbose", is_flag=True, help="Log what the learner does.")
def learner(config_path: Path | None, broker_url: str | None, password_file: Path | None,
            run_dir: Path | None,
            algo: str | None, policy_kind: str | None, init_policy: Path | None,
            signing_key: Path | None, farm_keys: tuple[Path, ...],
            farm_key_for: tuple[tuple[str, Path], ...],
            demos: tuple[Path, ...], demo_coef: float | None, nproc: int | None,
            trackers: tuple[str, ...], serve_url: str | None, duration: float | None,
            progress_every: float, as_json: bool, verbose: bool) -> None:
    """Learn from the farms' trajectories (dedupe, replay, A-RIDE updates), publish
    policy versions, checkpoint and resume. Ctrl-C stops cleanly (final checkpoint)."""
    from farm.transport import parse_broker_url

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(name)s: %(message)s")
    try:
        cfg = load_learner_config(config_path, {
            "broker_url": (broker_url, "--broker"), "run_dir": run_dir,
            "algorithm": (algo, "--algo"), "policy_kind": (policy_kind, "--policy"),
            "metrics_every_s": (progress_every, "--progress-every"),
            "init_policy": (init_policy, "--init"), "demos": list(demos) or None,
            "signing_key": signing_key, "farm_keys": (list(farm_keys) or None, "--farm-key"),
            "farm_key_for": (_bound_keys(farm_key_for) or None, "--farm-key-for"),
            "nproc": nproc, "serve_url": serve_url,
            "trackers": (list(trackers) or None, "--track")})
        if demo_coef is not None:
            cfg.algo_config = {**cfg.algo_config, "demo_coef": demo_coef}
        # --password-file replaces a password in the URL; $DISTRL_BROKER_PASSWORD fills one in
        cfg.broker_url = url_with_password(cfg.broker_url, broker_password(password_file),
                                           override=password_file is not None)
        parse_broker_url(cfg.broker_url)
        if cfg.init_policy is not None:
            from distrl_sdk.policies import load_policy
            from farm.learner.paths import policy_dir

            cfg.init_policy = policy_dir(cfg.init_policy)  # a run dir: its newest
            load_policy(cfg.init_policy)  # a bad checkpoint: exit 2 before any broker work
        from distrl_sdk.wire.signing import TrustedKeys
        from farm.keys import FARM, farm_signing_key, learner_signing_key, local_key_path

        learner_signing_key(cfg.signing_key)  # unreadable: exit 2 before any broker work
        if cfg.accept_unsigned:
            cfg.farm_keys, cfg.farm_key_for = [], {}
        else:
            if not cfg.farm_keys and not cfg.farm_key_for:
                farm_signing_key()  # the local farm key, as `farm up` here signs with it
                cfg.farm_keys = [local_key_path(FARM)]
            for farm_id in cfg.farm_key_for:
                topics.check_id(farm_id, "farm id")  # a ValueError: exit 2 below
            # unreadable: exit 2 now, not in the service
            TrustedKeys.load(cfg.farm_keys, cfg.farm_key_for)
        for d in cfg.demos:
            from distrl_sdk.learn.demos import read_manifest

            read_manifest(d)  # not a dataset: exit 2 before any broker work
    except (OSError, ValueError) as exc:
        fail(str(exc))
    except Exception as exc:
        from distrl_sdk import DistRLError

        if isinstance(exc, DistRLError):
            fail(str(exc))
        raise
    try:
        summary = asyncio.run(_run(cfg, duration))
    except ConnectionError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:  # a config the policy/trainer refuses: say so, no traceback
        from distrl_sdk import DistRLError

        if isinstance(exc, DistRLError | ValueError):
            fail(str(exc))
        raise
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        _print_summary(summary)


async def _check_broker(url: str) -> None:
    import aiomqtt

    from farm.transport import parse_broker_url

    addr = parse_broker_url(url)
    try:
        async with asyncio.timeout(5):
            async with aiomqtt.Client(**addr.client_kwargs(), timeout=3):
                pass
    except (aiomqtt.MqttError, OSError, TimeoutError) as exc:
        from farm.broker_acl import connect_failure

        why = connect_failure(addr, exc)
        if why.startswith("cannot reach"):
            why += " (start one with `distrl broker`)"
        raise ConnectionError(why) from None


async def _run(cfg: Any, duration: float | None) -> dict[str, Any]:
    from farm.learner.service import LearnerService

    await _check_broker(cfg.broker_url)
    svc = LearnerService(cfg)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, svc.stop)
    t0 = time.monotonic()

    def progress(m: dict[str, float]) -> None:
        succ = m.get("success_rate")
        loss = m.get("train/loss", m.get("train/actor_loss"))
        _info(f"[{time.monotonic() - t0:6.0f} s] v{int(m['version'])} "
              f"(published v{int(m['published_version'])}) · updates {int(m['updates'])} "
              f"({m['updates_per_s']:.2f}/s) · episodes {int(m['episodes'])} "
              f"({m['trajectories_per_min']:.1f}/min) · replay {int(m.get('replay_size', 0))}"
              f" · success {'-' if succ is None else f'{succ:.0%}'}"
              + (f" · loss {loss:.4f}" if loss is not None else "")
              + f" · lag avg {m.get('policy_lag_avg', 0):.1f}"
              + f" · rejected {int(m.get('rejected_total', 0))}")

    from farm.learner.service import effective_algo_config

    _info(f"learner: {cfg.algorithm} on a {cfg.policy_kind} policy, "
          f"broker {mask_url(cfg.broker_url)}, "
          f"run dir {cfg.run_dir}")
    algo = effective_algo_config(cfg.policy_kind, cfg.algorithm, cfg.algo_config)
    _info(f"trainer settings (the {cfg.policy_kind} defaults, then [learner.algo_config]): "
          + (", ".join(f"{k} {v}" for k, v in sorted(algo.items())) or "the trainer's own"))
    try:
        return await svc.run(duration, on_metrics=progress)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def _print_summary(s: dict[str, Any]) -> None:
    table = Table(title="learner", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    for key in ("version", "published_version", "updates", "received", "episodes",
                "replay_size", "checkpoints", "checkpoint_errors", "resumed_from",
                "replayed_from_journal",
                "duplicates", "rejected", "unlearnable", "refused", "run_dir"):
        table.add_row(key, str(s.get(key)))
    if s.get("last_checkpoint_error"):
        table.add_row("last_checkpoint_error", str(s["last_checkpoint_error"]))
    m = s.get("metrics") or {}
    if "success_rate" in m:
        table.add_row("success_rate (window)", f"{m['success_rate']:.1%}")
    console.print(table)

"""``distrl farm up|status`` and ``distrl traj tail``: run a farm, watch it over MQTT."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from farm.broker_password import (
    broker_password,
    password_file_option,
    read_password_file,
    url_with_password,
)
from farm.cli.common import CONTEXT, KEY_FILE, fail
from farm.cli.config import FieldsHelp

if TYPE_CHECKING:
    from distrl_sdk.wire.signing import SigningKey, TrustedKeys

__all__ = ["farm", "traj"]

console = Console()
err_console = Console(stderr=True, soft_wrap=True)



def _info(message: str) -> None:
    err_console.print(message, markup=False, highlight=False)


def _with_password(url: str, password_file: Path | None) -> str:
    """``--password-file`` replaces a password in the URL; the environment fills one in."""
    try:
        return url_with_password(url, broker_password(password_file),
                                 override=password_file is not None)
    except ValueError as exc:
        fail(str(exc))
    raise AssertionError("unreachable")  # pragma: no cover


def _check_url(url: str) -> Any:
    from farm.transport import parse_broker_url

    try:
        return parse_broker_url(url)
    except ValueError as exc:
        fail(str(exc))


def _check_http_url(url: str) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail(f"inference server {url!r}: give an http(s)://host:port URL")


async def _client(url: str, **kw: Any) -> Any:
    """A connected aiomqtt client; raises ConnectionError with a clear message."""
    import aiomqtt

    addr = _check_url(url)
    client = aiomqtt.Client(**addr.client_kwargs(), identifier=f"distrl-cli-{uuid.uuid4().hex[:8]}",
                            clean_session=True, timeout=3, **kw)
    try:
        await asyncio.wait_for(client.__aenter__(), 5)
    except (aiomqtt.MqttError, OSError, TimeoutError) as exc:
        from farm.broker_acl import connect_failure

        raise ConnectionError(connect_failure(addr, exc)) from None
    return client


# -- farm --------------------------------------------------------------------------------
@click.group("farm", context_settings=CONTEXT)
def farm() -> None:
    """Run a collection farm (devices → episodes → MQTT) and look at running ones."""


@farm.command("up", cls=FieldsHelp, context_settings=CONTEXT)
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              envvar="DISTRL_CONFIG", show_envvar=True,
              help="TOML config file (fields below; flags and DISTRL_* env vars override it).")
@click.option("--broker", "broker_url", default=None,
              help="MQTT broker URL (mqtt://host:port). Default: start an embedded one.")
@password_file_option
@click.option("--sim", type=int, default=None,
              help="Start N simulated phones in-process (with a private adb server).")
@click.option("--sim-profile", default=None,
              help="Latency profile of the sim phones (instant, emulator, pixel, old-phone).")
@click.option("--policy", type=click.Choice(["random", "oracle", "learned", "remote"]),
              default=None,
              help="Who plays the episodes [default: random]; learned = the newest policy "
                   "a `distrl learner` publishes on the broker (random until the first); "
                   "remote = the same, a VLM acting through --inference-url.")
@click.option("--inference-url", default=None,
              help="With --policy remote: the OpenAI-compatible inference server the learner "
                   "loads each version into (`distrl serve`, or vLLM with --enable-lora).")
@click.option("--mode", type=click.Choice(["async", "sync"]), default=None,
              help="async = DistRL workers; sync = DigiRL rounds [default: async].")
@click.option("--duration", type=float, default=None,
              help="Stop after this many seconds (default: until Ctrl-C).")
@click.option("--farm-id", default=None, help="This farm's id on MQTT [default: farm].")
@click.option("--task", "task_names", multiple=True,
              help="Task name or shell pattern (settings.*) to collect (repeatable). "
                   "Default: every registered task.")
@click.option("--tag", "task_tags", multiple=True, help="Collect tasks with this tag "
              "(repeatable).")
@click.option("--device", "devices", multiple=True,
              help="Device serial to use (repeatable). With --device or --connect "
              "the farm uses exactly those devices and leaves every other one on the adb "
              "server alone. Default: every device on the adb server.")
@click.option("--connect", "targets", multiple=True,
              help="adb connect target host:port, reconnected when it drops (repeatable).")
@click.option("--spool", "spool_dir", default=None, type=click.Path(file_okay=False),
              help="Spool directory for unacked trajectories. Default: runs/spool/<farm-id>.")
@click.option("--ledger", type=click.Path(dir_okay=False), default=None,
              help="Append every trajectory id to this file once it is durably spooled "
                   "(kept after the learner acks it): an audit trail of what the farm "
                   "handed over. Default: none.")
@click.option("--adb-host", default=None, help="adb server host [default: 127.0.0.1].")
@click.option("--adb-port", type=int, default=None,
              help="adb server port without --sim (default $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--seed", default=None, type=int, help="Seed for tasks/policy [default: 0].")
@click.option("--screenshots/--no-screenshots", default=None,
              help="Capture a frame per step and ship it.")
@click.option("--episode-timeout", type=float, default=None,
              help="Abort an episode after this many seconds [default: 120].")
@click.option("--flush-timeout", type=float, default=None,
              help="On exit, wait this long for the learner to ack the spool [default: 10].")
@click.option("--frames-hz", type=float, default=None,
              help="Live thumbnails per device per second; 0 = off [default: 1].")
@click.option("--status-hz", type=float, default=None,
              help="Live status updates per busy device per second [default: 2].")
@click.option("--reset/--no-reset", default=None,
              help="Reset every sim phone before each episode to its state before its "
                   "first [default: off].")
@click.option("--reset-snapshot", default=None, metavar="NAME",
              help="Load this emulator snapshot before every episode on each emulator "
                   "(emulator-N), through its console [default: emulators not reset].")
@click.option("--eval-every", "eval_every_s", type=float, default=None,
              help="With --policy learned: a held-out evaluation round every this many "
                   "seconds (test split, greedy, frozen version; never learned from).")
@click.option("--eval-episodes-per-task", type=int, default=None,
              help="Episodes of each task per evaluation round [default: 1].")
@click.option("--learner-key", "learner_keys", multiple=True,
              type=KEY_FILE,
              help="A learner's public key (.pub from `distrl keys`) whose signed policy "
                   "pointers and acks this farm accepts (repeatable) [default: the local "
                   "learner key].")
@click.option("--signing-key", type=KEY_FILE,
              default=None, help="This farm's private key, which signs every trajectory "
                                 "[default: the local farm key, created if missing; a "
                                 "learner on this host trusts it].")
@click.option("--operator-key", "operator_keys", multiple=True,
              type=KEY_FILE,
              help="An operator's public key (.pub) whose signed commands this farm runs "
                   "(repeatable) [default: the local operator key, which `distrl tui` on "
                   "this host signs with].")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def farm_up(config_file: str | None, broker_url: str | None, password_file: Path | None,
            sim: int | None,
            sim_profile: str | None, policy: str | None, inference_url: str | None,
            mode: str | None, duration: float | None, farm_id: str | None,
            task_names: tuple[str, ...],
            task_tags: tuple[str, ...], devices: tuple[str, ...], targets: tuple[str, ...],
            spool_dir: str | None, ledger: str | None, adb_host: str | None, adb_port: int | None,
            seed: int | None, screenshots: bool | None, episode_timeout: float | None,
            flush_timeout: float | None, frames_hz: float | None, status_hz: float | None,
            reset: bool | None, reset_snapshot: str | None,
            eval_every_s: float | None, eval_episodes_per_task: int | None,
            signing_key: Path | None, learner_keys: tuple[Path, ...],
            operator_keys: tuple[Path, ...], as_json: bool) -> None:
    """Collect trajectories on devices and publish them over MQTT (Ctrl-C stops cleanly).

    Settings come from flags, then DISTRL_* environment variables, then the --config
    TOML file, then defaults (`distrl config show` prints the result and its sources).
    While it runs the farm answers operator commands (pause, resume, reconnect,
    quarantine, release, run_task) on distrl/v1/<farm-id>/cmd/<device> and publishes
    live statuses and thumbnails for the TUI."""
    from distrl_sdk.registry import TaskRegistry
    from farm.config import ConfigError, load_settings, select_tasks

    globs = tuple(t for t in task_names if any(c in t for c in "*?["))
    names = tuple(t for t in task_names if t not in globs)
    try:  # $DISTRL_BROKER_PASSWORD is the config's broker.password already
        password = read_password_file(password_file) if password_file is not None else None
    except ValueError as exc:
        fail(str(exc))
    flags: dict[str, tuple[Any, str]] = {
        "broker.url": (broker_url, "--broker"),
        "broker.password": (password, "--password-file"), "sim.count": (sim, "--sim"),
        "sim.profile": (sim_profile, "--sim-profile"), "collect.policy": (policy, "--policy"),
        "collect.inference_url": (inference_url, "--inference-url"),
        "collect.mode": (mode, "--mode"), "collect.duration_s": (duration, "--duration"),
        "farm_id": (farm_id, "--farm-id"), "tasks.names": (list(names) or None, "--task"),
        "tasks.globs": (list(globs) or None, "--task"),
        "tasks.tags": (list(task_tags) or None, "--tag"),
        "adb.devices": (list(devices) or None, "--device"),
        "adb.targets": (list(targets) or None, "--connect"),
        "collect.spool_dir": (spool_dir, "--spool"), "collect.ledger": (ledger, "--ledger"),
        "adb.host": (adb_host, "--adb-host"),
        "adb.port": (adb_port, "--adb-port"), "collect.seed": (seed, "--seed"),
        "collect.screenshots": (screenshots, "--screenshots"),
        "collect.episode_timeout_s": (episode_timeout, "--episode-timeout"),
        "collect.flush_timeout_s": (flush_timeout, "--flush-timeout"),
        "live.frames_hz": (frames_hz, "--frames-hz"),
        "live.status_hz": (status_hz, "--status-hz"),
        "collect.reset": (reset, "--reset"),
        "collect.reset_snapshot": (reset_snapshot, "--reset-snapshot"),
        "collect.eval_every_s": (eval_every_s, "--eval-every"),
        "collect.eval_episodes_per_task": (eval_episodes_per_task, "--eval-episodes-per-task"),
        "trust.learner_keys": (list(learner_keys) or None, "--learner-key"),
        "trust.operator_keys": (list(operator_keys) or None, "--operator-key"),
        "trust.signing_key": (signing_key, "--signing-key"),
    }
    try:
        loaded = load_settings(config_file, flags=flags)
        tasks = select_tasks(loaded.settings.tasks, TaskRegistry.discover())
    except ConfigError as exc:
        fail(str(exc))
    if not tasks:
        fail("no tasks registered")
    st = loaded.settings
    if st.collect.eval_every_s is not None and st.collect.policy not in ("learned", "remote"):
        fail("evaluation rounds (--eval-every / collect.eval_every_s) need --policy learned "
             "or remote; use `distrl eval` to evaluate the oracle, random or a checkpoint")
    if st.collect.reset and not st.sim.count:
        fail("--reset (collect.reset) resets sim phones: give --sim N; emulators are reset "
             "from a snapshot with --reset-snapshot NAME")
    if (st.collect.policy == "remote") != (st.collect.inference_url is not None):
        fail("--policy remote needs --inference-url (collect.inference_url), and only it "
             "uses one")
    if st.collect.inference_url is not None:
        _check_http_url(st.collect.inference_url)
    if st.broker.url is not None:
        from farm.config import effective_broker_url

        _check_url(effective_broker_url(st.broker) or "")
    from farm.keys import farm_signing_key, trusted_learners, trusted_operators

    trusted = operators = None
    try:
        signer = farm_signing_key(st.trust.signing_key)
        if not st.trust.accept_unsigned:
            trusted = trusted_learners(st.trust.learner_keys)
            operators = trusted_operators(st.trust.operator_keys)
    except (OSError, ValueError) as exc:
        fail(f"key: {exc}")
    try:
        summary = asyncio.run(_farm_up(st, tasks, trusted, operators, signer))
    except (RuntimeError, ConnectionError, ValueError, OSError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        _print_summary(summary)


async def _farm_up(st: Any, tasks: list[Any], trusted: TrustedKeys | None,
                   operators: TrustedKeys | None, signer: SigningKey) -> dict[str, Any]:
    from farm.broker import EmbeddedBroker
    from farm.config import effective_broker_url
    from farm.controller import FarmConfig, FarmController

    c = st.collect
    async with contextlib.AsyncExitStack() as stack:
        broker_url = effective_broker_url(st.broker)
        if broker_url is None:
            from farm.broker_acl import BrokerAccounts, default_accounts_dir, farm_user

            # the broker a learner and operators join: accounts kept across runs
            accounts = BrokerAccounts.load_or_create(default_accounts_dir(), [st.farm_id])
            broker = EmbeddedBroker(accounts=accounts)
            await broker.start()
            stack.push_async_callback(broker.stop)
            broker_url = accounts.url_for(broker.url, farm_user(st.farm_id))
            _info(f"broker ({broker.backend}) on {broker.url}; {accounts.describe()}")
        else:
            client = await _client(broker_url)
            await client.__aexit__(None, None, None)
        devices: list[str] = [*st.adb.devices, *st.adb.targets]
        adb_port = st.adb.port
        sims: frozenset[str] = frozenset()
        sim_bg: Any = None
        if st.sim.count:
            from farm.sim.adbhost import PrivateAdbServer
            from farm.sim.background import BackgroundFarm

            bg = sim_bg = BackgroundFarm(st.sim.count, seed=c.seed, profile=st.sim.profile)
            await asyncio.to_thread(bg.start)
            stack.callback(bg.stop)
            assert bg.farm is not None
            devices = bg.farm.serials
            sims = frozenset(devices)
            adb = PrivateAdbServer()
            await asyncio.to_thread(adb.start)
            stack.callback(adb.stop)
            adb_port = adb.port
            _info(f"{st.sim.count} sim phone(s) on a private adb server (port {adb_port})")
        reset = _episode_reset(c, sim_bg, sims, st.adb.host)
        if reset is not None:
            _info(f"devices reset before each episode: {reset.label} (physical phones never)")
        policies = None
        if c.policy in ("learned", "remote"):
            from farm.collect import RandomProvider
            from farm.learner.weights import LearnedPolicyProvider

            policies = await stack.enter_async_context(LearnedPolicyProvider(
                broker_url, client_id=f"distrl-weights-{st.farm_id}",
                fallback=RandomProvider(seed=c.seed), trusted=trusted,
                inference_url=c.inference_url, inference_api_key=c.inference_api_key))
        evaluation = None
        if policies is not None and c.eval_every_s is not None:
            from farm.evaluate import PeriodicEval

            evaluation = PeriodicEval(tasks, policies, every_s=c.eval_every_s,
                                      episodes_per_task=c.eval_episodes_per_task, seed=c.seed,
                                      farm_id=st.farm_id, episode_timeout_s=c.episode_timeout_s)
        ctl = FarmController(FarmConfig(
            broker_url=broker_url, farm_id=st.farm_id, adb_host=st.adb.host, adb_port=adb_port,
            devices=devices, tasks=tasks, policy=c.policy, mode=c.mode,
            duration_s=c.duration_s, spool_dir=st.spool_path(), ledger=c.ledger, seed=c.seed,
            # a remote policy is a VLM: it decides on the screen
            with_screenshots=c.screenshots or c.policy == "remote",
            flush_timeout_s=c.flush_timeout_s,
            ready_timeout_s=c.ready_timeout_s, episode_timeout_s=c.episode_timeout_s,
            lifecycle=st.lifecycle.to_lifecycle(), status_hz=st.live.status_hz,
            frames_hz=st.live.frames_hz, frames_total_hz=st.live.frames_total_hz,
            frame_width=st.live.frame_width,
            frame_quality=st.live.frame_quality, sim_devices=sims, reset=reset,
            trusted_learners=trusted, trusted_operators=operators, signing_key=signer),
            policies=policies,
            evaluation=evaluation)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, ctl.stop)
                stack.callback(loop.remove_signal_handler, sig)
        progress = asyncio.create_task(_progress(ctl))
        try:
            await ctl.run()
        finally:
            progress.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await progress
        return ctl.summary()
    raise AssertionError("unreachable")  # pragma: no cover


def _episode_reset(c: Any, sim_bg: Any, sims: frozenset[str], adb_host: str) -> Any:
    """collect.reset / collect.reset_snapshot as the farm's EpisodeReset (None: neither)."""
    from farm.collect.reset import ConsoleSnapshotReset, ResetByKind

    sim_reset = None
    if c.reset and sim_bg is not None:
        from farm.sim.reset import SimStateReset

        sim_reset = SimStateReset(sim_bg)
    snap = None if c.reset_snapshot is None else ConsoleSnapshotReset(c.reset_snapshot,
                                                                      host=adb_host)
    if sim_reset is None and snap is None:
        return None
    return ResetByKind(sims=sim_reset, sim_serials=sims, emulators=snap)


async def _progress(ctl: Any, every: float = 3.0) -> None:
    while True:
        await asyncio.sleep(every)
        st = ctl.stats
        if ctl.collector is None:
            reg = ctl.registry
            _info(f"waiting for devices: {reg.summary() if reg else '…'}")
            continue
        if st.ended_at is not None:
            _info(f"flushing: spool {ctl.spool_depth()} · acked {ctl.publisher.stats.acked}")
            continue
        by = ", ".join(f"{k} {v}" for k, v in sorted(st.by_status.items())) or "none yet"
        _info(f"[{st.elapsed_s:6.0f} s] episodes {st.episodes} ({by}) · "
              f"{st.per_minute:.1f} traj/min · spool {ctl.spool_depth()} · "
              f"acked {ctl.publisher.stats.acked}{_eval_progress(ctl.evaluation)}")


def _eval_progress(ev: Any) -> str:
    if ev is None:
        return ""
    cur = ev.current
    if cur is not None:
        return (f" · evaluating v{cur.policy.version} "
                f"{cur.done}/{len(cur.instances)}")
    if ev.reports:
        r = ev.reports[-1]
        return (f" · held-out v{r.policy_version} {r.success_rate:.2f} "
                f"[{r.ci_low:.2f}, {r.ci_high:.2f}]")
    return " · evaluation: waiting for a policy"


def _print_summary(s: dict[str, Any]) -> None:
    table = Table(title=f"farm {s['farm_id']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    for key in ("episodes", "completed", "steps", "elapsed_s", "trajectories_per_min",
                "published", "acked", "spool_depth", "flushed"):
        table.add_row(key, str(s.get(key)))
    table.add_row("by_status", ", ".join(f"{k} {v}" for k, v in s["by_status"].items()) or "-")
    last = (s.get("eval") or {}).get("last")
    if last:
        table.add_row("held-out", f"v{last['policy_version']} {last['success_rate']:.3f} "
                      f"[{last['ci_low']:.3f}, {last['ci_high']:.3f}] over {last['episodes']} "
                      f"episodes ({s['eval']['rounds']} round(s))")
    if s.get("abort_reasons"):
        table.add_row("abort_reasons", ", ".join(f"{k} {v}" for k, v in
                                                  s["abort_reasons"].items()))
    for key in ("command_rejects", "policy_refused"):  # refused messages, by reason
        table.add_row(key, ", ".join(f"{k} {v}" for k, v in sorted(
            (s.get(key) or {}).items())) or "0")
    console.print(table)


@farm.command("status", context_settings=CONTEXT)
@click.option("--broker", "broker_url", required=True, envvar="DISTRL_BROKER_URL",
              help="MQTT broker URL (env DISTRL_BROKER_URL).")
@password_file_option
@click.option("--farm-id", default="+", show_default=True, help="Which farm (+ = all).")
@click.option("--wait", type=click.FloatRange(0.1, 60), default=1.0, show_default=True,
              help="How long to collect retained statuses.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def farm_status(broker_url: str, password_file: Path | None, farm_id: str, wait: float,
                as_json: bool) -> None:
    """Show the devices of running farms (their retained statuses on the broker)."""
    broker_url = _with_password(broker_url, password_file)
    _check_url(broker_url)
    if farm_id != "+":
        from distrl_sdk.wire import topics

        try:
            topics.check_id(farm_id, "farm id")
        except topics.TopicError as exc:
            fail(str(exc))
    try:
        rows = asyncio.run(_statuses(broker_url, farm_id, wait))
    except ConnectionError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        console.print("no device statuses on this broker")
        return
    table = Table()
    for col in ("farm", "device", "state", "episodes", "task", "battery", "detail", "age"):
        table.add_column(col, overflow="fold")
    now = time.time()
    for r in rows:
        task = "-" if not r["task"] else r["task"] if r["step"] is None else \
            f"{r['task']} @{r['step']}"
        batt = f"{r['battery']} %" if r["battery"] is not None else "-"
        table.add_row(r["farm_id"], r["device_id"], r["state"], str(r["episodes"]),
                      escape(task), batt, escape(r["detail"] or "-"),
                      f"{max(0.0, now - r['sent_at']):.0f} s")
    console.print(table)


async def _statuses(url: str, farm_id: str, wait: float) -> list[dict[str, Any]]:
    from distrl_sdk.wire import DeviceStatus, Message, parse_message
    from distrl_sdk.wire.topics import PREFIX

    client = await _client(url)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        await client.subscribe(f"{PREFIX}/{farm_id}/status/+", qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait):
                async for m in client.messages:
                    parsed = parse_message(str(m.topic), m.payload)
                    if not isinstance(parsed, Message) or not isinstance(parsed.body,
                                                                          DeviceStatus):
                        continue
                    b = parsed.body
                    farm = parsed.topic.farm_id or "?"
                    found[(farm, b.device_id)] = {
                        "farm_id": farm, "device_id": b.device_id, "state": b.state,
                        "episodes": b.episodes, "detail": b.detail,
                        "policy_version": b.policy_version, "sent_at": parsed.envelope.sent_at,
                        "kind": b.kind, "task": b.task, "step": b.step,
                        "episode_return": b.episode_return, "battery": b.battery,
                        "temperature_c": b.temperature_c}
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)
    return [found[k] for k in sorted(found)]


# -- traj --------------------------------------------------------------------------------
@click.group("traj", context_settings=CONTEXT)
def traj() -> None:
    """Look at trajectories on the broker, or export what a learner learned from."""


@traj.command("tail", context_settings=CONTEXT)
@click.option("--broker", "broker_url", required=True, envvar="DISTRL_BROKER_URL",
              help="MQTT broker URL (env DISTRL_BROKER_URL).")
@password_file_option
@click.option("--farm-id", default="+", show_default=True, help="Which farm (+ = all).")
@click.option("--count", "-n", type=click.IntRange(1), default=None,
              help="Exit after this many trajectories.")
@click.option("--duration", type=click.FloatRange(0, min_open=True), default=None,
              help="Exit after this many seconds.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
def traj_tail(broker_url: str, password_file: Path | None, farm_id: str, count: int | None,
              duration: float | None, as_json: bool) -> None:
    """Print one line per trajectory as it arrives. Never acks: the learner still gets
    (and acks) every trajectory; this watcher only sees them go by."""
    broker_url = _with_password(broker_url, password_file)
    _check_url(broker_url)
    from distrl_sdk.wire import topics

    try:
        filt = topics.traj_filter(farm_id)
    except topics.TopicError as exc:
        fail(str(exc))
    try:
        asyncio.run(_tail(broker_url, filt, count, duration, as_json))
    except ConnectionError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass


async def _tail(url: str, filt: str, count: int | None, duration: float | None,
                as_json: bool) -> None:
    from distrl_sdk.wire import Chunk, Reassembler, Rejected, decode_trajectory, parse_message

    client = await _client(url)
    asm = Reassembler()
    seen: set[str] = set()
    try:
        await client.subscribe(filt, qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(duration):
                async for m in client.messages:
                    parsed = parse_message(str(m.topic), m.payload)
                    if not isinstance(parsed, Chunk):
                        continue
                    whole = asm.feed(parsed)
                    if whole is None or isinstance(whole, Rejected):
                        continue
                    d = decode_trajectory(whole)
                    if isinstance(d, Rejected) or d.msg.id in seen:
                        continue
                    seen.add(d.msg.id)
                    _print_traj(d, as_json)
                    if count is not None and len(seen) >= count:
                        return
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)


@traj.command("export", context_settings=CONTEXT)
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["hf", "jsonl"]), default="hf",
              show_default=True,
              help="hf: a Hugging Face `datasets` dataset (one row per step; the policy's "
                   "obs/choice encodings, log μ, reward, version; the screen as an image "
                   "feature where the policy shipped one), written with save_to_disk; "
                   "jsonl: one episode per line, as the learner journals them.")
@click.option("--out", type=click.Path(dir_okay=True, path_type=Path), required=True,
              help="Directory (hf) or file (jsonl) to write; must not exist.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="The learner.toml the run used, if not the defaults "
                                 "(its algorithm decides how the checkpoint loads).")
def traj_export(run_dir: Path, fmt: str, out: Path, config_path: Path | None) -> None:
    """Export what a learner learned from: the episodes in RUN_DIR's replay (its newest
    checkpoint plus the journal after it, read offline — stop the learner or copy the
    run dir first). `datasets.load_from_disk(OUT)`; `distrl_sdk.learn.episodes_hf.from_hf`
    reads an hf export back."""
    from distrl_sdk import DistRLError
    from farm.cli.learner import load_learner_config
    from farm.learner.service import LearnerService, episode_to_json

    if out.exists():
        fail(f"{out} already exists (choose another --out, or delete it)")
    if not (run_dir / "checkpoints").is_dir() and not (run_dir / "journal").is_dir():
        fail(f"{run_dir} is not a learner run dir (no checkpoints/ or journal/)")
    try:
        config = load_learner_config(config_path, {"run_dir": run_dir})
        if config_path is None:  # the trainer the run saved, as it saved it
            config.algorithm, config.algo_config = _saved_trainer(run_dir, config.algorithm)
        service = LearnerService(config)
        audit = service.audit()
        if any((run_dir / "checkpoints").glob("ckpt-*")) and service.restored_from is None:
            fail(f"{run_dir}: no checkpoint loads with these settings (see the warnings "
                 "above); pass the run's learner.toml with --config")
        episodes = audit["episodes"]
        if fmt == "jsonl":
            with out.open("x", encoding="utf-8") as f:
                for ep in episodes:
                    f.write(json.dumps(episode_to_json(ep)) + "\n")
            click.echo(f"{len(episodes)} episodes → {out} (JSON lines)")
            return
        from distrl_sdk.learn.episodes_hf import to_hf

        data = to_hf(episodes)
        data.save_to_disk(str(out))
    except DistRLError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.strerror or exc}: {exc.filename or out}")
    click.echo(f"{data.num_rows} steps of {len(episodes)} episodes (learner v"
               f"{audit['version']}) → {out} (Hugging Face datasets, columns: "
               f"{', '.join(data.column_names)})")


def _saved_trainer(run_dir: Path, default: str) -> tuple[str, dict[str, Any]]:
    """(algorithm, algo_config) of the newest checkpoint's trainer, as it was built."""
    for ckpt in sorted((run_dir / "checkpoints").glob("ckpt-*"), reverse=True):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            state = json.loads((ckpt / "trainer" / "trainer.json").read_text())["state"]
            return str(state["trainer"]), dict(state["config"])
    return default, {}


def _print_traj(d: Any, as_json: bool) -> None:
    msg = d.msg
    meta: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        meta = json.loads(d.attachments.get("meta.json", b"{}"))
    if as_json:
        click.echo(json.dumps({"id": msg.id, "farm_id": msg.farm_id, "device_id": msg.device_id,
                               "task": msg.task, "status": msg.status, "reward": msg.reward,
                               "steps": len(msg.steps), "meta": meta}))
        return
    wall = meta.get("wall_s")
    click.echo(f"{time.strftime('%H:%M:%S')} {msg.farm_id}/{msg.device_id} {msg.task} "
               f"{msg.status} reward={msg.reward:g} steps={len(msg.steps)}"
               + (f" wall={wall:.1f}s" if isinstance(wall, int | float) else "")
               + f" policy={_policy_label(meta)} id={msg.id}")


def _policy_label(meta: dict[str, Any]) -> str:
    """The policy that played, with its version once: names such as ``uitree@v755``
    (PolicyAgent) already carry it."""
    name, ver = str(meta.get("policy", "?")), meta.get("policy_version")
    return name if ver is None or name.endswith(f"@v{ver}") else f"{name}@v{ver}"

"""``distrl farm up|status`` and ``distrl traj tail``: run a farm, watch it over MQTT."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["farm", "traj"]

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
console = Console()
err_console = Console(stderr=True, soft_wrap=True)


def _fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    sys.exit(code)


def _info(message: str) -> None:
    err_console.print(message, markup=False, highlight=False)


def _check_url(url: str) -> Any:
    from farm.transport import parse_broker_url

    try:
        return parse_broker_url(url)
    except ValueError as exc:
        _fail(str(exc))


async def _client(url: str, **kw: Any) -> Any:
    """A connected aiomqtt client; raises ConnectionError with a clear message."""
    import aiomqtt

    addr = _check_url(url)
    client = aiomqtt.Client(**addr.client_kwargs(), identifier=f"distrl-cli-{uuid.uuid4().hex[:8]}",
                            clean_session=True, timeout=3, **kw)
    try:
        await asyncio.wait_for(client.__aenter__(), 5)
    except (aiomqtt.MqttError, OSError, TimeoutError) as exc:
        raise ConnectionError(f"cannot reach the MQTT broker at {addr}: {exc or 'timeout'}"
                              ) from None
    return client


# -- farm --------------------------------------------------------------------------------
@click.group("farm", context_settings=CONTEXT)
def farm() -> None:
    """Run a collection farm (devices → episodes → MQTT) and look at running ones."""


@farm.command("up", context_settings=CONTEXT)
@click.option("--broker", "broker_url", default=None,
              help="MQTT broker URL (mqtt://host:port). Default: start an embedded one.")
@click.option("--sim", type=click.IntRange(1, 256), default=None,
              help="Start N simulated phones in-process (with a private adb server).")
@click.option("--policy", type=click.Choice(["random", "oracle"]), default="random",
              show_default=True, help="Who plays the episodes.")
@click.option("--mode", type=click.Choice(["async", "sync"]), default="async",
              show_default=True, help="async = DistRL workers; sync = DigiRL rounds.")
@click.option("--duration", type=click.FloatRange(0, min_open=True), default=None,
              help="Stop after this many seconds (default: until Ctrl-C).")
@click.option("--farm-id", default="farm", show_default=True, help="This farm's id on MQTT.")
@click.option("--task", "task_names", multiple=True,
              help="Task to collect (repeatable). Default: every registered task.")
@click.option("--spool", "spool_dir", default=None, type=click.Path(file_okay=False),
              help="Spool directory for unacked trajectories. Default: runs/spool/<farm-id>.")
@click.option("--adb-port", type=click.IntRange(1, 65535), default=None,
              help="adb server port without --sim (default $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for tasks/policy.")
@click.option("--screenshots", is_flag=True, help="Capture a frame per step and ship it.")
@click.option("--flush-timeout", type=click.FloatRange(0), default=10.0, show_default=True,
              help="On exit, wait this long for the learner to ack the spool.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def farm_up(broker_url: str | None, sim: int | None, policy: str, mode: str,
            duration: float | None, farm_id: str, task_names: tuple[str, ...],
            spool_dir: str | None, adb_port: int | None, seed: int, screenshots: bool,
            flush_timeout: float, as_json: bool) -> None:
    """Collect trajectories on devices and publish them over MQTT (Ctrl-C stops cleanly)."""
    from distrl_sdk.registry import TaskRegistry
    from distrl_sdk.wire import topics

    try:
        topics.check_id(farm_id, "farm id")
    except topics.TopicError as exc:
        _fail(str(exc))
    if broker_url is not None:
        _check_url(broker_url)
    reg = TaskRegistry.discover()
    if task_names:
        unknown = [n for n in task_names if n not in reg.names()]
        if unknown:
            _fail(f"unknown task(s): {', '.join(unknown)} (see `distrl tasks list`)")
        tasks = [reg.get(n) for n in task_names]
    else:
        tasks = list(reg)
    if not tasks:
        _fail("no tasks registered")
    if adb_port is None:
        try:
            adb_port = int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
        except ValueError:
            _fail("ANDROID_ADB_SERVER_PORT is not a port number")
    spool = Path(spool_dir) if spool_dir else Path("runs/spool") / farm_id
    try:
        summary = asyncio.run(_farm_up(
            broker_url=broker_url, sim=sim, policy=policy, mode=mode, duration=duration,
            farm_id=farm_id, tasks=tasks, spool=spool, adb_port=adb_port or 5037, seed=seed,
            screenshots=screenshots, flush_timeout=flush_timeout, as_json=as_json))
    except (RuntimeError, ConnectionError, ValueError, OSError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        _print_summary(summary)


async def _farm_up(*, broker_url: str | None, sim: int | None, policy: str, mode: str,
                   duration: float | None, farm_id: str, tasks: list[Any], spool: Path,
                   adb_port: int, seed: int, screenshots: bool, flush_timeout: float,
                   as_json: bool) -> dict[str, Any]:
    from farm.broker import EmbeddedBroker
    from farm.controller import FarmConfig, FarmController

    async with contextlib.AsyncExitStack() as stack:
        if broker_url is None:
            broker = EmbeddedBroker()
            await broker.start()
            stack.push_async_callback(broker.stop)
            broker_url = broker.url
            _info(f"broker ({broker.backend}) on {broker_url}")
        else:
            client = await _client(broker_url)
            await client.__aexit__(None, None, None)
        devices: list[str] = []
        if sim:
            from farm.sim.adbhost import PrivateAdbServer
            from farm.sim.background import BackgroundFarm

            bg = BackgroundFarm(sim, seed=seed)
            await asyncio.to_thread(bg.start)
            stack.callback(bg.stop)
            assert bg.farm is not None
            devices = bg.farm.serials
            adb = PrivateAdbServer()
            await asyncio.to_thread(adb.start)
            stack.callback(adb.stop)
            adb_port = adb.port
            _info(f"{sim} sim phone(s) on a private adb server (port {adb_port})")
        ctl = FarmController(FarmConfig(
            broker_url=broker_url, farm_id=farm_id, adb_port=adb_port, devices=devices,
            tasks=tasks, policy=policy, mode=mode,  # type: ignore[arg-type]
            duration_s=duration, spool_dir=spool, seed=seed, with_screenshots=screenshots,
            flush_timeout_s=flush_timeout))
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
              f"acked {ctl.publisher.stats.acked}")


def _print_summary(s: dict[str, Any]) -> None:
    table = Table(title=f"farm {s['farm_id']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    for key in ("episodes", "completed", "steps", "elapsed_s", "trajectories_per_min",
                "published", "acked", "spool_depth", "flushed"):
        table.add_row(key, str(s.get(key)))
    table.add_row("by_status", ", ".join(f"{k} {v}" for k, v in s["by_status"].items()) or "-")
    if s.get("abort_reasons"):
        table.add_row("abort_reasons", ", ".join(f"{k} {v}" for k, v in
                                                  s["abort_reasons"].items()))
    console.print(table)


@farm.command("status", context_settings=CONTEXT)
@click.option("--broker", "broker_url", required=True, help="MQTT broker URL.")
@click.option("--farm-id", default="+", show_default=True, help="Which farm (+ = all).")
@click.option("--wait", type=click.FloatRange(0.1, 60), default=1.0, show_default=True,
              help="How long to collect retained statuses.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def farm_status(broker_url: str, farm_id: str, wait: float, as_json: bool) -> None:
    """Show the devices of running farms (their retained statuses on the broker)."""
    _check_url(broker_url)
    if farm_id != "+":
        from distrl_sdk.wire import topics

        try:
            topics.check_id(farm_id, "farm id")
        except topics.TopicError as exc:
            _fail(str(exc))
    try:
        rows = asyncio.run(_statuses(broker_url, farm_id, wait))
    except ConnectionError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        console.print("no device statuses on this broker")
        return
    table = Table()
    for col in ("farm", "device", "state", "episodes", "detail", "age"):
        table.add_column(col, overflow="fold")
    now = time.time()
    for r in rows:
        table.add_row(r["farm_id"], r["device_id"], r["state"], str(r["episodes"]),
                      escape(r["detail"] or "-"), f"{max(0.0, now - r['sent_at']):.0f} s")
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
                        "policy_version": b.policy_version, "sent_at": parsed.envelope.sent_at}
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)
    return [found[k] for k in sorted(found)]


# -- traj --------------------------------------------------------------------------------
@click.group("traj", context_settings=CONTEXT)
def traj() -> None:
    """Look at trajectories on the broker."""


@traj.command("tail", context_settings=CONTEXT)
@click.option("--broker", "broker_url", required=True, help="MQTT broker URL.")
@click.option("--farm-id", default="+", show_default=True, help="Which farm (+ = all).")
@click.option("--count", "-n", type=click.IntRange(1), default=None,
              help="Exit after this many trajectories.")
@click.option("--duration", type=click.FloatRange(0, min_open=True), default=None,
              help="Exit after this many seconds.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a line.")
def traj_tail(broker_url: str, farm_id: str, count: int | None, duration: float | None,
              as_json: bool) -> None:
    """Print one line per trajectory as it arrives. Never acks: the learner still gets
    (and acks) every trajectory; this watcher only sees them go by."""
    _check_url(broker_url)
    from distrl_sdk.wire import topics

    try:
        filt = topics.traj_filter(farm_id)
    except topics.TopicError as exc:
        _fail(str(exc))
    try:
        asyncio.run(_tail(broker_url, filt, count, duration, as_json))
    except ConnectionError as exc:
        _fail(str(exc))
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
               + f" policy={meta.get('policy', '?')}@{meta.get('policy_version')} id={msg.id}")

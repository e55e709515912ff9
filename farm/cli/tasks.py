"""``distrl tasks``: list, show, validate and run tasks from plugins and task packs."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from distrl_sdk.errors import DistRLError, TaskError
from distrl_sdk.trajectory import EpisodeStatus, Trajectory
from farm.cli.common import CONTEXT, fail

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

paths_option = click.option(
    "--tasks-path", "-t", "paths", multiple=True, type=click.Path(exists=True, path_type=Path),
    help="Extra task pack (.toml file or directory); repeatable. Also $DISTRL_TASK_PATH.")



def _registry(paths: tuple[Path, ...]) -> Any:
    from distrl_sdk.registry import TaskRegistry

    reg = TaskRegistry.discover(paths)
    for problem in reg.problems:
        err_console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    return reg


@click.group(context_settings=CONTEXT)
def tasks() -> None:
    """Tasks from installed plugins (entry point `distrl.tasks`) and task packs."""


@tasks.command("list", context_settings=CONTEXT)
@paths_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tasks_list(paths: tuple[Path, ...], as_json: bool) -> None:
    """List every task that can be run."""
    reg = _registry(paths)
    rows = [{**(task := t()).describe(), "source": reg.source(t.name),
             "oracle": task.has_oracle} for t in reg]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table()
    table.add_column("task", no_wrap=True)
    for col in ("difficulty", "tags", "steps", "apps", "oracle", "source"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["difficulty"], ", ".join(r["tags"]) or "-",
                      str(r["max_steps"]), ", ".join(r["apps"]),
                      "yes" if r["oracle"] else "-", r["source"])
    console.print(table)
    console.print(f"{len(rows)} tasks")


@tasks.command("show", context_settings=CONTEXT)
@click.argument("task")
@paths_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--samples", default=3, show_default=True, help="Instructions to draw per split.")
def tasks_show(task: str, paths: tuple[Path, ...], as_json: bool, samples: int) -> None:
    """Describe TASK and draw a few instructions from its train and test splits."""
    reg = _registry(paths)
    try:
        cls = reg.get(task)
    except TaskError as exc:
        fail(str(exc))
    rng = random.Random(0)
    info = {**cls().describe(), "source": reg.source(task),
            "train": [cls.sample(rng, "train").instruction for _ in range(samples)],
            "test": [cls.sample(rng, "test").instruction for _ in range(samples)]}
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    for key, value in info.items():
        shown = "\n    ".join(value) if isinstance(value, list) and key in ("train", "test") \
            else (", ".join(value) if isinstance(value, list) else value)
        console.print(f"[bold]{key}:[/] {shown}", highlight=False)


@tasks.command("validate", context_settings=CONTEXT)
@click.argument("files", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def tasks_validate(files: tuple[Path, ...], as_json: bool) -> None:
    """Check task files (default: every installed task); errors name file, line and field.

    Exit status: 0 all valid, 1 a file has problems (listed), 2 a file that is not there."""
    from distrl_sdk.declarative import TaskFileError
    from distrl_sdk.registry import TaskRegistry, load_task_path

    problems: list[str] = []
    count = 0
    if files:
        for f in files:
            try:
                count += len(load_task_path(f))
            except TaskFileError as exc:
                problems += exc.problems
            except TaskError as exc:
                problems.append(str(exc))
    else:
        reg = TaskRegistry.discover()
        problems, count = reg.problems, len(reg)
    if as_json:
        click.echo(json.dumps({"tasks": count, "problems": problems}, indent=2))
    else:
        for p in problems:
            err_console.print(p, markup=False, highlight=False)
        console.print(f"{count} valid task(s), {len(problems)} problem(s)")
    if problems:
        sys.exit(1)


@tasks.command("run", context_settings=CONTEXT)
@click.argument("task")
@click.option("--device", "-d", "serial", help="Serial of the device on the adb server.")
@click.option("--sim", is_flag=True,
              help="Run on a fresh sim phone with a private adb server instead of --device.")
@click.option("--policy", type=click.Choice(["oracle", "random"]), default="oracle",
              show_default=True, help="Who acts: the task's scripted solution or random play.")
@click.option("--episodes", "-n", default=1, show_default=True, type=click.IntRange(1, 10_000))
@click.option("--split", type=click.Choice(["train", "test"]), default="train",
              show_default=True, help="Which parameter split to draw instances from.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--adb-port", type=int, default=None,
              help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037).")
@paths_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON result per episode.")
def tasks_run(task: str, serial: str | None, sim: bool, policy: str, episodes: int, split: str,
              seed: int, adb_port: int | None, paths: tuple[Path, ...], as_json: bool) -> None:
    """Run TASK on a device for some episodes and report success."""
    if bool(serial) == sim:
        fail("give exactly one of --device SERIAL or --sim")
    reg = _registry(paths)
    try:
        cls = reg.get(task)
    except TaskError as exc:
        fail(str(exc))
    if policy == "oracle" and not cls().has_oracle:
        fail(f"task {task} has no oracle; use --policy random")
    port = adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    if serial:
        _require_device(serial, port)
    try:
        results = asyncio.run(_run(cls, serial, sim, policy, episodes, split, seed, port,
                                   as_json))
    except DistRLError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    wins = sum(r.status is EpisodeStatus.SUCCESS for r in results)
    if not as_json:
        console.print(f"{task}: {wins}/{len(results)} successful with the {policy} policy")
    # the README's promise: 0 when the task succeeded (every episode), 1 when it did not
    sys.exit(0 if wins == len(results) else 1)


def _require_device(serial: str, port: int) -> None:
    """A serial the adb server does not list is a user mistake (exit 2), not an aborted
    episode: say which devices there are."""
    import adbutils

    try:
        listed = {d.serial: d.state for d in adbutils.AdbClient(port=port).list()}
    except Exception as exc:  # no server on that port, or one that does not answer
        fail(f"cannot reach the adb server on port {port} ({exc}); start it with "
              "`adb start-server` or pass --adb-port")
    if listed.get(serial) != "device":
        state = listed.get(serial)
        have = ", ".join(f"{k} ({v})" for k, v in sorted(listed.items())) or "none"
        fail(f"device {serial} is {state or 'not connected'} on the adb server at port "
              f"{port}; devices there: {have}")


def trajectory_json(traj: Trajectory, seconds: float) -> dict[str, Any]:
    from distrl_sdk.actions import InvalidAction, to_json

    return {
        "task": traj.task, "instruction": traj.instruction, "params": traj.params,
        "status": traj.status.value, "reward": traj.reward, "steps": len(traj.steps),
        "answer": traj.answer, "error": traj.error, "seconds": round(seconds, 3),
        "actions": [f"invalid: {a.reason}" if isinstance(a, InvalidAction) else to_json(a)
                    for a in traj.actions],
    }


async def _run(cls: Any, serial: str | None, sim: bool, policy_name: str, episodes: int,
               split: Any, seed: int, port: int, as_json: bool) -> list[Trajectory]:
    from distrl_sdk.policy import OraclePolicy, RandomPolicy
    from distrl_sdk.runner import run_episode
    from farm.device import AdbDevice

    farm = adb = None
    if sim:
        from farm.sim.adbhost import PrivateAdbServer
        from farm.sim.farm import SimFarm

        farm = SimFarm(1, seed=seed)
        await farm.start()
        adb = PrivateAdbServer()
        await asyncio.to_thread(adb.start)
        serial = farm.phones[0].serial
        await asyncio.to_thread(adb.connect, serial)
        port = adb.port
    assert serial is not None
    device = AdbDevice(serial, port=port)
    rng = random.Random(seed)
    out: list[Trajectory] = []
    # a bar on a terminal for long runs (-n 1000); episode lines print above it
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[wins]} successful"), TimeElapsedColumn(),
                   TimeRemainingColumn(), console=console, transient=True,
                   disable=as_json or episodes == 1 or not console.is_terminal)
    job = bar.add_task(escape(cls.name), total=episodes, wins=0)
    wins = 0
    try:
        bar.start()
        for i in range(episodes):
            task = cls.sample(rng, split)
            pol: Any = OraclePolicy(task.oracle(device)) if policy_name == "oracle" \
                else RandomPolicy(seed + i)
            t0 = time.perf_counter()
            traj = await run_episode(task, device, pol)
            secs = time.perf_counter() - t0
            out.append(traj)
            if as_json:
                click.echo(json.dumps(trajectory_json(traj, secs)))
            else:
                extra = f" — {traj.error}" if traj.error else ""
                console.print(
                    f"episode {i + 1}: {traj.status.value.upper()} reward {traj.reward:.2f} "
                    f"in {len(traj.steps)} steps ({secs:.1f} s): {traj.instruction}{extra}",
                    highlight=False, markup=False)
            wins += traj.status is EpisodeStatus.SUCCESS
            bar.update(job, advance=1, wins=wins)
    finally:
        bar.stop()
        if adb is not None:
            await asyncio.to_thread(adb.stop)
        if farm is not None:
            await farm.stop()
    return out

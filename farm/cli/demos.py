"""``distrl demos``: record demonstrations (the oracle, or any policy) into a dataset that
``distrl sft`` trains on; ``distrl demos show`` summarises one. Format: docs/demos.md."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from distrl_sdk.errors import DistRLError
from farm.cli.common import CONTEXT, fail

__all__ = ["demos"]

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

EPILOG = """\b
Exit status: 0 every episode succeeded (and every oracle action was a UI-tree
candidate); 1 some failed or were not expressible (they are reported; failed episodes
are left out unless --keep-failed); 2 bad input; 130 interrupted (finished episodes
are kept).
"""



@click.group("demos", context_settings=CONTEXT)
def demos() -> None:
    """Demonstration datasets: frames, UI elements, actions, each policy's encoding."""


@dataclass
class _Job:
    task_cls: Any
    split: str
    k: int


@demos.command("record", context_settings=CONTEXT, epilog=EPILOG)
@click.option("--task", "task_names", multiple=True, help="Task to record; repeatable.")
@click.option("--tag", "tags", multiple=True,
              help="Record every task with this tag (e.g. easy); repeatable.")
@click.option("--all-tasks", is_flag=True,
              help="Record every installed task (the default when no --task or --tag is "
                   "given, as for `distrl eval` and `farm up`).")
@click.option("--split", type=click.Choice(["train", "test"]), default="train",
              show_default=True, help="Which parameter split to draw instances from.")
@click.option("--episodes-per-task", "-k", type=click.IntRange(1, 100_000), default=4,
              show_default=True, help="Episodes to record per task.")
@click.option("--policy", "policy_spec", default="oracle", show_default=True,
              help="Demonstrator: `oracle` (the task's scripted solution), `random`, or a "
                   "policy checkpoint directory.")
@click.option("--sim", "sim_count", type=click.IntRange(1, 64), default=None,
              help="Record on N fresh sim phones (a private adb server).")
@click.option("--device", "-d", "serials", multiple=True,
              help="Serial of a device on the adb server; repeatable.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Dataset directory to create.")
@click.option("--append", is_flag=True, help="Add to an existing dataset at --out.")
@click.option("--keep-failed", is_flag=True,
              help="Also keep episodes that did not succeed (marked with their status).")
@click.option("--no-frames", is_flag=True, help="Leave the screenshots out.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the instances drawn (and of --policy random).")
@click.option("--tasks-path", "-t", "paths", multiple=True,
              type=click.Path(exists=True, path_type=Path),
              help="Extra task pack (.toml file or directory); repeatable.")
@click.option("--adb-port", type=int, default=None,
              help="adb server port for --device (default $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demos_record(task_names: tuple[str, ...], tags: tuple[str, ...], all_tasks: bool,
                 split: str, episodes_per_task: int, policy_spec: str,
                 sim_count: int | None, serials: tuple[str, ...], out: Path, append: bool,
                 keep_failed: bool, no_frames: bool, seed: int, paths: tuple[Path, ...],
                 adb_port: int | None, as_json: bool) -> None:
    """Run the demonstrator on devices and write a demonstration dataset to --out.

    With the oracle, each action is mapped to the UI-tree policy's candidate for it and
    that candidate is what runs, so the dataset holds exactly the choices the UI-tree
    policy can learn; the VLM encoding (prompt parts + action JSON) is stored as well."""
    from distrl_sdk.registry import TaskRegistry

    if (sim_count is None) == (not serials):
        fail("give exactly one of --sim N or --device SERIAL …")
    all_tasks = all_tasks or not (task_names or tags)  # every task, like eval and farm up
    try:
        reg = TaskRegistry.discover(paths)
    except DistRLError as exc:
        fail(str(exc))
    chosen: dict[str, Any] = {}
    for name in task_names:
        try:
            chosen[name] = reg.get(name)
        except DistRLError as exc:
            fail(str(exc))
    for cls in reg:
        if all_tasks or set(tags) & set(cls.tags):
            chosen.setdefault(cls.name, cls)
    if not chosen:
        fail(f"no task has tag(s) {', '.join(tags)}")
    if policy_spec == "oracle":
        lacking = [n for n, c in chosen.items() if not c().has_oracle]
        if lacking:
            fail(f"no oracle for: {', '.join(lacking)} (use another --policy)")
    elif policy_spec != "random":
        p = Path(policy_spec)
        if not p.is_dir():
            fail(f"--policy {policy_spec}: not `oracle`, `random` or a checkpoint directory")
    if (out / "episodes.jsonl").exists() and not append:
        fail(f"{out} already holds a dataset (use --append, or another --out)")
    jobs = [_Job(c, split, k) for c in chosen.values() for k in range(episodes_per_task)]
    port = adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    try:
        summary = asyncio.run(_record(jobs, policy_spec, sim_count, list(serials), port, out,
                                      append, keep_failed, not no_frames, seed))
    except KeyboardInterrupt:
        fail("interrupted (the episodes finished so far are kept)", 130)
    except DistRLError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        console.print(f"{summary['kept']} episode(s), {summary['steps']} steps → {out} "
                      f"({summary['seconds']:.0f} s); {summary['failed']} failed, "
                      f"{summary['unmatched_steps']} step(s) not expressible")
        for line in summary["problems"][:20]:
            console.print(f"  {line}", markup=False)
    sys.exit(0 if summary["failed"] == 0 and summary["unmatched_steps"] == 0 else 1)


def _demonstrator(spec: str, task: Any, device: Any, seed: int) -> tuple[Any, bool]:
    """(policy, drive): the oracle drives the UI-tree candidates; others act as they are."""
    from distrl_sdk.policy import OraclePolicy, RandomPolicy

    if spec == "oracle":
        return OraclePolicy(task.oracle(device)), True
    if spec == "random":
        return RandomPolicy(seed), False
    from distrl_sdk.learn import PolicyAgent
    from distrl_sdk.policies import load_policy

    policy, version = load_policy(spec)
    return PolicyAgent(policy, version, greedy=True), False


async def _record(jobs: list[_Job], policy_spec: str, sim_count: int | None,
                  serials: list[str], port: int, out: Path, append: bool, keep_failed: bool,
                  frames: bool, seed: int) -> dict[str, Any]:
    from distrl_sdk.learn.demo_record import record_episode
    from distrl_sdk.learn.demos import DemoWriter
    from distrl_sdk.policies.uitree import UITreeConfig
    from farm.device import AdbDevice

    farm = adb = None
    if sim_count is not None:
        from farm.sim.adbhost import PrivateAdbServer
        from farm.sim.farm import SimFarm

        farm = SimFarm(sim_count, seed=seed)
        await farm.start()
        adb = PrivateAdbServer()
        await asyncio.to_thread(adb.start)
        serials = [p.serial for p in farm.phones]
        for s in serials:
            await asyncio.to_thread(adb.connect, s)
        port = adb.port
    cfg = UITreeConfig()
    writer = DemoWriter(out, policy=policy_spec, append=append,
                        meta={"uitree_config": cfg.as_dict(), "seed": seed,
                              "demonstrator": policy_spec})
    queue: asyncio.Queue[_Job] = asyncio.Queue()
    for j in jobs:
        queue.put_nowait(j)
    stats = {"kept": 0, "steps": 0, "failed": 0, "unmatched_steps": 0}
    problems: list[str] = []
    done = 0
    t0 = time.monotonic()

    async def worker(serial: str) -> None:
        nonlocal done
        device = AdbDevice(serial, port=port)
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            # one RNG per (task, split, k): the same instances whatever the device count
            rng = random.Random(f"{seed}:{job.task_cls.name}:{job.split}:{job.k}")
            task = job.task_cls.sample(rng, job.split)
            pol, drive = _demonstrator(policy_spec, task, device, seed + job.k)
            ep, unmatched = await record_episode(
                task, device, pol, split=job.split, seed=seed, uitree=cfg, drive=drive,
                frames=frames, device_id=serial)
            done += 1
            if policy_spec == "oracle" and unmatched:
                stats["unmatched_steps"] += len(unmatched)
                problems.append(f"{task.name}: not expressible: "
                                + "; ".join(f"step {i}: {a}" for i, a in unmatched))
            if not ep.success:
                stats["failed"] += 1
                problems.append(f"{task.name} ({ep.status}): {task.instruction}"
                                + (f" — {ep.error}" if ep.error else ""))
            if ep.success or keep_failed:
                writer.write(ep)
                stats["kept"] += 1
                stats["steps"] += len(ep.steps)
            err_console.print(
                f"[{time.monotonic() - t0:6.1f} s] {done}/{len(jobs)} {task.name} "
                f"{ep.status} in {len(ep.steps)} steps", markup=False)

    try:
        await asyncio.gather(*(worker(s) for s in serials))
    finally:
        writer.close()
        if adb is not None:
            await asyncio.to_thread(adb.stop)
        if farm is not None:
            await farm.stop()
    return {**stats, "episodes": len(jobs), "seconds": round(time.monotonic() - t0, 1),
            "out": str(out), "problems": problems}


@demos.command("show", context_settings=CONTEXT)
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def demos_show(directory: Path, as_json: bool) -> None:
    """Summarise the dataset at DIRECTORY (its manifest: episodes, steps, tasks, splits)."""
    from distrl_sdk.learn.demos import read_manifest

    try:
        m = read_manifest(directory)
    except DistRLError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(m, indent=2))
        return
    console.print(f"{directory}: {m['format']} v{m['version']}, {m['episodes']} episodes, "
                  f"{m['steps']} steps, demonstrator {m.get('policy')}, splits {m.get('splits')}")
    for name, n in m.get("tasks", {}).items():
        console.print(f"  {name}: {n}", markup=False)


@demos.command("export", context_settings=CONTEXT)
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["hf"]), default="hf", show_default=True,
              help="hf: a Hugging Face `datasets` dataset (one row per step, the screen as "
                   "an image feature), written with save_to_disk.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write (must not exist).")
def demos_export(directory: Path, fmt: str, out: Path) -> None:
    """Export the dataset at DIRECTORY for other tools (`datasets.load_from_disk(OUT)`;
    `.push_to_hub` from there). `distrl demos import` reads it back."""
    from distrl_sdk.learn.demos_hf import to_hf

    if out.exists():
        fail(f"{out} already exists (choose another --out, or delete it)")
    try:
        data = to_hf(directory)
        data.save_to_disk(str(out))
    except DistRLError as exc:
        fail(str(exc))
    console.print(f"{data.num_rows} steps of {len(set(data['episode_id']))} episodes → {out} "
                  f"(Hugging Face datasets, columns: {', '.join(data.column_names)})",
                  markup=False)


@demos.command("import", context_settings=CONTEXT)
@click.argument("source", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Demonstration dataset to write.")
@click.option("--append", is_flag=True, help="Add to an existing dataset at --out.")
def demos_import(source: Path, out: Path, append: bool) -> None:
    """Read a Hugging Face dataset written by `distrl demos export` (SOURCE: its
    save_to_disk directory) into a demonstration dataset that `distrl sft` takes."""
    from distrl_sdk.learn.demos import read_manifest
    from distrl_sdk.learn.demos_hf import from_hf

    try:
        from_hf(source, out, append=append)
        m = read_manifest(out)
    except DistRLError as exc:
        fail(str(exc))
    console.print(f"{source} → {out}: {m['episodes']} episodes, {m['steps']} steps",
                  markup=False)

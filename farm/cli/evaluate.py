"""``distrl eval``: a frozen policy on held-out task instances, success with 95 % intervals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from farm.cli.common import CONTEXT, fail

if TYPE_CHECKING:
    from farm.collect.reset import EpisodeReset

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

EPILOG = """\b
Each task is played --episodes-per-task times on instances drawn from the chosen split
(test: parameters never seen in training) with seeds (--seed, task, k): the same
instances on every run. An aborted episode (a device fault) is played again, at most
twice; aborted and errored episodes are reported, never scored. Episodes end when the
task's evaluator says it succeeded (as in training), or at the task's step budget.

\b
Success per task: successes / finished episodes, with its 95 % Wilson interval. Suite:
the mean over tasks (each task counts once), with the Wilson interval at that mean and
the stratified effective sample size T^2 / sum(1/n_t) (with equal episodes per task:
the pooled counts' interval).

\b
Exit status: 0 the evaluation ran; 1 no episode could be scored (every one aborted or
errored); 2 bad input (unknown task or tag, bad checkpoint, unreachable device, bad
flags); 130 interrupted.
"""



def _select(names: tuple[str, ...], tags: tuple[str, ...], paths: tuple[Path, ...]
            ) -> list[Any]:
    from distrl_sdk.errors import DistRLError
    from distrl_sdk.registry import TaskRegistry
    from farm.config import ConfigError, TasksSection, select_tasks

    try:
        reg = TaskRegistry.discover(paths)
    except DistRLError as exc:
        fail(str(exc))
    globs = [n for n in names if any(c in n for c in "*?[")]
    exact = [n for n in names if n not in globs]
    try:
        tasks = select_tasks(TasksSection(names=exact, globs=globs, tags=list(tags)), reg)
    except ConfigError as exc:
        fail(str(exc))
    if not tasks:
        fail("no tasks registered (see `distrl tasks list`)")
    return tasks


def _policy(spec: str, seed: int, greedy: bool, alternatives: int = 0) -> Any:
    from farm.evaluate import AgentEval, OracleEval, RandomEval

    if spec == "oracle":
        return OracleEval()
    if spec == "random":
        return RandomEval(seed)
    path = Path(spec)
    if not path.exists():
        fail(f"--policy {spec}: no such checkpoint directory (or use `oracle` / `random`)")
    if not path.is_dir():
        fail(f"--policy {spec}: not a directory; a checkpoint is a directory with "
              "policy.json and policy.safetensors")
    from distrl_sdk.errors import DistRLError
    from distrl_sdk.learn import PolicyAgent
    from distrl_sdk.policies import load_policy
    from farm.learner.paths import policy_dir

    path = policy_dir(path)  # a learner's run dir: its newest checkpoint
    try:
        policy, version = load_policy(path)
    except DistRLError as exc:
        fail(str(exc))
    if alternatives:
        if not hasattr(policy, "alternatives"):
            fail(f"--alternatives: a {getattr(policy, 'kind', 'this')} policy does not rank "
                 "candidate actions (a uitree checkpoint does)")
        policy.alternatives = alternatives
    reseed = getattr(policy, "reseed", None)
    if not greedy and callable(reseed):
        reseed(seed)
    agent = PolicyAgent(policy, version, greedy=greedy)
    return AgentEval(agent, f"{agent.name} ({path})")


@click.command("eval", context_settings=CONTEXT, epilog=EPILOG)
@click.option("--policy", "-p", "policy_spec", required=True,
              help="A policy checkpoint directory (what `distrl learner` and `distrl sft` "
                   "write, `distrl deploy` reads; a learner's run dir means its newest "
                   "checkpoint), `oracle` (the tasks' scripted solutions: "
                   "the ceiling) or `random` (the floor).")
@click.option("--sim", type=click.IntRange(1, 256), default=None,
              help="Evaluate on N simulated phones started in-process.")
@click.option("--sim-profile", default="instant", show_default=True,
              help="Latency profile of the sim phones (instant, emulator, pixel, old-phone).")
@click.option("--device", "-d", "devices", multiple=True,
              help="Evaluate on this device (repeatable): a serial on the adb server, or "
                   "HOST:PORT (adb connect-ed, reconnected when it drops).")
@click.option("--adb-host", default="127.0.0.1", show_default=True, help="adb server host.")
@click.option("--adb-port", type=int, default=None,
              help="adb server port for --device (default $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--split", type=click.Choice(["test", "train"]), default="test",
              show_default=True, help="Which instances: test = held out from training.")
@click.option("--task", "task_names", multiple=True,
              help="Task name or shell pattern (settings.*) to evaluate (repeatable). "
                   "Default: every registered task.")
@click.option("--tag", "task_tags", multiple=True, help="Evaluate the tasks with this tag "
              "(repeatable).")
@click.option("--tasks-path", "-t", "paths", multiple=True,
              type=click.Path(exists=True, path_type=Path),
              help="Extra task pack (.toml file or directory); repeatable.")
@click.option("--greedy/--sample", default=True, show_default=True,
              help="A learned policy takes its most likely action, or samples.")
@click.option("--episodes-per-task", "-k", type=click.IntRange(1, 10_000), default=3,
              show_default=True, help="Instances (episodes) of each task.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the instances (and of the random policy / sampling).")
@click.option("--episode-timeout", type=click.FloatRange(0, min_open=True), default=120.0,
              show_default=True, help="Abort an episode running longer (seconds).")
@click.option("--ready-timeout", type=click.FloatRange(0, min_open=True), default=30.0,
              show_default=True, help="How long --device devices may take to become ready.")
@click.option("--reset/--no-reset", default=True, show_default=True,
              help="--sim: put every phone back as it was before its first episode, "
                   "before each episode (the same instance plays the same way whatever "
                   "its phone played before). --no-reset: phones keep what earlier "
                   "episodes did to them.")
@click.option("--reset-snapshot", default=None, metavar="NAME",
              help="--device: load this emulator snapshot before every episode, through "
                   "the emulator console (`avd snapshot load NAME`; emulator-N serials "
                   "only). Without it real devices are not reset.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON only.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the JSON report to this file.")
@click.option("--episodes-out", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Write every episode to this file, one JSON object a line: the "
                   "instance, its outcome and each action with what it touched (why a "
                   "held-out episode failed).")
@click.option("--alternatives", type=click.IntRange(1, 50), default=None, metavar="N",
              help="With --episodes-out and a uitree checkpoint: each step also lists "
                   "the N candidate actions the policy found likeliest, with their "
                   "probabilities (what it weighed against what it did).")
def eval_cmd(policy_spec: str, sim: int | None, sim_profile: str, devices: tuple[str, ...],
             adb_host: str, adb_port: int | None, split: str, task_names: tuple[str, ...],
             task_tags: tuple[str, ...], paths: tuple[Path, ...], greedy: bool,
             episodes_per_task: int, seed: int, episode_timeout: float, ready_timeout: float,
             reset: bool, reset_snapshot: str | None, as_json: bool, out: Path | None,
             episodes_out: Path | None, alternatives: int | None) -> None:
    """Evaluate a policy on held-out instances of the sample tasks: success per task with
    95 % intervals, the suite mean with its interval, episodes and mean steps.

    Needs phones: --sim N (simulated, in-process) or --device SERIAL (repeatable).
    """
    from farm.evaluate import plan_instances
    from farm.sim.profiles import PROFILES

    if (sim is None) == (not devices):
        raise click.UsageError("give either --sim N or --device SERIAL (one or more)")
    if sim is not None and sim_profile not in PROFILES:
        raise click.UsageError(f"--sim-profile {sim_profile!r}: one of {', '.join(PROFILES)}")
    if reset_snapshot is not None:
        from farm.collect.reset import console_port

        if sim is not None:
            raise click.UsageError("--reset-snapshot loads an emulator snapshot on --device "
                                   "emulators; --sim phones are reset by default (--reset)")
        if not reset:
            raise click.UsageError("--reset-snapshot and --no-reset contradict each other")
        if not reset_snapshot.strip() or any(c.isspace() for c in reset_snapshot):
            raise click.UsageError(f"--reset-snapshot {reset_snapshot!r}: not a snapshot name")
        if bad := [d for d in devices if console_port(d) is None]:
            raise click.UsageError(f"--reset-snapshot needs emulators (emulator-N serials); "
                                   f"not one: {', '.join(bad)}")
    if alternatives is not None and episodes_out is None:
        raise click.UsageError("--alternatives is written into --episodes-out: give both")
    if alternatives is not None and policy_spec in ("oracle", "random"):
        raise click.UsageError(f"--alternatives: the {policy_spec} policy weighs no "
                               "candidates; give a uitree checkpoint")
    tasks = _select(task_names, task_tags, paths)
    policy = _policy(policy_spec, seed, greedy, alternatives or 0)
    instances = plan_instances(tasks, episodes_per_task, seed=seed,
                               split="test" if split == "test" else "train")
    learned = policy_spec not in ("oracle", "random")
    reset_label = (f"snapshot:{reset_snapshot}" if reset_snapshot
                   else "sim-state" if sim is not None and reset else None)
    meta = {"seed": seed, "episodes_per_task": episodes_per_task,
            "tasks_evaluated": len(tasks), "reset": reset_label}
    port = adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    for flag, path in (("--out", out), ("--episodes-out", episodes_out)):
        if path is not None and path.parent and not path.parent.exists():
            fail(f"{flag} {path}: no such directory {path.parent}")
    trace = None
    if episodes_out is not None:
        try:
            trace = _EpisodeWriter(episodes_out, policy_spec)
        except OSError as exc:
            fail(f"--episodes-out {episodes_out}: {exc.strerror or exc}")
    try:
        report = asyncio.run(_run(
            instances, policy, sim=sim, sim_profile=sim_profile, devices=list(devices),
            adb_host=adb_host, adb_port=port, split=split, greedy=greedy if learned else None,
            episode_timeout=episode_timeout, ready_timeout=ready_timeout, meta=meta,
            progress=not as_json, trace=trace, reset=reset, reset_snapshot=reset_snapshot))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except _UserError as exc:
        fail(str(exc))
    finally:
        if trace is not None:
            trace.close()
    data = report.as_dict()
    if out is not None:
        out.write_text(json.dumps(data, indent=2) + "\n")
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        _print(data)
        if out is not None:
            console.print(f"report written to {escape(str(out))}")
        if trace is not None:
            console.print(f"{trace.written} episodes written to "
                          f"{escape(str(episodes_out))}")
    if report.episodes == 0:
        err_console.print("[bold red]no episode could be scored[/] (all aborted or errored)")
        sys.exit(1)
    if not report.complete:
        err_console.print(f"[yellow]warning:[/] {report.planned - report.tally.episodes} of "
                          f"{report.planned} instances not scored (aborted/errored)")


class _EpisodeWriter:
    """``--episodes-out``: one JSON line per episode, flushed as each ends (an
    interrupted evaluation keeps what it played)."""

    def __init__(self, path: Path, policy: str) -> None:
        self.path, self.policy, self.written = path, policy, 0
        self._f = path.open("w", encoding="utf-8")  # OSError: a user mistake, said at once

    def write(self, inst: Any, trajectory: Any, final: bool) -> None:
        from farm.evaluate.trace import episode_record

        rec = episode_record(trajectory, final=final,
                             extra={"policy": self.policy, "instance": inst.index})
        self._f.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        self._f.flush()
        self.written += 1

    def close(self) -> None:
        self._f.close()


class _UserError(Exception):
    """A device that cannot be reached: exit 2 with this message."""


async def _wait_ready(reg: Any, serials: list[str], timeout: float, port: int) -> None:
    from farm.device.lifecycle import DeviceState

    async def one(s: str) -> None:
        await reg.wait_for(s, DeviceState.READY, timeout=timeout)

    results = await asyncio.gather(*(one(s) for s in serials), return_exceptions=True)
    bad = [f"{s} ({r})" for s, r in zip(serials, results, strict=True)
           if isinstance(r, BaseException)]
    if bad:
        hint = "" if reg.server_up else f" — no adb server answers on port {port}"
        raise _UserError("device not reachable: " + "; ".join(bad) + hint)


async def _run(instances: list[Any], policy: Any, *, sim: int | None, sim_profile: str,
               devices: list[str], adb_host: str, adb_port: int, split: str,
               greedy: bool | None, episode_timeout: float, ready_timeout: float,
               meta: dict[str, Any], progress: bool,
               trace: _EpisodeWriter | None = None, reset: bool = True,
               reset_snapshot: str | None = None) -> Any:
    from farm.device.lifecycle import DeviceState, LifecycleConfig, StateChanged
    from farm.device.registry import DeviceRegistry
    from farm.evaluate import EvalRound

    async with contextlib.AsyncExitStack() as stack:
        host, port, serials = adb_host, adb_port, devices
        episode_reset: EpisodeReset | None = None
        if sim is not None:
            from farm.sim.adbhost import PrivateAdbServer
            from farm.sim.background import BackgroundFarm

            bg = BackgroundFarm(sim, seed=int(meta["seed"]), profile=sim_profile)
            await asyncio.to_thread(bg.start)
            stack.callback(bg.stop)
            assert bg.farm is not None
            serials = bg.farm.serials
            adb = PrivateAdbServer()
            await asyncio.to_thread(adb.start)
            stack.callback(adb.stop)
            host, port = "127.0.0.1", adb.port
            if reset:
                from farm.sim.reset import SimStateReset

                episode_reset = SimStateReset(bg)
        tcp = [s for s in serials if ":" in s]
        usb = [s for s in serials if ":" not in s]
        reg = DeviceRegistry(host=host, port=port, targets=tcp, discover=bool(usb),
                             config=LifecycleConfig(), device_timeout=30)
        wanted = set(serials)

        def only_wanted(change: StateChanged) -> None:
            # discovery lists every device on the server: evaluate only the chosen ones
            if change.serial not in wanted and change.state is DeviceState.READY:
                reg.pause(change.serial, "not selected for this evaluation")

        reg.on_change(only_wanted)
        await stack.enter_async_context(reg)
        await _wait_ready(reg, serials, ready_timeout if sim is None else 120.0, port)
        if reset_snapshot is not None:
            episode_reset = await _snapshot_reset(reset_snapshot, serials, adb_host)
        bar = Progress(TextColumn("eval {task.description}"), BarColumn(),
                       MofNCompleteColumn(), TextColumn("{task.fields[score]}"),
                       TimeElapsedColumn(), console=err_console, transient=True,
                       disable=not progress)
        job = bar.add_task(escape(policy.name), total=len(instances), score="")
        round_: EvalRound | None = None

        def on_episode(inst: Any, traj: Any, final: bool) -> None:
            if trace is not None:
                trace.write(inst, traj, final)
            if not final or round_ is None:
                return
            t = round_.tally
            mean = t.mean()[0] if t.episodes else 0.0
            bar.update(job, advance=1, score=f"success so far {mean:.2f} over {t.episodes}")

        round_ = EvalRound(reg, instances, policy, episode_timeout_s=episode_timeout,
                           split="test" if split == "test" else "train", greedy=greedy,
                           on_episode=on_episode, meta=meta,
                           workers=len(serials), reset=episode_reset)
        with bar:
            report = await round_.run()
        return report
    raise AssertionError("unreachable")  # pragma: no cover


async def _snapshot_reset(name: str, serials: list[str], host: str) -> EpisodeReset:
    """The console reset, once every device's console has answered and lists ``name``."""
    from distrl_sdk.errors import DeviceError
    from farm.collect.reset import ConsoleSnapshotReset

    snap = ConsoleSnapshotReset(name, host=host)
    results = await asyncio.gather(*(snap.check(s) for s in serials), return_exceptions=True)
    bad = [str(r) for r in results if isinstance(r, DeviceError)]
    if bad:
        raise _UserError("--reset-snapshot: " + "; ".join(bad))
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return snap


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _print(d: dict[str, Any]) -> None:
    version = f" v{d['policy_version']}" if d["policy_version"] is not None else ""
    mode = {True: ", greedy", False: ", sampling", None: ""}[d["greedy"]]
    table = Table(title=f"{d['policy']}{version} on the {d['split']} split{mode}")
    table.add_column("task", no_wrap=True, overflow="ellipsis")
    for col in ("episodes", "success %", "95 % CI", "steps", "unscored"):
        table.add_column(col, justify="right", no_wrap=True,
                         min_width=11 if col == "95 % CI" else None)
    for t in d["tasks"]:
        lost = t["aborted"] + t["errored"]
        table.add_row(escape(t["task"]), str(t["episodes"]), _pct(t["success_rate"]),
                      f"{_pct(t['ci_low'])}–{_pct(t['ci_high'])}", f"{t['mean_steps']:.1f}",
                      str(lost) if lost else "")
    table.add_section()
    table.add_row(f"[bold]suite mean[/], {len(d['tasks'])} tasks", str(d["episodes"]),
                  f"[bold]{_pct(d['success_rate'])}[/]",
                  f"{_pct(d['ci_low'])}–{_pct(d['ci_high'])}", f"{d['mean_steps']:.1f}",
                  str(d["aborted"] + d["errored"]) if d["aborted"] + d["errored"] else "")
    console.print(table)
    reset = d.get("reset")
    console.print(f"{d['episodes']} episodes on {d['devices']} device(s) in {d['wall_s']:.1f} s "
                  f"({d['episodes_per_min']:.0f}/min); "
                  + (f"each phone reset before every episode ({escape(reset)})" if reset
                     else "phones not reset between episodes"))

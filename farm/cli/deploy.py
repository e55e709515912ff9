"""``distrl deploy``: run a trained agent on one connected phone, behind the safety guard."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from distrl_sdk.errors import DistRLError
from distrl_sdk.wire.url_mask import mask_url
from farm.broker_password import password_file_option
from farm.cli.common import CONTEXT, KEY_FILE, fail

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

STYLE = {"allowed": "green", "refused": "bold red", "declined": "yellow", "dry-run": "cyan",
         "invalid": "dim"}
EPILOG = """\b
Exit status: 0 the task succeeded (with --task) or the agent said it was done;
1 it did not (the task failed; without --task: a step/time limit, a device or
policy error stopped it);
2 bad input (unknown device, bad checkpoint, bad flags); 3 the guard refused an
action (or you declined one at --confirm) and the episode stopped.

\b
The guard (deny-lists of packages, screens, texts under a tap, typed text and shell
commands; step and time limits) is described in docs/deploy-guard.md; --guard FILE
overrides any field, e.g.  max_steps = 15  or  extra_denied_packages = ["com.bank"].

\b
--policy published --broker URL plays the newest version a running `distrl learner`
published on that broker (fetched and verified like a farm does); the TUI's `d` key
builds that command line for the selected phone.
"""

#: the newest policy the learner published on --broker
PUBLISHED = "published"




def _make_policy(spec: str, seed: int, sample: bool) -> tuple[Any, str]:
    """``random``, ``oracle`` (needs the task, set up later) or a checkpoint directory."""
    from distrl_sdk.policy import RandomPolicy

    if spec == "random":
        return RandomPolicy(seed), "random"
    if spec == "oracle":
        return None, "oracle"  # built after task setup: it reads the live screen
    if spec == PUBLISHED:
        return None, "the learner's newest published policy"  # fetched in _main
    path = Path(spec)
    if not path.exists():
        raise click.UsageError(f"--policy {spec}: no such checkpoint directory "
                               "(or use `random` / `oracle`)")
    if not path.is_dir():
        raise click.UsageError(f"--policy {spec}: not a directory; a checkpoint is a directory "
                               "with policy.json and policy.safetensors")
    from distrl_sdk.learn import PolicyAgent
    from distrl_sdk.policies import load_policy
    from farm.learner.paths import policy_dir

    path = policy_dir(path)  # a learner's run dir: its newest checkpoint
    policy, version = load_policy(path)  # ConfigError names what is wrong
    agent = PolicyAgent(policy, version, greedy=not sample)
    return agent, f"{agent.name} ({path}{', sampling' if sample else ''})"


def _confirm(report: Any) -> bool:
    from rich.prompt import Confirm

    return Confirm.ask(f"step {report.index + 1}: run [bold]{escape(report.described)}[/]?",
                       console=err_console, default=False)


@click.command("deploy", context_settings=CONTEXT, epilog=EPILOG)
@click.argument("instruction", required=False)
@click.option("--device", "-d", "serial", required=True,
              help="Serial on the adb server: USB serial, HOST:PORT (adb connect-ed if "
                   "needed), emulator-5554, or a sim phone's 127.0.0.1:PORT.")
@click.option("--policy", "-p", "policy_spec", required=True,
              help="Checkpoint directory (policy.json + policy.safetensors; a learner's "
                   "run dir means its newest checkpoint), `published` "
                   "(the newest policy a learner published on --broker), `random`, or "
                   "`oracle` (the task's scripted solution; needs --task).")
@click.option("--task", "task_name", default=None,
              help="Also set up and score this task (its evaluator reports success); its "
                   "instruction is used when INSTRUCTION is not given.")
@click.option("--tasks-path", "-t", "paths", multiple=True,
              type=click.Path(exists=True, path_type=Path),
              help="Extra task pack (.toml file or directory); repeatable.")
@click.option("--sample", is_flag=True, help="Sample actions instead of the greedy choice.")
@click.option("--guard", "guard_file", type=click.Path(path_type=Path), default=None,
              help="TOML file overriding the guard's defaults.")
@click.option("--max-steps", type=click.IntRange(1, 10_000), default=None,
              help="Step limit (default: the guard's, 25; with --task at most the task's own "
                   "step budget, the one the agent was trained with).")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Wall-time limit (default: the guard's, 300 s).")
@click.option("--on-deny", type=click.Choice(["stop", "skip"]), default="stop",
              show_default=True,
              help="After a refused action: stop the episode, or record it and ask the "
                   "policy again (a greedy policy on an unchanged screen repeats itself: "
                   "skip suits --sample).")
@click.option("--confirm", is_flag=True, help="Ask y/n before each action runs.")
@click.option("--dry-run", is_flag=True,
              help="Decide, check and show every action; execute none.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the GIF, MP4 and JSON go (default runs/deploy/<timestamp>).")
@click.option("--no-record", is_flag=True, help="Write only the JSON, no GIF/MP4.")
@click.option("--settle", type=click.FloatRange(0, 30), default=0.5, show_default=True,
              help="Seconds to let the screen settle after each action.")
@click.option("--broker", default=None, envvar="DISTRL_BROKER_URL",
              help="MQTT broker URL (env DISTRL_BROKER_URL): show the deploy live in "
                   "`distrl tui` (farm id deploy); where --policy published comes from.")
@password_file_option
@click.option("--fetch-timeout", type=click.FloatRange(1, 3600), default=60.0,
              show_default=True,
              help="With --policy published: seconds to wait for the learner's policy.")
@click.option("--learner-key", "learner_keys", multiple=True,
              type=KEY_FILE,
              help="With --policy published: the learner's public key (.pub, `distrl keys`) "
                   "whose signed policy to run (repeatable) [default: the local learner key].")
@click.option("--adb-port", type=int, default=None,
              help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed for --policy random and the task's parameters.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON only.")
def deploy(instruction: str | None, serial: str, policy_spec: str, task_name: str | None,
           paths: tuple[Path, ...], sample: bool, guard_file: Path | None,
           max_steps: int | None, max_seconds: float | None, on_deny: str, confirm: bool,
           dry_run: bool, out: Path | None, no_record: bool, settle: float,
           broker: str | None, password_file: Path | None, fetch_timeout: float,
           learner_keys: tuple[Path, ...], adb_port: int | None, seed: int,
           as_json: bool) -> None:
    """Run an agent on one device to carry out INSTRUCTION, behind the safety guard.

    Every action is checked before it reaches the phone; refused ones never run. The
    episode is recorded (GIF, MP4, deploy.json, trajectory.json) into --out.
    """
    from distrl_sdk.errors import TaskError
    from farm.deploy import DeployOptions, Guard, load_guard_config

    if confirm and as_json:
        raise click.UsageError("--confirm needs a person at the terminal; drop --json")
    if confirm and dry_run:
        raise click.UsageError("--dry-run executes nothing, so --confirm has nothing to ask")
    task = None
    if task_name is not None:
        from distrl_sdk.registry import TaskRegistry

        reg = TaskRegistry.discover(paths)
        try:
            task = reg.get(task_name).sample(random.Random(seed), "test")
        except TaskError as exc:
            fail(str(exc))
    if policy_spec == "oracle" and task is None:
        raise click.UsageError("--policy oracle replays a task's solution: give --task NAME")
    if policy_spec == PUBLISHED and not broker:
        raise click.UsageError("--policy published fetches the learner's newest policy: "
                               "give --broker URL")
    if broker:
        from distrl_sdk.wire.broker_url import parse_broker_url
        from farm.broker_password import broker_password, url_with_password

        try:
            broker = url_with_password(broker, broker_password(password_file),
                                       override=password_file is not None)
            parse_broker_url(broker)
        except ValueError as exc:
            fail(f"--broker: {exc}")
    if instruction is None or not instruction.strip():
        if task is None:
            raise click.UsageError("give an INSTRUCTION (or --task NAME to use its instruction)")
        instruction = task.instruction
    try:
        if max_steps is None and task is not None:
            # the budget the agent was trained with on this task; the guard's still caps it
            max_steps = min(task.max_steps, load_guard_config(guard_file).max_steps)
        guard = Guard(load_guard_config(guard_file, max_steps=max_steps,
                                        max_seconds=max_seconds))
        policy, policy_name = _make_policy(policy_spec, seed, sample)
    except DistRLError as exc:
        fail(str(exc))
    out_dir = out or Path("runs/deploy") / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    port = adb_port or int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    opts = DeployOptions(instruction=instruction, out_dir=out_dir, guard=guard,
                         on_deny="skip" if on_deny == "skip" else "stop", dry_run=dry_run,
                         confirm=_confirm if confirm else None, task=task, settle_s=settle,
                         record=not no_record, policy_name=policy_name)
    if not as_json:
        mode = "DRY RUN — nothing will be executed. " if dry_run else ""
        console.print(f"{mode}Deploying [bold]{escape(policy_name)}[/] on {escape(serial)}: "
                      f"{escape(instruction)!r}  (≤ {guard.config.max_steps} steps, "
                      f"≤ {guard.config.max_seconds:g} s, on deny: {on_deny})")
    try:
        result = asyncio.run(_main(serial, port, policy, policy_spec, opts, broker, as_json,
                                   fetch_timeout, sample, learner_keys))
    except KeyboardInterrupt:
        fail(f"interrupted; what was recorded is in {out_dir}", 130)
    except DistRLError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        _summary(result)
    if result.stop_reason in ("refused", "declined"):
        sys.exit(3)
    sys.exit(deploy_exit_status(result.stop_reason, result.success))


def deploy_exit_status(stop_reason: str, success: bool | None) -> int:
    """3 refused or declined; with --task the task's own verdict (0 it succeeded, even if
    the agent ran on to its step limit; 1 it did not); without, 0 when the agent said it
    was done, 1 when it was stopped (limits, errors)."""
    if stop_reason in ("refused", "declined"):
        return 3
    if success is not None:
        return 0 if success else 1
    return 0 if stop_reason in ("completed", "answered", "impossible") else 1


async def _published(broker: str, timeout: float, sample: bool, as_json: bool,
                     learner_keys: tuple[Path, ...] = ()) -> Any:
    """The newest version on the broker, verified (sha256, size) as a farm takes it."""
    from farm.learner.weights import LearnedPolicyProvider

    if not as_json:
        err_console.print(f"fetching the newest published policy from {mask_url(broker)} …")
    from farm.keys import trusted_learners

    try:  # only a version a trusted learner signed
        trusted = trusted_learners(learner_keys)
    except (OSError, ValueError) as exc:
        raise DeployInputError(f"learner key: {exc}") from None
    async with LearnedPolicyProvider(broker, greedy=not sample, fetch_timeout_s=timeout,
                                     trusted=trusted) as provider:
        try:
            version = await provider.wait_ready(timeout)
        except TimeoutError as exc:
            raise DeployInputError(str(exc)) from None
    agent = provider.agent
    assert agent is not None
    agent.name = f"published v{version}"
    return agent


class DeployInputError(DistRLError):
    """Something the user asked for is not there (exit status 2)."""


async def _main(serial: str, port: int, policy: Any, policy_spec: str, opts: Any,
                broker: str | None, as_json: bool, fetch_timeout: float = 60.0,
                sample: bool = False, learner_keys: tuple[Path, ...] = ()) -> Any:
    from distrl_sdk.policy import OraclePolicy
    from farm.deploy import LiveFeed, StepReport, connect_device, run_deploy

    if policy_spec == PUBLISHED:
        assert broker is not None
        policy = await _published(broker, fetch_timeout, sample, as_json, learner_keys)
        opts.policy_name = policy.name
    device = await connect_device(serial, port=port)
    if broker:
        live = LiveFeed(broker, device.serial)
        try:
            await live.start()
        except DistRLError as exc:
            err_console.print(f"[yellow]warning:[/] {escape(str(exc))}; not shown live")
        else:
            opts.live = live
    if policy_spec == "oracle":
        task = opts.task

        class _LazyOracle:
            """The task's oracle, created on the first decision (after the task's setup)."""

            name = "oracle"
            inner: OraclePolicy | None = None

            async def act(self, observation: Any) -> Any:
                if self.inner is None:
                    self.inner = OraclePolicy(task.oracle(device))
                return await self.inner.act(observation)

        policy = _LazyOracle()

    def show(r: StepReport) -> None:
        if as_json:
            return
        style = STYLE.get(r.outcome, "")
        where = f"  [dim]({escape(r.package)})[/]" if r.package else ""
        console.print(f"step {r.index + 1:>3}  [{style}]{r.outcome:<8}[/] "
                      f"{escape(r.described)}{where}")
        if r.outcome in ("refused", "declined", "invalid") \
                or r.message.startswith("not executed"):
            console.print(f"          [{style}]{escape(r.message)}[/]")

    return await run_deploy(device, policy, opts, on_step=show)


def _summary(result: Any) -> None:
    outcome = {True: "[bold green]SUCCESS[/]", False: "[bold red]FAILURE[/]",
               None: "not scored (no --task)"}[result.success]
    console.print(
        f"\n{len(result.steps)} step(s), {result.executed} executed, {len(result.refusals)} "
        f"refused, in {result.seconds:.1f} s — stopped: {result.stop_reason}; task: {outcome}")
    if result.error:
        style = "bold red" if result.stop_reason in ("refused", "declined") else "yellow"
        console.print(f"[{style}]{escape(result.error)}[/]")
    for key in ("gif", "mp4", "summary", "trajectory"):
        if key in result.files:
            console.print(f"  {key:<10} {escape(result.files[key])}")

"""The ``distrl`` command line: the root group here, a module per command group
(``farm.cli.sim``, ``farm.cli.farm`` …), plugins' commands from entry points."""

from __future__ import annotations

import click
from rich.console import Console

from distrl_sdk import __version__
from farm.cli.common import CONTEXT

err_console = Console(stderr=True, soft_wrap=True)


@click.group(context_settings=CONTEXT)
@click.version_option(__version__, prog_name="distrl")
def cli() -> None:
    """DistRL: asynchronous distributed RL for phone-control agents.

    `distrl demo` runs everything on one machine: sim phones, a farm, the A-RIDE
    learner and the TUI. The parts: simulated phones that speak the real ADB protocol
    (`sim`), tasks and their evaluation (`tasks`), a collection farm (`farm`), the
    learner (`learner`), the terminal UI (`tui`), a trained agent on a phone (`deploy`),
    an MQTT broker (`broker`) and the effective configuration (`config`). Every command
    takes --help.
    """


# the command groups live in their own modules, registered once the root group exists
from farm.cli import (  # noqa: E402
    broker,
    config,
    demo,
    demos,
    deploy,
    evaluate,
    farm,
    keys,
    learner,
    serve,
    sft,
    sim,
    tasks,
)

for _cmd in (sim.sim, demo.demo, farm.farm, farm.traj, learner.learner, deploy.deploy,
             tasks.tasks, broker.broker, config.config, demos.demos, sft.sft,
             evaluate.eval_cmd, keys.keys, serve.serve):
    cli.add_command(_cmd)


def _plugin_commands() -> None:
    """Commands other distributions add through the ``distrl.commands`` entry-point group
    (the TUI registers ``distrl tui`` this way: farm never imports tui)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="distrl.commands"):
        if ep.name in cli.commands:
            continue
        try:
            command = ep.load()
        except Exception as exc:  # a broken plugin must not take the whole CLI down
            err_console.print(f"[yellow]warning:[/] command plugin {ep.name!r} "
                              f"({ep.value}) failed to load: {exc}")
            continue
        if isinstance(command, click.Command):
            cli.add_command(command, ep.name)


_plugin_commands()


def main() -> None:
    cli(prog_name="distrl")

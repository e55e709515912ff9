"""``distrl demo``: broker + sim phones + farm + learner + TUI in one command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from pathlib import Path

import click
from rich.console import Console

from farm.cli.common import CONTEXT

__all__ = ["demo"]

err_console = Console(stderr=True, soft_wrap=True)


@click.command("demo", context_settings=CONTEXT)
@click.option("--phones", "-n", default=8, show_default=True, type=click.IntRange(1, 64),
              help="How many simulated phones the farm drives.")
@click.option("--headless", is_flag=True,
              help="No TUI: print progress every few seconds and a summary at the end.")
@click.option("--duration", type=click.FloatRange(0, min_open=True), default=None,
              help="Stop on its own after this many seconds (default: until Ctrl-C or q).")
@click.option("--json", "as_json", is_flag=True, help="With --headless: the summary as JSON.")
@click.option("--run-dir", default=Path("runs/demo"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Logs, learner checkpoints and the farm's spool.")
@click.option("--task", "tasks", multiple=True,
              help="Task to learn (repeatable). Default: the sample suite's easy tier.")
@click.option("--algo", type=click.Choice(["aride", "digirl"]), default="aride",
              show_default=True, help="Learner algorithm (digirl = the baseline).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for everything.")
@click.option("--pretrain/--no-pretrain", default=True, show_default=True,
              help="Record oracle demonstrations and behaviour-clone on them before online "
                   "RL (the paper's start); --no-pretrain: A-RIDE from a fresh policy.")
@click.option("--demos-per-task", default=2, show_default=True, type=click.IntRange(1, 100),
              help="Oracle demonstrations per task for the supervised start.")
@click.option("--sft-epochs", default=60, show_default=True, type=click.IntRange(1, 1000),
              help="Behaviour-cloning epochs.")
@click.option("--eval-every", type=click.FloatRange(0), default=20.0, show_default=True,
              help="Seconds between held-out evaluation rounds (test split, greedy, never "
                   "trained on): the headline number. 0: none.")
def demo(phones: int, headless: bool, duration: float | None, as_json: bool, run_dir: Path,
         tasks: tuple[str, ...], algo: str, seed: int, pretrain: bool, demos_per_task: int,
         sft_epochs: int, eval_every: float) -> None:
    """Watch an agent learn, as in the paper: oracle demonstrations, a supervised start
    (SFT), then online A-RIDE on N sim phones in a farm, judged by held-out evaluation
    rounds — an embedded MQTT broker, the farm, the learner and the TUI. Ctrl-C (or q in
    the TUI) stops it all cleanly: spool and checkpoints are flushed, no process is left
    behind.

    If the TUI crashes, farm and learner keep running and the demo carries on with
    headless progress lines (the traceback is in <run-dir>/logs/tui-crash.log).

    Exit status: 0 when you stopped it (Ctrl-C, q, --duration) and every part stopped
    cleanly; 1 when a part crashed or failed to stop (TUI, farm or learner: the summary
    names it and its log); 2 for a usage or start-up error."""
    from farm.demo import DemoConfig, format_summary, run_demo

    if as_json and not headless:
        raise click.UsageError("--json needs --headless")
    if tasks:  # before anything starts: a typo must not cost a broker, sims and 9 s
        from distrl_sdk.errors import TaskError
        from distrl_sdk.registry import TaskRegistry

        reg = TaskRegistry.discover()
        for name in tasks:
            try:
                reg.get(name)
            except TaskError as exc:
                raise click.BadParameter(str(exc), param_hint="--task") from None
    if not headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        err_console.print("no terminal to draw the TUI on: running --headless")
        headless = True
    cfg = DemoConfig(phones=phones, duration_s=duration, headless=headless, run_dir=run_dir,
                     tasks=tasks, algo=algo, seed=seed, pretrain=pretrain,
                     demos_per_task=demos_per_task, sft_epochs=sft_epochs,
                     eval_every_s=eval_every or None)

    def say(line: str) -> None:
        if not as_json:
            with contextlib.suppress(OSError):  # a closed terminal must not stop the shutdown
                err_console.print(line, markup=False, highlight=False)

    async def main() -> object:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        # SIGHUP too: closing the terminal (or tmux window) must not orphan the children,
        # which run in their own sessions and so never see the hangup themselves
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        return await run_demo(cfg, say, stop=stop)

    try:
        summary = asyncio.run(main())
    except (OSError, RuntimeError) as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
    from farm.demo import DemoSummary

    assert isinstance(summary, DemoSummary)
    if as_json:
        click.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        err_console.print(format_summary(summary), markup=False, highlight=False)
    # 130 / -2: a child that took the demo's own SIGINT as its stop signal
    bad = {k: v for k, v in summary.exit_codes.items() if v not in (0, None, 130, -2)}
    if bad or summary.crashed:
        err_console.print(f"[bold red]failed:[/] {', '.join(sorted(set(summary.crashed)) or bad)}"
                          " ended badly (see the logs above)")
        sys.exit(1)

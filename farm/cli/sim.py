"""``distrl sim``: simulated phones as a background service (up, down, status, fault),
and the guided adb tour."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from distrl_sdk import DistRLError
from farm.cli.common import CONTEXT, fail
from farm.sim.faults import FAULT_HELP, FaultKind
from farm.sim.profiles import PROFILES
from farm.sim.spec import SCREEN_PRESETS

console = Console()
err_console = Console(stderr=True, soft_wrap=True)



@click.group("sim", context_settings=CONTEXT)
def sim() -> None:
    """Simulated Android phones that real `adb`, adbutils and DistRL drive over ADB.

    Each phone listens on a loopback port like an emulator's adbd (`adb connect
    127.0.0.1:PORT`). Phones run in a background service; `sim down` stops it.
    """


def _serve_options(f: Any) -> Any:
    opts = [
        click.option("--count", "-n", default=3, show_default=True, type=click.IntRange(1, 512),
                     help="How many phones to start."),
        click.option("--profile", "-p", default="instant", show_default=True,
                     type=click.Choice(list(PROFILES)),
                     help="Latency profile: " + "; ".join(
                         f"{p.name} = {p.description}" for p in PROFILES.values())),
        click.option("--seed", default=0, show_default=True, type=int,
                     help="Seed for everything random in the phones (repeatable runs)."),
        click.option("--base-port", default=15555, show_default=True,
                     type=click.IntRange(1024, 65535),
                     help="Port of the first phone; phone i listens on base-port + i."),
        click.option("--screen", default="phone", show_default=True,
                     type=click.Choice(list(SCREEN_PRESETS)),
                     help="phone = 1080x2400 @ 420 dpi; small = 360x800 @ 160 dpi for load tests."),
        click.option("--name", default="default", show_default=True,
                     help="Name of this sim farm, to run several side by side."),
        click.option("--as-emulator", is_flag=True,
                     help="Start the phones as emulators: adb on the odd ports the adb "
                          "server scans (5555, 5557 …, instead of --base-port), a console on "
                          "the even port below (auth token in "
                          "~/.emulator_console_auth_token), registered with your adb server "
                          "($ANDROID_ADB_SERVER_PORT or 5037) as emulator-5554 …; `adb emu "
                          "avd snapshot save|load NAME`, `adb emu kill` work."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


@sim.command("up", context_settings=CONTEXT)
@_serve_options
@click.option("--connect", is_flag=True,
              help="Also `adb connect` every phone on your adb server "
                   "($ANDROID_ADB_SERVER_PORT or 5037); `sim down` disconnects them.")
@click.option("--foreground", is_flag=True, help="Stay attached; Ctrl-C stops the phones.")
def sim_up(count: int, profile: str, seed: int, base_port: int, screen: str, name: str,
           as_emulator: bool, connect: bool, foreground: bool) -> None:
    """Start simulated phones in the background and print their serials."""
    from farm.sim import service

    if as_emulator and connect:
        raise click.UsageError("--connect is for phones reached as HOST:PORT; with "
                               "--as-emulator they register with the adb server themselves")

    argv = ["sim", "serve", "--count", str(count), "--profile", profile, "--seed", str(seed),
            "--base-port", str(base_port), "--screen", screen, "--name", name]
    if connect:
        argv.append("--connect")
    if as_emulator:
        argv.append("--as-emulator")
    down = "distrl sim down" + ("" if name == "default" else f" --name {name}")
    if foreground:
        def ready(state: dict[str, Any]) -> None:
            _print_phones(state["phones"])
            console.print(f"\n{count} phone(s) up in this process (pid {state['pid']}).\n"
                          f"Stop with:     Ctrl-C or {down}")

        opts = service.ServeOptions(count=count, profile=profile, seed=seed,
                                    base_port=base_port, screen=screen, name=name,
                                    connect=connect, as_emulator=as_emulator)
        try:
            asyncio.run(service.serve(opts, on_ready=ready))
        except service.SimServiceError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            pass
        return
    try:
        state = service.spawn_detached(argv, name)
    except service.SimServiceError as exc:
        fail(str(exc))
    _print_phones(state["phones"])
    first = state["phones"][0]["serial"]
    console.print(
        f"\n{count} phone(s) up (service pid {state['pid']}, log {service.log_file(name)}).\n"
        + ("Connected on your adb server: " + ", ".join(state["connected"]) + "\n"
           if state["connected"] else
           "Registered with your adb server as emulators (`adb devices`)\n" if as_emulator
           else f"Connect with:  adb connect {first}   (or rerun with --connect)\n")
        + f"Then e.g.:     adb -s {first} shell input keyevent HOME\n"
        + f"Stop with:     {down}"
    )


@sim.command("serve", hidden=True, context_settings=CONTEXT)
@_serve_options
@click.option("--connect", is_flag=True)
def sim_serve(count: int, profile: str, seed: int, base_port: int, screen: str, name: str,
              as_emulator: bool, connect: bool) -> None:
    """Run the phones in this process (what `sim up` starts in the background)."""
    from farm.sim import service

    opts = service.ServeOptions(count=count, profile=profile, seed=seed, base_port=base_port,
                                screen=screen, name=name, connect=connect,
                                as_emulator=as_emulator)
    try:
        asyncio.run(service.serve(opts))
    except service.SimServiceError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass


@sim.command("down", context_settings=CONTEXT)
@click.option("--name", default="default", show_default=True, help="Which sim farm.")
def sim_down(name: str) -> None:
    """Stop the phones started by `sim up` (and adb-disconnect them if it connected them)."""
    import time

    from farm.sim import service

    try:
        service.request(name, "down")
    except service.SimServiceError as exc:
        fail(str(exc))
    path = service.state_file(name)
    deadline = time.monotonic() + 15
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    console.print(f"sim farm {name!r} stopped.")


@sim.command("status", context_settings=CONTEXT)
@click.option("--name", default="default", show_default=True, help="Which sim farm.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def sim_status(name: str, as_json: bool) -> None:
    """Show the phones of a running sim farm, their foreground app and active faults."""
    from farm.sim import service

    try:
        reply = service.request(name, "status")
    except service.SimServiceError as exc:
        fail(str(exc))
    if as_json:
        click.echo(json.dumps(reply["phones"], indent=2))
    else:
        _print_phones(reply["phones"])


@sim.command("fault", context_settings=CONTEXT,
             epilog="Kinds:\n\n" + "\n\n".join(f"  {k.value}: {h}" for k, h in FAULT_HELP.items()))
@click.argument("phone")
@click.argument("kind", type=click.Choice([k.value for k in FaultKind]))
@click.option("--seconds", "-s", type=click.FloatRange(0, 86400), default=None,
              help="How long the fault lasts (kind-specific default).")
@click.option("--value", "-v", type=float, default=None,
              help="Strength: ms for slow-frames, %/min for battery-drain, °C for overheat, "
                   "% for low-battery.")
@click.option("--name", default="default", show_default=True, help="Which sim farm.")
def sim_fault(phone: str, kind: str, seconds: float | None, value: float | None,
              name: str) -> None:
    """Inject a fault into PHONE (serial, name like sim-0, or port)."""
    from farm.sim import service

    try:
        reply = service.request(name, "fault", phone=phone, kind=kind, seconds=seconds,
                                value=value)
    except service.SimServiceError as exc:
        fail(str(exc))
    console.print(f"{reply['phone']}: {reply['result']}")


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _print_phones(rows: list[dict[str, Any]]) -> None:
    table = Table()
    cells = [[r["name"], r["serial"], r["profile"], r["screen"], _short(r["focus"]),
              f"{r['battery']} %", ", ".join(r["faults"]) or "-"] for r in rows]
    heads = ("name", "serial", "profile", "screen", "foreground", "battery", "faults")
    widths = [max([len(col), *(len(c[i]) for c in cells)]) for i, col in enumerate(heads)]
    # one line per phone at any width: only the activity gives way (cut, not folded);
    # each column costs 3 cells of border and padding, the table one more
    room = console.width - 1 - 3 * len(heads) - sum(widths) + widths[4]
    for i, col in enumerate(heads):
        table.add_column(col, no_wrap=True, overflow="ellipsis",
                         max_width=max(4, room) if col == "foreground" else None,
                         min_width=widths[i] if col != "foreground" else None)
    for c in cells:
        table.add_row(*c)
    console.print(table)


def _short(component: str) -> str:
    """``pkg/pkg.Main`` → ``pkg/.Main``, as ``am`` and ``dumpsys`` shorten components."""
    pkg, sep, cls = component.partition("/")
    return f"{pkg}/{cls[len(pkg):]}" if sep and cls.startswith(pkg + ".") else component


# -- sim tour ----------------------------------------------------------------------
@sim.command("tour", context_settings=CONTEXT)
@click.option("--count", "-n", default=3, show_default=True, type=click.IntRange(1, 64),
              help="How many phones.")
@click.option("--profile", "-p", default="instant", show_default=True,
              type=click.Choice(list(PROFILES)), help="Latency profile of the phones.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for the phones.")
@click.option("--out", default=Path("runs/tour"), show_default=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Where the screenshots go.")
@click.option("--duration", type=click.FloatRange(0), default=None,
              help="Stop after this many seconds (default: run until Ctrl-C).")
def tour(count: int, profile: str, seed: int, out: Path, duration: float | None) -> None:
    """Start sim phones and drive them with the real adb: Launcher → Settings → Wi-Fi,
    printing every adb command so you can repeat it."""
    from farm.sim.tour import TourFailed, run_tour

    try:
        asyncio.run(run_tour(count=count, profile=profile, seed=seed, out_dir=out,
                             duration=duration, say=_say))
    except KeyboardInterrupt:
        console.print("Stopped.")
    except (TourFailed, DistRLError, RuntimeError, FileNotFoundError) as exc:
        fail(str(exc))

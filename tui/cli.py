"""``distrl tui`` (and ``python -m tui``): watch and operate farms over MQTT.

The farm's CLI finds this command through the ``distrl.commands`` entry-point group,
so ``farm`` never imports ``tui``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from distrl_sdk.wire import topics
from farm.broker_password import broker_password, password_file_option, url_with_password
from farm.cli.common import KEY_FILE
from tui.terminal import COLOR_CHOICES, IMAGE_CHOICES

__all__ = ["main", "tui"]

DEFAULT_BROKER = "mqtt://127.0.0.1:1883"


@click.command("tui", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--broker", default=DEFAULT_BROKER, show_default=True,
              envvar=["DISTRL_BROKER_URL", "DISTRL_BROKER"],
              help="MQTT broker URL: mqtt://[user@]host[:port] or mqtts://… (env "
                   "DISTRL_BROKER_URL, as for every command; DISTRL_BROKER still works).")
@password_file_option
@click.option("--farm", "farm", default="+", show_default=True,
              help="Farm id to watch, or + for every farm on the broker.")
@click.option("--readonly", is_flag=True,
              help="Watch only: every command (pause, quarantine, run task …) is disabled.")
@click.option("--signing-key", type=KEY_FILE,
              default=None,
              help="Operator key (`distrl keys create NAME`) that signs every command; a farm "
                   "runs only commands an operator key it trusts signed [default: the local "
                   "operator key, created if missing, which `farm up` here trusts].")
@click.option("--farm-key", "farm_keys", multiple=True, type=KEY_FILE,
              help="A farm's public key (.pub) whose signed command results to believe "
                   "(repeatable); results it did not sign are shown as rejected on the "
                   "Logs screen [default: the local farm key, which `farm up` here signs "
                   "with].")
@click.option("--thumb-rows", default=4, show_default=True, type=click.IntRange(1, 12),
              help="Height of the fleet table's thumbnails, in terminal rows.")
@click.option("--view", type=click.Choice(["wall", "list"]), default="wall", show_default=True,
              envvar="DISTRL_TUI_VIEW",
              help="The fleet as a wall of phone tiles or as a list (w switches).")
@click.option("--color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              envvar="DISTRL_TUI_COLOR",
              help="Colours: auto detects 24-bit colour (COLORTERM, the terminal, a tmux "
                   "client with RGB); truecolor forces it (tmux without COLORTERM); 256 "
                   "limits to the 256-colour palette (env DISTRL_TUI_COLOR).")
@click.option("--image", type=click.Choice(IMAGE_CHOICES), default="auto", show_default=True,
              envvar="DISTRL_TUI_IMAGE",
              help="The device screen's and the wall tiles' pictures: native draws the "
                   "real image with the terminal's graphics (Kitty, Sixel, iTerm2); "
                   "halfblock uses coloured "
                   "cells (any terminal, tmux); auto asks the terminal.")
@click.option("--crash-log", type=click.Path(dir_okay=False, path_type=Path), default=None,
              envvar="DISTRL_TUI_CRASH_LOG",
              help="If the TUI crashes, also write the traceback to this file "
                   "(env DISTRL_TUI_CRASH_LOG).")
@click.option("--quit-hint", default=None, hidden=True,
              help="What q does, for the help screen (`distrl demo`: q stops it all).")
def tui(broker: str, password_file: Path | None, farm: str, readonly: bool,
        signing_key: Path | None, farm_keys: tuple[Path, ...], thumb_rows: int,
        view: str, color: str, image: str, crash_log: Path | None,
        quit_hint: str | None) -> None:
    """Terminal UI for a DistRL farm: live device screens, learner curves, logs.

    Keys: 1 fleet, 2 learner, 3 logs, enter a device, w wall/list, / filter, s sort,
    ? help, ctrl+p command palette, q quit.
    """
    from distrl_sdk.wire.broker_url import parse_broker_url
    from tui.mqtt_source import MqttSource

    try:
        broker = url_with_password(broker, broker_password(password_file),
                                   override=password_file is not None)
        parse_broker_url(broker)
        if farm != "+":
            topics.status(farm, "x")  # the farm id's own checks (characters, reserved ids)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    signer = trusted = None
    if not readonly:  # a read-only TUI sends nothing, so it needs no key
        from farm.keys import operator_signing_key, trusted_farms

        try:
            signer = operator_signing_key(signing_key)
        except (OSError, ValueError) as e:
            raise click.BadParameter(str(e), param_hint="--signing-key") from None
        try:  # the answers to its commands
            trusted = trusted_farms(list(farm_keys))
        except (OSError, ValueError) as e:
            raise click.BadParameter(str(e), param_hint="--farm-key") from None
    if not sys.stdout.isatty():
        raise click.UsageError("the TUI needs a terminal (stdout is not a TTY)")
    from tui.app import DistrlTui
    from tui.terminal import detect_color, detect_image

    if color == "auto":
        color = detect_color()
    if image == "auto":
        image = detect_image()  # asks the terminal: before Textual takes it over
    app = DistrlTui(MqttSource(broker, farm), readonly=readonly, thumb_rows=thumb_rows,
                    crash_log=crash_log, quit_hint=quit_hint, fleet_view=view, color=color,
                    image=image, password_file=password_file, signer=signer,
                    trusted_farms=trusted)
    app.run()
    # Textual sets 1 after an unhandled exception: the caller (e.g. `distrl demo`) must
    # be able to tell a crash from a quit
    if app.return_code:
        sys.exit(app.return_code)


def main() -> None:
    tui(prog_name="python -m tui")

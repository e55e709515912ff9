"""``distrl broker``: run an embedded MQTT broker until Ctrl-C or SIGTERM, with an account
per part and a topic ACL; ``distrl broker acl`` prints that ACL for an external broker."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import signal
import socket
import sys
from pathlib import Path

import click

from distrl_sdk.wire.topics import TopicError
from distrl_sdk.wire.url_mask import mask_url
from farm.broker import BrokerStartError, EmbeddedBroker, find_mosquitto
from farm.broker_acl import BrokerAccounts, default_accounts_dir, mosquitto_acl
from farm.broker_bridge import Bridge
from farm.cli.common import CONTEXT

__all__ = ["broker"]

# SIGTERM (systemd, docker, kill) and SIGHUP (closed terminal) stop it as Ctrl-C does: the
# broker is stopped and its temp dir removed before exiting 0. Python's default SIGTERM
# action would end the process at once and leave mosquitto and its temp dir behind.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _port_free_or_exit(port: int, host: str = "127.0.0.1") -> None:
    """A taken port is the user's to change: one line and exit status 2, for either
    backend (amqtt would print two tracebacks, mosquitto a log line nobody sees)."""
    with socket.socket() as s:
        # as mosquitto and asyncio bind: connections of a broker that just died, left in
        # TIME_WAIT, must not make its port look taken to the one restarted on it
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except PermissionError:
            return  # privileged: mosquitto may still bind it; its own reason is reported
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                click.echo(f"error: --host {host} is not an address of this machine",
                           err=True)
            else:
                click.echo(f"error: port {port} on {host} is not free ({exc.strerror}); "
                           "choose another with --port (0 picks a free one)", err=True)
            sys.exit(2)


def _accounts(farms: tuple[str, ...], directory: Path | None) -> BrokerAccounts:
    try:
        if directory is None:
            return BrokerAccounts.generate(farms or ("farm",))
        return BrokerAccounts.load_or_create(directory, farms or ("farm",))
    except TopicError as exc:
        raise click.BadParameter(str(exc), param_hint="--farm") from None
    except OSError as exc:
        raise click.ClickException(f"cannot keep broker accounts in {directory}: "
                                   f"{exc.strerror or exc}") from None


_FARM_OPTION = click.option(
    "--farm", "farms", multiple=True, metavar="ID",
    help="A farm id that gets an account (farm-ID), repeatable; default: farm.")


@click.group("broker", invoke_without_command=True,
             context_settings=CONTEXT)
@click.option("--port", type=click.IntRange(0, 65535), default=1883, show_default=True,
              help="Port to listen on (0: pick a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDRESS",
              help="Address to listen on: 127.0.0.1 for one machine; an address of this "
                   "host (or 0.0.0.0 for all) for farms on other machines, which then "
                   "connect to mqtt://farm-ID@ADDRESS:PORT (accounts and ACL apply).")
@click.option("--backend", type=click.Choice(["auto", "mosquitto", "amqtt"]), default="auto",
              show_default=True,
              help="mosquitto subprocess (auto when the binary exists) or amqtt in-process.")
@_FARM_OPTION
@click.option("--accounts", "accounts_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None,
              help="Directory of the accounts' password files, kept across restarts "
                   "[default: $DISTRL_BROKER_ACCOUNTS or ~/.local/state/distrl/broker].")
@click.option("--allow-anonymous", is_flag=True,
              help="No accounts and no ACL: anyone who reaches the port may command "
                   "devices, ack trajectories and publish policies. Tests only.")
@click.option("--bridge-to", "bridge_url", default=None, metavar="URL",
              help="Also forward this site's farms (--farm) to a central broker, "
                   "mqtt[s]://farm-ID@host[:port] (?ca=PATH for TLS), and bring their "
                   "acks, commands and policies back; queued while the link is down "
                   "(mosquitto's bridge).")
@click.option("--bridge-password-file", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="The central account's password, for --bridge-to.")
@click.pass_context
def broker(ctx: click.Context, port: int, host: str, backend: str, farms: tuple[str, ...],
           accounts_dir: Path | None, allow_anonymous: bool, bridge_url: str | None,
           bridge_password_file: Path | None) -> None:
    """Run an embedded MQTT broker for farms and learners (on 127.0.0.1 unless --host).

    Anonymous clients are refused. Each part has an account whose password is in
    ACCOUNTS/USER.password (0600): `learner`, `farm-ID` for every --farm, `operator`
    (TUI commands, deploy) and `viewer` (watch only); each publishes only its own topics
    (`distrl broker acl` prints the rules). Connect with e.g.
    `distrl learner --broker mqtt://learner@127.0.0.1:1883 --password-file
    ACCOUNTS/learner.password`.

    Ctrl-C, SIGTERM or SIGHUP stop it cleanly (the broker saves its queued messages, its
    temp dir is removed) and the exit status is 0; 1 if the broker itself died."""
    if ctx.invoked_subcommand is not None:
        return
    bridge = _bridge(bridge_url, bridge_password_file, farms or ("farm",), backend)
    if backend == "mosquitto" and not find_mosquitto():
        raise click.ClickException("mosquitto not found; install it or use --backend amqtt")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise click.BadParameter(f"{host!r} is not an IP address", param_hint="--host") \
            from None
    if allow_anonymous and not ip.is_loopback:
        raise click.UsageError("--allow-anonymous only on a loopback --host: anyone who "
                               "reaches the port could command devices")
    if port:
        _port_free_or_exit(port, host)
    accounts = None if allow_anonymous else _accounts(
        farms, accounts_dir or default_accounts_dir())

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in _STOP_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        b = EmbeddedBroker(port=port or None, host=host,
                           backend="mosquitto" if backend == "mosquitto" else
                           "amqtt" if backend == "amqtt" else "auto", accounts=accounts,
                           bridge=bridge)
        try:
            try:
                await b.start()
            except (BrokerStartError, OSError) as exc:  # e.g. a port below 1024 as root
                click.echo(f"error: the {b.backend} broker could not start: {exc}", err=True)
                sys.exit(2)
            async with b:
                click.echo(f"broker ({b.backend}) listening on {b.url} — Ctrl-C to stop",
                           err=True)
                click.echo(accounts.describe() if accounts is not None else
                           "warning: anonymous clients may do anything (--allow-anonymous)",
                           err=True)
                if bridge is not None:
                    click.echo(f"bridged to {mask_url(bridge.url)} for farm(s) "
                               f"{', '.join(bridge.farms)} (queued while the link is down)",
                               err=True)
                while not stop.is_set():
                    # wakes at once on a signal, every second to see the broker is alive
                    try:
                        async with asyncio.timeout(1.0):
                            await stop.wait()
                    except TimeoutError:
                        pass
                    if not stop.is_set() and not b.running:
                        raise click.ClickException(f"{b.backend} broker exited")
                click.echo("broker stopping", err=True)
        finally:
            for sig in _STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    asyncio.run(serve())


def _bridge(url: str | None, password_file: Path | None, farms: tuple[str, ...],
            backend: str) -> Bridge | None:
    """The --bridge-to settings, checked before anything starts (exit 2 on a mistake)."""
    if url is None:
        if password_file is not None:
            raise click.UsageError("--bridge-password-file needs --bridge-to")
        return None
    if backend == "amqtt":
        raise click.UsageError("--bridge-to needs mosquitto (amqtt cannot bridge)")
    if not find_mosquitto():
        raise click.UsageError("--bridge-to needs mosquitto (apt install mosquitto)")
    password = None
    if password_file is not None:
        try:
            password = password_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise click.UsageError(f"--bridge-password-file: {exc.strerror}: "
                                   f"{password_file}") from None
    try:
        return Bridge(url, farms=list(farms), password=password)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bridge-to") from None


@broker.command("acl")
@_FARM_OPTION
def acl(farms: tuple[str, ...]) -> None:
    """Print the topic ACL as a mosquitto acl_file, for an external broker.

    The users are the ones `distrl broker` creates (learner, farm-ID, operator, viewer);
    give each a password with `mosquitto_passwd` and point `acl_file` at this output."""
    click.echo(mosquitto_acl(_accounts(farms, None).accounts), nl=False)

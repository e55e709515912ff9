"""``distrl broker``: run an embedded MQTT broker until Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys

import click

from farm.broker import BrokerStartError, EmbeddedBroker, find_mosquitto

__all__ = ["broker"]

# SIGTERM (systemd, docker, kill) and SIGHUP (closed terminal) stop it as Ctrl-C does: the
# broker is stopped and its temp dir removed before exiting 0. Python's default SIGTERM
# action would end the process at once and leave mosquitto and its temp dir behind.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _port_free_or_exit(port: int) -> None:
    """A taken port is the user's to change: one line and exit status 2, for either
    backend (amqtt would print two tracebacks, mosquitto a log line nobody sees)."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except PermissionError:
            return  # privileged: mosquitto may still bind it; its own reason is reported
        except OSError as exc:
            click.echo(f"error: port {port} on 127.0.0.1 is not free ({exc.strerror}); "
                       "choose another with --port (0 picks a free one)", err=True)
            sys.exit(2)


@click.command("broker", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--port", type=click.IntRange(0, 65535), default=1883, show_default=True,
              help="Loopback port to listen on (0: pick a free one).")
@click.option("--backend", type=click.Choice(["auto", "mosquitto", "amqtt"]), default="auto",
              show_default=True,
              help="mosquitto subprocess (auto when the binary exists) or amqtt in-process.")
def broker(port: int, backend: str) -> None:
    """Run an embedded MQTT broker on 127.0.0.1 for farms and learners.

    Ctrl-C, SIGTERM or SIGHUP stop it cleanly (the broker saves its queued messages, its
    temp dir is removed) and the exit status is 0; 1 if the broker itself died."""
    if backend == "mosquitto" and not find_mosquitto():
        raise click.ClickException("mosquitto not found; install it or use --backend amqtt")
    if port:
        _port_free_or_exit(port)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in _STOP_SIGNALS:
            loop.add_signal_handler(sig, stop.set)
        b = EmbeddedBroker(port=port or None,
                           backend="mosquitto" if backend == "mosquitto" else
                           "amqtt" if backend == "amqtt" else "auto")
        try:
            try:
                await b.start()
            except (BrokerStartError, OSError) as exc:  # e.g. a port below 1024 as root
                click.echo(f"error: the {b.backend} broker could not start: {exc}", err=True)
                sys.exit(2)
            async with b:
                click.echo(f"broker ({b.backend}) listening on {b.url} — Ctrl-C to stop",
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

"""``distrl broker``: run an embedded MQTT broker until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib

import click

from farm.broker import EmbeddedBroker, find_mosquitto

__all__ = ["broker"]


@click.command("broker", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--port", type=click.IntRange(0, 65535), default=1883, show_default=True,
              help="Loopback port to listen on (0: pick a free one).")
@click.option("--backend", type=click.Choice(["auto", "mosquitto", "amqtt"]), default="auto",
              show_default=True,
              help="mosquitto subprocess (auto when the binary exists) or amqtt in-process.")
def broker(port: int, backend: str) -> None:
    """Run an embedded MQTT broker on 127.0.0.1 for farms and learners (Ctrl-C stops it)."""
    if backend == "mosquitto" and not find_mosquitto():
        raise click.ClickException("mosquitto not found; install it or use --backend amqtt")

    async def serve() -> None:
        b = EmbeddedBroker(port=port or None,
                           backend="mosquitto" if backend == "mosquitto" else
                           "amqtt" if backend == "amqtt" else "auto")
        async with b:
            click.echo(f"broker ({b.backend}) listening on {b.url} — Ctrl-C to stop", err=True)
            while True:
                await asyncio.sleep(1)
                if not b.running:
                    raise click.ClickException(f"{b.backend} broker exited")

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest
from click.testing import CliRunner

from farm.broker import EmbeddedBroker, find_mosquitto, free_port
from farm.cli.broker import broker as broker_cmd


async def test_broker_restart_keeps_url(broker: EmbeddedBroker) -> None:
    url = broker.url
    assert broker.running
    await broker.restart()
    assert broker.running and broker.url == url
    _r, w = await asyncio.open_connection(broker.host, broker.port)
    w.close()
    await broker.stop()
    assert not broker.running


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_mosquitto_config() -> None:
    b = EmbeddedBroker(backend="mosquitto", port=12345)
    conf = b.config_text()
    for line in ["listener 12345 127.0.0.1", "allow_anonymous true", "persistence true",
                 "max_queued_messages 100000"]:
        assert line in conf
    assert "message_size_limit 8388608" in conf


def test_cli_help_and_run() -> None:
    res = CliRunner().invoke(broker_cmd, ["--help"])
    assert res.exit_code == 0 and "--backend" in res.output
    port = free_port()
    code = ("import sys; from farm.cli.broker import broker; "
            "sys.argv=['distrl-broker','--port',sys.argv[1],'--backend','amqtt']; broker()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(port)],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and "listening" not in line:
            line = proc.stderr.readline()
        assert f"127.0.0.1:{port}" in line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()

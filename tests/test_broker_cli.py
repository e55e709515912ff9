"""``distrl broker`` stops cleanly on SIGTERM, SIGINT and SIGHUP: exit status 0, no
mosquitto left running, its temp dir removed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from farm.broker import find_mosquitto

_CODE = ("import sys; from farm.cli.broker import broker; "
         "sys.argv=['distrl-broker','--port','0','--backend','mosquitto']; broker()")


def _listening_line(proc: subprocess.Popen[str]) -> str:
    """The broker's "listening on URL" line (what it prints once it serves)."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    while line and "listening" not in line:
        line = proc.stderr.readline()
    return line


def _mosquitto_child(parent: psutil.Process, timeout: float = 30.0) -> psutil.Process:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in parent.children(recursive=True):
            if "mosquitto" in child.name():
                return child
        time.sleep(0.05)  # polling for a process to appear, not synchronising on time
    raise AssertionError("no mosquitto child")


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_stops_broker_and_cleans_up(sig: signal.Signals) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _CODE], stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        line = _listening_line(proc)
        assert "listening on mqtt://127.0.0.1:" in line
        child = _mosquitto_child(psutil.Process(proc.pid))
        conf = Path(child.cmdline()[child.cmdline().index("-c") + 1])
        data_dir = conf.parent
        assert data_dir.is_dir() and data_dir.name.startswith("distrl-broker-")
        proc.send_signal(sig)
        assert proc.wait(30) == 0
        # the broker waited for mosquitto before exiting: gone, not even a zombie
        with pytest.raises(psutil.NoSuchProcess):
            child.status()
        assert not data_dir.exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_broker_dying_is_an_error() -> None:
    proc = subprocess.Popen([sys.executable, "-c", _CODE], stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        _listening_line(proc)
        assert proc.stderr is not None
        child = _mosquitto_child(psutil.Process(proc.pid))
        os.kill(child.pid, signal.SIGKILL)
        assert proc.wait(30) == 1
        assert proc.stderr.read().count("broker exited") == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_a_killed_broker_takes_mosquitto_with_it(tmp_path: Path) -> None:
    """SIGKILL of `distrl broker` (no chance to clean up): mosquitto goes too, so the
    same port and accounts serve again at once (an orphan kept the port, and a
    "killed" broker kept serving: bench/chaos.py's broker faults did nothing)."""
    args = ("--port", "0", "--backend", "mosquitto", "--accounts", str(tmp_path / "acc"))
    proc, url = _start_broker(*args)
    port = url.rsplit(":", 1)[1]
    again = None
    try:
        child = _mosquitto_child(psutil.Process(proc.pid))
        # a client connected when it dies: the broker closes first, so its side of the
        # connection lingers in TIME_WAIT, which must not make the port look taken
        client = socket.create_connection(("127.0.0.1", int(port)))
        proc.kill()
        proc.wait(30)
        assert child.wait(10) is not None or not child.is_running()
        assert client.recv(1) == b""  # the broker closed it
        client.close()
        again, url2 = _start_broker(*args[:1], port, *args[2:])
        assert url2 == url
    finally:
        for p in (proc, again):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(30)


@pytest.mark.parametrize("backend", ["amqtt", "mosquitto"])
def test_a_taken_port_is_one_line_and_exit_2(backend: str) -> None:
    if backend == "mosquitto" and find_mosquitto() is None:
        pytest.skip("no mosquitto binary")
    from click.testing import CliRunner

    from farm.cli import cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        res = CliRunner().invoke(cli, ["broker", "--port", str(port), "--backend", backend])
    assert res.exit_code == 2, res.output
    assert f"port {port} on 127.0.0.1 is not free" in res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_broker_has_accounts_and_refuses_anonymous(tmp_path: Path) -> None:
    import asyncio

    import aiomqtt

    from distrl_sdk.wire.broker_url import parse_broker_url
    from farm.broker_password import read_password_file

    accounts = tmp_path / "acc"
    code = ("import sys; from farm.cli.broker import broker; "
            "sys.argv=['distrl-broker','--port','0','--backend','mosquitto','--farm','f1',"
            f"'--accounts',{str(accounts)!r}]; broker()")
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    try:
        assert proc.stderr is not None
        url = _listening_line(proc).split("listening on ", 1)[1].split()[0]
        said = proc.stderr.readline()
        assert f"broker accounts in {accounts}: learner, farm-f1, operator, viewer" in said
        for user in ("learner", "farm-f1", "operator", "viewer"):
            assert (accounts / f"{user}.password").stat().st_mode & 0o777 == 0o600
        password = read_password_file(accounts / "learner.password")
        assert password not in said

        async def connect(user: str | None, pw: str | None) -> None:
            addr = parse_broker_url(url)
            kw = addr.client_kwargs() | ({"username": user, "password": pw} if user else {})
            async with aiomqtt.Client(**kw, timeout=5):
                pass

        asyncio.run(connect("learner", password))
        with pytest.raises(aiomqtt.MqttError):
            asyncio.run(connect(None, None))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_acl_command_prints_the_rules_the_broker_enforces() -> None:
    from click.testing import CliRunner

    from farm.broker_acl import BrokerAccounts, mosquitto_acl
    from farm.cli import cli

    res = CliRunner().invoke(cli, ["broker", "acl", "--farm", "a", "--farm", "b"])
    assert res.exit_code == 0, res.output
    assert res.output == mosquitto_acl(BrokerAccounts.default_accounts(["a", "b"]))
    bad = CliRunner().invoke(cli, ["broker", "acl", "--farm", "no/slash"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def _start_broker(*args: str) -> tuple[subprocess.Popen[str], str]:
    code = ("import sys; from farm.cli.broker import broker; "
            f"sys.argv=['distrl-broker', *{list(args)!r}]; broker()")
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    return proc, _listening_line(proc).split("listening on ", 1)[1].split()[0]


@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
def test_a_site_broker_bridges_its_farm_to_the_central_one(tmp_path: Path) -> None:
    """Two `distrl broker`s as a site and a central one: a trajectory published at the
    site by the site's farm account reaches the central learner account."""
    import asyncio

    import aiomqtt

    from distrl_sdk.wire import topics
    from distrl_sdk.wire.broker_url import parse_broker_url
    from farm.broker_password import read_password_file

    central, central_url = _start_broker("--port", "0", "--farm", "s1", "--accounts",
                                         str(tmp_path / "central"))
    site = None
    try:
        bridge_to = central_url.replace("mqtt://", "mqtt://farm-s1@")
        site, site_url = _start_broker(
            "--port", "0", "--farm", "s1", "--accounts", str(tmp_path / "site"),
            "--bridge-to", bridge_to, "--bridge-password-file",
            str(tmp_path / "central" / "farm-s1.password"))
        assert site.stderr is not None
        said = site.stderr.readline() + site.stderr.readline()
        assert f"bridged to {bridge_to} for farm(s) s1" in said, said

        def client(url: str, accounts: str, user: str) -> aiomqtt.Client:
            kw = parse_broker_url(url).client_kwargs() | {
                "username": user,
                "password": read_password_file(tmp_path / accounts / f"{user}.password")}
            return aiomqtt.Client(**kw, identifier=f"t-{accounts}-{user}", timeout=5)

        async def cross() -> bytes:
            async with client(central_url, "central", "learner") as learner, \
                    client(site_url, "site", "farm-s1") as farm:
                await learner.subscribe(topics.traj_filter(), qos=1)
                async with asyncio.timeout(30):
                    while True:  # until the bridge is up
                        await farm.publish(topics.traj("s1", "t1"), b"episode", qos=1)
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(0.3):
                                async for m in learner.messages:
                                    return bytes(m.payload)  # type: ignore[arg-type]

        assert asyncio.run(cross()) == b"episode"
    finally:
        for p in (site, central):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


def test_bridge_mistakes_are_usage_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from farm.cli import cli

    for args, says in (
            (["--bridge-password-file", "x"], "--bridge-password-file needs --bridge-to"),
            (["--bridge-to", "ftp://central"], "unsupported broker URL scheme"),
            (["--bridge-to", "mqtt://c", "--backend", "amqtt"], "needs mosquitto"),
            (["--bridge-to", "mqtt://c", "--bridge-password-file", str(tmp_path / "no")],
             "No such file")):
        res = CliRunner().invoke(cli, ["broker", "--port", "0", *args])
        assert res.exit_code == 2 and says in res.output, (args, res.output)
        assert "Traceback" not in res.output


def test_host_mistakes_are_one_line_and_exit_2() -> None:
    """--host takes an address of this machine; anonymous access stays loopback-only."""
    from click.testing import CliRunner

    from farm.cli import cli

    for args, says in (
            (["--host", "central.example"], "is not an IP address"),
            (["--host", "192.0.2.1", "--port", "18830"], "not an address of this machine"),
            (["--host", "0.0.0.0", "--allow-anonymous"], "only on a loopback --host")):
        res = CliRunner().invoke(cli, ["broker", "--port", "0", *args])
        assert res.exit_code == 2 and says in res.output, (args, res.output)
        assert "Traceback" not in res.output

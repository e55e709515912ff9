"""Broker passwords: ``--password-file`` and ``DISTRL_BROKER_PASSWORD`` for the commands
that connect to a broker, and never a password in what they print or log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from distrl_sdk.wire.broker_url import parse_broker_url
from distrl_sdk.wire.url_mask import mask_url
from farm.broker import EmbeddedBroker, find_mosquitto
from farm.broker_password import (
    PASSWORD_ENV,
    broker_password,
    read_password_file,
    url_with_password,
)
from farm.cli import cli as main

REPO = Path(__file__).resolve().parents[1]
SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize(("url", "shown"), [
    ("mqtt://u:hunter2@h:1883", "mqtt://u:****@h:1883"),
    ("mqtts://u:p%40ss@h?ca=/x.pem", "mqtts://u:****@h?ca=/x.pem"),
    ("mqtt://u:p@[::1]:99", "mqtt://u:****@[::1]:99"),
    ("u:p@h", "u:****@h"),
    ("mqtt://u:p@h:notaport", "mqtt://u:****@h:notaport"),  # too broken to parse
    ("mqtt://u@h", "mqtt://u@h"),
    ("h:1883", "h:1883"),
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_password_sources(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text(SECRET + "\n")
    assert read_password_file(f) == SECRET
    assert broker_password(f, env={PASSWORD_ENV: "other"}) == SECRET
    assert broker_password(None, env={PASSWORD_ENV: "other"}) == "other"
    assert broker_password(None, env={}) is None
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        read_password_file(tmp_path / "empty")
    with pytest.raises(ValueError, match="cannot read"):
        read_password_file(tmp_path / "missing")
    url = url_with_password("mqtt://bob@h:1", "p@ss/w:rd")
    addr = parse_broker_url(url)
    assert (addr.username, addr.password, addr.port) == ("bob", "p@ss/w:rd", 1)
    assert url_with_password("mqtt://bob:old@h", "new", override=False) == "mqtt://bob:old@h"
    with pytest.raises(ValueError, match="user name"):
        url_with_password("mqtt://h", "x")


def test_bad_password_file_is_a_usage_error(tmp_path: Path) -> None:
    for args in (["learner", "--broker", "mqtt://u@127.0.0.1:1", "--password-file",
                  str(tmp_path / "nope")],
                 ["farm", "status", "--broker", "mqtt://u@127.0.0.1:1", "--password-file",
                  str(tmp_path / "nope")],
                 ["farm", "up", "--broker", "mqtt://u@127.0.0.1:1", "--password-file",
                  str(tmp_path / "nope")]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert "cannot read password file" in res.output and "Traceback" not in res.output


def _run_learner(broker: str, tmp: Path, *extra: str, env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "farm.cli", "learner", "--broker", broker, "--run-dir",
           str(tmp / "run"), "--duration", "1.5", "--progress-every", "0.5", "-v",
           "--json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow
@pytest.mark.skipif(find_mosquitto() is None, reason="no mosquitto binary")
async def test_learner_never_prints_its_password(tmp_path: Path) -> None:
    pw = tmp_path / "pw"
    pw.write_text(SECRET + "\n")
    pw.chmod(0o600)
    async with EmbeddedBroker(backend="mosquitto") as b:  # accepts any credentials
        hostport = b.url.removeprefix("mqtt://")
        runs = [
            _run_learner(f"mqtt://trainer:{SECRET}@{hostport}", tmp_path / "a"),
            _run_learner(f"mqtt://trainer@{hostport}", tmp_path / "b", "--password-file",
                         str(pw)),
            _run_learner(f"mqtt://trainer@{hostport}", tmp_path / "c",
                         env={PASSWORD_ENV: SECRET}),
        ]
    for r in runs:
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-2000:]
        assert f"broker mqtt://trainer:****@{hostport}" in out  # the start-up line
        assert SECRET not in out


@pytest.mark.parametrize("argv", [
    ["learner", "--duration", "1"], ["farm", "status"], ["traj", "tail", "--count", "1"],
    ["tui"], ["deploy", "--device", "x", "--policy", "random", "go"]])
def test_every_command_reads_the_broker_from_DISTRL_BROKER_URL(argv: list[str]) -> None:
    """One environment variable for every command that talks to a broker (the TUI also
    still reads its old DISTRL_BROKER). A URL no command can use shows that the variable
    was read: each refuses it in one line, exit status 2."""
    res = CliRunner().invoke(main, argv, env={"DISTRL_BROKER_URL": "ftp://nowhere:1"})
    assert res.exit_code == 2, (argv, res.output)
    assert "ftp" in res.output and "Traceback" not in res.output

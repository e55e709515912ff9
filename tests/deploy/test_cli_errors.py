"""``distrl deploy`` mistakes: a clear message, a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from farm.broker import free_port
from farm.cli import cli
from tests.test_cli import distrl


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, ["deploy", *args])


def no_traceback(res: Result) -> None:
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output


@pytest.mark.parametrize(("args", "needle"), [
    (["x", "-d", "s", "-p", "/nonexistent/ckpt"], "no such checkpoint directory"),
    (["x", "-d", "s", "-p", "oracle"], "--policy oracle replays a task's solution"),
    (["-d", "s", "-p", "random"], "give an INSTRUCTION"),
    (["x", "-p", "random"], "Missing option '--device'"),
    (["x", "-d", "s", "-p", "random", "--confirm", "--json"], "--confirm needs a person"),
    (["x", "-d", "s", "-p", "random", "--task", "settings.wifi_of"],
     "did you mean settings.wifi_off"),
])
def test_usage_mistakes(args: list[str], needle: str) -> None:
    res = run(*args)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    no_traceback(res)


@pytest.mark.slow  # load_policy imports torch
def test_bad_checkpoints(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = run("x", "-d", "s", "-p", str(empty))
    assert res.exit_code == 2 and "is not a policy checkpoint (needs policy.json" in res.output
    no_traceback(res)
    (empty / "policy.json").write_text("{not json")
    (empty / "policy.safetensors").write_bytes(b"junk")
    res = run("x", "-d", "s", "-p", str(empty))
    assert res.exit_code == 2 and "policy.json: not a policy description" in res.output
    (empty / "policy.json").write_text(json.dumps({"kind": "nope", "config": {}}))
    res = run("x", "-d", "s", "-p", str(empty))
    assert res.exit_code == 2 and "unknown policy kind 'nope'" in res.output
    a_file = tmp_path / "f.safetensors"
    a_file.write_bytes(b"")
    res = run("x", "-d", "s", "-p", str(a_file))
    assert res.exit_code == 2 and "not a directory" in res.output
    no_traceback(res)


def test_bad_guard_file(tmp_path: Path) -> None:
    g = tmp_path / "g.toml"
    g.write_text("max_steps = -1\n")
    res = run("x", "-d", "s", "-p", "random", "--guard", str(g))
    assert res.exit_code == 2 and "g.toml: max_steps: Input should be greater" in res.output
    no_traceback(res)


def test_no_adb_server() -> None:
    res = run("x", "-d", "emulator-5554", "-p", "random", "--adb-port", str(free_port()))
    assert res.exit_code == 2 and "no adb server answers on 127.0.0.1:" in res.output
    no_traceback(res)


@pytest.mark.slow
def test_unknown_device_as_a_user_sees_it(private_adb: Any) -> None:
    proc = distrl("deploy", "Turn off Wi-Fi", "--device", "R58M00NOPE", "--policy", "random",
                  "--adb-port", str(private_adb.port))
    assert proc.returncode == 2, proc.stderr
    assert "error: device 'R58M00NOPE' is not on the adb server at 127.0.0.1:" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    gone = distrl("deploy", "x", "--device", f"127.0.0.1:{free_port()}", "--policy", "random",
                  "--adb-port", str(private_adb.port))
    assert gone.returncode == 2 and "cannot `adb connect 127.0.0.1:" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr


def test_exit_status_follows_the_task_when_there_is_one() -> None:
    """`deploy --task` printed "task: SUCCESS" and exited 1 when the agent ran on to its
    step limit after the task was done: with a task, its verdict is the status."""
    from farm.cli.deploy import deploy_exit_status

    assert deploy_exit_status("step-limit", True) == 0
    assert deploy_exit_status("completed", False) == 1
    assert deploy_exit_status("refused", True) == 3
    assert deploy_exit_status("declined", None) == 3
    assert deploy_exit_status("completed", None) == 0
    assert deploy_exit_status("time-limit", None) == 1
    assert deploy_exit_status("device-error", None) == 1

"""`distrl tasks …` as a user runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from farm.sim.adbhost import PrivateAdbServer
from tests.test_cli import distrl

FIXTURES = Path(__file__).parent / "fixtures"


def test_list_and_show_json() -> None:
    proc = distrl("tasks", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    names = {t["name"] for t in json.loads(proc.stdout)}
    assert {"settings.wifi_off", "settings.search"} <= names
    show = distrl("tasks", "show", "settings.search", "--json")
    info = json.loads(show.stdout)
    assert info["apps"] == ["com.android.settings"] and len(info["test"]) == 3
    assert all(i.startswith('Search the settings for "') for i in info["train"] + info["test"])
    table = distrl("tasks", "list", env={"COLUMNS": "200"})
    row = next(ln for ln in table.stdout.splitlines() if "settings.airplane_on" in ln)
    assert "toggle, easy" in row, row  # the tags column: "the easy tier" is a tag
    missing = distrl("tasks", "show", "settings.wifi_of")
    assert missing.returncode == 2 and "did you mean settings.wifi_off" in missing.stderr


def test_validate_names_file_line_and_field() -> None:
    proc = distrl("tasks", "validate", str(FIXTURES / "bad_tasks.toml"))
    assert proc.returncode == 1
    assert "bad_tasks.toml:8: task[0].setup[0].retries: Input should be less than or equal to 10" \
        in proc.stderr
    # and, in the same run, the evaluator's own problem (every kind of error at once)
    assert "bad_tasks.toml:9: task[0].success.value: required by evaluator 'setting'" \
        in proc.stderr
    ok = distrl("tasks", "validate", str(FIXTURES / "plugin_tasks.toml"))
    assert ok.returncode == 0 and "1 valid task(s), 0 problem(s)" in ok.stdout
    everything = distrl("tasks", "validate")
    assert everything.returncode == 0, everything.stderr


def test_validate_reports_evaluator_errors_with_lines(tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text((FIXTURES / "bad_tasks.toml").read_text().replace("retries = 99", ""))
    proc = distrl("tasks", "validate", str(bad))
    assert proc.returncode == 1
    assert "t.toml:9: task[0].success.value: required by evaluator 'setting'" in proc.stderr


@pytest.mark.slow
def test_run_uses_a_plugin_evaluator_on_a_sim_phone() -> None:
    proc = distrl("tasks", "run", "fixture.display_via_logcat", "--sim", "--json",
                  "--tasks-path", str(FIXTURES / "plugin_tasks.toml"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "success" and result["reward"] == 1.0, result
    assert result["actions"][0] == '{"action_type": "open_app", "app_name": "Settings"}'


@pytest.mark.slow
def test_run_random_policy_and_bad_usage() -> None:
    proc = distrl("tasks", "run", "settings.wifi_off", "--sim", "--policy", "random",
                  "--episodes", "2", "--seed", "3", timeout=120)
    assert "settings.wifi_off: 0/2 successful with the random policy" in proc.stdout, proc.stdout
    assert proc.returncode == 1, proc.stderr  # the task did not succeed: 1, as documented
    both = distrl("tasks", "run", "settings.wifi_off", "--sim", "--device", "x")
    assert both.returncode == 2 and "exactly one of --device SERIAL or --sim" in both.stderr


def test_run_on_a_device_the_adb_server_does_not_list(private_adb: PrivateAdbServer) -> None:
    port = private_adb.port
    proc = distrl("tasks", "run", "settings.wifi_off", "--device", "127.0.0.1:1",
                  "--adb-port", str(port))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "device 127.0.0.1:1 is not connected on the adb server at port" in proc.stderr
    assert "Traceback" not in proc.stderr and "ABORTED" not in proc.stdout


def test_run_shows_a_progress_bar_on_a_terminal() -> None:
    """On a terminal, `tasks run -n N` keeps a bar (done/N, successes, time left) under
    the episode lines; piped output (every other test here) has none."""
    import os
    import pty
    import subprocess

    from tests.test_cli import DISTRL

    leader, follower = pty.openpty()
    proc = subprocess.Popen([DISTRL, "tasks", "run", "settings.wifi_off", "--sim", "-n", "3"],
                            stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                            env={**os.environ, "COLUMNS": "160", "TERM": "xterm"})
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))  # colours
    assert "3/3 successful with the oracle policy" in text, text
    assert re.search(r"[0-3]/3 +[0-3] successful", text), text  # the bar, drawn

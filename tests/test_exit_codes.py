"""The README's exit-status promise, command by command: a user mistake is one line on
stderr and exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import cli

MISTAKES: list[tuple[str, list[str]]] = [
    ("farm up: bad mode", ["farm", "up", "--mode", "bogus"]),
    ("farm up: negative phones", ["farm", "up", "--sim", "-1", "--duration", "1"]),
    ("farm up: bad broker URL", ["farm", "up", "--broker", "ftp://x", "--duration", "1"]),
    ("farm up: missing config", ["farm", "up", "--config", "{tmp}/nope.toml"]),
    ("farm status: bad broker URL", ["farm", "status", "--broker", "ftp://x"]),
    ("traj tail: zero count", ["traj", "tail", "--broker", "mqtt://127.0.0.1:1", "-n", "0"]),
    ("learner: missing config", ["learner", "--config", "{tmp}/nope.toml"]),
    ("learner: missing init checkpoint", ["learner", "--init", "{tmp}/nope", "--duration", "1"]),
    ("demos record: no phones", ["demos", "record", "--out", "{tmp}/d"]),
    ("demos record: unknown task", ["demos", "record", "--task", "nope", "--sim", "1",
                                    "--out", "{tmp}/d"]),
    ("sft: missing demos", ["sft", "--demos", "{tmp}/nope", "--policy", "uitree",
                            "--out", "{tmp}/s"]),
    ("eval: missing checkpoint", ["eval", "--policy", "{tmp}/nope", "--sim", "1"]),
    ("eval: unknown task", ["eval", "--policy", "random", "--sim", "1", "--task", "nope"]),
    ("deploy: missing checkpoint", ["deploy", "--device", "x", "--policy", "{tmp}/nope", "go"]),
    ("deploy: oracle without a task", ["deploy", "--device", "x", "--policy", "oracle", "go"]),
    ("deploy: unknown task", ["deploy", "--device", "x", "--policy", "random", "--task",
                              "nope"]),
    ("config show: missing file", ["config", "show", "--config", "{tmp}/nope.toml"]),
    ("broker: port out of range", ["broker", "--port", "99999"]),
    ("tasks show: unknown task", ["tasks", "show", "nope"]),
    ("tasks run: unknown task", ["tasks", "run", "nope", "--sim"]),
    ("tasks validate: missing file", ["tasks", "validate", "{tmp}/nope.toml"]),
    ("demo: unknown task", ["demo", "--headless", "--task", "nope"]),
    ("demo: json without headless", ["demo", "--json"]),
    ("tui: bad broker URL", ["tui", "--broker", "ftp://x"]),
    ("sim fault: unknown kind", ["sim", "fault", "127.0.0.1:1", "melt"]),
    ("unknown command", ["frobnicate"]),
    ("keys create: bad name", ["keys", "create", "a b", "--dir", "{tmp}/k"]),
    ("farm up: missing learner key", ["farm", "up", "--learner-key", "{tmp}/nope.pub",
                                      "--duration", "1"]),
    ("farm up: missing operator key", ["farm", "up", "--operator-key", "{tmp}/nope.pub",
                                       "--duration", "1"]),
    ("tui: missing signing key", ["tui", "--signing-key", "{tmp}/nope.key"]),
    ("tui: missing farm key", ["tui", "--farm-key", "{tmp}/nope.pub"]),
    ("learner: missing signing key", ["learner", "--signing-key", "{tmp}/nope.key",
                                      "--duration", "1"]),
    ("deploy: missing learner key", ["deploy", "--device", "x", "--policy", "random",
                                     "--learner-key", "{tmp}/nope.pub", "go"]),
    ("broker: host not an address", ["broker", "--host", "central.example"]),
    ("broker: anonymous off loopback", ["broker", "--host", "0.0.0.0", "--allow-anonymous"]),
    ("learner: zero processes", ["learner", "--nproc", "0", "--duration", "1"]),
    ("traj export: not a run dir", ["traj", "export", "{tmp}", "--out", "{tmp}/x"]),
    ("sim up: emulator and connect", ["sim", "up", "--as-emulator", "--connect"]),
    ("serve: no policy given", ["serve", "--port", "0"]),
    ("serve: missing checkpoint", ["serve", "--port", "0", "--init", "{tmp}/nope"]),
    ("serve: config not JSON", ["serve", "--port", "0", "--policy-config", "{"]),
    ("serve: not a vlm config", ["serve", "--port", "0", "--policy-config", '{"x": 1}']),
    ("farm up: remote without a server", ["farm", "up", "--policy", "remote",
                                          "--duration", "1"]),
    ("farm up: server not http", ["farm", "up", "--policy", "remote", "--inference-url",
                                  "ftp://x", "--duration", "1"]),
]


@pytest.mark.parametrize(("what", "argv"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_a_user_mistake_exits_2_without_a_traceback(what: str, argv: list[str],
                                                    tmp_path: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    res = CliRunner().invoke(cli, args)
    out = res.output
    assert "Traceback" not in out, (what, out)
    assert res.exit_code == 2, (what, res.exit_code, out[-600:], res.exception)


@pytest.mark.parametrize(("policy", "code"), [("oracle", 0), ("random", 1)])
def test_tasks_run_exits_with_the_episodes_verdict(policy: str, code: int) -> None:
    """0 when every episode succeeded, 1 when one did not (it printed 0/3 and exited 0)."""
    res = CliRunner().invoke(cli, ["tasks", "run", "settings.wifi_off", "--sim",
                                   "--policy", policy, "-n", "2", "--seed", "4"])
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output


def test_keys_that_are_not_keys_exit_2(tmp_path: Path) -> None:
    """A file where a key should be (a config, a truncated copy): said so, exit 2."""
    junk = tmp_path / "learner.pub"
    junk.write_text("not a key\n")
    for argv in (["farm", "up", "--learner-key", str(junk), "--duration", "1"],
                 ["learner", "--signing-key", str(junk), "--duration", "1",
                  "--run-dir", str(tmp_path / "run")],
                 ["tui", "--farm-key", str(junk)],
                 ["learner", "--farm-key-for", "f1", str(junk), "--duration", "1",
                  "--run-dir", str(tmp_path / "run")]):
        res = CliRunner().invoke(cli, argv)
        assert res.exit_code == 2 and "Traceback" not in res.output, res.output
        assert "learner.pub" in res.output, res.output


def test_keys_create_then_list(tmp_path: Path) -> None:
    import json

    d = str(tmp_path / "k")
    made = CliRunner().invoke(cli, ["keys", "create", "farm-a", "--dir", d])
    assert made.exit_code == 0, made.output
    again = CliRunner().invoke(cli, ["keys", "create", "farm-a", "--dir", d])
    assert again.exit_code == 2 and "exists" in again.output
    listed = CliRunner().invoke(cli, ["keys", "list", "--dir", d, "--json"])
    rows = json.loads(listed.output)
    assert [(r["name"], r["private"]) for r in rows] == [("farm-a", True)]
    assert rows[0]["key_id"] in made.output


def test_a_key_bound_to_a_bad_farm_id_exits_2(tmp_path: Path) -> None:
    from distrl_sdk.wire.signing import SigningKey

    SigningKey.generate("farm").save(tmp_path / "farm.key")
    res = CliRunner().invoke(cli, ["learner", "--farm-key-for", "no/slash",
                                   str(tmp_path / "farm.pub"), "--duration", "1",
                                   "--run-dir", str(tmp_path / "run")])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert "farm id" in res.output, res.output

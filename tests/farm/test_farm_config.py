"""The farm config: precedence flags > env > file > defaults, sources, errors, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from distrl_sdk.registry import TaskRegistry
from farm.cli import cli
from farm.config import (
    FIELDS,
    ConfigError,
    effective_broker_url,
    env_name,
    fields_help,
    load_settings,
    masked,
    select_tasks,
)
from farm.transport import parse_broker_url

TOML = """
farm_id = "lab-1"
[broker]
url = "mqtt://broker.lab:1884"
username = "farm"
password = "s3cret"
[adb]
port = 5038
targets = ["10.0.0.5:5555"]
[tasks]
globs = ["settings.*"]
[collect]
mode = "sync"
duration_s = 30
[live]
frames_hz = 0.5
[lifecycle]
heartbeat_s = 4
"""


def write(tmp: Path, text: str = TOML, name: str = "farm.toml") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def test_defaults_without_anything() -> None:
    loaded = load_settings(None, env={})
    s = loaded.settings
    assert s.farm_id == "farm" and s.broker.url is None and s.adb.port == 5037
    assert s.live.frames_hz == 1.0 and s.live.status_hz == 2.0
    assert set(loaded.sources.values()) == {"default"} and set(loaded.sources) == set(FIELDS)
    assert s.spool_path() == Path("runs/spool/farm")


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    f = write(tmp_path)
    env = {"DISTRL_FARM_ID": "from-env", "DISTRL_COLLECT_MODE": "async",
           "DISTRL_ADB_PORT": "6000", "DISTRL_ADB_DEVICES": "a1, b2,,"}
    loaded = load_settings(f, env=env, flags={"adb.port": (7000, "--adb-port"),
                                              "collect.seed": None})
    s, src = loaded.settings, loaded.sources
    assert s.adb.port == 7000 and src["adb.port"] == "flag --adb-port"  # flag beats env
    assert s.farm_id == "from-env" and src["farm_id"] == "env DISTRL_FARM_ID"  # env beats file
    assert s.collect.mode == "async" and src["collect.mode"] == "env DISTRL_COLLECT_MODE"
    assert s.adb.devices == ["a1", "b2"]  # comma-separated lists
    assert s.collect.duration_s == 30 and src["collect.duration_s"] == f"file {f}"
    assert s.lifecycle.to_lifecycle().heartbeat_s == 4
    assert s.collect.seed == 0 and src["collect.seed"] == "default"  # None = not given
    assert s.live.frames_hz == 0.5 and s.tasks.globs == ["settings.*"]


def test_config_file_from_env_and_adb_server_port(tmp_path: Path) -> None:
    f = write(tmp_path, "[sim]\ncount = 2\n")
    loaded = load_settings(None, env={"DISTRL_CONFIG": str(f), "ANDROID_ADB_SERVER_PORT": "5555"})
    assert loaded.settings.sim.count == 2 and loaded.path == f
    assert loaded.settings.adb.port == 5555
    assert loaded.sources["adb.port"] == "env ANDROID_ADB_SERVER_PORT"
    # DISTRL_ADB_PORT still wins over the adb convention
    loaded = load_settings(None, env={"ANDROID_ADB_SERVER_PORT": "5555",
                                      "DISTRL_ADB_PORT": "5600"})
    assert loaded.settings.adb.port == 5600


@pytest.mark.parametrize(("text", "expect"), [
    ("[adb]\nport = 70000\n", "adb.port: Input should be less than or equal to 65535"),
    ("[adb]\nprot = 5037\n", "adb.prot: unknown field (did you mean 'port'?)"),
    ("[brokr]\nurl = 'x'\n", "brokr: unknown field or section (did you mean 'broker'?)"),
    ("[broker]\nurl = 'ftp://x'\n", "broker.url: unsupported broker URL scheme"),
    ("[collect]\nmode = 'fast'\n", "collect.mode: Input should be 'async' or 'sync'"),
    ("[adb]\ntargets = ['nohost']\n", "adb.targets: 'nohost' is not host:port"),
    ("farm_id = 'a/b'\n", "farm_id: bad farm id"),
    ("broker = 3\n", "broker: expected a [broker] table"),
    ("[sim]\nprofile = 'turbo'\n", "sim.profile: unknown profile 'turbo'"),
    ("[live\n", "TOML syntax error"),
])
def test_bad_files_name_file_and_field(tmp_path: Path, text: str, expect: str) -> None:
    f = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_settings(f, env={})
    assert str(err.value).startswith(f"{f}: ") and expect in str(err.value), str(err.value)


def test_bad_env_and_flag_values_name_their_origin(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"DISTRL_LIVE_FRAMES_HZ \(live.frames_hz\): Input "
                                          r"should be a valid number"):
        load_settings(None, env={"DISTRL_LIVE_FRAMES_HZ": "often"})
    with pytest.raises(ConfigError, match=r"--sim \(sim.count\): Input should be less than"):
        load_settings(None, env={}, flags={"sim.count": (999, "--sim")})
    with pytest.raises(ConfigError, match="no such config file"):
        load_settings(tmp_path / "missing.toml", env={})


def test_broker_url_folds_credentials_and_masks_them(tmp_path: Path) -> None:
    s = load_settings(write(tmp_path), env={}).settings
    url = effective_broker_url(s.broker)
    assert url is not None
    addr = parse_broker_url(url)
    assert (addr.hostname, addr.port, addr.username, addr.password) == \
        ("broker.lab", 1884, "farm", "s3cret")
    tls = load_settings(None, env={"DISTRL_BROKER_URL": "mqtt://h:8883",
                                   "DISTRL_BROKER_TLS": "true",
                                   "DISTRL_BROKER_CA_FILE": "/etc/ca.pem"}).settings
    addr = parse_broker_url(effective_broker_url(tls.broker) or "")
    assert addr.tls and addr.ca_file == "/etc/ca.pem" and addr.port == 8883
    m = masked(load_settings(None, env={"DISTRL_BROKER_URL": "mqtt://u:pw@h:1",
                                        "DISTRL_BROKER_PASSWORD": "x"}).settings)
    assert m["broker"]["password"] == "****" and "pw" not in m["broker"]["url"]


def test_task_selection_by_names_globs_tags() -> None:
    reg = list(TaskRegistry.discover())
    load = load_settings(None, env={"DISTRL_TASKS_GLOBS": "settings.*",
                                    "DISTRL_TASKS_NAMES": "chrome.search"}).settings
    names = [t.name for t in select_tasks(load.tasks, reg)]
    assert "chrome.search" in names and all(n.startswith("settings.") or n == "chrome.search"
                                            for n in names) and len(names) > 2
    tagged = load_settings(None, env={"DISTRL_TASKS_TAGS": "alarm"}).settings
    assert all("alarm" in t.tags for t in select_tasks(tagged.tasks, reg))
    assert len(select_tasks(load_settings(None, env={}).settings.tasks, reg)) == len(reg)
    bad = load_settings(None, env={"DISTRL_TASKS_NAMES": "chrome.serch",
                                   "DISTRL_TASKS_TAGS": "nope"}).settings
    with pytest.raises(ConfigError, match=r"did you mean 'chrome\.search'") as err:
        select_tasks(bad.tasks, reg)
    assert "no task has tag 'nope'" in str(err.value)


def test_every_field_is_documented() -> None:
    text = fields_help()
    for key, fi in FIELDS.items():
        assert fi.description, f"{key} has no description"
        assert env_name(key) in text


def test_cli_config_show_json_and_table(tmp_path: Path) -> None:
    f = write(tmp_path)
    r = CliRunner().invoke(cli, ["config", "show", "--config", str(f), "--json"],
                           env={"DISTRL_FARM_ID": "envfarm"})
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["config"]["farm_id"] == "envfarm"
    assert out["sources"]["farm_id"] == "env DISTRL_FARM_ID"
    assert out["sources"]["collect.mode"] == f"file {f}"
    assert out["config"]["broker"]["password"] == "****"
    assert "s3cret" not in r.output
    r = CliRunner().invoke(cli, ["config", "show", "--config", str(f)])
    assert r.exit_code == 0 and "s3cret" not in r.output and "lab-1" in r.output
    assert "collect.mode" in r.output
    r = CliRunner().invoke(cli, ["config", "show", "--help"])
    assert "DISTRL_LIVE_FRAMES_HZ" in r.output and "DISTRL_BROKER_URL" in r.output


def _distrl(*args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "farm.cli", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **env})


@pytest.mark.slow
def test_cli_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    f = write(tmp_path, "[adb]\nport = 'x'\n")
    for args in (["config", "show", "--config", str(f)], ["farm", "up", "--config", str(f)]):
        p = _distrl(*args)
        assert p.returncode == 2, p.stderr
        assert f"{f}: adb.port" in p.stderr and "Traceback" not in p.stderr
    p = _distrl("farm", "up", "--sim", "0", "--frames-hz", "-1")
    assert p.returncode == 2 and "--frames-hz (live.frames_hz)" in p.stderr


@pytest.mark.slow
def test_farm_up_runs_from_a_config_file(tmp_path: Path) -> None:
    f = write(tmp_path, f"""
farm_id = "cfgfarm"
[sim]
count = 2
[tasks]
names = ["settings.wifi_off"]
[collect]
duration_s = 30
flush_timeout_s = 1
spool_dir = "{tmp_path / 'spool'}"
[live]
frames_hz = 0
""")
    p = _distrl("farm", "up", "--config", str(f), "--duration", "5", "--json", timeout=90,
                DISTRL_FARM_ID="envfarm")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["farm_id"] == "envfarm"  # env over file
    assert summary["episodes"] > 0 and summary["elapsed_s"] < 20  # the flag's 5 s, not 30
    assert summary["frames_sent"] == 0
    assert (tmp_path / "spool").is_dir()

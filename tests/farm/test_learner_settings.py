"""One configuration scheme for every role: the learner reads the same file as the farm
(its [learner] table), DISTRL_LEARNER_<FIELD> variables and flags, with sources, and
`distrl config show --role learner` prints them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from farm.cli import cli
from farm.config import ConfigError, load_settings
from farm.learner.service import LearnerConfig
from farm.learner.settings import (
    LEARNER_FIELDS,
    learner_env_name,
    load_learner_settings,
    masked_learner,
)

SHARED = """\
farm_id = "lab-1"
[collect]
policy = "learned"
[learner]
publish_every = 7
algorithm = "digirl"
algo_config = {gamma = 0.9}
"""


def test_one_file_serves_both_roles(tmp_path: Path) -> None:
    f = tmp_path / "distrl.toml"
    f.write_text(SHARED)
    farm = load_settings(f, env={})
    assert farm.settings.farm_id == "lab-1" and farm.settings.collect.policy == "learned"
    learner = load_learner_settings(f, env={})
    assert learner.config.publish_every == 7 and learner.config.algorithm == "digirl"
    assert learner.config.algo_config == {"gamma": 0.9}
    assert learner.sources["publish_every"] == f"file {f}"
    assert learner.sources["run_dir"] == "default"


def test_layers_flags_over_env_over_file(tmp_path: Path) -> None:
    f = tmp_path / "distrl.toml"
    f.write_text(SHARED)
    env = {"DISTRL_LEARNER_PUBLISH_EVERY": "9", "DISTRL_BROKER_URL": "mqtt://h:1884",
           "DISTRL_LEARNER_DEMOS": "a, b", "DISTRL_LEARNER_POLICY_CONFIG": '{"seed": 3}',
           "DISTRL_LEARNER_MAX_LAG": "", "DISTRL_CONFIG": str(f)}
    got = load_learner_settings(env=env, flags={"algorithm": ("aride", "--algo"),
                                                "nproc": (None, "--nproc")})
    c = got.config
    assert c.publish_every == 9 and got.sources["publish_every"] == \
        "env DISTRL_LEARNER_PUBLISH_EVERY"
    assert c.broker_url == "mqtt://h:1884" and got.sources["broker_url"] == \
        "env DISTRL_BROKER_URL"
    assert c.demos == [Path("a"), Path("b")] and c.policy_config == {"seed": 3}
    assert c.max_lag is None
    assert c.algorithm == "aride" and got.sources["algorithm"] == "flag --algo"
    assert c.nproc == 1 and got.sources["nproc"] == "default"  # None: not given
    assert got.path == f  # $DISTRL_CONFIG, as the farm reads it


def test_every_field_has_one_variable() -> None:
    names = [learner_env_name(k) for k in LEARNER_FIELDS]
    assert len(set(names)) == len(names)
    assert learner_env_name("broker_url") == "DISTRL_BROKER_URL"  # shared with the farm
    assert all(n.startswith("DISTRL_LEARNER_") for k, n in zip(LEARNER_FIELDS, names,
                                                                strict=True)
               if k != "broker_url")
    assert set(LEARNER_FIELDS) == set(LearnerConfig.model_fields)


@pytest.mark.parametrize(("env", "text", "words"), [
    ({"DISTRL_LEARNER_NPROC": "zero"}, "", ["DISTRL_LEARNER_NPROC", "nproc", "integer"]),
    ({"DISTRL_LEARNER_ALGO_CONFIG": "{"}, "", ["DISTRL_LEARNER_ALGO_CONFIG", "JSON"]),
    ({}, "[learner]\npublish_evry = 3\n", ["publish_evry", "did you mean 'publish_every'"]),
    ({}, "[learner]\nnproc = 0\n", ["nproc", "greater than or equal to 1"]),
    ({}, "learner = 3\n", ["[learner] must be a table"]),
    # every problem of a file at once: the unknown key and the bad value
    ({}, "[learner]\nalgo = 'x'\npublish_every = 0\n",
     ["algo: unknown learner field", "'algorithm'", "publish_every", "greater than"]),
])
def test_mistakes_name_the_variable_or_file_and_field(tmp_path: Path, env: dict[str, str],
                                                      text: str, words: list[str]) -> None:
    path = None
    if text:
        path = tmp_path / "c.toml"
        path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_learner_settings(path, env=env)
    for w in words:
        assert w in str(err.value)


def test_an_older_learner_file_of_top_level_keys_still_loads(tmp_path: Path) -> None:
    f = tmp_path / "learner.toml"
    f.write_text('publish_every = 3\nrun_dir = "r"\n')
    assert load_learner_settings(f, env={}).config.publish_every == 3


def test_config_show_role_learner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "distrl.toml"
    f.write_text(SHARED + 'serve_api_key = "k3y"\n')
    monkeypatch.setenv("DISTRL_BROKER_URL", "mqtt://u:s3cret@h:1883")
    monkeypatch.setenv("DISTRL_LEARNER_NPROC", "2")
    res = CliRunner().invoke(cli, ["config", "show", "--role", "learner", "--config", str(f),
                                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["config"]["nproc"] == 2 and doc["sources"]["nproc"] == "env DISTRL_LEARNER_NPROC"
    assert doc["config"]["publish_every"] == 7
    assert "s3cret" not in res.output and "k3y" not in res.output
    table = CliRunner().invoke(cli, ["config", "show", "--role", "learner", "--config", str(f)])
    assert table.exit_code == 0 and "publish_every" in table.output
    bad = CliRunner().invoke(cli, ["config", "show", "--role", "learner"],
                             env={"DISTRL_LEARNER_NPROC": "x"})
    assert bad.exit_code == 2 and "DISTRL_LEARNER_NPROC" in bad.output
    assert "Traceback" not in bad.output
    helped = CliRunner().invoke(cli, ["config", "show", "--help"])
    assert "DISTRL_LEARNER_PUBLISH_EVERY" in helped.output


def test_the_learner_command_reads_the_same_scheme(tmp_path: Path) -> None:
    """`distrl learner` refuses a bad variable before touching a broker (exit 2)."""
    res = CliRunner().invoke(cli, ["learner", "--duration", "1"],
                             env={"DISTRL_LEARNER_PUBLISH_EVERY": "0"})
    assert res.exit_code == 2 and "DISTRL_LEARNER_PUBLISH_EVERY" in res.output


def test_masked_learner_hides_secrets() -> None:
    c = LearnerConfig(broker_url="mqtt://a:pw@h:1", serve_api_key="k")
    data = masked_learner(c)
    assert "pw" not in data["broker_url"] and data["serve_api_key"] == "****"

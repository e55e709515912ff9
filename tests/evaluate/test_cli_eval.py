"""``distrl eval`` end to end: real sim phones, real checkpoints, the JSON schema, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from distrl_sdk.policies import save_policy
from distrl_sdk.policies.uitree import UITreePolicy
from farm.cli import cli

TASK_KEYS = {"task", "episodes", "successes", "success_rate", "ci_low", "ci_high",
             "mean_steps", "aborted", "errored"}
REPORT_KEYS = {"schema", "policy", "policy_version", "split", "greedy", "seed",
               "episodes_per_task", "tasks_evaluated", "confidence", "success_rate", "ci_low",
               "ci_high", "episodes", "planned", "mean_steps", "aborted", "errored",
               "complete", "devices", "wall_s", "episodes_per_min", "tasks"}


def run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["eval", *args])
    return r.exit_code, r.output


def test_oracle_json_report_schema() -> None:
    code, out = run("--policy", "oracle", "--sim", "2", "--task", "settings.wifi_*",
                    "--task", "clock.alarm_dial", "-k", "2", "--seed", "3", "--json")
    assert code == 0, out
    d = json.loads(out)
    assert set(d) == REPORT_KEYS and d["schema"] == "distrl-eval/1"
    assert (d["policy"], d["policy_version"], d["split"], d["greedy"]) == ("oracle", None,
                                                                          "test", None)
    assert (d["seed"], d["episodes_per_task"], d["planned"], d["episodes"]) == (3, 2, 6, 6)
    assert d["success_rate"] == 1.0 and d["complete"] is True and d["devices"] == 2
    assert [t["task"] for t in d["tasks"]] == ["clock.alarm_dial", "settings.wifi_off",
                                               "settings.wifi_on"]
    for t in d["tasks"]:
        assert set(t) == TASK_KEYS and t["episodes"] == 2 and t["success_rate"] == 1.0
        assert 0 < t["ci_low"] < 1 == t["ci_high"] and t["mean_steps"] > 0


def test_a_learner_checkpoint_is_evaluated_greedy_with_its_version(tmp_path: Path) -> None:
    ckpt = save_policy(UITreePolicy.from_config({"buckets": 256, "embed_dim": 8,
                                                 "hidden": 8}), tmp_path / "policy", 7)
    out_file = tmp_path / "report.json"
    code, out = run("--policy", str(ckpt), "--sim", "1", "--tag", "battery", "-k", "1",
                    "--out", str(out_file))
    assert code == 0, out
    assert "suite mean" in out and "settings.battery_saver_on" in out
    d = json.loads(out_file.read_text())
    assert d["policy_version"] == 7 and d["greedy"] is True and d["planned"] == 2
    assert d["policy"].startswith("uitree@v7")
    code, out = run("--policy", str(ckpt), "--sim", "1", "--task", "settings.dnd_on",
                    "--sample", "--json")
    assert code == 0 and json.loads(out)["greedy"] is False


def test_user_mistakes_exit_2_with_a_message_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    cases = [
        (("--policy", "oracle", "--sim", "1", "--task", "settings.nope"),
         "unknown task 'settings.nope'"),
        (("--policy", "oracle", "--sim", "1", "--tag", "nosuchtag"), "no task has tag"),
        (("--policy", str(tmp_path / "missing"), "--sim", "1"), "no such checkpoint"),
        (("--policy", str(tmp_path / "empty"), "--sim", "1"), "not a policy checkpoint"),
        (("--policy", "oracle"), "either --sim N or --device"),
        (("--policy", "oracle", "--sim", "1", "--device", "x"), "either --sim N or --device"),
        (("--policy", "oracle", "--sim", "1", "--task", "settings.dnd_on",
          "--out", str(tmp_path / "no" / "dir.json")), "no such directory"),
        (("--policy", "oracle", "--device", "127.0.0.1:9", "--ready-timeout", "1",
          "--task", "settings.dnd_on"), "device not reachable: 127.0.0.1:9"),
    ]
    for args, message in cases:
        code, out = run(*args)
        assert code == 2, (args, out)
        assert message in out, (args, out)
        assert "Traceback" not in out

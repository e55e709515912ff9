"""bench/heldout_failures.py: its classification, on records ``distrl eval
--episodes-out`` really writes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bench.heldout_failures import analyse, ending, memorised, train_only_values
from distrl_sdk.registry import TaskRegistry
from farm.cli import cli


def records(tmp_path: Path, policy: str, task: str) -> list[dict]:
    out = tmp_path / f"{policy}.jsonl"
    r = CliRunner().invoke(cli, ["eval", "--policy", policy, "--sim", "1", "--task", task,
                                 "-k", "2", "--json", "--episodes-out", str(out)])
    assert r.exit_code == 0, r.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_a_training_topics_article_tapped_on_a_held_out_topic_is_memorisation(
        tmp_path: Path) -> None:
    task = TaskRegistry.discover().get("chrome.open_wikipedia")
    train_only = train_only_values([task])["chrome.open_wikipedia"]
    assert "eiffel tower" in train_only and "mars" not in train_only  # a test topic
    oracle = records(tmp_path, "oracle", "chrome.open_wikipedia")
    assert analyse(oracle, {"chrome.open_wikipedia": train_only})["failed"] == 0
    # the oracle's episode with its article tap swapped for a training topic's article
    rec = oracle[0]
    tap = next(s for s in rec["steps"] if (s.get("target") or "").endswith("- Wikipedia"))
    tap["target"] = "Eiffel Tower - Wikipedia"
    rec["status"] = "failure"
    assert memorised(rec, train_only) == "Eiffel Tower - Wikipedia"
    rec["instruction"] += " (not the Eiffel Tower)"  # named by the instruction: no evidence
    assert memorised(rec, train_only) is None
    assert ending(rec) == "budget"  # it ended on the tap, as the oracle's success did
    rec["steps"].append({"index": 99, "describe": "complete",
                         "action": {"action_type": "status", "goal_status": "complete"}})
    assert ending(rec) == "complete"


def test_every_failure_of_a_random_policy_is_classified(tmp_path: Path) -> None:
    recs = records(tmp_path, "random", "settings.wifi_on")
    res = analyse(recs, train_only_values([TaskRegistry.discover().get("settings.wifi_on")]))
    assert res["episodes"] == 2 and res["failed"] == sum(res["endings"].values())
    assert set(res["endings"]) <= {"complete", "answer", "budget"}

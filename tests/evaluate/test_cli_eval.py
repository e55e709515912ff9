"""``distrl eval`` end to end: real sim phones, real checkpoints, the JSON schema, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from distrl_sdk.policies import build_policy, save_policy
from distrl_sdk.policies.uitree import UITreePolicy
from farm.cli import cli

TASK_KEYS = {"task", "episodes", "successes", "success_rate", "ci_low", "ci_high",
             "mean_steps", "aborted", "errored"}
REPORT_KEYS = {"schema", "policy", "policy_version", "split", "greedy", "seed",
               "episodes_per_task", "tasks_evaluated", "confidence", "success_rate", "ci_low",
               "ci_high", "episodes", "planned", "mean_steps", "aborted", "errored",
               "complete", "devices", "wall_s", "episodes_per_min", "tasks", "reset"}


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
    assert d["reset"] == "sim-state"
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


def test_episodes_out_names_what_each_action_touched(tmp_path: Path) -> None:
    trace = tmp_path / "episodes.jsonl"
    code, out = run("--policy", "oracle", "--sim", "2", "--task", "settings.wifi_on",
                    "--task", "chrome.open_wikipedia", "-k", "2", "--episodes-out", str(trace))
    assert code == 0, out
    assert f"4 episodes written to {trace}" in " ".join(out.split())
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert sorted(r["instance"] for r in records) == [0, 1, 2, 3]
    for r in records:
        assert r["schema"] == "distrl-eval-episode/1" and r["policy"] == "oracle"
        assert (r["status"], r["scored"], r["reward"]) == ("success", True, 1.0)
        assert r["steps"] and [s["index"] for s in r["steps"]] == list(range(len(r["steps"])))
        assert all(s["action"]["action_type"] and s["describe"] for s in r["steps"])
    wifi = next(r for r in records if r["task"] == "settings.wifi_on")
    assert wifi["instruction"] == "Turn on Wi-Fi"
    assert wifi["steps"][0]["describe"] == "open_app 'Settings'"
    # the oracle taps rows by their text: the record names the row it landed on
    assert [s.get("target") for s in wifi["steps"][1:3]] == ["Network & internet", "Internet"]
    wiki = next(r for r in records if r["task"] == "chrome.open_wikipedia")
    topic = wiki["params"]["topic"]
    assert f"{topic} - Wikipedia" in [s.get("target") for s in wiki["steps"]]
    assert any(s["action"] == {"action_type": "input_text", "text": topic}
               for s in wiki["steps"])


def test_alternatives_list_what_a_learned_policy_weighed_at_each_step(tmp_path: Path) -> None:
    ckpt = save_policy(UITreePolicy.from_config({"buckets": 256, "embed_dim": 8, "hidden": 8,
                                                 "overlap_prior": 2.0}), tmp_path / "p", 3)
    trace = tmp_path / "episodes.jsonl"
    code, out = run("--policy", str(ckpt), "--sim", "1", "--task", "settings.wifi_on", "-k",
                    "1", "--episodes-out", str(trace), "--alternatives", "3")
    assert code == 0, out
    [rec] = [json.loads(line) for line in trace.read_text().splitlines()]
    assert rec["steps"]
    for step in rec["steps"]:
        alts = step["alternatives"]
        assert 1 <= len(alts) <= 3 and all(0 < a["p"] <= 1 for a in alts)
        assert [a["p"] for a in alts] == sorted((a["p"] for a in alts), reverse=True)
        assert step["p"] == alts[0]["p"]  # greedy: it took its likeliest candidate
        if step["describe"].startswith("tap") and alts[0]["label"]:  # … and it is listed
            assert alts[0]["kind"] == "tap"
            assert alts[0]["label"].startswith(step["target"][:20]), step
    # the untrained policy reads the instruction through the prior: "Wi-Fi" in a row's
    # summary makes "Network & internet" its likeliest step, well ahead of the rest
    row = next(s for s in rec["steps"] if s.get("target") == "Network & internet")
    assert row["alternatives"][0]["p"] > 2 * row["alternatives"][1]["p"]
    # without --alternatives the record keeps its size: only the action's probability
    code, out = run("--policy", str(ckpt), "--sim", "1", "--task", "settings.wifi_on", "-k",
                    "1", "--episodes-out", str(trace))
    assert code == 0, out
    [rec] = [json.loads(line) for line in trace.read_text().splitlines()]
    assert all("alternatives" not in s and 0 < s["p"] <= 1 for s in rec["steps"])


def test_sim_phones_are_reset_so_a_rerun_plays_every_episode_alike(tmp_path: Path) -> None:
    """The random policy draws from each instance's own seed, so with every phone put back
    before each episode two runs play the same actions, whichever phone gets which
    instance after which other (tests/collect/test_reset.py shows leftovers without)."""
    args = ("--policy", "random", "--sim", "2", "--task", "settings.*", "--task", "clock.*",
            "-k", "2", "--json")
    runs = []
    for i in (1, 2):
        trace = tmp_path / f"run{i}.jsonl"
        code, out = run(*args, "--episodes-out", str(trace))
        assert code == 0, out
        assert json.loads(out)["reset"] == "sim-state"
        runs.append({r["instance"]: (r["status"], r["steps"])
                     for r in map(json.loads, trace.read_text().splitlines()) if r["scored"]})
    assert len(runs[0]) == 2 * 18 and runs[0] == runs[1]
    code, out = run("--policy", "oracle", "--sim", "1", "--task", "settings.dnd_on",
                    "--no-reset", "--json")
    assert code == 0 and json.loads(out)["reset"] is None
    code, out = run("--policy", "oracle", "--sim", "1", "--task", "settings.dnd_on")
    assert "each phone reset before every episode (sim-state)" in " ".join(out.split())


def test_user_mistakes_exit_2_with_a_message_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    vlm = save_policy(build_policy("vlm", {"tiny": {"seed": 0}}), tmp_path / "vlm", 1)
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
        (("--policy", "oracle", "--sim", "1", "--task", "settings.dnd_on",
          "--episodes-out", str(tmp_path / "no" / "e.jsonl")), "no such directory"),
        (("--policy", "oracle", "--sim", "1", "--task", "settings.dnd_on",
          "--episodes-out", str(tmp_path / "empty")), "--episodes-out"),
        (("--policy", "oracle", "--sim", "1", "--alternatives", "3",
          "--episodes-out", str(tmp_path / "e.jsonl")), "the oracle policy weighs no"),
        (("--policy", str(vlm), "--sim", "1", "--alternatives", "3",
          "--episodes-out", str(tmp_path / "e.jsonl")), "a vlm policy does not rank"),
        (("--policy", "oracle", "--sim", "1", "--alternatives", "3"),
          "give both"),
        (("--policy", "oracle", "--device", "127.0.0.1:9", "--ready-timeout", "1",
          "--task", "settings.dnd_on"), "device not reachable: 127.0.0.1:9"),
        (("--policy", "oracle", "--sim", "1", "--reset-snapshot", "clean"),
         "--sim phones are reset by default"),
        (("--policy", "oracle", "--device", "127.0.0.1:5555", "--reset-snapshot", "clean"),
         "needs emulators (emulator-N serials); not one: 127.0.0.1:5555"),
        (("--policy", "oracle", "--device", "emulator-5554", "--reset-snapshot", "clean",
          "--no-reset"), "contradict"),
        (("--policy", "oracle", "--device", "emulator-5554", "--reset-snapshot", "a b"),
         "not a snapshot name"),
    ]
    for args, message in cases:
        code, out = run(*args)
        assert code == 2, (args, out)
        assert message in out, (args, out)
        assert "Traceback" not in out

"""`deploy`, `eval` and `learner --init` take a learner's run dir for its newest policy."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from distrl_sdk.policies import build_policy, save_policy
from farm.cli import cli
from farm.learner.paths import policy_dir


def test_a_run_dir_means_its_newest_checkpoint(tmp_path: Path) -> None:
    policy = build_policy("uitree", {"buckets": 1024, "embed_dim": 8, "hidden": 8})
    run = tmp_path / "run"
    for seq, version in ((1, 3), (12, 40), (2, 7)):
        save_policy(policy, run / "checkpoints" / f"ckpt-{seq:06d}" / "policy",
                    version=version)
    (run / "checkpoints" / "ckpt-000099").mkdir()  # half-written: no policy inside
    newest = run / "checkpoints" / "ckpt-000012" / "policy"
    assert policy_dir(run) == newest
    assert policy_dir(run / "checkpoints") == newest
    assert policy_dir(newest) == newest  # a checkpoint is itself
    assert policy_dir(tmp_path / "empty") == tmp_path / "empty"  # the loader says why


def test_eval_names_what_a_non_checkpoint_lacks(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    r = CliRunner().invoke(cli, ["eval", "--policy", str(tmp_path / "nothing"), "--sim", "1"])
    assert r.exit_code == 2 and "is not a policy checkpoint" in r.output, r.output

"""The learner's scalars in MLflow and W&B when asked for: the real libraries (MLflow's
local store, W&B offline), read back with their own APIs; a restart continues the run;
a tracker that is not installed is a clear error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from distrl_sdk.errors import ConfigError
from farm.learner.metrics import ScalarLog
from farm.learner.trackers import open_trackers


@pytest.fixture
def mlflow_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pytest.importorskip("mlflow")
    uri = f"file:{tmp_path / 'mlruns'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    # MLflow 3 keeps the local file store for tests like this one behind a switch
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    return uri


def test_scalars_reach_mlflow_and_a_restart_continues_the_run(
        tmp_path: Path, mlflow_store: str) -> None:
    from mlflow.tracking import MlflowClient

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = ScalarLog(run_dir / "scalars.jsonl")
    log.trackers = open_trackers(["mlflow"], run_dir, {"algorithm": "aride"})
    first = log.trackers[0].run_id  # type: ignore[attr-defined]
    log.write({"train/actor_loss": 0.5, "eval/success": 0.25, "bad": float("nan")}, step=3)
    log.write({"train/actor_loss": 0.4}, step=8)
    log.close()
    again = ScalarLog(run_dir / "scalars.jsonl")
    again.trackers = open_trackers(["mlflow"], run_dir, {"algorithm": "aride"})
    assert again.trackers[0].run_id == first  # type: ignore[attr-defined]
    again.write({"train/actor_loss": 0.3}, step=12)
    again.close()
    client = MlflowClient(mlflow_store)
    history = client.get_metric_history(first, "train/actor_loss")
    assert [(m.step, m.value) for m in history] == [(3, 0.5), (8, 0.4), (12, 0.3)]
    assert [m.value for m in client.get_metric_history(first, "eval/success")] == [0.25]
    assert client.get_metric_history(first, "bad") == []  # non-finite: not logged
    assert client.get_run(first).data.params["algorithm"] == "aride"


def test_scalars_reach_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = ScalarLog(run_dir / "scalars.jsonl")
    log.trackers = open_trackers(["wandb"], run_dir, {"algorithm": "aride"})
    tracker = log.trackers[0]
    log.write({"train/actor_loss": 0.5}, step=5)
    log.write({"eval/success": 0.75}, step=2)  # an evaluation round of an older version
    run = tracker._run  # type: ignore[attr-defined]
    assert run.summary["train/actor_loss"] == 0.5 and run.summary["eval/success"] == 0.75
    assert run.summary["version"] == 2 and log.tracker_errors == 0
    run_id = tracker.run_id  # type: ignore[attr-defined]
    log.close()
    assert any((run_dir / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))


def test_a_tracker_that_is_not_installed_is_a_clear_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb → ImportError
    with pytest.raises(ConfigError, match=r"'wandb' asked for but not installed.*pip install"):
        open_trackers(["wandb"], tmp_path, {})


def test_a_failing_tracker_never_stops_the_scalar_log(tmp_path: Path) -> None:
    class Down:
        name = "down"

        def log(self, scalars: object, step: int) -> None:
            raise ConnectionError("tracking server unreachable")

        def close(self) -> None:
            pass

    log = ScalarLog(tmp_path / "scalars.jsonl")
    log.trackers = [Down()]
    assert log.write({"a": 1.0}, step=1) == 1 and log.write({"a": 2.0}, step=2) == 1
    assert log.tracker_errors == 2
    log.close()
    assert len((tmp_path / "scalars.jsonl").read_text().splitlines()) == 2


async def test_the_learner_service_logs_to_the_trackers_it_is_given(
        tmp_path: Path, mlflow_store: str) -> None:
    """`distrl learner --track mlflow`: the service's own scalars reach MLflow."""
    import asyncio

    from mlflow.tracking import MlflowClient

    from farm.broker import EmbeddedBroker, find_mosquitto
    from farm.learner.service import LearnerConfig, LearnerService

    if find_mosquitto() is None:
        pytest.skip("no mosquitto binary")
    async with EmbeddedBroker(backend="mosquitto") as broker:
        svc = LearnerService(LearnerConfig(
            broker_url=broker.url, run_dir=tmp_path / "run", trackers=["mlflow"],
            policy_config={"buckets": 256, "embed_dim": 8, "hidden": 8, "seed": 0},
            metrics_every_s=0.1, checkpoint_every_s=3600, client_id="learner-trk",
            torch_threads=1))
        run = asyncio.create_task(svc.run())
        async with asyncio.timeout(60):
            while not (svc.ready.is_set() and svc._scalars.trackers):
                assert not run.done(), run.exception()
                await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # a few metrics periods
        svc.stop()
        await asyncio.wait_for(run, 60)
    client = MlflowClient(mlflow_store)
    rid = json.loads((tmp_path / "run" / "trackers.json").read_text())["mlflow"]
    assert client.get_metric_history(rid, "policy/published_version")
    assert client.get_run(rid).data.params["broker_url"].startswith("mqtt://")
